"""The web inbox: open gates and their runs, answered with a passkey or a key in the browser.

Needs the ``inbox`` extra (``pip install 'lockgate[inbox]'``).
"""

from __future__ import annotations

try:
    import jinja2  # noqa: F401 - only to say which extra is missing
    import starlette  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError("lockgate.inbox needs its extra: pip install 'lockgate[inbox]'") from error

from lockgate.inbox._app import inbox_app

__all__ = ["inbox_app"]

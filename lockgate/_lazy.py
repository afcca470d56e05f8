"""Names a package resolves on first use (PEP 562): its ``__getattr__`` and ``__dir__``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def _imported(home: str, name: str) -> Any:
    # `__import__` rather than importlib: inside Temporal's workflow sandbox it is the
    # sandbox's importer, which hands back lockgate's own (passed-through) modules.
    return getattr(__import__(home, fromlist=[name]), name)


def lazy_names(
    namespace: dict[str, Any], homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the module whose globals are ``namespace``: each
    name in ``homes`` is imported from its module the first time it is asked for, then kept.
    """
    module = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = _imported(home, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace["__all__"]})

    return __getattr__, __dir__

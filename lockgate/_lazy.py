"""Names a package resolves on first use (PEP 562): its ``__getattr__`` and ``__dir__``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from lockgate._renamed import warn_renamed

__all__ = ["lazy_names", "moved_names"]


def _imported(home: str, name: str) -> Any:
    # `__import__` rather than importlib: inside Temporal's workflow sandbox it is the
    # sandbox's importer, which hands back lockgate's own (passed-through) modules.
    return getattr(__import__(home, fromlist=[name]), name)


def lazy_names(
    namespace: dict[str, Any],
    homes: Mapping[str, str],
    renamed: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the module whose globals are ``namespace``: each
    name in ``homes`` is imported from its module the first time it is asked for, then kept.

    ``renamed`` maps an old name to its new one: asking for the old name warns
    (``DeprecationWarning``) and answers the new name's value, every time it is asked for.
    """
    module = namespace["__name__"]
    old_names = renamed or {}

    def __getattr__(name: str) -> Any:
        new_name = old_names.get(name)
        if new_name is not None:
            warn_renamed(f"{module}.{name}", f"{module}.{new_name}")
            return __getattr__(new_name)
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = _imported(home, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace["__all__"]})

    return __getattr__, __dir__


def moved_names(
    namespace: dict[str, Any],
    moved: Mapping[str, tuple[str, str | None]],
    renamed: Mapping[str, str] | None = None,
) -> Callable[[str], Any]:
    """The ``__getattr__`` of a package whose old names moved: each still resolves, with a
    ``DeprecationWarning`` saying where to import it from now.

    ``moved`` maps each old name to ``(home, public)``: the module that defines it, and the
    public module to import it from, or ``None`` for a name that is lockgate's own plumbing and
    has no public home. ``renamed`` maps an old name whose object has a new name since to that
    name, which is what is imported from its home. The name is not kept in the package, so
    every use warns.
    """
    module = namespace["__name__"]
    new_names = renamed or {}

    def __getattr__(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        home, public = moved[name]
        new_name = new_names.get(name, name)
        if public is None:
            advice = "it is internal to lockgate, and this name goes in a later release"
        elif new_name != name:
            advice = f"import {new_name} from {public} instead"
        else:
            advice = f"import it from {public} instead"
        warnings.warn(f"{module}.{name} is deprecated: {advice}", DeprecationWarning, stacklevel=2)
        return _imported(home, new_name)

    return __getattr__

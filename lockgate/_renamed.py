"""Renamed names: the old spelling keeps working for one release, and says what to use instead.

Every old spelling (a class, a function, an attribute, a keyword) warns through
:func:`warn_renamed`, so each says it the same way and a test can match on one sentence.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

__all__ = ["old_module_names", "warn_renamed"]


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warns, as a :class:`DeprecationWarning`, that ``old`` is now spelled ``new``.

    Args:
        old: The old spelling, as the caller wrote it (``Judgement.accepted``).
        new: What to write instead (``Judgement.allowed``).
        stacklevel: Whose line the warning names: by default the caller of the function that
            calls this one (the user's line that read the old spelling).
    """
    warnings.warn(
        f"{old} is deprecated: use {new}; the old spelling goes in a later release.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def old_module_names(
    module: str, renamed: Mapping[str, tuple[str, object]]
) -> Callable[[str], object]:
    """The ``__getattr__`` of a module some of whose names were renamed.

    ``renamed`` maps each old name to its new name and the object it names: the old name answers
    that same object (``isinstance`` and equality hold either way), warning every time.
    """

    def __getattr__(name: str) -> object:
        if name not in renamed:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new, value = renamed[name]
        warn_renamed(name, new)
        return value

    return __getattr__

"""Renamed names: the old spelling keeps working for one release, and says what to use instead.

Every old spelling (a class, a function, an attribute, a keyword) warns through
:func:`warn_renamed`, so each says it the same way and a test can match on one sentence.
"""

from __future__ import annotations

import warnings

__all__ = ["warn_renamed"]


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

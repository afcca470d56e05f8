"""How much a caller may send, and how much a run keeps of what strangers sent.

Temporal refuses a payload over ~2 MB and fails a workflow task whose result would carry one;
converting a value nested a few hundred levels deep exhausts Python's recursion limit. Anything a
caller sends to someone else's run is therefore measured here first, without recursion, and a
value too large or too deep is refused with a typed code before it is decoded further, stored,
judged or echoed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, overload

from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_DEPTH",
    "MAX_REFUSED_SIGNALS_KEPT",
    "MAX_SHOWN_ANSWER_CHARS",
    "MAX_START_BYTES",
    "MAX_SUBGRAPH_DEPTH",
    "MAX_WAITING_SETTLES",
    "TRAIL_PAGE",
    "PayloadProblem",
    "measure",
    "shorten",
]

MAX_ANSWER_BYTES = 16 * 1024
"""An answer, resume, settle or confirmation: a signed proof is under 1 kB."""

MAX_START_BYTES = 256 * 1024
"""A graph run's start input (its fields, a proof)."""

MAX_SUBGRAPH_DEPTH = 10
"""How deep sub-graphs nest: a run may start a child that starts a child... ten levels."""

MAX_DEPTH = 32
"""How deeply any caller's JSON may nest."""

MAX_REFUSED_SIGNALS_KEPT = 20
"""Refused signals a run records in its trail; later ones are counted (and audited), not kept."""

MAX_SHOWN_ANSWER_CHARS = 80
"""How much of a refused answer's text the trail repeats."""

MAX_WAITING_SETTLES = 4
"""``settle`` updates one run holds open at once; Temporal allows ten updates in flight."""

TRAIL_PAGE = 100
"""Trail rows ``show`` carries unless a page is asked for (and, at most, the rows an answer,
resume or cancel returns: those it added)."""


@dataclass(frozen=True, slots=True)
class PayloadProblem:
    """Why a payload is refused: a code and a sentence."""

    code: str
    sentence: str


def measure(
    value: Any, *, what: str, max_bytes: int, max_depth: int = MAX_DEPTH
) -> PayloadProblem | None:
    """Refuses ``value`` if its JSON would exceed ``max_bytes`` or nest deeper than ``max_depth``.

    The walk is iterative and stops as soon as a limit is passed, so a hostile value costs no
    more than the limits. Sizes are the JSON text's, close enough to what Temporal stores.

    Args:
        value: Decoded JSON data (anything else counts by its ``repr``).
        what: What the value is, for the sentence (``"The answer"``).
        max_bytes: The size limit.
        max_depth: The nesting limit.

    Returns:
        None when the value fits, else a ``PAYLOAD_TOO_LARGE`` or ``VALIDATION_ERROR`` problem.
    """
    size = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return PayloadProblem(
                ErrorCode.VALIDATION_ERROR.value,
                f"{what} is nested more than {max_depth} levels deep; nothing was recorded.",
            )
        if isinstance(item, Mapping):
            size += 2 + len(item)
            for key, child in item.items():
                size += len(key) + 3 if isinstance(key, str) else 8
                stack.append((child, depth + 1))
        elif isinstance(item, (list, tuple)):
            size += 2 + len(item)
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, (bytes, bytearray)):
            size += len(item)
        else:
            size += 8
        if size > max_bytes:
            return PayloadProblem(
                ErrorCode.PAYLOAD_TOO_LARGE.value,
                f"{what} is larger than {max_bytes // 1024} kB, the most a run takes; nothing "
                "was recorded.",
            )
    return None


@overload
def shorten(text: str, limit: int = MAX_SHOWN_ANSWER_CHARS) -> str: ...
@overload
def shorten(text: object, limit: int = MAX_SHOWN_ANSWER_CHARS) -> str | None: ...
def shorten(text: object, limit: int = MAX_SHOWN_ANSWER_CHARS) -> str | None:
    """``text`` cut to ``limit`` characters (with an ellipsis), or None if it is not text."""
    if not isinstance(text, str):
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"

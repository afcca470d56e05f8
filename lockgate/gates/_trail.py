"""The trail: a run's rows of who did what, each built by :func:`trail_row` and nowhere else.

A row says who (``by``: the actor as verified, never what they hold), what (the ``operation``
at a ``node``) and how it came out (its ``outcome``); the details a kind of row carries are the
optional keys of :class:`~lockgate.contracts.TrailRow`. Graph runs and workflows of your own
write the same rows (the latter name the ``gate`` instead of a node).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

from lockgate.contracts import TrailRow
from lockgate.identity._actors import Actor

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from lockgate.contracts import _TrailRowDetails

__all__ = ["Outcome", "trail_row"]

Outcome = Literal[
    "ran",
    "refused",
    "failed",
    "answered",
    "waived",
    "timed_out",
    "escalated",
    "resumed",
    "cancelled",
    "budget_spent",
]
"""How a step came out. A node its driver may not run is ``refused`` (and parks the run); one
that failed after its retries, ``failed``."""


def trail_row(
    node: str | None,
    operation: str,
    outcome: Outcome,
    by: Actor,
    **details: Unpack[_TrailRowDetails],
) -> TrailRow:
    """One row: ``by`` did ``operation`` at ``node`` (``None`` in a workflow of your own), with
    ``outcome``; ``details`` in the order given.

    Example:
        >>> trail_row("draft", "write_draft", "ran", Actor.unverified("temporal"))["outcome"]
        'ran'
    """
    placed = {} if node is None else {"node": node}
    return cast(
        TrailRow,
        placed | {"operation": operation, "outcome": outcome, "by": by.to_dict()} | details,
    )

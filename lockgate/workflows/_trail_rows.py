"""How a run writes a row into its trail: stamped with the run's own clock.

Every row a graph run or a workflow of your own adds says when it happened (``at``, ISO 8601 in
UTC, to the second), read from ``workflow.now()``: the time of the workflow task that wrote it,
the same on every replay. A row carried from a run of an older lockgate may have none.
"""

from __future__ import annotations

from temporalio import workflow

from lockgate.contracts import TrailRow

__all__ = ["record_row"]


def record_row(trail: list[TrailRow], row: TrailRow) -> None:
    """Appends ``row`` to ``trail``, stamped with when it happened by the run's clock."""
    row["at"] = workflow.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    trail.append(row)

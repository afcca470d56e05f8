"""The search attributes through which open gates are listed across runs, without a worker."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

__all__ = [
    "LOCKGATE_AWAITING",
    "LOCKGATE_GRAPH",
    "LOCKGATE_SEARCH_ATTRIBUTES",
    "LOCKGATE_STATE",
]

LOCKGATE_GRAPH = SearchAttributeKey.for_keyword("LockgateGraph")
"""The name of the graph a run belongs to (``essay:review``)."""

LOCKGATE_STATE = SearchAttributeKey.for_keyword("LockgateState")
"""Where the run stands, as it last wrote it: ``running``, ``waiting`` (a gate is open),
``parked``; ``refused`` or ``cancelled`` once it ended so (a run that finished or was declined
leaves what it last wrote: ExecutionStatus says it closed, and its memo how)."""

LOCKGATE_AWAITING = SearchAttributeKey.for_keyword("LockgateAwaiting")
"""The role an open gate asks for (``editor``); unset when no gate is open."""

LOCKGATE_SEARCH_ATTRIBUTES: tuple[SearchAttributeKey[str], ...] = (
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
    LOCKGATE_AWAITING,
)
"""Every search attribute lockgate writes; each must be registered on the namespace."""

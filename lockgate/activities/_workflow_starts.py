"""The start check of a workflow of the user's own that asks lockgate's gates or calls its tools.

Who started such a run is judged by its ``lockgate.start`` update, which names the execution the
server started (``GraphClient.start_workflow`` sends it), and whose record, under the seal of the
worker that accepted it, also keeps what the run opens with. This local activity, run the first
time a run whose start recorded nothing of it uses lockgate (a run started unsigned, or recorded
before starts kept it), records what its history must keep for every replay: the tools it runs
local, and the protocol it follows. A start proof in the memo, where lockgate put it before
proofs named their execution, is refused here (a run recorded then keeps its verdict).
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from lockgate.activities._activity_inputs import (
    OPEN_WORKFLOW_START,
    RUN_PROTOCOL,
    OpenWorkflowStartInput,
)
from lockgate.activities._temporal import only_local
from lockgate.gates._authority import Authority
from lockgate.identity._actors import Actor
from lockgate.tools._tool_result import ErrorCode

__all__ = ["WorkflowStartActivities"]


class WorkflowStartActivities:
    """The start check of workflows of the user's own, for one worker's Authority."""

    def __init__(self, authority: Authority) -> None:
        self.authority = authority

    @activity.defn(name=OPEN_WORKFLOW_START)
    async def open_workflow_start(self, start: OpenWorkflowStartInput) -> dict[str, Any]:
        """``{actor, code, reason, local_tools, protocol}``: the unverified starter and why,
        when the memo carried a start proof; the tools the run runs local, as it named them."""
        only_local(activity.info())
        unsigned = Actor.unverified("temporal").to_dict()
        verdict: dict[str, Any] = {"actor": unsigned, "code": None, "reason": None}
        if start.proof is not None:
            reason = (
                "A start proof in the memo names no execution, so lockgate no longer takes one "
                "there: GraphClient.start_workflow sends it after the start, naming the "
                "execution (the `lockgate.start` update)."
            )
            self.authority.audit.refused(
                "run.start",
                ErrorCode.UNAUTHORIZED,
                reason,
                graph=start.workflow_type,
                run=start.run,
            )
            verdict |= {"code": ErrorCode.UNAUTHORIZED.value, "reason": reason}
        return {**verdict, "local_tools": list(start.local_tools), "protocol": RUN_PROTOCOL}

"""Who started a workflow of the user's own that asks lockgate's gates or calls its tools.

Such a workflow is started with a proof in its memo (``GraphClient.start_workflow`` signs one):
``{kind: "start", graph: <workflow type>, run: <workflow id>, inputs: {args: [...]}}``. It is
verified here, on the worker, and spent for the execution, exactly as a graph run's start proof
is; the history keeps the verdict for every replay. An unsigned start, or one whose proof is
refused, has an unverified requester: the run goes on, and nobody it names can answer for it.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from lockgate.activities._activity_inputs import OPEN_WORKFLOW_START, OpenWorkflowStartInput
from lockgate.activities._temporal import only_local
from lockgate.gating import Actor, Authority, ErrorCode, ProofRefused, start_binding

__all__ = ["WorkflowStartActivities"]


class WorkflowStartActivities:
    """The start check of workflows of the user's own, for one worker's Authority."""

    def __init__(self, authority: Authority) -> None:
        self.authority = authority

    @activity.defn(name=OPEN_WORKFLOW_START)
    async def open_workflow_start(self, start: OpenWorkflowStartInput) -> dict[str, Any]:
        """``{actor, code, reason, local_tools}``: the verified starter, or the unverified one and
        why; and the tools the run runs local, as the run named them."""
        only_local(activity.info())
        return {**await self._verify(start), "local_tools": list(start.local_tools)}

    async def _verify(self, start: OpenWorkflowStartInput) -> dict[str, Any]:
        unsigned = Actor.unverified("temporal").to_dict()
        if start.proof is None:
            return {"actor": unsigned, "code": None, "reason": None}
        try:
            binding = start_binding(start.workflow_type, start.run, {"args": start.arguments})
        except (TypeError, ValueError):
            return _refused(
                unsigned,
                ErrorCode.VALIDATION_ERROR,
                f"The arguments of '{start.workflow_type}' are not JSON data a proof can name.",
            )
        holder = f"start:{start.run}/{start.execution}"
        try:
            actor = await self.authority.verify_once(start.proof, binding, holder)
        except ProofRefused as refused:
            self.authority.audit.event(
                "run.start",
                accepted=False,
                actor=None,
                reason=refused.sentence,
                code=refused.code,
                graph=start.workflow_type,
                run=start.run,
            )
            return _refused(unsigned, ErrorCode(refused.code), refused.sentence)
        self.authority.audit.event(
            "run.start",
            accepted=True,
            actor=actor.to_dict(),
            graph=start.workflow_type,
            run=start.run,
        )
        return {"actor": actor.to_dict(), "code": None, "reason": None}


def _refused(actor: dict[str, Any], code: ErrorCode, reason: str) -> dict[str, Any]:
    return {"actor": actor, "code": code.value, "reason": reason}

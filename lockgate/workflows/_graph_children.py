"""Sub-graphs: a node that runs another declared graph as a child workflow, and waits for it.

The child is started with the channels both graphs declare and with who drives the parent there,
handed down under the worker secret's seal (see :mod:`._authority_context`): the child's worker
believes that driver only once the seal opens for exactly this parent run and this child. The
child's end comes back as its channels; its outcome routes the parent.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError
from temporalio.workflow import ChildWorkflowCancellationType, ParentClosePolicy

from lockgate.gates._limits import shorten
from lockgate.graphs._compiled import CompiledNode
from lockgate.workflows._graph_gates import GraphGates
from lockgate.workflows._graph_inputs import StartGraphInput

__all__ = ["GraphChildren"]


class GraphChildren(GraphGates):
    """Running a sub-graph node: starting the child, waiting for it, reading its end."""

    async def _run_child(
        self, node: CompiledNode, visit: int
    ) -> tuple[dict[str, Any] | None, str | None, dict[str, Any]]:
        """Runs ``node``'s graph as a child: what it hands back (the channels both declare, and
        its outcome), or why it did not end well; and the child as the trail names it."""
        child = node.subgraph
        assert child is not None
        child_id = f"{self._run_id}/{node.state}:{visit}"
        named: dict[str, Any] = {"graph": child.name, "run_id": child_id}
        start = StartGraphInput(
            inputs={name: self._run.channels.get(name) for name in node.reads},
            handed={
                "actor": self._run.driver.to_dict(),
                "depth": self._run.depth + 1,
                "parent": {
                    "graph": self._graph.name,
                    "run_id": self._run_id,
                    "execution": self._execution,
                },
            },
        )
        self._child = named
        try:
            handle = await workflow.start_child_workflow(
                child.name,
                start,
                id=child_id,
                result_type=dict,
                # Cancelling (or ending) the parent cancels the child; the parent does not wait
                # for that to finish (a child cancelled on its own parks the parent instead).
                parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
                cancellation_type=ChildWorkflowCancellationType.TRY_CANCEL,
                static_summary=f"{child.name}, sub-graph of {self._run_id}",
            )
            # The run rests while its child runs: callers waiting for it to settle see the child.
            self._settled()
            ended: dict[str, Any] = await handle
        except ChildWorkflowError as error:
            if workflow.cancellation_reason() is not None:
                # The parent itself was cancelled (and cancelled its child): it ends cancelled.
                raise asyncio.CancelledError() from error
            cause = error.cause
            why = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
            return None, f"its sub-graph run {child_id} did not finish: {shorten(why)}", named
        finally:
            self._child = None
        if ended.get("status") == "refused":
            # A refused run completes, its refusal its result (one recorded before failed).
            why = str((ended.get("error") or {}).get("message") or "it was refused")
            return None, f"its sub-graph run {child_id} did not finish: {shorten(why)}", named
        channels = ended.get("channels") or {}
        named |= {"status": ended.get("status")}
        handed_back = {name: channels.get(name) for name in node.writes}
        if node.decides_on:
            handed_back[node.decides_on] = channels.get(node.decides_on)
            named["outcome"] = channels.get(node.decides_on)
        return handed_back, None, named

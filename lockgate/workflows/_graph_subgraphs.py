"""Sub-graph nodes of a graph run: a node that runs another declared graph as a child workflow.

The child is started with the fields both graphs declare and with who drives the parent there,
handed down under the worker secret's seal (see :mod:`._authority_context`): the child's worker
believes that driver only once the seal opens for exactly this parent run and this child. The
child's end comes back as its fields; its outcome routes the parent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError, ChildWorkflowError
from temporalio.workflow import ChildWorkflowCancellationType, ParentClosePolicy

from lockgate.gates._limits import shorten
from lockgate.graphs._compiled import CompiledNode
from lockgate.workflows._carry import RunState, ThisRun, written_fields
from lockgate.workflows._graph_inputs import StartGraphInput
from lockgate.workflows._history_seals import opened_end

__all__ = ["SubgraphEnd", "SubgraphRunner"]


@dataclass(frozen=True)
class SubgraphEnd:
    """How a sub-graph node ended: what its child hands back (the fields both graphs declare,
    and its outcome), or why it did not end well; and the child as the trail names it."""

    fields: dict[str, Any] | None
    problem: str | None
    child: dict[str, Any]


class SubgraphRunner:
    """Runs a graph run's sub-graph nodes, each as a child workflow it waits for.

    Args:
        run: The run's state (the fields a child is handed, who drives the run, how deep it
            nests).
        this: Which run it is, as a child names its parent; a child's id is made from its
            workflow id.
        settled: Counts one settling of the run (it rests while its child runs).
    """

    def __init__(
        self,
        run: RunState,
        this: ThisRun,
        *,
        settled: Callable[[], None],
    ) -> None:
        self._run = run
        self._this = this
        self._settled = settled
        self.waiting_for: dict[str, Any] | None = None
        """The child run the run waits for now (its graph and run id), if any."""

    async def run(self, node: CompiledNode, visit: int) -> SubgraphEnd:
        """Runs ``node``'s graph as a child (its ``visit``-th run) and waits for it to end."""
        child = node.subgraph
        assert child is not None
        child_id = f"{self._this.run_id}/{node.state}:{visit}"
        named: dict[str, Any] = {"graph": child.name, "run_id": child_id}
        start = StartGraphInput(
            inputs={name: self._run.fields.get(name) for name in node.reads},
            handed={
                "actor": self._run.driver.to_dict(),
                "depth": self._run.depth + 1,
                "parent": self._this.ref(),
            },
        )
        self.waiting_for = named
        try:
            handle = await workflow.start_child_workflow(
                child.name,
                start,
                id=child_id,
                result_type=RawValue,
                # Cancelling (or ending) the parent cancels the child; the parent does not wait
                # for that to finish (a child cancelled on its own parks the parent instead).
                parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
                cancellation_type=ChildWorkflowCancellationType.TRY_CANCEL,
                static_summary=f"{child.name}, sub-graph of {self._this.run_id}",
            )
            # The run rests while its child runs: callers waiting for it to settle see the child.
            self._settled()
            ended = opened_end(child_id, handle.first_execution_run_id, await handle)
        except ChildWorkflowError as error:
            if workflow.cancellation_reason() is not None:
                # The parent itself was cancelled (and cancelled its child): it ends cancelled.
                raise asyncio.CancelledError() from error
            cause = error.cause
            why = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
            return SubgraphEnd(
                None, f"its sub-graph run {child_id} did not finish: {shorten(why)}", named
            )
        finally:
            self.waiting_for = None
        if ended.get("status") == "refused":
            # A refused run completes, its refusal its result (one recorded before failed).
            why = str((ended.get("error") or {}).get("message") or "it was refused")
            return SubgraphEnd(
                None, f"its sub-graph run {child_id} did not finish: {shorten(why)}", named
            )
        fields = written_fields(ended) or {}
        named |= {"status": ended.get("status")}
        handed_back = {name: fields.get(name) for name in node.writes}
        if node.decides_on:
            handed_back[node.decides_on] = fields.get(node.decides_on)
            named["outcome"] = fields.get(node.decides_on)
        return SubgraphEnd(handed_back, None, named)

"""Waiting: how a run waits at a gate or a park, and moves to a new history while it does.

A run that waits judges the signals that come, answers its ``settle`` callers, and continues as
new when the server suggests it, carrying everything under the worker secret's seal.
"""

from __future__ import annotations

from temporalio import workflow

from lockgate.workflows._graph_answers import GraphAnswers
from lockgate.workflows._graph_inputs import StartGraphInput
from lockgate.workflows._graph_state import CancelAccepted

__all__ = ["GraphWaiting"]


class GraphWaiting(GraphAnswers):
    """Waiting for an answer or a resume, and continuing as new when it is due."""

    async def _continue_as_new_if_due(self) -> None:
        """Starts a fresh history when the server suggests it; nothing is lost or run twice.

        Callers of ``settle`` waiting on this history are answered first with the run as it
        stands, so no stranger can hold the run here. A caller whose answer was accepted is
        waiting for the run to settle: the run moves on until it does, and continues as new
        then. Channels, trail, budgets, an open gate (so signed answers stay good) and signals
        not judged yet are carried, under the worker secret's seal; a flood of signals cannot
        keep the run from moving on.
        """
        if not workflow.info().is_continue_as_new_suggested():
            return
        if self._waiting_settles:
            self._releasing = True
            await workflow.wait_condition(lambda: self._waiting_settles == 0)
            self._releasing = False
        if not workflow.all_handlers_finished():
            return
        if self._answer is not None or self._resumer is not None or self._canceller is not None:
            return
        self._bound_inbox_to_carry()
        workflow.continue_as_new(
            StartGraphInput(version=self._graph.version, carried=self._carried())
        )

    async def _while_waiting(self) -> None:
        """One turn of waiting at a gate or a park: continue as new when it is due (signals not
        judged yet go along), else judge the signals that came. Which answer or resume was
        accepted, the caller reads from the run's state.

        Raises:
            CancelAccepted: The run's requester cancelled it: it waits no more.
        """

        def answered() -> bool:
            return self._answer is not None or self._resumer is not None

        await workflow.wait_condition(
            lambda: (
                answered()
                or bool(self._inbox)
                or self._deadline_passed
                or workflow.info().is_continue_as_new_suggested()
                or self._canceller is not None
            )
        )
        if self._canceller is not None:
            raise CancelAccepted
        if answered():
            return
        if workflow.info().is_continue_as_new_suggested():
            await self._continue_as_new_if_due()
            if not self._inbox and not answered():
                # A caller's handler still runs: move on once it has finished.
                await workflow.wait_condition(
                    lambda: (
                        answered()
                        or bool(self._inbox)
                        or workflow.all_handlers_finished()
                        or self._canceller is not None
                    )
                )
                return
        if self._inbox and not answered():
            accepted = await self._judge_inbox()
            if accepted is not None:
                self._take_signalled(accepted)

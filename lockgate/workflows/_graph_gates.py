"""The gates of a graph run: opening one, waiting for its answers, and closing it once decided.

A gate's options are its enum's cases; its policy says how many distinct approvers decide it
(:mod:`lockgate.gates._approval_policies`). Every answer counted is a trail row; the run moves
on only once the policy has decided, or the gate's deadline has (taking an option, or asking a
higher role alone). What the rules say of each answer and deadline is the shared gate engine's
(:mod:`lockgate.gates._gate_engine`); here is how a graph run holds a gate open while they
apply."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime

from pydantic import BaseModel
from temporalio import workflow

from lockgate.gates._gate_engine import (
    DEADLINE_ACTOR,
    GivenAnswer,
    answer_counted,
    deadline_passed,
    evidence_of_decision,
    gate_to_judge,
    opened,
)
from lockgate.gates._gates import ENDS_RUN, GateChoice, OpenGate
from lockgate.graphs._compiled import END_STATE
from lockgate.workflows._authority_context import record_once
from lockgate.workflows._carry import RunState, ThisRun
from lockgate.workflows._graph_visibility import RunStanding, RunVisibility
from lockgate.workflows._trail_rows import record_row

__all__ = ["GateKeeper"]


class GateKeeper:
    """Holds each of a graph run's gates open until it is decided: opens it (as declared, or
    escalated once its deadline passes), runs its deadline's timer, counts the answers given to
    it, and closes it.

    Args:
        run: The run's state (its open gate, trail, fields, driver, makers).
        standing: Where the run stands (it waits while a gate is open).
        this: Which run it is (its graph's asks and routes; its workflow id and execution, as
            its gates name them).
        visibility: What the run shows of its gates.
        settled: Counts one settling of the run (a gate opened, an answer counted).
        wait: One turn of the run's waiting, until an answer is given, the deadline passes,
            or something else the run must see to comes.
    """

    def __init__(
        self,
        run: RunState,
        standing: RunStanding,
        this: ThisRun,
        *,
        visibility: RunVisibility,
        settled: Callable[[], None],
        wait: Callable[[], Awaitable[None]],
    ) -> None:
        self._run = run
        self._standing = standing
        self._this = this
        self._visibility = visibility
        self._settled = settled
        self._wait = wait
        self.answer: GivenAnswer | None = None
        """An answer accepted (by an update or a signal) and not counted yet."""
        self.deadline_passed = False
        """Whether the open gate's deadline passed before it was decided."""
        # When the open gate opened (None for a gate a carried state brought): for time to answer.
        self._opened_at: datetime | None = None
        self._deadline_timer: asyncio.Future[None] | None = None

    async def hold(self, state: str) -> str:
        """Holds gate ``state`` open until it is decided, then closes it: the option decided.

        The decision's evidence lands in its field, and whoever decided (the deadline's
        :data:`DEADLINE_ACTOR`, if it did) drives the run on. The gate is still in the memo:
        the caller takes it out (``RunVisibility.show_gate_closed``) once it knows where the
        decision leads.
        """
        if self._run.gate is None or self._run.gate.ask != state:
            await self._open(state)
        ask = self._this.graph.asks[state]
        self._start_deadline_timer()
        while True:
            given = await self._next_answer()
            if given is None:
                # The deadline passed first: escalated (a new opening waits), or an option taken.
                decided = await self._deadline_passes(state)
                if decided is None:
                    continue
                actor = DEADLINE_ACTOR
                break
            actor = given.actor
            self._run.spend(actor)
            assert self._run.gate is not None
            self._run.gate, row, decided = answer_counted(self._run.gate, given, state)
            record_row(self._run.trail, row)
            if decided is not None:
                break
            # A partial approval: the gate stays open, showing who has answered so far.
            self._visibility.show_gate_answers()
            self._settled()
        self.stop_deadline_timer()
        assert self._run.gate is not None
        if ask.evidence_into is not None:
            self._run.fields[ask.evidence_into] = evidence_of_decision(
                self._run.gate, given, decided
            )
        self._run.gate = None
        self._run.declined = ask.policy.declines(decided)
        self._run.driver = actor
        # The next gate reviews the work done from here on: its makers are who drive it.
        self._run.makers = []
        self._standing.status = "running"
        # The run takes the gate out of its memo once it knows where the decision leads.
        return decided

    def to_judge(self) -> OpenGate | None:
        """The gate an answer arriving now would answer (see :func:`gate_to_judge`)."""
        return gate_to_judge(self._run.gate, self.answer)

    def evidence_models(self) -> Mapping[str, type[BaseModel]]:
        """The evidence models of the gate open now (none when no gate is)."""
        if self._run.gate is None or self._run.gate.ask not in self._this.graph.asks:
            return {}
        return self._this.graph.asks[self._run.gate.ask].evidence

    def waited_seconds(self) -> float | None:
        """How long the open gate has waited, in seconds (None for one a carried state
        brought)."""
        if self._opened_at is None:
            return None
        return (workflow.now() - self._opened_at).total_seconds()

    def stop_deadline_timer(self) -> None:
        """Cancels the open gate's deadline timer, if it runs."""
        if self._deadline_timer is not None and not self._deadline_timer.done():
            self._deadline_timer.cancel()
        self._deadline_timer = None
        self.deadline_passed = False

    async def _next_answer(self) -> GivenAnswer | None:
        """The next accepted answer, or None if the gate's deadline passes first."""
        while self.answer is None and not self.deadline_passed:
            await self._wait()
        answer, self.answer = self.answer, None
        return answer

    async def _deadline_passes(self, state: str) -> str | None:
        """The open gate's deadline passed undecided: the option it takes, or None once it has
        escalated (a new opening asks the escalation role alone). A trail row says which."""
        gate = self._run.gate
        assert gate is not None
        self.stop_deadline_timer()
        row, taken = deadline_passed(gate, state)
        record_row(self._run.trail, row)
        if taken is None:
            await self._open(state, escalated_from=gate)
        return taken

    def _start_deadline_timer(self) -> None:
        """Starts the durable timer of the open gate's deadline (once per opening; a run that
        moved to a new history starts it again for what is left)."""
        gate = self._run.gate
        if gate is None or gate.due_at is None or self._deadline_timer is not None:
            return
        left = (datetime.fromisoformat(gate.due_at) - workflow.now()).total_seconds()
        if left <= 0:
            self.deadline_passed = True
            return

        async def expire() -> None:
            await workflow.sleep(left, summary=f"deadline of gate {gate.gate}")
            self.deadline_passed = True

        self._deadline_timer = asyncio.ensure_future(expire())

    async def _open(self, state: str, escalated_from: OpenGate | None = None) -> None:
        """Opens gate ``state``: as declared, or, escalated from an opening whose deadline
        passed, asking the escalation role alone, with no deadline of its own."""
        graph = self._this.graph
        ask = graph.asks[state]
        self._run.gate_openings += 1
        choices = []
        for option in ask.options:
            leads_to = graph.routes[state][option].to
            if leads_to == END_STATE:
                # Only graphs declared with END have such an option: no older gate changes.
                choices.append(GateChoice(option, None, ENDS_RUN))
                continue
            node = graph.nodes.get(leads_to)
            choices.append(
                GateChoice(
                    option,
                    leads_to if node is not None else None,
                    node.tool if node is not None else None,
                    node.needs if node is not None else (),
                )
            )
        declared = ask.opening(
            self._run.gate_openings,
            graph=graph.name,
            run=self._this.run_id,
            execution=self._this.execution,
            requester=self._run.requester.actor,
            choices=choices,
            target=self._visibility.target(),
            makers=self._run.makers,
            parent=self._run.parent,
        )
        self._run.gate = opened(declared, workflow.now(), escalated_from)
        self._standing.status = "waiting"
        self._opened_at = workflow.now()
        record_once(
            "gate.open",
            self._run.driver,
            graph.name,
            self._this.run_id,
            gate=self._run.gate.gate,
            role=self._run.gate.role,
        )
        self._visibility.upsert_search_attributes()
        self._visibility.show_gate_opened()
        self._settled()

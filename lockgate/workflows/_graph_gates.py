"""Gates: opening one, waiting for its answers, and taking the way the decision leads.

A gate's options are its enum's cases; its policy says how many distinct approvers decide it
(:mod:`lockgate.gates._policies`). Every answer counted is a trail row; the run moves on only
once the policy has decided.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from temporalio import workflow

from lockgate.gates._evidence import evidence_shown
from lockgate.gates._gate_engine import (
    DEADLINE_ACTOR,
    GivenAnswer,
    answer_counted,
    deadline_passed,
    evidence_of_decision,
    opened,
)
from lockgate.gates._gates import ENDS_RUN, GateChoice, OpenGate
from lockgate.graphs._compiled import END_STATE
from lockgate.identity._bindings import gate_subject
from lockgate.workflows._graph_waiting import GraphWaiting

__all__ = ["GraphGates"]


class GraphGates(GraphWaiting):
    """Holding a gate open until it is decided, and the routes and budgets out of a state."""

    def _take(self, origin: str, code: str) -> str:
        transition = self._graph.routes[origin][code]
        if transition.at_most is not None and transition.then_ask is not None:
            taken = self._run.taken.get(code, 0)
            if taken >= transition.at_most:
                return transition.then_ask
            self._run.taken[code] = taken + 1
        return transition.to

    async def _hold_gate(self, state: str) -> None:
        if self._run.gate is None or self._run.gate.ask != state:
            await self._open_gate(state)
        ask = self._graph.asks[state]
        self._start_deadline_timer()
        while True:
            given = await self._await_answer()
            if given is None:
                # The deadline passed first: escalated (a new opening waits), or an option taken.
                decided = await self._deadline_passes(state)
                if decided is None:
                    continue
                actor = DEADLINE_ACTOR
                break
            actor = given.actor
            self._spend(actor)
            assert self._run.gate is not None
            self._run.gate, row, decided = answer_counted(self._run.gate, given, state)
            self._run.trail.append(row)
            if decided is not None:
                break
            # A partial approval: the gate stays open, showing who has answered so far.
            workflow.upsert_memo({"lockgate_gate": self._gate_memo(keep_opened_at=True)})
            self._settled()
        self._stop_deadline_timer()
        assert self._run.gate is not None
        if ask.evidence_into is not None:
            self._run.channels[ask.evidence_into] = evidence_of_decision(
                self._run.gate, given, decided
            )
        self._run.gate = None
        self._run.driver = actor
        # The next gate reviews the work done from here on: its makers are who drive it.
        self._run.makers = []
        self._status = "running"
        workflow.upsert_memo({"lockgate_gate": None})
        self._run.state = self._take(state, decided)
        self._settle_attributes_moving_on(self._run.state)

    async def _deadline_passes(self, state: str) -> str | None:
        """The open gate's deadline passed undecided: the option it takes, or None once it has
        escalated (a new opening asks the escalation role alone). A trail row says which."""
        gate = self._run.gate
        assert gate is not None
        self._stop_deadline_timer()
        row, taken = deadline_passed(gate, state)
        self._run.trail.append(row)
        if taken is None:
            await self._open_gate(state, escalated_from=gate)
        return taken

    def _start_deadline_timer(self) -> None:
        """Starts the durable timer of the open gate's deadline (once per opening; a run that
        moved to a new history starts it again for what is left)."""
        gate = self._run.gate
        if gate is None or gate.due_at is None or self._deadline_timer is not None:
            return
        left = (datetime.fromisoformat(gate.due_at) - workflow.now()).total_seconds()
        if left <= 0:
            self._deadline_passed = True
            return

        async def expire() -> None:
            await workflow.sleep(left, summary=f"deadline of gate {gate.gate}")
            self._deadline_passed = True

        self._deadline_timer = asyncio.ensure_future(expire())

    def _stop_deadline_timer(self) -> None:
        if self._deadline_timer is not None and not self._deadline_timer.done():
            self._deadline_timer.cancel()
        self._deadline_timer = None
        self._deadline_passed = False

    async def _open_gate(self, state: str, escalated_from: OpenGate | None = None) -> None:
        """Opens gate ``state``: as declared, or, escalated from an opening whose deadline
        passed, asking the escalation role alone, with no deadline of its own."""
        graph = self._graph
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
        target = self._target()
        declared = OpenGate(
            graph=graph.name,
            run=self._run_id,
            gate=f"{state}#{self._run.gate_openings}",
            ask=state,
            role=ask.role,
            because=ask.because,
            requester=self._run.requester.actor,
            choices=tuple(choices),
            execution=self._execution,
            subject=gate_subject(target, [choice.to_dict() for choice in choices]),
            makers=tuple(self._run.makers),
            policy=ask.policy,
            evidence={option: evidence_shown(model) for option, model in ask.evidence.items()},
            waivable_by=ask.waivable_by,
            deadline=ask.deadline,
            parent=self._run.parent,
        )
        self._run.gate = opened(declared, workflow.now(), escalated_from)
        self._status = "waiting"
        self._gate_opened_at = workflow.now()
        self._record("gate.open", gate=self._run.gate.gate, role=self._run.gate.role)
        self._upsert_search_attributes()
        workflow.upsert_memo({"lockgate_gate": self._gate_memo()})
        self._settled()

    async def _await_answer(self) -> GivenAnswer | None:
        """The next accepted answer, or None if the gate's deadline passes first."""
        while self._answer is None and not self._deadline_passed:
            await self._while_waiting()
        answer, self._answer = self._answer, None
        return answer

"""Gates: opening one, waiting for its answers, and taking the way the decision leads.

A gate's options are its enum's cases; its policy says how many distinct approvers decide it
(:mod:`lockgate.gating._policies`). Every answer counted is a trail row; the run moves on only
once the policy has decided.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow

from lockgate.contracts import TrailRow
from lockgate.gating import (
    DEADLINE_CHANNEL,
    ENDS_RUN,
    SINGLE_POLICY,
    Actor,
    GateAnswer,
    GateChoice,
    OpenGate,
    evidence_shown,
    gate_subject,
    tally,
)
from lockgate.workflows._compiled import END_STATE
from lockgate.workflows._graph_state import GivenAnswer
from lockgate.workflows._graph_waiting import GraphWaiting
from lockgate.workflows._trail import trail_row

__all__ = ["DEADLINE_ACTOR", "GraphGates"]

DEADLINE_ACTOR = Actor.unverified(DEADLINE_CHANNEL)
"""Who the trail records when a deadline decides: the system, never a person (it holds
nothing, so a node it leads to runs only if that node needs nothing)."""


class GraphGates(GraphWaiting):
    """Holding a gate open until it is decided, and the routes and budgets out of a state."""

    def _take(self, origin: str, code: str) -> str:
        transition = self._graph.routes[origin][code]
        if transition.at_most is not None and transition.then_ask is not None:
            taken = self._taken.get(code, 0)
            if taken >= transition.at_most:
                return transition.then_ask
            self._taken[code] = taken + 1
        return transition.to

    async def _hold_gate(self, state: str) -> None:
        if self._gate is None or self._gate.ask != state:
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
            if given.waiver is None:
                role = self._gate.role if self._gate else ask.role
                row = trail_row(state, f"ask:{role}", "answered", actor, answer=given.choice)
            else:
                # A waiver decides alone, whatever the policy: a row of its own, with its reason.
                row = trail_row(
                    state,
                    f"waive:{ask.waivable_by}",
                    "waived",
                    actor,
                    answer=given.choice,
                    why=given.waiver,
                )
            if given.evidence is not None:
                row["evidence"] = given.evidence
            decided = given.choice if given.waiver is not None else self._count_answer(row, given)
            self._trail.append(row)
            if decided is not None:
                break
            # A partial approval: the gate stays open, showing who has answered so far.
            workflow.upsert_memo({"lockgate_gate": self._gate_memo(keep_opened_at=True)})
            self._settled()
        self._stop_deadline_timer()
        if ask.evidence_into is not None:
            self._channels[ask.evidence_into] = self._evidence_of(given)
        self._gate = None
        self._driver = actor
        # The next gate reviews the work done from here on: its makers are who drive it.
        self._makers = []
        self._status = "running"
        workflow.upsert_memo({"lockgate_gate": None})
        self._state = self._take(state, decided)
        self._settle_attributes_moving_on(self._state)

    async def _deadline_passes(self, state: str) -> str | None:
        """The open gate's deadline passed undecided: the option it takes, or None once it has
        escalated (a new opening asks the escalation role alone). A trail row says which."""
        gate = self._gate
        assert gate is not None and gate.deadline is not None
        self._stop_deadline_timer()
        deadline = gate.deadline
        if deadline.take is not None:
            self._trail.append(
                trail_row(
                    state,
                    "deadline",
                    "timed_out",
                    DEADLINE_ACTOR,
                    answer=deadline.take,
                    why=f"No decision within {deadline.described()}: the gate takes "
                    f"'{deadline.take}', as its deadline declares.",
                )
            )
            return deadline.take
        self._trail.append(
            trail_row(
                state,
                "deadline",
                "escalated",
                DEADLINE_ACTOR,
                why=f"No decision within {deadline.described()} at gate '{gate.gate}': "
                f"escalated from '{gate.role}' to '{deadline.escalate_to}', who decides alone "
                "at a new opening.",
            )
        )
        await self._open_gate(state, escalated_from=gate)
        return None

    def _start_deadline_timer(self) -> None:
        """Starts the durable timer of the open gate's deadline (once per opening; a run that
        moved to a new history starts it again for what is left)."""
        gate = self._gate
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

    def _count_answer(self, row: TrailRow, given: GivenAnswer) -> str | None:
        """Counts an accepted answer at the open gate: the option its policy has now decided
        (adding the tally to the answer's trail ``row``), or None while it needs more."""
        gate = self._gate
        assert gate is not None
        if gate.policy.single:
            return given.choice  # the row a single answer always had, nothing added
        principal = given.actor.principal or given.actor.actor
        answers = (*gate.answers, GateAnswer(principal, given.choice, given.evidence))
        outcome = tally(gate.policy, answers, gate.options)
        self._gate = dataclasses.replace(gate, answers=answers)
        row["counts"] = dict(outcome.counts)
        row["needed"] = gate.policy.approvals
        if outcome.option is not None:
            row["decided"] = outcome.option
        row["why"] = outcome.why
        return outcome.option

    def _evidence_of(self, last: GivenAnswer | None) -> list[dict[str, Any]]:
        """The evidence of the answers counted at the gate just decided, for its channel."""
        assert self._gate is not None
        if last is None:
            given = []  # the deadline decided it
        elif self._gate.policy.single:
            given = [(last.actor.principal or last.actor.actor, last.choice, last.evidence)]
        else:
            given = [(a.principal, a.option, a.evidence) for a in self._gate.answers]
        return [
            {"by": by, "answer": option, "evidence": dict(evidence)}
            for by, option, evidence in given
            if evidence is not None
        ]

    async def _open_gate(self, state: str, escalated_from: OpenGate | None = None) -> None:
        """Opens gate ``state``: as declared, or, escalated from an opening whose deadline
        passed, asking the escalation role alone, with no deadline of its own."""
        graph = self._graph
        ask = graph.asks[state]
        deadline = ask.deadline if escalated_from is None else None
        self._gate_openings += 1
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
        self._gate = OpenGate(
            graph=graph.name,
            run=self._run_id,
            gate=f"{state}#{self._gate_openings}",
            ask=state,
            role=(
                ask.role
                if escalated_from is None or ask.deadline is None
                else str(ask.deadline.escalate_to)
            ),
            because=ask.because,
            requester=self._requester.actor,
            choices=tuple(choices),
            execution=self._execution,
            subject=gate_subject(target, [choice.to_dict() for choice in choices]),
            makers=tuple(self._makers),
            policy=ask.policy if escalated_from is None else SINGLE_POLICY,
            evidence={option: evidence_shown(model) for option, model in ask.evidence.items()},
            waivable_by=ask.waivable_by,
            deadline=deadline,
            due_at=(
                (workflow.now() + timedelta(seconds=deadline.seconds)).isoformat()
                if deadline is not None
                else None
            ),
            escalated_from=escalated_from.role if escalated_from is not None else None,
            parent=self._parent,
        )
        self._status = "waiting"
        self._gate_opened_at = workflow.now()
        self._record("gate.open", gate=self._gate.gate, role=self._gate.role)
        self._upsert_search_attributes()
        workflow.upsert_memo({"lockgate_gate": self._gate_memo()})
        self._settled()

    async def _await_answer(self) -> GivenAnswer | None:
        """The next accepted answer, or None if the gate's deadline passes first."""
        while self._answer is None and not self._deadline_passed:
            await self._while_waiting()
        answer, self._answer = self._answer, None
        return answer

"""A graph run's state, and how it is shown, indexed and handed to the next run.

The interpreter (:mod:`._graph_workflow`) changes this state; its answers (:mod:`._graph_answers`)
and signals (:mod:`._graph_signals`) read it. Everything here is rebuilt by replay and stored
nowhere else; what it shows holds nothing of what anyone holds.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate

from lockgate.activities._activity_inputs import SETTLING_PROTOCOL, SignalEntry
from lockgate.gates._gate_engine import GivenAnswer, gate_memo, gate_to_judge
from lockgate.gates._gates import OpenGate, ParkedNode
from lockgate.gates._judgements import Judgement
from lockgate.gates._limits import MAX_REFUSED_SIGNALS_KEPT, TRAIL_PAGE, PayloadProblem, shorten
from lockgate.gates._trail import trail_row
from lockgate.graphs._compiled import END_STATE, CompiledGraph
from lockgate.identity._actors import Actor
from lockgate.identity._quoting import a_role
from lockgate.tools._result import ErrorCode
from lockgate.workflows._authority_context import record_once
from lockgate.workflows._carry import RunState
from lockgate.workflows._graph_inputs import StartGraphInput
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
)

__all__ = [
    "VERSION_MEMO",
    "Accepted",
    "CancelAccepted",
    "GraphState",
    "invalid",
]

VERSION_MEMO = "lockgate_version"
"""The memo key of the graph version a run follows (the run writes it unless its starter did)."""

_SHOWN_REASON_CHARS = 600


@dataclass(frozen=True)
class Accepted:
    """An answer or resume a signal carried, accepted by the judge."""

    kind: str
    actor: Actor
    choice: str | None
    evidence: Any = None
    waiver: str | None = None


class CancelAccepted(Exception):
    """Raised where a run waits (a gate, a park) once its requester's cancel was accepted; the
    interpreter catches it and ends the run as cancelled."""


def invalid(sentence: str) -> PayloadProblem:
    """A ``VALIDATION_ERROR`` problem."""
    return PayloadProblem(ErrorCode.VALIDATION_ERROR.value, sentence)


class GraphState:
    """What a graph run is, at any moment; the base of every graph's workflow class."""

    graphs: ClassVar[dict[int, CompiledGraph]] = {}

    # Fixed at the start (or by the carried state).
    _graph: CompiledGraph
    _run_id: str
    _execution: str
    _start: StartGraphInput
    _refusal: PayloadProblem | None
    _carry: str  # "none"; "pending" until a carried state's seal opens; then "open"
    _carried_signals: int  # how many of the inbox's first entries the carried state brought
    _local_tools: frozenset[str] | None  # as the start check recorded them (None: by patch)
    # The protocol the run's start check recorded (None until one ran; see RUN_PROTOCOL).
    _protocol: int | None
    # Who signed the run's start, once its `start` update was accepted.
    _start_actor: Actor | None
    _begun: bool  # the run has settled who started it: no start proof is taken any more
    # The run: what it carries to its next history is exactly `_run`.
    _run: RunState
    _status: str
    # When the open gate opened (None for a gate a carried state brought): for time to answer.
    _gate_opened_at: datetime | None = None
    _parked: ParkedNode | None
    # Callers.
    _inbox: list[SignalEntry]
    _answer: GivenAnswer | None
    _resumer: Actor | None
    # Who cancelled the run (once their `cancel` update was accepted), and why.
    _canceller: Actor | None
    _cancel_reason: str | None
    _waiting_settles: int
    _deadline_timer: asyncio.Future[None] | None  # the open gate's deadline, while it runs
    _deadline_passed: bool
    # Sub-graphs.
    _child: dict[str, Any] | None  # the sub-graph run this run waits for, if any
    _releasing: bool
    _refused_signals_kept: int

    def _fresh_state(self, requester: Actor) -> None:
        self._status = "running"
        self._run = RunState(
            state=self._graph.start,
            channels=dict(self._graph.defaults),
            trail=[],
            taken={},
            visits={},
            requester=requester,
            driver=requester,
            gate=None,
            gate_openings=0,
            parkings=0,
            spent=[],
            settles=0,
        )
        self._parked = None
        self._refused_signals_kept = 0

    def _record(self, event: str, **facts: Any) -> None:
        """An audit record of what the run itself did, as its driver (see :func:`record_once`)."""
        record_once(event, self._run.driver, self._graph.name, self._run_id, **facts)

    def _target(self) -> dict[str, Any] | None:
        target = self._graph.target
        return {target: self._run.channels.get(target)} if target else None

    def _gate_memo(self, *, keep_opened_at: bool = False) -> dict[str, Any]:
        assert self._run.gate is not None
        written = workflow.memo_value("lockgate_gate", default=None) if keep_opened_at else None
        shows = {"target": self._target(), "version": self._graph.version}
        return gate_memo(self._run.gate, shows, written, workflow.now())

    def _gate_to_judge(self) -> OpenGate | None:
        """The gate an answer arriving now would answer (see :func:`gate_to_judge`)."""
        return gate_to_judge(self._run.gate, self._answer)

    def _gate_view(self) -> dict[str, Any]:
        assert self._run.gate is not None
        view = self._run.gate.to_dict()
        view["options"] = self._run.gate.options
        view["target"] = self._target()
        return view

    def _view(
        self, trail_from: int | None = None, trail_limit: int | None = TRAIL_PAGE
    ) -> dict[str, Any]:
        """The run, its trail paged (the newest rows unless ``trail_from``); with no limit, the
        whole trail (a finished run's result, which no stranger can make large: refused rows
        are bounded)."""
        graph = self._graph
        total = len(self._run.trail)
        if trail_limit is None:
            first, rows = 0, list(self._run.trail)
        else:
            first = max(total - trail_limit, 0) if trail_from is None else min(trail_from, total)
            rows = self._run.trail[first : first + trail_limit]
        shown: dict[str, Any] = {
            "ok": self._refusal is None,
            "run_id": self._run_id,
            "execution": self._execution,
            "graph": graph.name,
            "version": graph.version,
            "status": self._status,
            "state": self._run.state if self._run.state != END_STATE else None,
            "requester": self._run.requester.to_dict(),
            "awaiting": self._gate_view() if self._run.gate else None,
            "parked": self._parked.to_dict() if self._parked else None,
            "channels": dict(self._run.channels),
            "budgets": {
                code: {"taken": self._run.taken.get(code, 0), "at_most": at_most}
                for code, at_most in graph.budgets.items()
            },
            "trail": rows,
            "trail_from": first,
            "trail_total": total,
            "settles": self._run.settles,
        }
        if self._run.parent is not None:
            shown["parent"] = dict(self._run.parent)
        if self._child is not None:
            shown["child"] = dict(self._child)
        if self._run.conversations:
            # What an agent step waiting here has used, for whoever decides whether it goes on.
            shown["conversations"] = {
                step: {"messages": len(record["messages"]), **record["total"]}
                for step, record in self._run.conversations.items()
            }
        if self._run.refused_signals_dropped:
            shown["refused_signals_not_kept"] = self._run.refused_signals_dropped
        if self._run.ignored_inputs:
            shown["ignored_inputs"] = list(self._run.ignored_inputs)
        if self._refusal is not None:
            shown["error"] = {"code": self._refusal.code, "message": self._refusal.sentence}
        return shown

    def _settled(self) -> None:
        self._run.settles += 1

    def _quiet_attributes(self) -> bool:
        """Whether the run writes its search attributes only when it settles (a gate opens, a
        node parks), as runs recorded from :data:`SETTLING_PROTOCOL` on do; runs recorded before
        also wrote them when an answer or resume moved them on and when they finished."""
        return (self._protocol or 1) >= SETTLING_PROTOCOL

    def _settle_attributes_moving_on(self, state: str) -> None:
        """After an answer or a resume sends the run on to ``state``: its search attributes
        still name the gate or park just left. They are put right only if the run may still open
        a gate from there; a run that will only run nodes and end leaves them (its memo says no
        gate is open, which ``pending`` reads; ExecutionStatus says when it has ended), one
        billed upsert fewer."""
        if not self._quiet_attributes() or self._graph.may_open_a_gate_from(state):
            self._upsert_search_attributes()
        else:
            self._show_details()

    def _show_details(self) -> None:
        """Tells the Temporal UI what the run is doing (its current details; no write)."""
        workflow.set_current_details(self._details())

    def _upsert_search_attributes(self) -> None:
        """Brings the run's search attributes up to date, writing only what changed, and tells
        the Temporal UI what the run waits for (its current details)."""
        self._show_details()
        current = workflow.info().typed_search_attributes
        wanted = {
            LOCKGATE_GRAPH: self._graph.name,
            LOCKGATE_STATE: self._status,
            LOCKGATE_AWAITING: self._run.gate.role if self._run.gate is not None else None,
        }
        updates: list[SearchAttributeUpdate[Any]] = []
        for key, value in wanted.items():
            if current.get(key) == value:
                continue
            updates.append(key.value_set(value) if value is not None else key.value_unset())
        if updates:
            workflow.upsert_search_attributes(updates)

    def _details(self) -> str:
        """What the run is doing, in the Temporal UI's words (Markdown)."""
        graph = f"**{self._graph.name}** v{self._graph.version}"
        gate = self._run.gate
        if self._status == "waiting" and gate is not None:
            options = ", ".join(
                f"`{choice.option}`" + (" (ends the run)" if choice.ends_run else "")
                for choice in gate.choices
            )
            policy = gate.policy
            if gate.due_at is not None:
                options += f" Its deadline passes at {gate.due_at}."
            if not policy.single:
                options += (
                    f" It needs {policy.approvals} matching answers ({policy.name}); "
                    f"{len(gate.answers)} given so far."
                )
            return (
                f"{graph} waits for **{a_role(gate.role)}** at gate `{gate.gate}`: "
                f"{gate.because} Options: {options}. Answer with `lockgate decide "
                f"{self._run_id} OPTION --as YOU`."
            )
        if self._status == "parked" and self._parked is not None:
            return (
                f"{graph} is parked at node `{self._parked.node}` ({self._parked.operation}): "
                f"`lockgate resume {self._run_id} --as SOMEONE` carries it on."
            )
        if self._status == "refused" and self._refusal is not None:
            return f"{graph}: refused [{self._refusal.code}] {self._refusal.sentence}"
        if self._status == "finished":
            return f"{graph} finished."
        if self._status == "cancelled" and self._canceller is not None:
            return f"{graph} was cancelled by {self._canceller.actor}."
        if self._status == "starting":
            return (
                f"{graph} waits for its signed start proof (`lockgate sign start {self._run_id}`)."
            )
        return f"{graph} is running (at `{self._run.state}`, driven by {self._run.driver.actor})."

    def _sync_memo(self) -> None:
        """Overwrites any lockgate memo the starter wrote: only the run says what it waits for,
        and on which version of its graph it runs."""
        wanted: dict[str, Any] = {
            "lockgate_gate": self._gate_memo() if self._run.gate is not None else None,
            "lockgate_parked": self._parked.to_dict() if self._parked is not None else None,
            VERSION_MEMO: self._graph.version,
        }
        stale: dict[str, Any] = {}
        for key, value in wanted.items():
            written = workflow.memo_value(key, default=None)
            # The gate and park are written as they open and close; only their presence is
            # checked here (a forged one goes). The version is the run's own, always.
            differs = (
                written != value if key == VERSION_MEMO else (written is None) != (value is None)
            )
            if differs:
                stale[key] = value
        if stale:
            workflow.upsert_memo(stale)

    def _record_refused_signal(self, name: str, judged: Judgement) -> None:
        """One trail row per refused signal, up to a bound; beyond it they are only counted
        (each is in the worker's audit log), so strangers cannot bloat the run."""
        if self._refused_signals_kept >= MAX_REFUSED_SIGNALS_KEPT:
            self._run.refused_signals_dropped += 1
            return
        self._refused_signals_kept += 1
        # A signal without a valid proof still came from someone: record them the way an
        # unsigned Temporal caller is recorded everywhere else, so every row's `by` has one shape.
        sender = judged.actor or Actor.unverified("temporal")
        self._run.trail.append(
            trail_row(
                self._run.state,
                f"signal:{name}",
                "refused",
                sender,
                needs=list(judged.needs),
                answer=shorten(judged.choice),
                code=judged.code,
                why=shorten(judged.reason or "", _SHOWN_REASON_CHARS),
            )
        )

    def _spend(self, actor: Actor) -> None:
        """Records the nonce of the proof ``actor`` came with: this run takes it once."""
        if actor.authorization:
            self._run.spent.append(actor.authorization)

    def _refuse_late_signal(self, accepted: Accepted) -> None:
        if accepted.actor.authorization in self._run.spent:
            self._run.spent.remove(accepted.actor.authorization)
        self._record_refused_signal(
            accepted.kind,
            Judgement.refuse(
                ErrorCode.GATE_NOT_PENDING
                if accepted.kind == "decide"
                else ErrorCode.NOTHING_TO_RESUME,
                f"Another {accepted.kind} was accepted while this one was judged.",
                actor=accepted.actor,
                choice=accepted.choice,
            ),
        )

    def _take_signalled(self, accepted: Accepted) -> None:
        """An answer or resume a signal carried, accepted by the judge: taken like an update's,
        unless an update got in while the signal was judged (it was promised, so it stands)."""
        if accepted.kind == "decide" and accepted.choice and self._run.gate is not None:
            if self._answer is None:
                self._answer = GivenAnswer(
                    accepted.choice, accepted.actor, accepted.evidence, accepted.waiver
                )
                return
        elif accepted.kind == "resume" and self._parked is not None and self._resumer is None:
            self._resumer = accepted.actor
            return
        self._refuse_late_signal(accepted)

    def _carried(self) -> dict[str, Any]:
        """The run's state for its next history, with the signals not judged yet."""
        inbox = [dataclasses.asdict(entry) for entry in self._inbox]
        return dataclasses.replace(self._run, inbox=inbox).to_dict()

    def _restore(self, carried: RunState) -> None:
        self._run = dataclasses.replace(carried, inbox=[])
        if self._run.gate is not None:
            self._status = "waiting"
        self._refused_signals_kept = sum(
            1 for row in carried.trail if str(row.get("operation", "")).startswith("signal:")
        )
        self._inbox = [SignalEntry(**entry) for entry in carried.inbox]

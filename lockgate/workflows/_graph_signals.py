"""The signals a graph run receives: how a run takes answers and resumes from the `temporal` CLI
and the Temporal UI.

A signal cannot be refused before it is written (unlike an update), so every signal is measured
on arrival, kept in the run's signal inbox, judged on a worker by the same rules as the update
validators (a regular activity, in arrival order), and recorded: an accepted one moves the run
on, a refused one becomes a trail row, and past a bound only a count. Nothing a stranger signals
is dropped unrecorded, fails the run's task, or keeps it from moving on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError

from lockgate.activities._activity_inputs import JUDGE_SIGNALS, JudgeSignalsInput, SignalEntry
from lockgate.gates._gates import OpenGate, ParkedNode
from lockgate.gates._judgements import Judgement
from lockgate.gates._limits import (
    MAX_ANSWER_BYTES,
    MAX_REFUSED_SIGNALS_KEPT,
    PayloadProblem,
    measure,
    shorten,
)
from lockgate.gates._trail import trail_row
from lockgate.identity._actors import Actor
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._activity_options import LOCAL_RETRY, LOCAL_TIMEOUT, execute_lockgate
from lockgate.workflows._carry import RunState, ThisRun
from lockgate.workflows._graph_inputs import invalid
from lockgate.workflows._trail_rows import record_row

__all__ = ["Accepted", "SignalInbox"]


_SHOWN_REASON_CHARS = 600


_JUDGED_AT_ONCE = 25


_CARRIED_SIGNAL_BYTES = 512 * 1024


@dataclass(frozen=True)
class Accepted:
    """An answer or resume a signal carried, accepted by the judge."""

    kind: str
    actor: Actor
    choice: str | None
    evidence: Any = None
    waiver: str | None = None
    comment: str | None = None


def _problem_dict(problem: PayloadProblem) -> dict[str, str]:
    return {"code": problem.code, "sentence": problem.sentence}


class SignalInbox:
    """A graph run's signals: measured as they arrive, kept until judged, judged in arrival
    order, and recorded when refused.

    Args:
        run: The run's state (its trail, where it is, its open gate, the proofs it spent).
        this: Which run it is (its graph's name and version, as the judge is told them, and the
            execution a signed answer names).
        waiting: Signals received and not judged yet (those a carried state brought).
    """

    def __init__(
        self,
        run: RunState,
        this: ThisRun,
        *,
        waiting: Sequence[SignalEntry] = (),
    ) -> None:
        self._run = run
        self._this = this
        self.waiting: list[SignalEntry] = list(waiting)
        """The signals received and not judged yet, in arrival order."""
        # The refused signals the trail keeps rows of (a carried trail has its own already).
        self._kept = sum(
            1 for row in run.trail if str(row.get("operation", "")).startswith("signal:")
        )

    def receive(self, name: str, args: Sequence[RawValue]) -> None:
        """Keeps signal ``name`` to be judged, measured first.

        Nothing is dropped: a payload too large, too deep or unreadable is still judged (and
        refused, unread), so it is audited and counted in the trail.
        """
        entry = SignalEntry(name=name[:64])
        if len(args) != 1:
            entry.problem = _problem_dict(
                invalid(f"A `{entry.name}` signal takes one payload; it got {len(args)}.")
            )
        elif args[0].payload.ByteSize() > MAX_ANSWER_BYTES:
            entry.problem = _problem_dict(
                PayloadProblem(
                    ErrorCode.PAYLOAD_TOO_LARGE.value,
                    f"The `{entry.name}` signal's payload is larger than "
                    f"{MAX_ANSWER_BYTES // 1024} kB, the most a run takes; it was not read.",
                )
            )
        else:
            try:
                entry.value = workflow.payload_converter().from_payload(args[0].payload)
            except Exception:
                entry.problem = _problem_dict(
                    invalid(f"The `{entry.name}` signal's payload could not be read as JSON.")
                )
            else:
                problem = measure(
                    entry.value, what=f"The `{entry.name}` signal", max_bytes=MAX_ANSWER_BYTES
                )
                if problem is not None:
                    entry.value, entry.problem = None, _problem_dict(problem)
        self.waiting.append(entry)

    async def judge(
        self, *, status: str, gate: OpenGate | None, parked: ParkedNode | None
    ) -> Accepted | None:
        """Judges the signals waiting (in batches, in arrival order) and records the refused:
        the first accepted, if any (its proof is then spent).

        Args:
            status: The run's status.
            gate: The open gate an answer would answer (None when none is open, or an answer
                is already waiting to be counted).
            parked: The node a resume would carry on (None when the run is not parked, or a
                resume is already waiting).
        """
        # At a gate of several approvers each signal is judged against the answers counted
        # before it, so one at a time; a single gate closes on the first accepted.
        several = self._run.gate is not None and not self._run.gate.policy.single
        at_once = 1 if several else _JUDGED_AT_ONCE
        entries, self.waiting = self.waiting[:at_once], self.waiting[at_once:]
        batch = JudgeSignalsInput(
            entries=entries,
            graph=self._this.graph.name,
            run=self._this.run_id,
            execution=self._this.execution,
            status=status,
            gate=gate.to_dict() if gate else None,
            parked=parked.to_dict() if parked else None,
            spent_nonces=list(self._run.spent),
            version=self._this.graph.version,
        )
        try:
            # A regular activity, not a local one: replay hands a local activity its recorded
            # result at once, which can move what the run decides next (continue as new) ahead of
            # signals that came in the same task, and those would never reach the run.
            verdicts = await execute_lockgate(
                JUDGE_SIGNALS,
                batch,
                result_type=list,
                timeout=LOCAL_TIMEOUT,
                retry=LOCAL_RETRY,
                summary=f"judge {len(entries)} signal(s)",
            )
        except ActivityError as error:
            reason = f"It could not be judged ({error.cause or error}); send it again."
            verdicts = [
                Judgement.refuse(ErrorCode.INTERNAL_ERROR, reason).to_dict() for _ in entries
            ]
        accepted: Accepted | None = None
        for entry, verdict in zip(entries, verdicts, strict=True):
            judged = Judgement.from_dict(verdict)
            if judged.allowed and judged.actor is not None and accepted is None:
                self._run.spend(judged.actor)
                accepted = Accepted(
                    entry.name,
                    judged.actor,
                    judged.choice,
                    judged.evidence,
                    judged.waiver,
                    judged.comment,
                )
            else:
                self._record_refused(entry.name, judged)
        return accepted

    def refuse_late(self, accepted: Accepted) -> None:
        """Refuses an answer or resume the judge accepted, which another (an update's) got in
        ahead of while it was judged: its proof is not spent after all."""
        if accepted.actor.authorization in self._run.spent:
            self._run.spent.remove(accepted.actor.authorization)
        self._record_refused(
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

    def carry(self) -> list[dict[str, Any]]:
        """The signals waiting, as the run's next history is handed them: those that fit its
        start; the rest are refused (and counted), so that a flood of signals can neither stop
        the run moving on nor be lost."""
        carried: list[SignalEntry] = []
        budget = _CARRIED_SIGNAL_BYTES
        for entry in self.waiting:
            size = 64 + (MAX_ANSWER_BYTES if entry.value is not None else 0)
            if size > budget:
                self._record_refused(
                    entry.name,
                    Judgement.refuse(
                        ErrorCode.RATE_LIMITED,
                        "It arrived as the run moved to a new history with more signals waiting "
                        "than a run carries over; it was not judged. Send it again.",
                    ),
                )
                continue
            budget -= size
            carried.append(entry)
        self.waiting = carried
        return [dataclasses.asdict(entry) for entry in carried]

    def _record_refused(self, name: str, judged: Judgement) -> None:
        """One trail row per refused signal, up to a bound; beyond it they are only counted
        (each is in the worker's audit log), so strangers cannot bloat the run."""
        if self._kept >= MAX_REFUSED_SIGNALS_KEPT:
            self._run.refused_signals_dropped += 1
            return
        self._kept += 1
        # A signal without a valid proof still came from someone: record them the way an
        # unsigned Temporal caller is recorded everywhere else, so every row's `by` has one shape.
        sender = judged.actor or Actor.unverified("temporal")
        record_row(
            self._run.trail,
            trail_row(
                self._run.state,
                f"signal:{name}",
                "refused",
                sender,
                needs=list(judged.needs),
                answer=shorten(judged.choice),
                code=judged.code,
                why=shorten(judged.reason or "", _SHOWN_REASON_CHARS),
            ),
        )

"""Signals: how a run takes answers and resumes from the `temporal` CLI and the Temporal UI.

A signal cannot be refused before it is written (unlike an update), so every signal is measured
on arrival, kept in an inbox, judged on a worker by the same rules as the update validators (a
regular activity, in arrival order), and recorded: an accepted one moves the run on, a refused
one becomes a trail row, and past a bound only a count. Nothing a stranger signals is dropped
unrecorded, fails the run's task, or keeps it from moving on.
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError

from lockgate.activities._activity_inputs import JUDGE_SIGNALS, JudgeSignalsInput, SignalEntry
from lockgate.gates._judgements import Judgement
from lockgate.gates._limits import MAX_ANSWER_BYTES, PayloadProblem, measure
from lockgate.tools._result import ErrorCode
from lockgate.workflows._activity_options import LOCAL_RETRY, LOCAL_TIMEOUT
from lockgate.workflows._graph_state import Accepted, GraphState, invalid

__all__ = ["GraphSignals"]

_JUDGED_AT_ONCE = 25
_CARRIED_SIGNAL_BYTES = 512 * 1024


class GraphSignals(GraphState):
    """The signal handler and the judging of what signals brought."""

    @workflow.signal(dynamic=True)
    def receive_signal(self, name: str, args: Sequence[RawValue]) -> None:
        """Every signal: ``decide`` and ``resume`` are judged on the worker; others refused.

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
        self._inbox.append(entry)

    async def _judge_inbox(self) -> Accepted | None:
        """Judges the signals waiting (in batches, in arrival order) and records the refused."""
        # At a gate of several approvers each signal is judged against the answers counted
        # before it, so one at a time; a single gate closes on the first accepted.
        several = self._run.gate is not None and not self._run.gate.policy.single
        at_once = 1 if several else _JUDGED_AT_ONCE
        entries, self._inbox = self._inbox[:at_once], self._inbox[at_once:]
        batch = JudgeSignalsInput(
            entries=entries,
            graph=self._graph.name,
            run=self._run_id,
            execution=self._execution,
            status=self._status,
            gate=self._run.gate.to_dict() if self._run.gate and self._answer is None else None,
            parked=self._parked.to_dict() if self._parked and self._resumer is None else None,
            spent_nonces=list(self._run.spent),
            version=self._graph.version,
        )
        try:
            # A regular activity, not a local one: replay hands a local activity its recorded
            # result at once, which can move what the run decides next (continue as new) ahead of
            # signals that came in the same task, and those would never reach the run.
            verdicts = await workflow.execute_activity(
                JUDGE_SIGNALS,
                batch,
                result_type=list,
                start_to_close_timeout=LOCAL_TIMEOUT,
                retry_policy=LOCAL_RETRY,
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
            if judged.accepted and judged.actor is not None and accepted is None:
                self._spend(judged.actor)
                accepted = Accepted(
                    entry.name, judged.actor, judged.choice, judged.evidence, judged.waiver
                )
            else:
                self._record_refused_signal(entry.name, judged)
        return accepted

    def _bound_inbox_to_carry(self) -> None:
        """Keeps the signals waiting that fit the next run's start; the rest are refused (and
        counted), so that a flood of signals can neither stop the run moving on nor be lost."""
        carried: list[SignalEntry] = []
        budget = _CARRIED_SIGNAL_BYTES
        for entry in self._inbox:
            size = 64 + (MAX_ANSWER_BYTES if entry.value is not None else 0)
            if size > budget:
                self._record_refused_signal(
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
        self._inbox = carried


def _problem_dict(problem: PayloadProblem) -> dict[str, str]:
    return {"code": problem.code, "sentence": problem.sentence}

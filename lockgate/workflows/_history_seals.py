"""What a run believes of its own history: only what this deployment's workers sealed.

History is evidence, not trust. Whoever completes a run's tasks writes its history, and anyone
with namespace access can poll lockgate's task queue (a plain poller that wins tasks, or a
Worker Versioning build they make current): their worker can accept an update lockgate's
validators would refuse, record any result for a local activity, and complete an activity with
any result. Validators never run on replay, so a real worker replaying that history would
believe it.

So a run reads back nothing it acts on without the seal of the worker that wrote it (see
:mod:`lockgate.activities._sealed_results`): every update that carries authority (a start,
answer, resume, cancel, call or confirmation), every result of lockgate's own checks, of a tool,
of a model request and of a signal judgement, and how a sub-graph run ended. A claim without a
good seal stops the run: its workflow task fails with a sentence naming the claim (and is tried
again, so the run waits, having done nothing more, until an operator resets it to before the
claim), the worker writes the audit record ``history.refused``, and
``lockgate_refusals{event="history.refused"}`` counts it. A history whose commands differ from
lockgate's own fails the same task as nondeterministic, the SDK's own refusal.

Runs started before lockgate sealed its history hold no seals. A worker believes their unsealed
history only when told to, for runs started before a moment its operator names
(``LockgatePlugin(unsealed_runs_before=...)``): the server's start time of a run is the one thing
about it no worker writes.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.common import RawValue

from lockgate._errors import LockgateError
from lockgate.activities._sealed_results import (
    ENDED,
    RESULT,
    ended_binding,
    result_binding,
    seal_of,
    sealed_payload,
)
from lockgate.identity._seals import WorkerSecret
from lockgate.tools._audit import AuditLogger
from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "HistorySeals",
    "UnsealedHistoryError",
    "accepted_here",
    "call_id",
    "history_seals",
    "opened_end",
    "opened_result",
    "sealed_end",
    "using_history_seals",
]


class UnsealedHistoryError(LockgateError):
    """A run's history holds a claim no worker of this deployment sealed.

    Raised in workflow code, outside the workflow's failure types, so the run's task fails with
    this sentence and is tried again: the run does nothing more until an operator resets it to
    before the claim (once the worker that wrote it is stopped), or lists again a worker secret
    key retired too early.
    """


@dataclass(frozen=True)
class HistorySeals:
    """How one worker opens the seals in the histories it runs and replays.

    Args:
        secret: The worker secret: every key it lists opens the seals it made.
        audit: Where a history that is not believed is recorded.
        unsealed_runs_before: Runs started before this moment (by the server's clock) were
            recorded by a lockgate that did not seal its history: their unsealed history is
            believed, as it was then. None (the default): every run's history must be sealed.
    """

    secret: WorkerSecret | None
    audit: AuditLogger
    unsealed_runs_before: datetime | None = None

    def believes_unsealed(self) -> bool:
        """Whether the run running now started before its history was sealed."""
        cutoff = self.unsealed_runs_before
        return cutoff is not None and workflow.info().workflow_start_time < cutoff

    def seal(self, purpose: str, binding: Mapping[str, Any]) -> str:
        """A seal under the current key (see :meth:`WorkerSecret.seal`)."""
        if self.secret is None:
            self.refuse("a claim", None, why="this worker holds no worker secret to seal it by")
        return self.secret.seal(purpose, binding)

    def opens(self, seal: object, purpose: str, binding: Mapping[str, Any]) -> bool:
        """Whether ``seal`` was made for exactly ``binding`` by a key of this worker's secret."""
        return self.secret is not None and self.secret.opens(seal, purpose, binding)

    def _key_ids(self) -> tuple[str, ...]:
        return self.secret.key_ids if self.secret is not None else ()

    def refuse(self, claim: str, seal: object, *, why: str | None = None) -> NoReturn:
        """Stops the run at ``claim``: audits it, then fails the run's task saying so.

        Args:
            claim: What the history holds, as the sentence names it ("the `decide` update
                'u-1'", "the result of lockgate.tool:publish").
            seal: The seal it carried, if any (its key is named when this worker lacks it).
            why: Why the seal does not open, when known better than "no seal of ours".
        """
        info = workflow.info()
        key = WorkerSecret.key_of(seal)
        if why is None and key is not None and key not in self._key_ids():
            why = (
                f"it is sealed with the key {key!r}, which this worker's secret does not list "
                "(if that key was retired while runs it sealed were open, list it again)"
            )
        why = why or (
            "it carries no seal of this deployment's workers: a worker without the worker "
            "secret wrote it, one polling lockgate's task queue"
        )
        sentence = (
            f"Run '{info.workflow_id}' ({info.workflow_type}) stops here: its history holds "
            f"{claim}, and {why}. Nothing of it is believed and nothing after it runs. Stop "
            "any worker on this task queue that is not this deployment's, then reset the run "
            "to the workflow task before it (`temporal workflow reset`)."
        )
        self.audit.refused(
            "history.refused",
            ErrorCode.UNAUTHORIZED,
            sentence,
            graph=info.workflow_type,
            run=info.workflow_id,
            claim=claim,
        )
        raise UnsealedHistoryError(sentence)


_SEALS: contextvars.ContextVar[HistorySeals | None] = contextvars.ContextVar(
    "lockgate_history_seals", default=None
)

_ACCEPTED_HERE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "lockgate_accepted_here", default=False
)


def using_history_seals(seals: HistorySeals, *, accepted_here: bool = False) -> None:
    """Makes ``seals`` the ones the code of the task running now opens by, and says whether the
    update handler it runs was accepted by this worker's own validator. lockgate's interceptor
    calls it as a run's task and each update handler's task starts (each a task, and so a
    context, of its own: nothing to reset)."""
    _SEALS.set(seals)
    _ACCEPTED_HERE.set(accepted_here)


def history_seals() -> HistorySeals:
    """The seals of the worker running this workflow; a run on a worker built without
    lockgate's plugin believes nothing of its history."""
    seals = _SEALS.get()
    if seals is None:
        raise UnsealedHistoryError(
            f"Run '{workflow.info().workflow_id}' runs on a worker built without lockgate's "
            "plugin, which holds the worker secret its history is checked by: add "
            "LockgatePlugin to the worker."
        )
    return seals


def accepted_here() -> bool:
    """Whether the update handler running now was accepted by this worker's own validator (it
    runs in the same workflow task, never on replay)."""
    return _ACCEPTED_HERE.get()


def call_id() -> str | None:
    """The activity id of the next activity of lockgate's whose result this run reads back:
    ``lockgate/<history>/<n>``, one of a kind in the run's history (``history`` is the run id
    the history began with, kept across resets), so a seal made on one call's result opens for
    no other. None for a run that believes unsealed history: its activities keep the ids they
    were recorded with."""
    if history_seals().believes_unsealed():
        return None
    instance = workflow.instance()
    made = getattr(instance, _CALLS, 0) + 1
    setattr(instance, _CALLS, made)
    return f"lockgate/{workflow.info().original_execution_run_id}/{made}"


_CALLS = "__lockgate_calls__"
"""The attribute of a run's workflow instance counting :func:`call_id`'s ids."""


def opened_result(
    activity: str, activity_id: str | None, recorded: RawValue, result_type: type
) -> Any:
    """What ``activity`` (scheduled with ``activity_id``, see :func:`call_id`) returned, as the
    run's history records it (the payload, scheduled with ``result_type=RawValue``), read as
    ``result_type`` once the seal of the worker that ran it opens.

    Raises:
        UnsealedHistoryError: It carries no good seal, and the run does not believe unsealed
            history (it started after its operator's ``unsealed_runs_before``).
    """
    seals = history_seals()
    payload = recorded.payload
    if activity_id is not None and not seals.believes_unsealed():
        seal = seal_of(payload)
        binding = result_binding(workflow.info().workflow_id, activity, activity_id, payload)
        if not seals.opens(seal, RESULT, binding):
            claim = f"a result of {activity}" + ("" if seal is not None else " with no seal")
            seals.refuse(claim, seal)
    return workflow.payload_converter().from_payload(payload, result_type)


def sealed_end(ended: dict[str, Any]) -> Any:
    """A run's result, sealed for the parent run that started it when it is a sub-graph run
    (the server names its parent): written here, its seal in the payload's metadata. Any other
    run's result as it is."""
    info = workflow.info()
    if info.parent is None:
        return ended
    payload = workflow.payload_converter().to_payload(ended)
    binding = ended_binding(
        info.workflow_id, info.first_execution_run_id, info.parent.workflow_id, payload
    )
    return RawValue(sealed_payload(payload, history_seals().seal(ENDED, binding)))


def opened_end(child: str, execution: str | None, recorded: RawValue) -> dict[str, Any]:
    """How this run's sub-graph run ``child`` ended, as this run's history records it (started
    with ``result_type=RawValue``), once the seal of the worker that ended it opens."""
    seals = history_seals()
    payload = recorded.payload
    if not seals.believes_unsealed():
        seal = seal_of(payload)
        binding = ended_binding(child, execution or "", workflow.info().workflow_id, payload)
        if not seals.opens(seal, ENDED, binding):
            seals.refuse(f"the end of its sub-graph run '{child}'", seal)
    ended = workflow.payload_converter().from_payload(payload, dict)
    return dict(ended) if isinstance(ended, dict) else {}

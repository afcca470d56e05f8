"""How lockgate's workflows refuse what they are sent and end when they did not do what they
were asked: a validator's refusal is audited once and never stored, and a refused run ends with
its refusal, never as a run that did its work. (A start that cannot even be decoded fails the run:
:mod:`._undecodable_starts`.) Everything a caller sends after the start is refused in validators
or judged and recorded, never raised.
"""

from __future__ import annotations

from typing import Any, NoReturn

from temporalio import workflow
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from lockgate.activities._activity_inputs import SETTLING_PROTOCOL
from lockgate.activities._refusal import Refusal
from lockgate.gates._judgements import Judgement
from lockgate.tools._audit import AuditLogger
from lockgate.tools._tool_result import ErrorCode

__all__ = ["outcome_of", "refusals_complete", "refuse_update", "refused_run"]


def refuse_update(
    audit: AuditLogger | None, event: str, judgement: Judgement, **facts: Any
) -> NoReturn:
    """Refuses an update in its validator: audits the refusal as ``event`` with ``facts``
    (validators never replay, so exactly once), then raises it, never written to history."""
    if audit is not None:
        audit.refused(
            event,
            judgement.code,
            judgement.reason,
            actor=judgement.actor.to_dict() if judgement.actor else None,
            **facts,
        )
    raise Refusal(
        judgement.code or ErrorCode.VALIDATION_ERROR.value,
        judgement.reason or "",
        never_stored=True,
    )


def refused_run(code: str, sentence: str, outcome: dict[str, Any]) -> Refusal:
    """The failure a refused run ends with: its code as the type, its sentence as the message
    (what the Temporal UI shows on the run's page, in red), and what the run would have
    returned as its one detail, so a client reads the same dict either way (:func:`outcome_of`).
    """
    return Refusal(code, sentence, outcome)


def refusals_complete(protocol: int | None, patch: str) -> bool:
    """Whether a run ends refused as a completed run, its result the refusal (as runs do from
    :data:`SETTLING_PROTOCOL` on), rather than failed with it (as runs recorded before did). The
    run's start check recorded its ``protocol``; a run refused before any check ran decides by
    the workflow patch ``patch``."""
    if protocol is not None:
        return protocol >= SETTLING_PROTOCOL
    return workflow.patched(patch)


def outcome_of(error: WorkflowFailureError) -> dict[str, Any] | None:
    """What a run that ended with :func:`refused_run` would have returned; None for any other
    failure."""
    cause = error.cause
    if isinstance(cause, ApplicationError) and cause.details:
        outcome = cause.details[0]
        if isinstance(outcome, dict):
            return outcome
    return None

"""Sealed results: what a run reads back from its history carries the seal of the worker that
wrote it.

A run's history is written by whoever completes its tasks: the worker that completes a workflow
task writes which updates the run accepted and what its local activities returned; the worker
that completes an activity task writes that activity's result. Anyone with namespace access can
poll lockgate's task queue and complete those tasks with whatever they like. So each record a
lockgate run reads back and acts on carries a seal, an HMAC under the worker secret made by the
worker that wrote it:

- an activity's result (a tool's, a model request's, a signal judgement's, one of lockgate's own
  local checks'), over the result's bytes and the activity's type, workflow id and activity id
  as the server names them to the activity (the run makes the id one of a kind in its history):
  :func:`result_binding`, made by :class:`ResultSealer` as the result leaves the activity and
  carried in the result payload's metadata (:data:`SEAL_METADATA`);
- an update the run accepted, over its id, name and input and the run's execution and history:
  :func:`accepted_binding`, made by the workflow code that ran the update's validator and
  recorded by the local activity ``lockgate.record_acceptance`` in the same workflow task;
- how a sub-graph run ended, over its result's bytes and the child and parent as the server
  names them: :func:`ended_binding`.

The run opens each seal before it believes what the seal is on
(:mod:`lockgate.workflows._history_seals`). A seal over the bytes as written needs no second
writing of the result and no canonical form of it: the run checks exactly what it reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from temporalio import activity
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

from lockgate.activities._activity_inputs import (
    JUDGE_SIGNALS,
    MODEL_CALL,
    OPEN_START,
    OPEN_WORKFLOW_START,
    PREPARE_CALL,
    TOOL_ACTIVITY_PREFIX,
    VERIFY_CARRIED,
)
from lockgate.activities._sealed_calls import as_data, sealed_by_own_run
from lockgate.identity._canonical import fingerprint
from lockgate.identity._seals import WorkerSecret

__all__ = [
    "ACCEPTED",
    "ENDED",
    "RESULT",
    "SEAL_METADATA",
    "ResultSealer",
    "accepted_binding",
    "ended_binding",
    "result_binding",
    "seal_of",
    "sealed_payload",
]

RESULT = "result"
"""The purpose of a seal on an activity's result."""

ACCEPTED = "accepted"
"""The purpose of a seal on an update a run accepted."""

ENDED = "subgraph-end"
"""The purpose of a seal on how a sub-graph run ended, as its parent reads it."""

SEAL_METADATA = "lockgate-result-seal"
"""The metadata key of a sealed result's payload that holds its seal."""

_CHECKS = frozenset({OPEN_START, VERIFY_CARRIED, PREPARE_CALL, OPEN_WORKFLOW_START})
"""lockgate's own local checks: their results are sealed whatever their input carries."""

_SEALED_CALLS = (TOOL_ACTIVITY_PREFIX, JUDGE_SIGNALS, MODEL_CALL)
"""The activities whose results are sealed when lockgate's own run scheduled them (its seal on
their input opens): anyone else's workflow gets their results as they are."""


def result_binding(
    workflow_id: str, activity_type: str, activity_id: str, result: Payload
) -> dict[str, Any]:
    """What the seal on an activity's result vouches for: this result, of this activity, which
    a run of this workflow id scheduled under this activity id.

    Args:
        workflow_id: The scheduling run's workflow id, as the server names it to the activity.
        activity_type: The activity's type.
        activity_id: Its id, which lockgate's runs make one of a kind in their history
            (``lockgate/<history>/<n>``, see :func:`~lockgate.workflows._history_seals.call_id`).
        result: Its result as written: the run reads back exactly these bytes.
    """
    return {
        "workflow_id": workflow_id,
        "activity": activity_type,
        "activity_id": activity_id,
        "result": _digest(result),
    }


def accepted_binding(
    workflow_id: str,
    execution: str,
    history: str,
    update_id: str,
    update: str,
    arguments: Sequence[Any],
) -> dict[str, Any]:
    """What the seal on an accepted update vouches for: a worker holding the secret ran its
    validator, which accepted exactly this update.

    Args:
        workflow_id: The run's workflow id.
        execution: Its execution (first run id): the same across continue-as-new and resets.
        history: The run id its history began with (the same across resets, new at each
            continue-as-new), so a seal recorded in one history is good in no other.
        update_id: The update's id (one per update in a run).
        update: The update's name.
        arguments: Its arguments, as the handler received them.
    """
    return {
        "workflow_id": workflow_id,
        "execution": execution,
        "history": history,
        "update_id": update_id,
        "update": update,
        "input": fingerprint(as_data(list(arguments))),
    }


def ended_binding(workflow_id: str, execution: str, parent: str, ended: Payload) -> dict[str, Any]:
    """What the seal on a sub-graph run's end vouches for: this execution of this run, a child
    of a run of workflow id ``parent`` (as the server names it), ended with this result."""
    return {
        "workflow_id": workflow_id,
        "execution": execution,
        "parent": parent,
        "ended": _digest(ended),
    }


def sealed_payload(payload: Payload, seal: str) -> Payload:
    """``payload`` carrying ``seal`` in its metadata, beside what it holds."""
    sealed = Payload()
    sealed.CopyFrom(payload)
    sealed.metadata[SEAL_METADATA] = seal.encode("utf-8")
    return sealed


def seal_of(payload: Payload) -> str | None:
    """The seal a payload carries in its metadata, if any."""
    seal = payload.metadata.get(SEAL_METADATA)
    return seal.decode("utf-8", "replace") if seal is not None else None


def _digest(payload: Payload) -> str:
    """What a payload holds, as a seal binds it: its encoding and its bytes (not its seal)."""
    encoding = payload.metadata.get("encoding", b"")
    return "sha256:" + hashlib.sha256(encoding + b"\0" + payload.data).hexdigest()


class ResultSealer(ActivityInboundInterceptor):
    """Seals the results of lockgate's own activities as they leave the worker: its local checks,
    and the tool, model and signal-judging activities lockgate's runs scheduled (their input's
    seal opens). Any other activity's result passes as it is.

    Args:
        next: The next interceptor.
        secret: The worker secret; a worker without one seals nothing (and lockgate's plugin
            refuses to be built without one).
    """

    def __init__(self, next: ActivityInboundInterceptor, secret: WorkerSecret | None) -> None:
        super().__init__(next)
        self._secret = secret

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        """Runs the activity; writes a result of lockgate's own here, its seal in the payload's
        metadata, so the run reads back exactly the bytes that were sealed."""
        result = await self.next.execute_activity(input)
        if self._secret is None or len(input.args) != 1 or not self._sealed(input.args[0]):
            return result
        info = activity.info()
        payload = activity.payload_converter().to_payload(result)
        binding = result_binding(
            info.workflow_id or "", info.activity_type, info.activity_id, payload
        )
        return RawValue(sealed_payload(payload, self._secret.seal(RESULT, binding)))

    def _sealed(self, call: Any) -> bool:
        info = activity.info()
        if info.activity_type in _CHECKS:
            return info.is_local
        return info.activity_type.startswith(_SEALED_CALLS) and sealed_by_own_run(
            self._secret, call
        )

"""Sealed results: what a run reads back from its history carries the seal of the worker that
wrote it.

A run's history is written by whoever completes its tasks: the worker that completes a workflow
task writes which updates the run accepted and what its local activities returned; the worker
that completes an activity task writes that activity's result. Anyone with namespace access can
poll lockgate's task queue and complete those tasks with whatever they like. So each record a
lockgate run reads back and acts on carries a seal, an HMAC under the worker secret made by the
worker that wrote it:

- an activity's result (a tool's, a model request's, a signal judgement's, one of lockgate's own
  local checks'), over the result and the activity's type, workflow id and activity id as the
  server names them to the activity (the run makes the id one of a kind in its history):
  :func:`result_binding`, made by :class:`ResultSealer` as the result leaves the activity;
- an update the run accepted, over its id, name and input and the run's execution and history:
  :func:`accepted_binding`, made by the workflow code that ran the update's validator and
  recorded by the local activity ``lockgate.record_acceptance`` in the same workflow task.

The run opens each seal before it believes what the seal is on
(:mod:`lockgate.workflows._history_seals`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from temporalio import activity
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
    "ResultSealer",
    "accepted_binding",
    "ended_binding",
    "envelope_parts",
    "result_binding",
    "sealed_envelope",
]

RESULT = "result"
"""The purpose of a seal on an activity's result."""

ACCEPTED = "accepted"
"""The purpose of a seal on an update a run accepted."""

ENDED = "subgraph-end"
"""The purpose of a seal on how a sub-graph run ended, as its parent reads it."""

_CHECKS = frozenset({OPEN_START, VERIFY_CARRIED, PREPARE_CALL, OPEN_WORKFLOW_START})
"""lockgate's own local checks: their results are sealed whatever their input carries."""

_SEALED_CALLS = (TOOL_ACTIVITY_PREFIX, JUDGE_SIGNALS, MODEL_CALL)
"""The activities whose results are sealed when lockgate's own run scheduled them (its seal on
their input opens): anyone else's workflow gets their results as they are."""


def result_binding(
    workflow_id: str, activity_type: str, activity_id: str, result: Any
) -> dict[str, Any]:
    """What the seal on an activity's result vouches for: this result, of this activity, which
    a run of this workflow id scheduled under this activity id.

    Args:
        workflow_id: The scheduling run's workflow id, as the server names it to the activity.
        activity_type: The activity's type.
        activity_id: Its id, which lockgate's runs make one of a kind in their history
            (``lockgate/<history>/<n>``, see :func:`~lockgate.workflows._history_seals.call_id`).
        result: Its result as JSON data: what the run reads back.
    """
    return {
        "workflow_id": workflow_id,
        "activity": activity_type,
        "activity_id": activity_id,
        "result": fingerprint(result),
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


def ended_binding(workflow_id: str, execution: str, parent: str, ended: Any) -> dict[str, Any]:
    """What the seal on a sub-graph run's end vouches for: this execution of this run, a child
    of a run of workflow id ``parent`` (as the server names it), ended so."""
    return {
        "workflow_id": workflow_id,
        "execution": execution,
        "parent": parent,
        "ended": fingerprint(ended),
    }


def sealed_envelope(result: Any, seal: str) -> dict[str, Any]:
    """How a sealed result travels: ``{"result": ..., "seal": "lgs1..."}``."""
    return {"result": result, "seal": seal}


def envelope_parts(recorded: Any) -> tuple[Any, str] | None:
    """The result and the seal of a recorded envelope; None for anything else."""
    if isinstance(recorded, dict) and recorded.keys() == {"result", "seal"}:
        seal = recorded["seal"]
        if isinstance(seal, str):
            return recorded["result"], seal
    return None


def as_written(value: Any) -> Any:
    """``value`` as the run reads it back: written by this activity's payload converter, and
    read as JSON (a datetime becomes its text, a tuple a list, a model its fields)."""
    payload = activity.payload_converter().to_payload(value)
    if payload.metadata.get("encoding") != b"json/plain":
        return None if value is None else {"encoding": payload.metadata.get("encoding")}
    return json.loads(payload.data)


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
        """Runs the activity; seals its result when it is one of lockgate's own."""
        result = await self.next.execute_activity(input)
        if self._secret is None or len(input.args) != 1 or not self._sealed(input.args[0]):
            return result
        info = activity.info()
        written = as_written(result)
        binding = result_binding(
            info.workflow_id or "", info.activity_type, info.activity_id, written
        )
        return sealed_envelope(written, self._secret.seal(RESULT, binding))

    def _sealed(self, call: Any) -> bool:
        info = activity.info()
        if info.activity_type in _CHECKS:
            return info.is_local
        return info.activity_type.startswith(_SEALED_CALLS) and sealed_by_own_run(
            self._secret, call
        )

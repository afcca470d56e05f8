"""Small helpers several test modules share."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from lockgate.gating import WorkerSecret

REPOSITORY = Path(__file__).resolve().parent.parent
"""The repository's root: where `lockgate` subprocesses run and `tests` import from."""


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SECRET = WorkerSecret.generate("test")
"""The worker secret of tests that start workers without their own Identities."""


async def failed_workflow_tasks(handle: Any) -> list[Any]:
    """The WorkflowTaskFailed events of a run's history: a wedged or failing task shows here.

    Left out: tasks the server turned down because signals arrived while they ran (cause
    UNHANDLED_COMMAND, typically a continue-as-new); the worker then takes the next task with
    those signals, which is Temporal working as designed, not a failure of the run.
    """
    from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause

    unhandled = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND
    history = await handle.fetch_history()
    return [
        event
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        and event.workflow_task_failed_event_attributes.cause != unhandled
    ]


async def outcome(handle: Any) -> Any:
    """What a lockgate run returned; for a refused run, which fails with its refusal (never a
    completed run in the Temporal UI), the same dict, read from the failure as lockgate's own
    clients read it. Any other failure is raised."""
    from temporalio.client import WorkflowFailureError

    from lockgate.workflows._failures import outcome_of

    try:
        return await handle.result()
    except WorkflowFailureError as error:
        found = outcome_of(error)
        if found is None:
            raise
        return found

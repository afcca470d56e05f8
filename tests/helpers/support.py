"""Small helpers several test modules share."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from lockgate import Signer, WorkerSecret
from lockgate.contracts import ErrorDetail, GateView, ParkedView, RunView, ToolCallResult

if TYPE_CHECKING:
    from temporalio.api.history.v1 import HistoryEvent
    from temporalio.client import Client, WorkflowHandle, WorkflowUpdateHandle

    from lockgate import ToolRegistry
    from lockgate.tools._tool import ToolDefinition

REPOSITORY = Path(__file__).resolve().parents[2]
"""The repository's root: where `lockgate` subprocesses run and `tests` import from."""


SECRET = WorkerSecret.generate("test")
"""The worker secret of tests that start workers without their own Identities."""


def require_installed(missing: bool, what: str, how: str) -> None:
    """Where ``missing``, skips the importing test module saying ``how`` installs ``what`` —
    or, with ``CI`` set, fails: CI installs every tool the suite needs, and a test skipped
    there would pass unseen."""
    if not missing:
        return
    if os.environ.get("CI"):
        raise RuntimeError(f"CI must install {what} ({how}) for these tests")
    pytest.skip(f"no {what} here: {how} runs these tests", allow_module_level=True)


def definition_of(registry: ToolRegistry, name: str) -> ToolDefinition:
    """The definition of a tool ``registry`` must hold: the test fails if it holds none."""
    definition = registry.get(name)
    assert definition is not None, f"no tool named {name!r} is registered"
    return definition


def audit_facts(record: logging.LogRecord) -> dict[str, Any]:
    """The facts lockgate's AuditLogger put on ``record`` as ``record.lockgate_audit``.

    They arrive through ``extra=``, which sets an attribute typeshed's ``LogRecord`` cannot
    declare; reading it from ``__dict__`` keeps the type without an ignore, and a record without
    them still fails the test (with a KeyError instead of an AttributeError).
    """
    facts: dict[str, Any] = record.__dict__["lockgate_audit"]
    return facts


async def failed_workflow_tasks(handle: WorkflowHandle[Any, Any]) -> list[HistoryEvent]:
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


EMPTY_WORKFLOW_TASK = [
    "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED",
    "EVENT_TYPE_WORKFLOW_TASK_STARTED",
    "EVENT_TYPE_WORKFLOW_TASK_COMPLETED",
]
"""The events of a workflow task that did nothing, as event type names."""


def patches(events: list[HistoryEvent]) -> list[str]:
    """The patches a run's history records (its ``core_patch`` markers), in order."""
    import json

    from temporalio.api.enums.v1 import EventType

    found = []
    for event in events:
        attributes = event.marker_recorded_event_attributes
        if (
            event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
            and attributes.marker_name == "core_patch"
        ):
            found.append(str(json.loads(attributes.details["patch-data"].payloads[0].data)["id"]))
    return found


def upserted_search_attributes(events: list[HistoryEvent]) -> list[str]:
    """The search attributes a run's history upserts, one name per upsert, in order."""
    upserts = [
        event.upsert_workflow_search_attributes_event_attributes.search_attributes
        for event in events
        if event.HasField("upsert_workflow_search_attributes_event_attributes")
    ]
    return [name for upserted in upserts for name in upserted.indexed_fields]


def assert_nothing_written_but_a_workflow_task(before: list[str], after: list[str]) -> None:
    """A history (as event type names) that grew by nothing, or by one empty workflow task.

    A refused update writes nothing of itself. The server runs it in a speculative workflow task
    that it drops, unless the task before left more than ten events (a workflow task of several
    local activities does): then it keeps that task, empty, so as not to ship those events again.
    """
    assert after[: len(before)] == before, "the history changed before its end"
    assert after[len(before) :] in ([], EMPTY_WORKFLOW_TASK), after[len(before) :]


def update_refused(error: BaseException) -> dict[str, str]:
    """``{code, message}`` of the refusal an update's validator raised; the test fails for any
    other error."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.exceptions import ApplicationError

    assert isinstance(error, WorkflowUpdateFailedError), repr(error)
    cause = error.cause
    assert isinstance(cause, ApplicationError), repr(cause)
    return {"code": str(cause.type), "message": cause.message}


async def send_decide(client: Client, run_id: str, answer: Any) -> dict[str, Any]:
    """Sends ``answer`` as the update ``decide`` as it is, without GraphClient's help."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.exceptions import ApplicationError

    handle = client.get_workflow_handle(run_id)
    try:
        result: dict[str, Any] = await handle.execute_update("decide", answer, result_type=dict)
    except WorkflowUpdateFailedError as error:
        assert isinstance(error.cause, ApplicationError), error.cause
        return {"ok": False, "error": {"code": error.cause.type, "message": error.cause.message}}
    return result


async def prove_start(
    handle: WorkflowHandle[Any, Any],
    signer: Signer,
    inputs: dict[str, Any],
    *,
    graph: str | None = None,
    version: int | None = None,
) -> dict[str, Any]:
    """Sends a graph run started ``signed=True`` by hand the signed ``start`` that names the
    execution ``handle`` started (as ``GraphClient.start`` does); returns the run once it
    settles. A refusal is raised (``WorkflowUpdateFailedError``)."""
    from lockgate.identity._bindings import start_binding

    execution = handle.first_execution_run_id
    assert execution, "prove_start takes the handle start_workflow returned"
    name = graph or (await handle.describe()).workflow_type
    proof = signer.sign(start_binding(name, handle.id, execution, inputs, version))
    # The handle start_workflow returned delivers only to the execution it started.
    shown: dict[str, Any] = await handle.execute_update("start", proof, result_type=dict)
    return shown


async def outcome(
    handle: WorkflowHandle[Any, Any] | WorkflowUpdateHandle[Any],
) -> dict[str, Any]:
    """What a lockgate run returned: a run that did its work, or one refused (which completes
    with its refusal as its result); for a run recorded before refusals completed, which failed
    with its refusal, the same dict, read from the failure as lockgate's own clients read it.
    Any other failure is raised. An update's handle gives what it returned."""
    from temporalio.client import WorkflowFailureError

    from lockgate.workflows._failures import outcome_of

    try:
        result: dict[str, Any] = await handle.result()
    except WorkflowFailureError as error:
        found = outcome_of(error)
        if found is None:
            raise
        return found
    return result


def gate_of(run: RunView) -> GateView:
    """The gate a run waits at; the test fails if it waits at none."""
    gate = run.get("awaiting")
    assert gate is not None, f"the run waits at no gate: {run}"
    return gate


def parked_of(run: RunView) -> ParkedView:
    """Where a run is parked; the test fails if it is not."""
    parked = run.get("parked")
    assert parked is not None, f"the run is not parked: {run}"
    return parked


def error_of(result: ToolCallResult) -> ErrorDetail:
    """A tool result's error; the test fails if the call succeeded."""
    error = result["error"]
    assert error is not None, f"the call did not fail: {result}"
    return error


async def worker_process(
    address: str, task_queue: str, components: str, *flags: str
) -> asyncio.subprocess.Process:
    """A ``lockgate worker`` subprocess, once it says it is ready: a worker a test can kill.

    It serves ``<components>_TOOLS`` and ``<components>_GRAPHS`` of
    ``tests.helpers.reliability_graphs`` (``TOOLS`` and ``GRAPHS`` when ``components`` is
    empty), with ``flags`` (``--directory FILE``, ``--deployment NAME --build-id ID``...)
    besides.
    """
    prefix = f"{components}_" if components else ""
    process, _ = await lockgate_worker_command(
        address,
        "--tools",
        f"tests.helpers.reliability_graphs:{prefix}TOOLS",
        "--graphs",
        f"tests.helpers.reliability_graphs:{prefix}GRAPHS",
        "--task-queue",
        task_queue,
        *flags,
    )
    return process


async def lockgate_worker_command(
    address: str, *arguments: str, secret: WorkerSecret = SECRET, stderr: Any = None
) -> tuple[asyncio.subprocess.Process, bytes]:
    """``lockgate worker ARGUMENTS`` against ``address`` with ``secret``, once it prints that
    it is ready: the process and that line. Its stderr goes to ``stderr`` (a file), else
    nowhere."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "worker",
        *arguments,
        cwd=REPOSITORY,
        env={
            **os.environ,
            "TEMPORAL_ADDRESS": address,
            "PYTHONPATH": str(REPOSITORY),
            "LOCKGATE_WORKER_SECRET": secret.to_text(),
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr if stderr is not None else asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    ready = await asyncio.wait_for(process.stdout.readline(), 60)
    assert b"worker ready" in ready, ready
    return process, ready


async def temporal_cli(client: Client, *arguments: str) -> str:
    """Runs ``temporal ARGUMENTS`` against the test server (on the event loop: a blocking run
    would stall the worker sharing it); returns stdout. The test fails if the command does."""
    import asyncio

    from lockgate.devserver import temporal_binary

    process = await asyncio.create_subprocess_exec(
        str(temporal_binary()),
        *arguments,
        "--address",
        client.service_client.config.target_host,
        "--namespace",
        client.namespace,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0, err.decode()
    return out.decode()

"""The attacker schedules lockgate's own activities from a workflow of their own.

lockgate's checks (opening a start, opening a carried state, preparing a durable call) run as
local activities, which only workflow code on the worker itself can start; judging signals runs
as a regular activity under the worker secret's seal. Scheduled by anyone else, from their own
worker and task queue, each is refused: no proof is spent for them, no verdict audited.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Worker

from lockgate import GraphClient
from lockgate.activities._activity_inputs import (
    JudgeSignalsInput,
    OpenStartInput,
    PrepareCallInput,
    SignalEntry,
    VerifyCarriedInput,
)
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding, start_binding
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._graph_inputs import StartGraphInput
from lockgate.workflows._signed_starts import SIGNED_START_WITHIN
from tests.helpers.graphs import ALWAYS_FAILS
from tests.helpers.support import audit_facts, gate_of, prove_start

pytestmark = pytest.mark.timeout(60)


@workflow.defn(name="mallory.call-lockgate", sandboxed=False)
class CallLockgateActivity:
    """Schedules one of lockgate's activities, by name, on lockgate's task queue."""

    @workflow.run
    async def run(self, activity: str, argument: Any, task_queue: str) -> Any:
        return await workflow.execute_activity(
            activity,
            argument,
            task_queue=task_queue,
            start_to_close_timeout=timedelta(seconds=20),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )


def _people() -> Identities:
    return Identities({"ada": {}, "ed": {"roles": ["editor"], "scopes": ["essay:publish"]}})


async def _refusal_of(
    client: Client, task_queue: str, activity: str, argument: Any
) -> ApplicationError:
    attacker_queue = f"{task_queue}-attacker"
    async with Worker(client, task_queue=attacker_queue, workflows=[CallLockgateActivity]):
        with pytest.raises(WorkflowFailureError) as failed:
            await client.execute_workflow(
                CallLockgateActivity.run,
                args=[activity, argument, task_queue],
                id=f"mallory-{uuid.uuid4().hex}",
                task_queue=attacker_queue,
            )
    error = failed.value.cause
    assert isinstance(error, ActivityError)
    assert isinstance(error.cause, ApplicationError)
    return error.cause


@pytest.mark.parametrize(
    ("activity", "argument"),
    [
        pytest.param(
            "lockgate.open_start",
            OpenStartInput(graph="essay:review", version=1, run="r", execution="e", inputs={}),
            id="open_start",
        ),
        pytest.param(
            "lockgate.verify_carried",
            VerifyCarriedInput(
                carried={}, seal=None, workflow_id="r", execution="e", previous_run="p"
            ),
            id="verify_carried",
        ),
        pytest.param(
            "lockgate.prepare_call",
            PrepareCallInput(tool="essay:publish", arguments={}, execution="e"),
            id="prepare_call",
        ),
    ],
)
async def test_lockgates_own_checks_refuse_to_run_as_anyone_elses_regular_activity(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    activity: str,
    argument: Any,
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=_people().directory):
        refusal = await _refusal_of(temporal_client, task_queue, activity, argument)

    assert refusal.type == "UNAUTHORIZED"
    assert refusal.non_retryable
    assert "runs only as a local activity of lockgate's own workflows" in refusal.message


async def test_a_start_proof_handed_to_open_start_by_anyone_else_does_nothing_for_them(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = _people()
    run_id = f"essay:review-{uuid.uuid4().hex[:12]}"
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        handle = await temporal_client.start_workflow(
            "essay:review",
            StartGraphInput(inputs=ALWAYS_FAILS, channel="cli", signed=True),
            id=run_id,
            task_queue=task_queue,
            start_delay=SIGNED_START_WITHIN,
        )
        execution = handle.first_execution_run_id or ""
        proof = people.signer("ada").sign(
            start_binding("essay:review", run_id, execution, ALWAYS_FAILS)
        )
        stolen = OpenStartInput(
            graph="essay:review",
            version=1,
            run=run_id,
            execution=execution,
            inputs=ALWAYS_FAILS,
            proof=proof,
        )
        refusal = await _refusal_of(temporal_client, task_queue, "lockgate.open_start", stolen)
        # The run it names still takes it, as its own start proof.
        run = await prove_start(handle, people.signer("ada"), ALWAYS_FAILS)

    assert refusal.type == "UNAUTHORIZED"
    assert run["status"] == "waiting"
    assert run["requester"]["actor"] == "ada"


async def test_judging_signals_for_a_run_that_did_not_ask_is_refused_and_audits_nothing(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    people = _people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        run = await GraphClient(temporal_client, task_queue, signer=people.signer("ada")).start(
            EssayReview, ALWAYS_FAILS
        )
        eds_answer = people.signer("ed").sign(answer_binding(gate_of(run), "publish_as_is"))
        batch = JudgeSignalsInput(
            entries=[SignalEntry(name="decide", value=eds_answer)],
            graph="essay:review",
            run=run["run_id"],
            execution=run["execution"],
            status="waiting",
            gate=dict(gate_of(run)),
        )
        refusal = await _refusal_of(temporal_client, task_queue, "lockgate.judge_signals", batch)
        # ed's answer is still good for the real run, which it publishes.
        done = await temporal_client.get_workflow_handle(run["run_id"]).execute_update(
            "decide", eds_answer, result_type=dict
        )

    judged = [
        audit_facts(record)
        for record in caplog.records
        if getattr(record, "lockgate_audit", {}).get("event", "").startswith("signal.")
    ]
    assert refusal.type == "UNAUTHORIZED"
    assert judged == []
    assert done["status"] == "finished"
    assert done["fields"]["url"] == "https://essays.example/tides"

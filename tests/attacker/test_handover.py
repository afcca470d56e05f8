"""An attacker with namespace access, but no private key and no worker secret, tries to hand
lockgate authority it never gave: the security findings 1, 2 and 9, played on real dev servers.

1. Forged carried state. A start whose ``carried`` names ed as requester and driver, parked at
   ``publish``, reaches ``essay:review`` by every road that sets a continued run id: a cron
   schedule, a retry policy, a continue-as-new from the attacker's own workflow, and a real
   sealed carry (input and ``lockgate-carry-seal`` header) copied from a real run's history into
   another workflow id. The first cron run is refused VALIDATION_ERROR, every continued run
   UNAUTHORIZED, and nothing is believed: nothing publishes, no audit record or trail names ed.
2. Forged activity caller. The attacker's workflow, on its own worker and queue, schedules
   ``essay:publish`` and ``memo:release`` on lockgate's queue naming ed (or rod) as the actor and
   the call as confirmed, or with a real ``lockgate-seal`` header copied from a real publication
   (replayed under another workflow id, or in a new execution of the real run's workflow id):
   each call fails non-retryable UNAUTHORIZED and the audit log accepts nothing of it.
9. Used twice across workers. Two workers of one deployment (each its own LockgatePlugin, one
   Directory, one secret) share nothing: a durable tool call's proof, or a graph start's proof,
   used on the first is refused ("another execution") when sent to a new execution of the same
   workflow id that only the second serves, because it names the execution it was made for.

After each attack the honest path still works: ed's signed essay publishes, rod's memo releases,
a real run held at a gate takes ed's signed answer.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from datetime import timedelta
from typing import Any, NoReturn
from uuid import uuid4

import pytest
import pytest_asyncio
from temporalio import workflow
from temporalio.api.enums.v1 import ContinueAsNewInitiator, EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import (
    ContinueAsNewInput,
    Interceptor,
    StartActivityInput,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from lockgate import GraphClient, LockgatePlugin, ToolClient
from lockgate.activities._activity_inputs import tool_activity_name
from lockgate.contracts import RunView
from lockgate.devserver import temporal_binary
from lockgate.examples.essay_review import EssayReview
from lockgate.examples.memo_clearance import MemoClearance
from lockgate.identity._actors import Actor
from lockgate.namespace import LOCKGATE_SEARCH_ATTRIBUTES
from lockgate.testing import Identities
from lockgate.workflows._carry import RunState
from lockgate.workflows._tool_call import call_workflow_id
from tests.helpers.attacker import ScheduleTools, forged_calls, named
from tests.helpers.graphs import (
    ALWAYS_FAILS,
    PASSES_FIRST_TIME,
    essay_people,
    eventually,
    trail_of,
)
from tests.helpers.support import failed_workflow_tasks, outcome

pytestmark = pytest.mark.timeout(90)

# The headers lockgate's workers write, as anyone reading a history sees them.
SEAL_HEADER = "lockgate-seal"
CARRY_SEAL_HEADER = "lockgate-carry-seal"

CLEAN_MEMO = {"memo": "Quarterly numbers. TODO: round them"}

# A suggestion this low makes an essay:review waiting at its gate continue as new in the first
# workflow task after the one that opened it (its drafts are local: one task drafts them all, and
# its history holds 16 events once the gate is open; the next task starts past 12).
SUGGEST_AFTER_EVENTS = 12

# The activity of the tool every attack here is after.
PUBLISH_ACTIVITY = tool_activity_name("essay:publish")


# --- The deployment ------------------------------------------------------------------------------


def people() -> Identities:
    """ada writes, ed edits and publishes, rod is an officer who releases memos."""
    return essay_people(rod={"roles": ["officer"], "scopes": ["memo:release"]})


def deployment(identities: Identities) -> LockgatePlugin:
    """One worker process of the deployment: its own plugin, the shared Directory and secret."""
    return LockgatePlugin(
        graphs=[EssayReview, MemoClearance],
        directory=identities.directory,
        secret=identities.secret,
    )


def forged_carry() -> dict[str, Any]:
    """A carried state that says ed asked for the essay, drove it, and it is due to publish."""
    ed = Actor.from_dict(named("ed"))
    return RunState(
        state="publish",
        fields={
            "title": "Forged",
            "rubric": "forged",
            "draft": "Forged.",
            "feedback": "Covers the rubric.",
            "drafts": ["Forged."],
            "verdict": "PASSED",
            "url": None,
        },
        trail=[],
        taken={},
        visits={},
        requester=ed,
        driver=ed,
        gate=None,
        gate_openings=0,
        parkings=0,
        spent=[],
        settles=0,
    ).to_dict()


def forged_start(*, version: int | None = 1) -> dict[str, Any]:
    """A start input of essay:review carrying :func:`forged_carry`, as a continued run's is."""
    start: dict[str, Any] = {"inputs": {}, "carried": forged_carry()}
    if version is not None:
        start["version"] = version
    return start


# --- The attacker's own workflows, worker and interceptor ----------------------------------------


@workflow.defn(name="attacker.hand_over", sandboxed=False)
class HandOver:
    """Continues as new into a lockgate graph type on lockgate's queue, with any start and any
    carry-seal header."""

    carry_seal: str | None = None

    @workflow.run
    async def run(self, start: dict[str, Any], queue: str, carry_seal: str | None) -> NoReturn:
        self.carry_seal = carry_seal
        workflow.continue_as_new(args=[start], workflow="essay:review", task_queue=queue)


class _WritesCopiedHeaders(WorkflowOutboundInterceptor):
    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        seal = getattr(workflow.instance(), "activity_seal", None)
        if seal is not None:
            input.headers = {**input.headers, SEAL_HEADER: _payload(seal)}
        return self.next.start_activity(input)

    def continue_as_new(self, input: ContinueAsNewInput) -> NoReturn:
        seal = getattr(workflow.instance(), "carry_seal", None)
        if seal is not None:
            input.headers = {**input.headers, CARRY_SEAL_HEADER: _payload(seal)}
        self.next.continue_as_new(input)


def _payload(value: str) -> Any:
    return workflow.payload_converter().to_payload(value)


class _CopiedHeadersInbound(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        self.next.init(_WritesCopiedHeaders(outbound))


class CopiedHeaders(Interceptor):
    """The attacker's worker interceptor: puts a seal read from someone else's history on the
    attacker's own activity or continue-as-new."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _CopiedHeadersInbound


def attacker_worker(client: Client, queue: str) -> Worker:
    """The attacker's worker: their own queue, their own workflows, no lockgate plugin."""
    return Worker(
        client,
        task_queue=queue,
        workflows=[HandOver, ScheduleTools],
        interceptors=[CopiedHeaders()],
    )


# --- Reading what the server and the audit log hold ----------------------------------------------


async def history(client: Client, workflow_id: str, run_id: str | None = None) -> list[Any]:
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    return list((await handle.fetch_history()).events)


def decoded(client: Client, payload: Any) -> Any:
    return client.data_converter.payload_converter.from_payload(payload)


def header_text(client: Client, fields: Any, name: str) -> str:
    assert name in fields, f"no {name!r} header in {list(fields)}"
    text = decoded(client, fields[name])
    assert isinstance(text, str)
    return text


def activity_types(events: Iterable[HistoryEvent]) -> list[str]:
    """The activity types a run scheduled (local activities are not in this list)."""
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def closed_result(client: Client, events: Iterable[HistoryEvent]) -> dict[str, Any] | None:
    """What a run returned, from its history: a completed run's result, or the outcome a refused
    run fails with; None while it runs."""
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            payload = event.workflow_execution_completed_event_attributes.result.payloads[0]
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
            failure = event.workflow_execution_failed_event_attributes.failure
            payload = failure.application_failure_info.details.payloads[0]
        else:
            continue
        result = decoded(client, payload)
        assert isinstance(result, dict)
        return result
    return None


async def executions(client: Client, workflow_id: str) -> list[Any]:
    return [run async for run in client.list_workflows(f"WorkflowId = '{workflow_id}'")]


def audited(records: Iterable[logging.LogRecord]) -> list[dict[str, Any]]:
    return [record.lockgate_audit for record in records if hasattr(record, "lockgate_audit")]


def accepted_as(records: Iterable[logging.LogRecord], principal: str) -> list[dict[str, Any]]:
    """Audit records that let something through as ``principal``."""
    return [
        record
        for record in audited(records)
        if record.get("outcome") in ("accepted", "ok")
        and principal in (record.get("principal"), (record.get("actor") or {}).get("principal"))
    ]


def calls_of(records: Iterable[logging.LogRecord], tool: str) -> list[dict[str, Any]]:
    """The audited runs of ``tool`` (its pipeline ran, whatever the outcome)."""
    return [r for r in audited(records) if r["event"] == "tool.call" and r["tool"] == tool]


def assert_nothing_believed(run: dict[str, Any]) -> None:
    """A refused continued run shows the refusal only: no trail, no one, nothing published."""
    assert run["status"] == "refused", run
    assert run["trail"] == []
    assert run["requester"]["verified"] is False
    assert run["requester"]["principal"] is None
    assert run["fields"]["url"] is None
    assert run["awaiting"] is None


# --- The honest path ------------------------------------------------------------------------------


async def ed_publishes(client: Client, task_queue: str, identities: Identities) -> RunView:
    """ed's own signed essay, which passes at once: ed drives it to publication."""
    ed = GraphClient(client, task_queue, signer=identities.signer("ed"))
    run = await ed.start(EssayReview, PASSES_FIRST_TIME)
    assert run["status"] == "finished", run
    assert run["fields"]["url"] == "https://essays.example/tides-and-the-moon"
    # A start's answer carries no trail rows: the run's result has them all.
    assert ("publish", "ran", "ed") in trail_of(await ed.show(run["run_id"]))
    return run


async def rod_releases(client: Client, task_queue: str, identities: Identities) -> None:
    rod = GraphClient(client, task_queue, signer=identities.signer("rod"))
    run = await rod.start(MemoClearance, CLEAN_MEMO)
    assert run["status"] == "finished", run
    assert run["fields"]["released"] is True
    assert ("release", "ran", "rod") in trail_of(await rod.show(run["run_id"]))


@pytest.fixture
def audit_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The worker's audit records, accepted ones (INFO) included."""
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    return caplog


# --- Finding 1: forged carried state -------------------------------------------------------------


async def test_a_cron_schedule_carrying_forged_state_is_refused_on_every_run(
    time_skipping_env: WorkflowEnvironment, task_queue: str, audit_log: pytest.LogCaptureFixture
) -> None:
    # Cron waits for the minute to come round; on this server the wait is skipped.
    client = time_skipping_env.client
    identities, workflow_id = people(), f"cron-{uuid4().hex}"
    async with Worker(client, task_queue=task_queue, plugins=[deployment(identities)]):
        handle = await client.start_workflow(
            "essay:review",
            forged_start(),
            id=workflow_id,
            task_queue=task_queue,
            cron_schedule="* * * * *",
        )
        # A refused run completes with its refusal as its result; a cron run then starts again.
        runs = await eventually(
            lambda: executions(client, workflow_id),
            lambda found: sum(r.status == WorkflowExecutionStatus.COMPLETED for r in found) >= 3,
            what="three cron runs refused",
            seconds=30,
        )
        await handle.terminate("the test has seen enough cron runs")
        seen = []
        for run in runs:
            if run.status != WorkflowExecutionStatus.COMPLETED:
                continue
            events = await history(client, workflow_id, run.run_id)
            started = events[0].workflow_execution_started_event_attributes
            result = closed_result(client, events)
            assert result is not None, run.run_id  # it closed, so its history holds its outcome
            seen.append((started, activity_types(events), result))
        refused_records = list(audit_log.records)
        await ed_publishes(client, task_queue, identities)

    first = [result for started, _, result in seen if not started.continued_execution_run_id]
    later = [result for started, _, result in seen if started.continued_execution_run_id]
    assert len(first) == 1 and len(later) >= 2
    assert first[0]["status"] == "refused"
    assert first[0]["error"]["code"] == "VALIDATION_ERROR"
    assert first[0]["error"]["message"].startswith("'carried' is lockgate's own")
    for result in later:
        assert result["error"]["code"] == "UNAUTHORIZED", result
        assert "no seal of this deployment's workers" in result["error"]["message"]
        assert_nothing_believed(result)
    assert all(
        started.initiator == ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_CRON_SCHEDULE
        for started, _, _ in seen
        if started.continued_execution_run_id
    )
    assert all(PUBLISH_ACTIVITY not in scheduled for _, scheduled, _ in seen)
    assert accepted_as(refused_records, "ed") == []
    assert calls_of(refused_records, "essay:publish") == []
    assert any(r["event"] == "run.carried" for r in audited(refused_records))


async def test_a_retry_attempt_handed_forged_state_is_refused_as_unauthorized(
    temporal_client: Client, task_queue: str, audit_log: pytest.LogCaptureFixture
) -> None:
    # The attacker picks a two-second run timeout and starts while the deployment's workers
    # restart: the first attempt times out untouched, and the retry (a continued run) reaches
    # the worker with the forged state.
    identities, workflow_id = people(), f"retried-{uuid4().hex}"
    handle = await temporal_client.start_workflow(
        "essay:review",
        forged_start(),
        id=workflow_id,
        task_queue=task_queue,
        run_timeout=timedelta(seconds=2),
        retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=2),
    )
    first_attempt = handle.first_execution_run_id or handle.result_run_id
    retried = await eventually(
        lambda: temporal_client.get_workflow_handle(workflow_id).describe(),
        lambda described: described.run_id != first_attempt,
        what="the first attempt timed out and the retry began",
    )
    async with Worker(temporal_client, task_queue=task_queue, plugins=[deployment(identities)]):
        result = await outcome(temporal_client.get_workflow_handle(workflow_id))
        events = await history(temporal_client, workflow_id, retried.run_id)
        failed = await failed_workflow_tasks(temporal_client.get_workflow_handle(workflow_id))
        refused_records = list(audit_log.records)
        await ed_publishes(temporal_client, task_queue, identities)

    started = events[0].workflow_execution_started_event_attributes
    assert started.attempt == 2
    assert started.initiator == ContinueAsNewInitiator.CONTINUE_AS_NEW_INITIATOR_RETRY
    assert started.continued_execution_run_id == first_attempt
    assert result["error"]["code"] == "UNAUTHORIZED", result
    assert "no seal of this deployment's workers" in result["error"]["message"]
    assert_nothing_believed(result)
    assert PUBLISH_ACTIVITY not in activity_types(events)
    assert failed == []
    assert accepted_as(refused_records, "ed") == []
    assert calls_of(refused_records, "essay:publish") == []
    assert [r["code"] for r in audited(refused_records) if r["event"] == "run.carried"] == [
        "UNAUTHORIZED"
    ]


@pytest.mark.parametrize(
    "version",
    [
        pytest.param(1, id="naming-its-version-as-a-real-carry-does"),
        pytest.param(None, id="naming-no-version"),
    ],
)
async def test_a_continue_as_new_from_a_strangers_workflow_into_essay_review_is_refused(
    temporal_client: Client,
    task_queue: str,
    audit_log: pytest.LogCaptureFixture,
    version: int | None,
) -> None:
    identities, workflow_id = people(), f"handover-{uuid4().hex}"
    attacker_queue = f"{task_queue}-attacker"
    async with (
        Worker(temporal_client, task_queue=task_queue, plugins=[deployment(identities)]),
        attacker_worker(temporal_client, attacker_queue),
    ):
        await temporal_client.start_workflow(
            HandOver.run,
            args=[forged_start(version=version), task_queue, None],
            id=workflow_id,
            task_queue=attacker_queue,
        )
        result = await outcome(temporal_client.get_workflow_handle(workflow_id))
        described = await temporal_client.get_workflow_handle(workflow_id).describe()
        events = await history(temporal_client, workflow_id)
        refused_records = list(audit_log.records)
        await ed_publishes(temporal_client, task_queue, identities)

    assert described.workflow_type == "essay:review"
    assert described.task_queue == task_queue
    assert events[0].workflow_execution_started_event_attributes.continued_execution_run_id
    assert result["error"]["code"] == "UNAUTHORIZED", result
    assert_nothing_believed(result)
    assert PUBLISH_ACTIVITY not in activity_types(events)
    assert accepted_as(refused_records, "ed") == []
    assert calls_of(refused_records, "essay:publish") == []
    # The forgery is on the record as refused.
    assert [r["code"] for r in audited(refused_records) if r["event"] == "run.carried"] == [
        "UNAUTHORIZED"
    ]


async def test_a_forged_carry_claiming_a_parent_run_leaves_no_parent_on_the_refused_run(
    temporal_client: Client, task_queue: str
) -> None:
    """A refused carried state is believed in nothing, the parent it names included: the refused
    run does not show itself as a sub-graph of someone else's run, nor nest deeper."""
    identities, workflow_id = people(), f"handover-{uuid4().hex}"
    attacker_queue = f"{task_queue}-attacker"
    start = forged_start()
    start["carried"]["parent"] = {
        "graph": "memo:clearance",
        "run_id": "someone-elses-run",
        "execution": "forged",
    }
    start["carried"]["depth"] = 3
    async with (
        Worker(temporal_client, task_queue=task_queue, plugins=[deployment(identities)]),
        attacker_worker(temporal_client, attacker_queue),
    ):
        await temporal_client.start_workflow(
            HandOver.run,
            args=[start, task_queue, None],
            id=workflow_id,
            task_queue=attacker_queue,
        )
        result = await outcome(temporal_client.get_workflow_handle(workflow_id))

    assert result["error"]["code"] == "UNAUTHORIZED", result
    assert_nothing_believed(result)
    assert "parent" not in result


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def short_history_client() -> AsyncIterator[Client]:
    """A dev server that suggests continue-as-new after a few dozen events."""
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()),
        search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
        dev_server_extra_args=[
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={SUGGEST_AFTER_EVENTS}",
        ],
        ui=False,
    )
    try:
        yield environment.client
    finally:
        await environment.shutdown()


async def test_a_real_sealed_carry_copied_into_another_workflow_id_is_refused(
    short_history_client: Client, task_queue: str, audit_log: pytest.LogCaptureFixture
) -> None:
    client, identities = short_history_client, people()
    attacker_queue, stolen_id = f"{task_queue}-attacker", f"stolen-{uuid4().hex}"
    ada = GraphClient(client, task_queue, signer=identities.signer("ada"))
    ed = GraphClient(client, task_queue, signer=identities.signer("ed"))
    async with (
        Worker(client, task_queue=task_queue, plugins=[deployment(identities)]),
        attacker_worker(client, attacker_queue),
    ):
        real = await ada.start(EssayReview, ALWAYS_FAILS)
        assert real["status"] == "waiting", real
        # Any signal gives the run a workflow task (this one is refused into the trail).
        await client.get_workflow_handle(real["run_id"]).signal("decide", {})
        chain = await eventually(
            lambda: executions(client, real["run_id"]),
            lambda chain: len(chain) >= 2,
            what="the real run continuing as new",
        )
        continued = [r for r in chain if r.status == WorkflowExecutionStatus.RUNNING]
        assert len(continued) == 1, "the real run never continued as new"
        started = (await history(client, real["run_id"], continued[0].run_id))[0]
        attributes = started.workflow_execution_started_event_attributes
        real_start = decoded(client, attributes.input.payloads[0])
        seal = header_text(client, attributes.header.fields, CARRY_SEAL_HEADER)
        assert real_start["carried"]["requester"]["principal"] == "ada"
        # It carries the signal, unjudged: the stolen run must not judge it as its own.
        assert [entry["name"] for entry in real_start["carried"]["inbox"]] == ["decide"]

        await client.start_workflow(
            HandOver.run,
            args=[real_start, task_queue, seal],
            id=stolen_id,
            task_queue=attacker_queue,
        )
        stolen = await outcome(client.get_workflow_handle(stolen_id))
        stolen_events = await history(client, stolen_id)
        refused_records = list(audit_log.records)
        still = await ada.show(real["run_id"])
        answered = await ed.decide(real["run_id"], "publish_as_is")

    copied = stolen_events[0].workflow_execution_started_event_attributes
    assert copied.header.fields[CARRY_SEAL_HEADER] == attributes.header.fields[CARRY_SEAL_HEADER]
    assert stolen["error"]["code"] == "UNAUTHORIZED", stolen
    assert "no seal of this deployment's workers" in stolen["error"]["message"]
    assert_nothing_believed(stolen)
    assert PUBLISH_ACTIVITY not in activity_types(stolen_events)
    assert accepted_as(refused_records, "ed") == []
    # Nothing lost: the real run still waits at its gate and takes ed's signed answer.
    assert still["status"] == "waiting"
    assert still["awaiting"] == real["awaiting"]
    assert answered["status"] == "finished", answered
    assert answered["fields"]["url"] == "https://essays.example/tides"
    assert ("publish", "ran", "ed") in trail_of(answered)


# --- Finding 2: forged activity caller -----------------------------------------------------------


FORGED_CALLERS = [
    pytest.param(
        "essay:publish",
        "ed",
        {"title": "Forged", "draft": "Forged."},
        ed_publishes,
        id="essay:publish-as-ed",
    ),
    pytest.param(
        "memo:release",
        "rod",
        {"memo": "Merger talks (classified)"},
        rod_releases,
        id="memo:release-as-rod",
    ),
]


@pytest.mark.parametrize(("tool", "principal", "arguments", "honest"), FORGED_CALLERS)
async def test_a_tool_scheduled_from_a_strangers_workflow_as_a_named_actor_is_refused(
    temporal_client: Client,
    task_queue: str,
    audit_log: pytest.LogCaptureFixture,
    tool: str,
    principal: str,
    arguments: dict[str, Any],
    honest: Any,
) -> None:
    identities, attacker_queue = people(), f"{task_queue}-attacker"
    async with (
        Worker(temporal_client, task_queue=task_queue, plugins=[deployment(identities)]),
        attacker_worker(temporal_client, attacker_queue),
    ):
        outcomes = await temporal_client.execute_workflow(
            ScheduleTools.run,
            forged_calls(tool, principal, arguments, task_queue),
            id=f"forger-{uuid4().hex}",
            task_queue=attacker_queue,
        )
        refused_records = list(audit_log.records)
        await honest(temporal_client, task_queue, identities)
        honest_records = list(audit_log.records)

    assert len(outcomes) == 3
    for attempt in outcomes:
        assert attempt["ran"] is False, attempt
        assert attempt["type"] == "UNAUTHORIZED"
        assert attempt["non_retryable"] is True
        assert attempt["retry_state"] == "NON_RETRYABLE_FAILURE"
        assert "lockgate's workers did not vouch for" in attempt["message"]
    # The tool never ran; each attempt is on the record as refused, none as accepted.
    assert calls_of(refused_records, tool) == []
    assert accepted_as(refused_records, principal) == []
    refusals = [r for r in audited(refused_records) if r["event"] == "tool.sealed_call"]
    assert [(r["tool"], r["outcome"], r["code"]) for r in refusals] == [
        (tool, "refused", "UNAUTHORIZED")
    ] * 3
    # The honest path ran the same tool as the same principal, and the audit log says so.
    assert [r["principal"] for r in calls_of(honest_records, tool)] == [principal]


@pytest.mark.parametrize(
    "same_workflow_id",
    [pytest.param(False, id="another-workflow-id"), pytest.param(True, id="the-real-workflow-id")],
)
async def test_a_real_publications_seal_copied_into_another_execution_is_refused(
    temporal_client: Client,
    task_queue: str,
    audit_log: pytest.LogCaptureFixture,
    same_workflow_id: bool,
) -> None:
    identities, attacker_queue = people(), f"{task_queue}-attacker"
    async with (
        Worker(temporal_client, task_queue=task_queue, plugins=[deployment(identities)]),
        attacker_worker(temporal_client, attacker_queue),
    ):
        real = await ed_publishes(temporal_client, task_queue, identities)
        events = await history(temporal_client, real["run_id"])
        (scheduled,) = [
            event.activity_task_scheduled_event_attributes
            for event in events
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and event.activity_task_scheduled_event_attributes.activity_type.name
            == PUBLISH_ACTIVITY
        ]
        real_input = decoded(temporal_client, scheduled.input.payloads[0])
        seal = header_text(temporal_client, scheduled.header.fields, SEAL_HEADER)
        assert real_input["actor"]["principal"] == "ed"
        replay_id = real["run_id"] if same_workflow_id else f"copier-{uuid4().hex}"
        before = list(audit_log.records)

        replay = await temporal_client.start_workflow(
            ScheduleTools.run,
            [{"tool": PUBLISH_ACTIVITY, "input": real_input, "queue": task_queue, "seal": seal}],
            id=replay_id,
            task_queue=attacker_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        (attempt,) = await replay.result()
        replay_events = await history(temporal_client, replay_id, replay.result_run_id)
        attack_records = list(audit_log.records)[len(before) :]
        await ed_publishes(temporal_client, task_queue, identities)

    copied = [
        event.activity_task_scheduled_event_attributes
        for event in replay_events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert copied[0].header.fields[SEAL_HEADER] == scheduled.header.fields[SEAL_HEADER]
    assert decoded(temporal_client, copied[0].input.payloads[0]) == real_input
    assert attempt["ran"] is False, attempt
    assert attempt["type"] == "UNAUTHORIZED"
    assert attempt["non_retryable"] is True
    assert calls_of(attack_records, "essay:publish") == []
    assert accepted_as(attack_records, "ed") == []


# --- Finding 9: used twice across workers --------------------------------------------------------


def accepted_input(client: Client, events: Iterable[HistoryEvent], update: str) -> Any:
    """What an update named ``update`` carried, as anyone reads it in a run's history."""
    for event in events:
        request = event.workflow_execution_update_accepted_event_attributes.accepted_request
        if request.input.name == update:
            return decoded(client, request.input.args.payloads[0])
    raise AssertionError(f"no accepted {update!r} update in this history")


async def test_a_durable_calls_proof_used_on_one_worker_is_refused_on_another(
    lockgate_worker: Any, temporal_client: Client, task_queue: str
) -> None:
    """Nothing is shared between workers, and nothing needs to be: the proof names the
    execution it was made for, so a new execution of the same request id, served only by
    another worker, refuses it."""
    identities, request_id = people(), f"r-{uuid4().hex}"
    ed = ToolClient(temporal_client, task_queue, signer=identities.signer("ed"))
    arguments = {"title": "Tides", "draft": "Tides."}
    async with lockgate_worker(plugin=deployment(identities), identity="worker-a"):
        first = await ed.call("essay:publish", arguments, request_id=request_id)
    events = await history(temporal_client, call_workflow_id(request_id))
    started = events[0].workflow_execution_started_event_attributes
    call = decoded(temporal_client, started.input.payloads[0])
    proof = accepted_input(temporal_client, events, "call")

    async with lockgate_worker(plugin=deployment(identities), identity="worker-b"):
        replay = await temporal_client.start_workflow(
            "lockgate.tool_call",
            call,
            id=call_workflow_id(request_id),
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            result_type=dict,
        )
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await replay.execute_update("call", proof, result_type=dict)
        await replay.cancel()
        replayed = await outcome(replay)
        replay_events = await history(temporal_client, replay.id, replay.result_run_id)
        again = await ed.call("essay:publish", arguments)

    assert first["success"] is True, first
    assert first["meta"]["principal"] == "ed"
    assert call["signed"] is True and call["proof"] is None
    assert served_only_by(replay_events) == {"worker-b"}
    cause = refused.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "UNAUTHORIZED"
    assert "another execution of call" in cause.message
    assert replayed["success"] is False, replayed
    assert replayed["meta"].get("principal") is None
    assert PUBLISH_ACTIVITY not in activity_types(replay_events)
    assert again["success"] is True, again


async def test_a_start_proof_used_on_one_worker_is_refused_on_another(
    lockgate_worker: Any, temporal_client: Client, task_queue: str
) -> None:
    identities = people()
    async with lockgate_worker(plugin=deployment(identities), identity="worker-a"):
        first = await ed_publishes(temporal_client, task_queue, identities)
    events = await history(temporal_client, first["run_id"])
    start = decoded(
        temporal_client, events[0].workflow_execution_started_event_attributes.input.payloads[0]
    )
    proof = accepted_input(temporal_client, events, "start")

    async with lockgate_worker(plugin=deployment(identities), identity="worker-b"):
        replay = await temporal_client.start_workflow(
            "essay:review",
            start,
            id=first["run_id"],
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            result_type=dict,
        )
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await replay.execute_update("start", proof, result_type=dict)
        await replay.cancel()
        replayed = await outcome(replay)
        replay_events = await history(temporal_client, replay.id, replay.result_run_id)
        await ed_publishes(temporal_client, task_queue, identities)

    assert proof["principal"] == "ed" and start["signed"] is True
    assert served_only_by(replay_events) == {"worker-b"}
    cause = refused.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "UNAUTHORIZED"
    assert "another execution of" in cause.message
    assert replayed["status"] == "refused", replayed
    assert replayed["error"]["code"] == "UNAUTHORIZED"
    assert "withdrew it" in replayed["error"]["message"]
    assert replayed["trail"] == []
    assert replayed["requester"]["verified"] is False
    assert PUBLISH_ACTIVITY not in activity_types(replay_events)


def served_only_by(events: Iterable[HistoryEvent]) -> set[str]:
    """The identities of the workers that completed a run's workflow tasks."""
    return {
        event.workflow_task_completed_event_attributes.identity
        for event in events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    }

"""Findings 5-8 of the security review, played by an attacker with namespace access and no key.

Everything here runs against one lockgate worker on the real dev server; each test starts its
own run (a signed essay:review waiting at its editor gate, unless it says otherwise), attacks it,
shows the attack refused with a code, nothing lost, and the honest run still answerable.

- Finding 5, one unsigned signal kills someone else's run: JSON nested 500 (and 5000) levels
  deep, as a ``decide`` signal and as a ``decide`` update.
- Finding 6, bloat wedges a run: megabyte answers, a stream of 100 kB answers, a flood of small
  signals, a 1.5 MB start input; and the trail read a page at a time.
- Finding 7, ``settle`` pins a run: a wait that can never end, a wait on a finished run, more
  waiters than a run holds, a settle with no payload, updates with the wrong number of payloads.
- Finding 8, what callers hold leaks into history: a refused node's failure, a refused answer's
  rejection, and a durable call's confirmation token.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from temporalio import activity
from temporalio.api.common.v1 import Payload, Payloads, WorkflowExecution
from temporalio.api.enums.v1 import EventType, UpdateWorkflowExecutionLifecycleStage
from temporalio.api.update.v1 import Input, Meta, Request, WaitPolicy
from temporalio.api.workflowservice.v1 import (
    SignalWorkflowExecutionRequest,
    UpdateWorkflowExecutionRequest,
)
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowHistory,
    WorkflowUpdateFailedError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    Worker,
)

from lockgate import GraphClient, LockgatePlugin, ToolClient, tool
from lockgate.contracts import RunView
from lockgate.examples.essay_review import EssayReview
from lockgate.gates._limits import MAX_REFUSED_SIGNALS_KEPT, MAX_WAITING_SETTLES
from lockgate.testing import Identities
from lockgate.workflows._tool_call import call_workflow_id
from tests.helpers.graphs import ALWAYS_FAILS, Ledger, eventually, signed_answer
from tests.helpers.support import failed_workflow_tasks, outcome, parked_of

pytestmark = pytest.mark.timeout(120)

PUBLISHED = "https://essays.example/tides"
SMALL = 64 * 1024
"""What `show` and an update result must stay under, whatever a stranger sent the run."""

# Holdings only these principals have: none of them may surface in a refusal or a history.
ADA_ONLY_SCOPE = "vault:open"
ED_ONLY_SCOPE = "press:run"
CLERK_ONLY_SCOPE = "archive:read"
INTERNALS = ("positional argument", "Traceback", ".py")


# --- A tool that must be confirmed ---------------------------------------------------------------

launches: Counter[str] = Counter()


@tool("attack:launch", "Launches something; every call is confirmed first.", confirm=True)
async def launch(mark: str) -> dict[str, Any]:
    launches[mark] += 1
    return {"mark": mark, "launches": launches[mark]}


# --- Holding one run's activity, to open a window an attacker could hit by luck ------------------


@dataclass
class Hold:
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)


class Holds(Interceptor):
    """A worker interceptor that holds the activity ``(workflow id, type)`` until released."""

    def __init__(self) -> None:
        self.waiting: dict[tuple[str, str], Hold] = {}

    def hold(self, workflow_id: str, activity_type: str) -> Hold:
        self.waiting[(workflow_id, activity_type)] = hold = Hold()
        return hold

    def release_all(self) -> None:
        for hold in self.waiting.values():
            hold.released.set()

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Holding(next, self)


class _Holding(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, holds: Holds) -> None:
        super().__init__(next)
        self.holds = holds

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        hold = self.holds.waiting.pop((info.workflow_id or "", info.activity_type), None)
        if hold is not None:
            hold.reached.set()
            await hold.released.wait()
        return await super().execute_activity(input)


# --- The deployment every test attacks -----------------------------------------------------------


@dataclass
class Deployment:
    client: Client
    task_queue: str
    people: Identities
    holds: Holds
    started: list[WorkflowHandle[Any, Any]] = field(default_factory=list)

    def as_(self, principal: str) -> GraphClient:
        return GraphClient(self.client, self.task_queue, signer=self.people.signer(principal))

    async def waiting_run(self) -> tuple[RunView, WorkflowHandle[Any, Any]]:
        """An essay:review ada started signed, waiting at its editor gate."""
        run = await self.as_("ada").start(EssayReview, ALWAYS_FAILS)
        assert run["status"] == "waiting", run
        return run, self.handle(run["run_id"])

    def handle(self, workflow_id: str) -> WorkflowHandle[Any, Any]:
        handle = self.client.get_workflow_handle(workflow_id)
        self.started.append(handle)
        return handle

    async def publishes(self, run_id: str) -> RunView:
        """ed's real signed answer to the run's gate; returns the run once it settles, as
        ``show`` shows it (with its whole trail: an answer carries only the rows it added)."""
        answered = await self.as_("ed").decide(run_id, "publish_as_is")
        assert answered["status"] == "finished", answered
        assert answered["fields"]["url"] == PUBLISHED, answered
        return await self.as_("ed").show(run_id)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def deployment(temporal_client: Client) -> AsyncIterator[Deployment]:
    people = Identities(
        {
            "ada": {"scopes": [ADA_ONLY_SCOPE]},
            "ed": {"roles": ["editor"], "scopes": ["essay:publish", ED_ONLY_SCOPE]},
            "clerk": {"roles": ["editor"], "scopes": [CLERK_ONLY_SCOPE]},
            "poster": {"scopes": ["ledger:post"]},
        }
    )
    holds = Holds()
    task_queue = f"attacker-payloads-{uuid.uuid4().hex[:12]}"
    plugin = LockgatePlugin([launch], [EssayReview, Ledger], people.directory, secret=people.secret)
    deployment = Deployment(temporal_client, task_queue, people, holds)
    async with Worker(
        temporal_client, task_queue=task_queue, plugins=[plugin], interceptors=[holds]
    ):
        try:
            yield deployment
        finally:
            holds.release_all()
            for handle in deployment.started:
                if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                    await handle.terminate("left running by a test of attacker payloads")


# --- Helpers -------------------------------------------------------------------------------------


def nested(depth: int) -> list[Any]:
    """A list nested ``depth`` levels deep (two bytes a level as JSON), built without recursion."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


async def signal_raw(client: Client, workflow_id: str, name: str, data: bytes) -> None:
    """Sends a signal whose one payload is ``data`` as JSON, past the client's converter."""
    await client.workflow_service.signal_workflow_execution(
        SignalWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=workflow_id),
            signal_name=name,
            input=Payloads(payloads=[Payload(metadata={"encoding": b"json/plain"}, data=data)]),
            identity="attacker",
            request_id=uuid.uuid4().hex,
        )
    )


def signal_rows(shown: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for row in shown["trail"] if str(row["operation"]).startswith("signal:")]


def judged(shown: dict[str, Any]) -> int:
    """Refused signals recorded so far: kept as trail rows, or only counted."""
    return len(signal_rows(shown)) + int(shown.get("refused_signals_not_kept", 0))


async def recorded(handle: WorkflowHandle[Any, Any], count: int) -> dict[str, Any]:
    """``show`` once the run has recorded ``count`` refused signals."""
    return await eventually(
        lambda: handle.query("show", {"trail_limit": 1000}),
        lambda shown: judged(shown) >= count,
        what=f"{count} refused signal(s) recorded",
    )


async def refused_update(
    handle: WorkflowHandle[Any, Any], name: str, *args: Any
) -> ApplicationError:
    """The typed refusal of update ``name`` with ``args``; fails if it was accepted."""
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(name, args=list(args), result_type=dict)
    cause = refused.value.cause
    assert isinstance(cause, ApplicationError), cause
    return cause


async def accepted_updates(handle: WorkflowHandle[Any, Any]) -> int:
    history = await handle.fetch_history()
    return sum(
        1
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    )


def size(value: Any) -> int:
    return len(json.dumps(value))


def everything_in(history: WorkflowHistory) -> str:
    """The history as JSON, followed by every base64 field (payloads, headers, memo) decoded."""
    text = history.to_json()
    decoded: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str) and node:
            try:
                raw = base64.b64decode(node, validate=True)
            except (binascii.Error, ValueError):
                return
            decoded.append(raw.decode("utf-8", "replace"))

    walk(json.loads(text))
    return text + "\n" + "\n".join(decoded)


def failure_text(failure: Any) -> str:
    """A failure proto's message and its details, decoded, down its cause chain."""
    parts: list[str] = []
    while failure is not None and failure.ByteSize():
        parts.append(failure.message)
        for payload in failure.application_failure_info.details.payloads:
            parts.append(payload.data.decode("utf-8", "replace"))
        failure = failure.cause if failure.HasField("cause") else None
    return "\n".join(parts)


# --- Finding 5: a deeply nested payload ----------------------------------------------------------


async def test_a_decide_signal_nested_500_deep_is_recorded_refused_and_the_run_lives_on(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()
    deep = nested(500)
    assert len(json.dumps(deep)) == 1000  # about a kilobyte

    await handle.signal("decide", deep)
    shown = await recorded(handle, 1)
    failed = await failed_workflow_tasks(handle)
    running = (await handle.describe()).status
    answered = await deployment.publishes(run["run_id"])

    assert failed == []
    assert running == WorkflowExecutionStatus.RUNNING
    assert shown["status"] == "waiting"
    (row,) = signal_rows(shown)
    assert row["operation"] == "signal:decide"
    assert row["outcome"] == "refused"
    assert row["code"] == "VALIDATION_ERROR"
    assert "nested more than 32 levels" in row["why"]
    assert row in answered["trail"]  # kept once the run moved on
    assert await failed_workflow_tasks(handle) == []


async def test_a_decide_update_nested_500_deep_is_rejected_and_nothing_is_written(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()
    before = await accepted_updates(handle)
    trail_before = (await handle.query("show"))["trail_total"]

    refusal = await refused_update(handle, "decide", nested(500))
    after = await accepted_updates(handle)
    shown = await handle.query("show")
    answered = await deployment.publishes(run["run_id"])

    assert refusal.type == "VALIDATION_ERROR"
    assert "nested more than 32 levels" in refusal.message
    assert after == before
    assert shown["trail_total"] == trail_before
    assert shown["status"] == "waiting"
    assert answered["status"] == "finished"
    assert await failed_workflow_tasks(handle) == []


async def test_a_decide_signal_nested_5000_deep_is_recorded_refused_and_the_run_lives_on(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()

    # Deeper than Python's JSON encoder (and decoder) recurse: written by hand.
    await signal_raw(deployment.client, handle.id, "decide", b"[" * 5000 + b"]" * 5000)
    shown = await recorded(handle, 1)
    failed = await failed_workflow_tasks(handle)
    running = (await handle.describe()).status
    answered = await deployment.publishes(run["run_id"])

    assert failed == []
    assert running == WorkflowExecutionStatus.RUNNING
    assert shown["status"] == "waiting"
    (row,) = signal_rows(shown)
    assert row["operation"] == "signal:decide"
    assert row["outcome"] == "refused"
    assert row["code"] == "VALIDATION_ERROR"
    assert "nested more than 32 levels" in row["why"] or "could not be read" in row["why"]
    assert answered["fields"]["url"] == PUBLISHED
    assert await failed_workflow_tasks(handle) == []


# --- Finding 6: bloat ----------------------------------------------------------------------------


async def assert_small_and_answered(
    handle: WorkflowHandle[Any, Any],
    failed: list[Any],
    shown: Mapping[str, Any],
    settled: Mapping[str, Any],
    answered: Mapping[str, Any],
) -> None:
    """The run stayed small and alive through the flood: ed's answer still published it."""
    assert size(shown) < SMALL
    assert size(settled) < SMALL
    assert size(answered) < SMALL
    assert failed == []
    assert answered["fields"]["url"] == PUBLISHED
    assert await failed_workflow_tasks(handle) == []


async def test_two_megabyte_sized_decide_signals_are_refused_unread_and_bloat_nothing(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()
    huge = {"choice": "publish_as_is " + "x" * 1_400_000}

    await handle.signal("decide", huge)
    await handle.signal("decide", huge)
    shown = await recorded(handle, 2)
    settled = await handle.execute_update(
        "settle", {"after": shown["settles"] - 1}, result_type=dict
    )
    failed = await failed_workflow_tasks(handle)
    answered = await deployment.publishes(run["run_id"])

    rows = signal_rows(shown)
    assert [row["code"] for row in rows] == ["PAYLOAD_TOO_LARGE"] * 2
    assert all("was not read" in row["why"] for row in rows)
    assert all(size(row) < 1024 for row in rows), rows
    await assert_small_and_answered(handle, failed, shown, settled, answered)


async def test_twenty_five_100_kb_decide_signals_are_refused_unread_and_bloat_nothing(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()

    for n in range(25):
        await handle.signal("decide", {"choice": f"publish_as_is {n} " + "y" * 100_000})
    shown = await recorded(handle, 25)
    settled = await handle.execute_update(
        "settle", {"after": shown["settles"] - 1}, result_type=dict
    )
    failed = await failed_workflow_tasks(handle)
    answered = await deployment.publishes(run["run_id"])

    rows = signal_rows(shown)
    assert len(rows) == MAX_REFUSED_SIGNALS_KEPT
    assert judged(shown) == 25
    assert {row["code"] for row in rows} == {"PAYLOAD_TOO_LARGE"}
    assert all(size(row) < 1024 for row in rows), rows
    await assert_small_and_answered(handle, failed, shown, settled, answered)


async def test_sixty_small_unsigned_signals_keep_twenty_rows_and_count_the_other_forty(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()

    for n in range(60):
        await handle.signal("decide", {"choice": "publish_as_is", "n": n})
    answered = await deployment.publishes(run["run_id"])
    # Signals that came with the answer are judged as the run finishes: read its result.
    result = await outcome(handle)

    rows = signal_rows(result)
    assert len(rows) == MAX_REFUSED_SIGNALS_KEPT == 20
    assert result["refused_signals_not_kept"] == 40
    assert {row["code"] for row in rows} == {"UNVERIFIED_APPROVER"}
    assert result["status"] == "finished"
    assert result["fields"]["url"] == PUBLISHED
    assert answered["fields"]["url"] == PUBLISHED
    assert size(result) < SMALL
    assert await failed_workflow_tasks(handle) == []


async def test_a_one_and_a_half_megabyte_start_input_ends_the_run_refused_and_small(
    deployment: Deployment,
) -> None:
    honest, honest_handle = await deployment.waiting_run()
    attack_id = f"essay:review-bloated-{uuid.uuid4().hex[:12]}"

    attack = await deployment.client.start_workflow(
        "essay:review",
        {"inputs": {"title": "T" * 1_500_000, "rubric": "tides"}},
        id=attack_id,
        task_queue=deployment.task_queue,
    )
    deployment.started.append(attack)
    result = await outcome(attack)
    failed = await failed_workflow_tasks(attack)
    answered = await deployment.publishes(honest["run_id"])

    assert result["status"] == "refused"
    assert result["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert result["error"]["message"]
    assert size(result) < SMALL
    assert failed == []
    assert answered["fields"]["url"] == PUBLISHED
    assert await failed_workflow_tasks(honest_handle) == []


async def test_show_reads_the_trail_a_page_at_a_time(deployment: Deployment) -> None:
    run, handle = await deployment.waiting_run()

    whole = await handle.query("show", {"trail_limit": 1000})
    page = await handle.query("show", {"trail_from": 0, "trail_limit": 2})
    answered = await deployment.publishes(run["run_id"])

    assert whole["trail_total"] > 2
    assert page["trail"] == whole["trail"][:2]
    assert page["trail_from"] == 0
    assert page["trail_total"] == whole["trail_total"] == len(whole["trail"])
    assert answered["fields"]["url"] == PUBLISHED


# --- Finding 7: settle ---------------------------------------------------------------------------


async def test_a_settle_waiting_for_a_settle_that_never_comes_is_rejected(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()
    before = await accepted_updates(handle)

    refusal = await refused_update(handle, "settle", {"after": 10**12})
    after = await accepted_updates(handle)
    answered = await deployment.publishes(run["run_id"])

    assert refusal.type == "VALIDATION_ERROR"
    assert "'after'" in refusal.message
    assert after == before
    assert answered["fields"]["url"] == PUBLISHED
    assert await failed_workflow_tasks(handle) == []


async def test_a_settle_sent_to_a_finished_run_returns_at_once_and_the_run_closes(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()
    # Hold the run, finished, on judging a stranger's signal: the window a settle could pin.
    publishing = deployment.holds.hold(handle.id, "lockgate.tool:essay:publish")
    judging = deployment.holds.hold(handle.id, "lockgate.judge_signals")
    answering = asyncio.create_task(deployment.as_("ed").decide(run["run_id"], "publish_as_is"))
    await asyncio.wait_for(publishing.reached.wait(), 30)
    await handle.signal("decide", {"choice": "abandon"})
    publishing.released.set()
    await asyncio.wait_for(judging.reached.wait(), 30)
    finished = await handle.query("show")
    assert finished["status"] == "finished"

    try:
        settled = await asyncio.wait_for(
            handle.execute_update("settle", {"after": finished["settles"]}, result_type=dict),
            20,
        )
    finally:
        judging.released.set()
    result = await asyncio.wait_for(outcome(handle), 30)
    answered = await answering

    assert settled["status"] == "finished"
    assert settled["fields"]["url"] == PUBLISHED
    assert answered["fields"]["url"] == PUBLISHED
    assert result["status"] == "finished"
    assert [row["code"] for row in signal_rows(result)] == ["UNVERIFIED_APPROVER"]
    assert await failed_workflow_tasks(handle) == []


async def test_a_fifth_waiting_settle_is_rate_limited_and_the_answer_still_gets_through(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()
    settles = (await handle.query("show"))["settles"]

    waiting = [
        await handle.start_update(
            "settle",
            {"after": settles},
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            result_type=dict,
        )
        for _ in range(MAX_WAITING_SETTLES)
    ]
    refusal = await refused_update(handle, "settle", {"after": settles})
    answered = await deployment.publishes(run["run_id"])
    returned = await asyncio.wait_for(asyncio.gather(*(outcome(w) for w in waiting)), 30)
    result = await outcome(handle)

    assert MAX_WAITING_SETTLES == 4
    assert refusal.type == "RATE_LIMITED"
    assert answered["fields"]["url"] == PUBLISHED
    assert len(returned) == 4
    assert all(shown["settles"] > settles for shown in returned)
    assert result["status"] == "finished"
    assert await failed_workflow_tasks(handle) == []


async def test_a_settle_with_no_payload_at_all_returns_the_run(deployment: Deployment) -> None:
    run, handle = await deployment.waiting_run()

    no_argument = await handle.execute_update("settle", result_type=dict)
    empty_arguments = await handle.execute_update("settle", args=[], result_type=dict)
    raw = await _update_raw(deployment.client, handle.id, "settle")
    failed = await failed_workflow_tasks(handle)
    answered = await deployment.publishes(run["run_id"])

    for shown in (no_argument, empty_arguments, raw):
        assert shown["run_id"] == run["run_id"]
        assert shown["status"] == "waiting"
    assert failed == []
    assert answered["fields"]["url"] == PUBLISHED
    assert await failed_workflow_tasks(handle) == []


async def _update_raw(client: Client, workflow_id: str, name: str) -> dict[str, Any]:
    """Update ``name`` with no input payloads at all (no ``args`` field), over raw gRPC."""
    completed = (
        UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED
    )
    request = UpdateWorkflowExecutionRequest(
        namespace=client.namespace,
        workflow_execution=WorkflowExecution(workflow_id=workflow_id),
        wait_policy=WaitPolicy(lifecycle_stage=completed),
        request=Request(
            meta=Meta(update_id=uuid.uuid4().hex, identity="attacker"),
            input=Input(name=name),
        ),
    )
    while True:
        response = await client.workflow_service.update_workflow_execution(request)
        if response.HasField("outcome"):
            break
    assert response.outcome.HasField("success"), response.outcome
    (payload,) = response.outcome.success.payloads
    shown: dict[str, Any] = json.loads(payload.data)
    return shown


WRONG_ARITY = [
    pytest.param("decide", 2, id="decide with two payloads"),
    pytest.param("decide", 0, id="decide with none"),
    pytest.param("resume", 3, id="resume with three"),
    pytest.param("settle", 2, id="settle with two"),
]


@pytest.mark.parametrize(("update", "count"), WRONG_ARITY)
async def test_an_update_with_the_wrong_number_of_payloads_is_refused_with_a_sentence(
    deployment: Deployment, update: str, count: int
) -> None:
    run, handle = await deployment.waiting_run()
    # Even ed's own good answer, sent with a payload too many, is refused whole.
    good = signed_answer(deployment.people.signer("ed"), run, "publish_as_is")
    payloads = {"decide": good, "resume": {}, "settle": {"after": 0}}[update]

    refusal = await refused_update(handle, update, *([payloads] * count))
    shown = await handle.query("show")
    answered = await handle.execute_update("decide", good, result_type=dict)

    assert refusal.type == "VALIDATION_ERROR"
    assert "takes" in refusal.message
    assert not any(internal in refusal.message for internal in INTERNALS), refusal.message
    assert refusal.failure is not None and refusal.failure.stack_trace == ""
    assert shown["status"] == "waiting"
    assert answered["fields"]["url"] == PUBLISHED
    assert await failed_workflow_tasks(handle) == []


# --- Finding 8: what callers hold, and the confirmation token, stay out of history ---------------


async def test_a_refused_node_writes_nothing_its_caller_holds_into_history(
    deployment: Deployment,
) -> None:
    parked = await deployment.as_("ada").start(Ledger, {"entry": "  Paid the printer  "})
    handle = deployment.handle(parked["run_id"])
    history = await handle.fetch_history()
    (failed,) = [
        event.activity_task_failed_event_attributes.failure
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ]
    resumed = await deployment.as_("poster").resume(parked["run_id"])
    whole_history = everything_in(await handle.fetch_history())

    assert parked["status"] == "parked", parked
    assert parked_of(parked)["node"] == "post"
    assert failed.application_failure_info.type == "FORBIDDEN"
    assert failed.stack_trace == ""
    assert "context has" not in failure_text(failed)
    assert ADA_ONLY_SCOPE not in failure_text(failed)
    assert "Paid the printer" in whole_history  # the search reads inside payloads
    assert ADA_ONLY_SCOPE not in whole_history
    assert "context has" not in whole_history
    assert resumed["status"] == "finished", resumed
    assert resumed["fields"]["posted"] is True and resumed["fields"]["filed"] is True
    assert await failed_workflow_tasks(handle) == []


async def test_a_refused_answer_is_rejected_without_a_stack_trace_or_anyones_holdings(
    deployment: Deployment,
) -> None:
    run, handle = await deployment.waiting_run()
    answer = signed_answer(deployment.people.signer("clerk"), run, "publish_as_is")

    refusal = await refused_update(handle, "decide", answer)
    shown = await handle.query("show")
    answered = await deployment.publishes(run["run_id"])

    assert refusal.type == "FORBIDDEN", (refusal.type, refusal.message)
    assert refusal.failure is not None
    assert refusal.failure.stack_trace == ""
    said = failure_text(refusal.failure) + "\n" + refusal.message
    for held in ("context has", CLERK_ONLY_SCOPE, ED_ONLY_SCOPE, ADA_ONLY_SCOPE):
        assert held not in said, said
    assert shown["status"] == "waiting"
    assert answered["fields"]["url"] == PUBLISHED
    assert await failed_workflow_tasks(handle) == []


async def test_a_confirmation_token_never_reaches_history_and_confirms_the_call_once(
    deployment: Deployment,
) -> None:
    tools = ToolClient(deployment.client, deployment.task_queue)
    mark, request_id = uuid.uuid4().hex, f"attack-{uuid.uuid4().hex}"

    asked = await tools.call("attack:launch", {"mark": mark}, request_id=request_id)
    token = asked["data"]["confirm_token"]
    handle = deployment.handle(call_workflow_id(request_id))
    before_confirming = everything_in(await handle.fetch_history())
    confirmed = await tools.confirm(request_id, token)
    again = await tools.call("attack:launch", {"mark": mark}, request_id=request_id)

    assert asked["meta"]["requires_confirmation"] is True, asked
    assert isinstance(token, str) and len(token) >= 16
    assert mark in before_confirming  # the search reads inside payloads
    assert token not in before_confirming
    assert confirmed["success"] is True, confirmed
    assert again == confirmed
    assert launches[mark] == 1
    assert await failed_workflow_tasks(handle) == []

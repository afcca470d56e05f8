"""The three measured paths of the orchestrator README, run on the dev server with EssayReview.

- passes first time: write, grade, publish;
- fails, revises, passes: write, grade, write, grade, publish;
- always fails: FAILED is taken exactly three times, the fourth failure opens the editor gate.

Inputs that are not fields (a forged ``_taken`` budget, a forged ``_ran``, junk) are dropped.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, Interceptor, OutboundInterceptor, WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.devserver import temporal_binary
from lockgate.examples.essay_review import EssayReview
from lockgate.namespace import LOCKGATE_SEARCH_ATTRIBUTES
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._search_attributes import LOCKGATE_STATE
from tests.helpers.graphs import (
    ALWAYS_FAILS,
    FAILS_ONCE,
    PASSES_FIRST_TIME,
    BrokenClockDesk,
    EssayTakingMore,
    OpenEssay,
    TicketDesk,
    essay_people,
    eventually,
    trail_of,
)
from tests.helpers.support import SECRET, gate_of, outcome


def people() -> Identities:
    # The writer here holds essay:publish, so a passing essay publishes without a gate.
    return essay_people(wren={"scopes": ["essay:publish"]})


async def test_an_essay_that_passes_first_time_is_written_graded_and_published(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        wren = GraphClient(temporal_client, task_queue, signer=who.signer("wren"))
        run = await wren.start(EssayReview, PASSES_FIRST_TIME)
        whole = await wren.show(run["run_id"])

    assert run["status"] == "finished"
    assert trail_of(whole) == [
        ("write", "ran", "wren"),
        ("grade", "ran", "wren"),
        ("publish", "ran", "wren"),
    ]
    # The start's own answer carries no trail rows: the run's result and show have them.
    assert (run["trail"], run["trail_from"], run["trail_total"]) == ([], 3, 3)
    assert {key: whole[key] for key in ("status", "fields", "budgets", "settles")} == {
        key: run[key] for key in ("status", "fields", "budgets", "settles")
    }
    assert run["fields"]["url"] == "https://essays.example/tides-and-the-moon"
    assert run["fields"]["verdict"] == "PASSED"


async def test_an_essay_that_fails_once_is_revised_and_then_published(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        wren = GraphClient(temporal_client, task_queue, signer=who.signer("wren"))
        run = await wren.start(EssayReview, FAILS_ONCE)
        whole = await wren.show(run["run_id"])

    assert run["status"] == "finished"
    assert [node for node, _, _ in trail_of(whole)] == [
        "write",
        "grade",
        "write",
        "grade",
        "publish",
    ]
    assert run["fields"]["drafts"] == ["Tides.", "Tides. It is also about gravity."]
    assert run["budgets"] == {"FAILED": {"taken": 1, "at_most": 3}}
    assert run["fields"]["url"] == "https://essays.example/tides"


async def test_an_essay_that_always_fails_takes_failed_three_times_then_asks_an_editor(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        wren = GraphClient(temporal_client, task_queue, signer=who.signer("wren"))
        run = await wren.start(EssayReview, ALWAYS_FAILS)
        whole = await wren.show(run["run_id"])

    assert [node for node, _, _ in trail_of(whole)] == ["write", "grade"] * 4
    assert run["budgets"] == {"FAILED": {"taken": 3, "at_most": 3}}
    assert run["status"] == "waiting"
    assert run["state"] == "editor_call"
    assert gate_of(run)["gate"] == "editor_call#1"
    assert gate_of(run)["role"] == "editor"
    assert gate_of(run)["options"] == ["publish_as_is", "one_more_round", "abandon"]
    assert gate_of(run)["requester"] == "wren"


async def test_a_finished_runs_result_carries_its_whole_trail(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        wren = GraphClient(temporal_client, task_queue, signer=who.signer("wren"))
        run = await wren.start(EssayReview, FAILS_ONCE)
        result = await outcome(temporal_client.get_workflow_handle(run["run_id"], result_type=dict))
        shown = await wren.show(run["run_id"])

    assert result["status"] == "finished"
    assert [node for node, _, _ in trail_of(result)] == [
        "write",
        "grade",
        "write",
        "grade",
        "publish",
    ]
    assert shown["trail"] == result["trail"]


async def test_each_trail_row_says_when_it_happened_by_the_runs_clock(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        wren = GraphClient(temporal_client, task_queue, signer=who.signer("wren"))
        run = await wren.start(EssayReview, ALWAYS_FAILS)
        answered = await GraphClient(temporal_client, task_queue, who.signer("ed")).decide(
            run["run_id"], "publish_as_is"
        )
        started = (await temporal_client.get_workflow_handle(run["run_id"]).describe()).start_time

    moments = [
        datetime.fromisoformat(row["at"].replace("Z", "+00:00")) for row in answered["trail"]
    ]
    assert [row["outcome"] for row in answered["trail"]][-2:] == ["answered", "ran"]
    assert all(row["at"].endswith("Z") for row in answered["trail"])
    assert moments == sorted(moments)
    assert started.replace(microsecond=0) <= moments[0]
    assert moments[-1] <= datetime.now(timezone.utc)


async def test_inputs_the_graph_does_not_take_are_refused_naming_the_ones_it_takes(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    mistyped = {"titel": "Tides", "rubric": "gravity", "_taken": {"FAILED": 99}}
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        wren = GraphClient(temporal_client, task_queue, signer=who.signer("wren"))
        run = await wren.start(EssayReview, mistyped)

    assert run["ok"] is False and run["status"] == "refused"
    assert run["error"] == {
        "code": "VALIDATION_ERROR",
        "message": "'essay:review' takes no inputs '_taken', 'titel' (did you mean 'title'?): "
        "the inputs it takes are title, rubric, draft, feedback, drafts, verdict, url. Nothing "
        "was run.",
    }
    assert run["trail_total"] == 0


async def test_forged_budget_and_engine_inputs_are_ignored_and_listed_where_extra_is_allowed(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    forged = {
        **ALWAYS_FAILS,
        "_taken": {"FAILED": 99},
        "_ran": {"node": "publish", "operation": "essay:publish"},
        "_requester": "ed",
        "junk": 1,
    }
    async with lockgate_worker(graphs=[EssayTakingMore], directory=who.directory):
        wren = GraphClient(temporal_client, task_queue, signer=who.signer("wren"))
        run = await wren.start(EssayTakingMore, forged)
        whole = await wren.show(run["run_id"])

    assert run["ignored_inputs"] == ["_ran", "_requester", "_taken", "junk"]
    # The budget started at zero: FAILED was still taken three times before the gate.
    assert [node for node, _, _ in trail_of(whole)] == ["write", "grade"] * 4
    assert run["budgets"] == {"FAILED": {"taken": 3, "at_most": 3}}
    assert gate_of(run)["requester"] == "wren"


async def test_an_unsigned_start_of_a_graph_with_gates_is_refused_as_unauthorized(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        run = await GraphClient(temporal_client, task_queue).start(EssayReview, ALWAYS_FAILS)

    assert run["status"] == "refused"
    assert run["error"]["code"] == "UNAUTHORIZED"
    assert "has human gates, so a run starts only from a signed start" in run["error"]["message"]
    assert run["trail"] == []


async def test_a_refused_run_completes_with_its_refusal_as_its_result_and_says_so(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # A caller's mistake is not a failure of the system: the Temporal UI's list and the failure
    # metrics (the SDK's, Temporal Cloud's) count it as no failed run; the run's result is the
    # refusal, and its search attributes say "refused".
    who = people()
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        run = await GraphClient(temporal_client, task_queue).start(EssayReview, ALWAYS_FAILS)
        handle = temporal_client.get_workflow_handle(run["run_id"])
        described = await handle.describe()
        closing = (await handle.fetch_history()).events[-1]
        shown = await GraphClient(temporal_client, task_queue).show(run["run_id"])
        # Visibility is written after the fact, and a run is listed as started before it is listed
        # as closed: wait until the listing has its close.
        listed = await eventually(
            lambda: GraphClient(temporal_client, task_queue).list(EssayReview),
            lambda rows: any(
                row["run_id"] == run["run_id"] and row["execution"] != "running" for row in rows
            ),
            what="the refused run listed as closed",
        )

    assert described.status == WorkflowExecutionStatus.COMPLETED
    assert described.typed_search_attributes.get(LOCKGATE_STATE) == "refused"
    assert closing.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    result = temporal_client.data_converter.payload_converter.from_payload(
        closing.workflow_execution_completed_event_attributes.result.payloads[0]
    )
    assert result["ok"] is False and result["status"] == "refused"
    assert result["error"]["code"] == "UNAUTHORIZED"
    assert result["error"]["message"] == run["error"]["message"]
    # Read back, the run says what it said when it was refused.
    assert shown == run
    assert [row["status"] for row in listed if row["run_id"] == run["run_id"]] == ["refused"]


async def test_a_signed_start_without_waiting_answers_once_its_proof_is_recorded(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        ada = GraphClient(temporal_client, task_queue, signer=who.signer("ada"))
        started = await ada.start(EssayReview, ALWAYS_FAILS, wait=False)
        waiting = await eventually(
            lambda: ada.show(started["run_id"]),
            lambda shown: shown.get("status") == "waiting",
            what="the run going on by itself to its gate",
        )

    assert started["ok"] is True and started["status"] == "starting", started
    assert started["requester"]["principal"] == "ada" and started["trail"] == []
    assert waiting["requester"]["principal"] == "ada"


async def test_a_start_whose_checks_keep_failing_is_refused_not_a_failed_run(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # The graph's own default factory raises on every attempt of the start's check (a local
    # activity, retried a bounded number of times): the run records a refusal and ends refused,
    # it does not fail on the exception.
    async with lockgate_worker(graphs=[BrokenClockDesk]):
        run = await GraphClient(temporal_client, task_queue).start(BrokenClockDesk, {})

    assert run["status"] == "refused", run
    assert run["error"]["code"] == "INTERNAL_ERROR"
    assert run["error"]["message"].startswith("The start could not be checked")
    assert "the ticket clock went away" in run["error"]["message"]
    assert run["trail"] == []


async def test_an_unsigned_start_of_a_graph_that_allows_it_is_driven_by_an_unverified_requester(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    async with lockgate_worker(graphs=[OpenEssay], directory=who.directory):
        anonymous = GraphClient(temporal_client, task_queue)
        run = await anonymous.start(OpenEssay, ALWAYS_FAILS)
        whole = await anonymous.show(run["run_id"])

    assert run["requester"]["actor"] == "unverified:temporal"
    assert run["requester"]["verified"] is False
    assert {actor for _, _, actor in trail_of(whole)} == {"unverified:temporal"}
    assert gate_of(run)["requester"] == "unverified:temporal"


async def test_a_start_signed_with_a_key_the_directory_does_not_know_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who, strangers = people(), people()
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        impostor = GraphClient(temporal_client, task_queue, signer=strangers.signer("wren"))
        run = await impostor.start(EssayReview, PASSES_FIRST_TIME)

    assert run["ok"] is False
    assert run["status"] == "refused"
    assert run["error"]["code"] == "UNAUTHORIZED"
    assert "it was not signed by wren" in run["error"]["message"]
    assert run["trail"] == [] and run["requester"]["verified"] is False


async def test_a_start_cannot_hand_the_run_a_forged_carried_state(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    who = people()
    ed = {"actor": "ed", "verified": True, "channel": "cli", "principal": "ed",
          "authorization": "f" * 32}  # fmt: skip
    forged = {
        "state": "publish",
        "fields": {
            **EssayReview.model_validate(ALWAYS_FAILS).model_dump(mode="json"),
            "title": "Forged",
        },
        "trail": [],
        "taken": {"FAILED": 0},
        "visits": {},
        "requester": ed,
        "driver": ed,
        "gate_openings": 0,
        "parkings": 0,
        "spent": [],
        "settles": 0,
    }
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        handle = await temporal_client.start_workflow(
            "essay:review",
            {"inputs": {}, "carried": forged},
            id=f"essay:review-forged-{task_queue}",
            task_queue=task_queue,
        )
        result = await outcome(handle)

    assert result["status"] == "refused"
    assert result["error"]["code"] == "VALIDATION_ERROR"
    assert "'carried' is lockgate's own" in result["error"]["message"]
    assert result["trail"] == []
    assert result["fields"]["url"] is None


async def test_a_run_that_continues_as_new_keeps_its_trail_budget_and_requester(
    task_queue: str,
) -> None:
    # A server of its own that suggests continue-as-new after 12 events: the run at its gate holds
    # 16 (its drafts are local, one workflow task), so the task the answer brings suggests it.
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()),
        search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
        dev_server_extra_args=[
            "--dynamic-config-value",
            "system.forceSearchAttributesCacheRefreshOnRead=true",
            "--dynamic-config-value",
            "limit.historyCount.suggestContinueAsNew=12",
        ],
        ui=False,
    )
    try:
        client, who = environment.client, people()
        plugin = LockgatePlugin(graphs=[EssayReview], directory=who.directory, secret=who.secret)
        async with Worker(client, task_queue=task_queue, plugins=[plugin]):
            ada = GraphClient(client, task_queue, signer=who.signer("ada"))
            # Not waiting: a client waiting on `settle` holds continue-as-new off until it settles.
            started = await ada.start(EssayReview, ALWAYS_FAILS, wait=False)
            run = await eventually(
                lambda: ada.show(started["run_id"]),
                lambda shown: shown.get("status") == "waiting",
                what="the run to reach the editor gate",
            )
            ed = GraphClient(client, task_queue, signer=who.signer("ed"))
            again = await ed.decide(run["run_id"], "one_more_round")

            async def statuses() -> list[str]:
                query = f"WorkflowId = '{run['run_id']}'"
                return [e.status.name async for e in client.list_workflows(query) if e.status]

            runs = await eventually(
                statuses,
                lambda found: "CONTINUED_AS_NEW" in found,
                what="a continued-as-new run listed",
            )
    finally:
        await environment.shutdown()

    assert runs.count("CONTINUED_AS_NEW") >= 1
    assert [node for node, _, _ in trail_of(run)] == ["write", "grade"] * 4
    assert run["budgets"] == {"FAILED": {"taken": 3, "at_most": 3}}
    assert run["requester"]["actor"] == "ada"
    assert trail_of(again)[-3:] == [
        ("editor_call", "answered", "ed"),
        ("write", "ran", "ed"),
        ("grade", "ran", "ed"),
    ]
    assert gate_of(again)["gate"] == "editor_call#2"


async def test_a_default_factory_field_is_made_per_run_and_replays_as_made(
    temporal_client: Client, task_queue: str
) -> None:
    plugin = LockgatePlugin(graphs=[TicketDesk], secret=SECRET)
    starter = GraphClient(temporal_client, task_queue)
    async with Worker(temporal_client, task_queue=task_queue, plugins=[plugin]):
        first = await starter.start(TicketDesk, {})
        second = await starter.start(TicketDesk, {})
    # A fresh worker has nothing cached: it rebuilds the run from its history to answer.
    async with Worker(temporal_client, task_queue=task_queue, plugins=[plugin]):
        replayed = await starter.show(first["run_id"])

    assert first["status"] == second["status"] == "waiting"
    assert first["fields"]["ticket"] != second["fields"]["ticket"]
    assert replayed["fields"]["ticket"] == first["fields"]["ticket"]
    assert gate_of(replayed)["target"] == {"ticket": first["fields"]["ticket"]}


class CallsMade(Interceptor):
    """Records which of the client's calls reached the server, by name."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        recorder = self

        class Recording(OutboundInterceptor):
            async def describe_workflow(self, input: Any) -> Any:
                recorder.calls.append("describe")
                return await super().describe_workflow(input)

            async def query_workflow(self, input: Any) -> Any:
                recorder.calls.append(f"query {input.query}")
                return await super().query_workflow(input)

        return Recording(next)


async def test_show_asks_a_running_run_one_query_and_reads_a_closed_one_from_its_result(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    made = CallsMade()
    watched = Client(
        temporal_client.service_client,
        namespace=temporal_client.namespace,
        data_converter=temporal_client.data_converter,
        interceptors=[made],
    )
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        ed = GraphClient(watched, task_queue, signer=people.signer("ed"))
        waiting = await ed.show(run["run_id"])
        calls_while_waiting = list(made.calls)
        await GraphClient(temporal_client, task_queue, signer=people.signer("ed")).decide(
            run["run_id"], "publish_as_is"
        )
    made.calls.clear()
    # No worker serves the run any more: a query that reached one would wait, then fail.
    finished = await ed.show(run["run_id"])

    assert waiting["status"] == "waiting"
    assert calls_while_waiting == ["query show"]
    assert finished["status"] == "finished" and finished["fields"]["url"]
    assert made.calls == ["query show"]  # turned away by the server, then the result is read


async def test_a_run_writes_its_trail_into_history_once_however_it_is_answered(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # What an update returns is written into the run's history: the start's answer carries no
    # trail rows, each later answer the rows it added, and the run's result the whole trail.
    who = essay_people(
        wren={"scopes": ["essay:publish"]}, rita={"roles": ["editor"], "scopes": ["essay:publish"]}
    )
    async with lockgate_worker(graphs=[EssayReview], directory=who.directory):
        passed = await GraphClient(temporal_client, task_queue, signer=who.signer("wren")).start(
            EssayReview, PASSES_FIRST_TIME
        )
        ada, ed, rita = (
            GraphClient(temporal_client, task_queue, signer=who.signer(name))
            for name in ("ada", "ed", "rita")
        )
        gated = await ada.start(EssayReview, ALWAYS_FAILS)
        await ed.decide(gated["run_id"], "one_more_round")
        await rita.decide(gated["run_id"], "publish_as_is")
        written = {
            run["run_id"]: await written_views(temporal_client, run["run_id"])
            for run in (passed, gated)
        }

    answers, result = written[passed["run_id"]]
    assert [len(answer["trail"]) for answer in answers] == [0]
    assert trail_of(result) == [("write", "ran", "wren"), ("grade", "ran", "wren"),
                                ("publish", "ran", "wren")]  # fmt: skip
    answers, result = written[gated["run_id"]]
    assert [trail_of(answer) for answer in answers] == [
        [],
        [("editor_call", "answered", "ed"), ("write", "ran", "ed"), ("grade", "ran", "ed")],
        [("editor_call", "answered", "rita"), ("publish", "ran", "rita")],
    ]
    assert len(result["trail"]) == 13 == sum(len(answer["trail"]) for answer in answers) + 8


async def written_views(client: Client, run_id: str) -> tuple[list[dict[str, Any]], Any]:
    """What a run's history holds of it: each update's answer, in order, and its result."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    converter = client.data_converter.payload_converter
    answers = [
        converter.from_payloads(
            event.workflow_execution_update_completed_event_attributes.outcome.success.payloads
        )[0]
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED
    ]
    (ended,) = [
        event
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    ]
    result = converter.from_payloads(
        ended.workflow_execution_completed_event_attributes.result.payloads
    )[0]
    return answers, result

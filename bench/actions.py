"""Temporal Cloud billable actions of one essay run: lockgate against the hand-written floor.

Counts, from real runs on the dev server, the actions Temporal Cloud would bill for two flows of
``examples/essay_review.py``'s graph, run by lockgate and by the leanest hand-written Temporal
workflow of the same shape (``bench._workloads``: write and grade as local activities, publish as
a regular activity, started eagerly, no checks at all):

- ``pass_flow``: the essay started signed by ``ada`` with a rubric its first draft meets
  (``GraphClient.start``, which returns once the run has finished); the floor is
  ``HandEssay`` with local tools, started and awaited.
- ``gate_flow``: started signed by ``ada`` with a rubric no draft meets, so it parks at the editor
  gate once its loop budget is spent; ``ed`` answers ``publish_as_is`` (``GraphClient.decide``,
  which returns once the run has finished). The floor is ``HandEssay`` again: its client starts it
  and sends the ``decide`` update at once, and the update's handler waits until the run reaches
  the gate. That is the fewest actions a hand-written app needs to learn that the run waits and
  answer it (one update, no query or poll); waiting on the history long-poll for a memo change
  written at the gate would cost the same (both are free), and is not what this floor does.

``ada`` holds ``essay:publish`` here: lockgate publishes as the run's requester on the pass
path, and a requester without the scope has the publish node refused (the run parks instead of
finishing, after one more activity). ``ed`` is the editor who answers the gate.

The actions counted are Temporal Cloud's published definition, applied exactly:

- a workflow start: 1 (every WorkflowExecutionStarted of the flow's runs; a child or a
  continue-as-new also 1);
- all local activities completed in one workflow task together: 1 (each workflow task whose
  completion recorded at least one ``core_local_activity`` marker, i.e. a MarkerRecorded of that
  name between one WorkflowTaskCompleted and the next);
- each activity scheduled (ActivityTaskScheduled): 1, plus each retry attempt beyond the first
  (from ActivityTaskStarted attempt numbers);
- each UpsertWorkflowSearchAttributes: 1 (attributes set at the start are free, and so is an
  upsert of ``TemporalChangeVersion`` alone);
- each timer started (TimerStarted): 1;
- each signal (WorkflowExecutionSignaled): 1;
- each update: 1, rejected ones INCLUDED. A rejected update leaves no event in history, so
  updates are counted on the client: a ``temporalio.client.Interceptor`` counts every
  ``start_workflow_update`` and ``start_update_with_start_workflow`` call; ``rejected_updates``
  (part of ``updates``) is those calls less the WorkflowExecutionUpdateAccepted events;
- each query that reaches a worker: 1 (every client ``query_workflow`` call, except one the
  server turns away because the run has closed, ``QueryRejectCondition.NOT_OPEN`` raising
  ``WorkflowQueryRejectedError``, which never reaches a worker);
- free: memo changes (WorkflowPropertiesModified), workflow tasks, markers other than local
  activities, describes, list and visibility calls, history fetches.

The client side is counted by that interceptor on a second client over the same connection,
used by the flow's clients AND by its worker (so a call an activity makes through the worker's
client is counted too). The server side is read from ``fetch_history()`` of every run of the
flow: each flow runs on a task queue of its own, and every execution listed on it
(``TaskQueue = '<queue>'``) is counted, together with any child or continue-as-new successor its
history names and any workflow the client started, so lockgate's auxiliary workflows (a tool
call, a catalogue run, a notifier) are counted when the flow starts any. The only run that would
be left out is the queue's catalogue run ``lockgate-catalogue:<queue>`` had it been started
before the flow; on a fresh queue there is none (``excluded_before_flow`` lists any). Every run
is awaited until it has closed before its history is read.

Each flow runs ``--repeats`` times on each side (a fresh queue and worker each time); the counts
are deterministic, and a line says ``same_every_run`` (each run's total is in ``runs``). The
figure is the median. Each line carries the breakdown (``starts``, ``local_activity_tasks``,
``activities``, ``upserts``, ``timers``, ``signals``, ``updates``, ``rejected_updates``,
``queries``; ``value`` is their sum, ``rejected_updates`` being part of ``updates``), what made
up the count (``made_of``) and what was free (``free``). The two targets are
``pass_flow_lockgate_minus_floor`` (1) and ``gate_flow_lockgate_minus_floor`` (1).

How to read it: a ``*_minus_floor`` line is what lockgate's checks cost in actions per run,
beyond what the same work costs on Temporal itself; the two ``made_of`` of a flow side by side
say which calls or events make the difference (lockgate's signed start is an update of its own,
``update start``; a gate lockgate opens is visible to ``pending`` through an upsert, and
``GraphClient.decide`` asks the run which gate is open, ``query awaiting``, before it signs).
Local activities lockgate adds in the same workflow task (its start check) are free.

    python bench/actions.py [--repeats 3]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import collections
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, cast

from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    DescribeWorkflowInput,
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    StartWorkflowInput,
    StartWorkflowUpdateInput,
    StartWorkflowUpdateWithStartInput,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowQueryRejectedError,
)
from temporalio.worker import Worker

from bench._exit import leave
from bench._workloads import (
    DecideInput,
    EssayInput,
    HandEssay,
    bench_worker,
    dev_server,
    emit,
)
from lockgate import GraphClient, LockgatePlugin, WorkerSecret
from lockgate.examples import essay_review as essay
from lockgate.testing import Identities

BENCH = "actions"
PEOPLE: dict[str, dict[str, list[str]]] = {
    "ada": {"scopes": ["essay:publish"]},
    "ed": {"roles": ["editor"], "scopes": ["essay:publish"]},
}
PASSES = {"title": "Tides", "rubric": "tides"}
"""The first draft (``Tides.``) meets this rubric: write, grade, publish."""
GATED = {"title": "Tides", "rubric": "gravity, moon, salt, wind, orbit"}
"""No draft meets this one: four rounds of write and grade, then the editor gate."""
TARGETS = {"pass_flow": 1, "gate_flow": 1}
SIDES = ("lockgate", "floor")
LOCAL_ACTIVITY_MARKER = "core_local_activity"
CHANGE_VERSION = "TemporalChangeVersion"
CATALOGUE_PREFIX = "lockgate-catalogue:"
"""A task queue's catalogue run is ``lockgate-catalogue:<queue>`` (lockgate's ``catalogue_id``)."""
CLOSE_WITHIN = 10.0
"""Seconds a flow's runs have to close once the flow has returned."""
FIELDS = (
    "starts",
    "local_activity_tasks",
    "activities",
    "upserts",
    "timers",
    "signals",
    "updates",
    "rejected_updates",
    "queries",
)


# The client side: updates and queries, which history does not (fully) show --------------------


@dataclass
class ClientCalls:
    """What one flow's clients (and its worker's client) sent, by name."""

    updates: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    queries_rejected: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    describes: int = 0


class CountingInterceptor(Interceptor):
    """Counts a client's updates, queries that reach a worker, starts and describes (signals
    are read from history, which records every one)."""

    def __init__(self) -> None:
        self.calls = ClientCalls()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Counting(next, self.calls)


class _Counting(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, calls: ClientCalls) -> None:
        super().__init__(next)
        self.calls = calls

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        self.calls.started.append(input.id)
        return await self.next.start_workflow(input)

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> Any:
        self.calls.updates.append(input.update)
        return await self.next.start_workflow_update(input)

    async def start_update_with_start_workflow(
        self, input: StartWorkflowUpdateWithStartInput
    ) -> Any:
        self.calls.updates.append(input.update_workflow_input.update)
        self.calls.started.append(input.start_workflow_input.id)
        return await self.next.start_update_with_start_workflow(input)

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        try:
            answer = await self.next.query_workflow(input)
        except WorkflowQueryRejectedError:
            # The server turned it away (the run has closed): no worker saw it, nothing billed.
            self.calls.queries_rejected.append(input.query)
            raise
        except BaseException:
            self.calls.queries.append(input.query)  # a worker's handler failed: it was asked
            raise
        self.calls.queries.append(input.query)
        return answer

    async def describe_workflow(self, input: DescribeWorkflowInput) -> Any:
        self.calls.describes += 1
        return await self.next.describe_workflow(input)


def counting_client(client: Client) -> tuple[Client, ClientCalls]:
    """A client on ``client``'s connection whose updates, queries and signals are counted."""
    counter = CountingInterceptor()
    config = client.config()
    config["interceptors"] = [*config["interceptors"], counter]
    return Client(**config), counter.calls


# The server side: every history of the flow ------------------------------------------------------


@dataclass
class Actions:
    """One flow's billable actions, what made them up, and what was free."""

    starts: int = 0
    local_activity_tasks: int = 0
    activities: int = 0
    upserts: int = 0
    timers: int = 0
    signals: int = 0
    updates: int = 0
    rejected_updates: int = 0
    queries: int = 0
    made_of: collections.Counter[str] = field(default_factory=collections.Counter)
    free: collections.Counter[str] = field(default_factory=collections.Counter)
    workflows: collections.Counter[str] = field(default_factory=collections.Counter)
    excluded_before_flow: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        # rejected_updates are part of updates: counted once.
        return (
            self.starts
            + self.local_activity_tasks
            + self.activities
            + self.upserts
            + self.timers
            + self.signals
            + self.updates
            + self.queries
        )

    def breakdown(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in FIELDS}


def local_activity_type(marker: Any) -> str:
    """The activity type a local-activity marker records (core writes it as JSON)."""
    try:
        data = json.loads(marker.details["data"].payloads[0].data)
    except (KeyError, IndexError, ValueError):
        return "?"
    return str(data.get("activity_type", "?"))


def tally_history(events: list[Any], workflow_type: str, actions: Actions) -> int:
    """Adds one run's history to ``actions``: returns how many updates it accepted."""
    accepted = 0
    local_task_open = False  # a local-activity marker since the last WorkflowTaskCompleted

    def close_task() -> None:
        nonlocal local_task_open
        if local_task_open:
            actions.local_activity_tasks += 1
            actions.made_of["local activities of one workflow task"] += 1
        local_task_open = False

    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            close_task()
            actions.free["workflow tasks"] += 1
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            actions.starts += 1
            actions.made_of[f"start {workflow_type}"] += 1
        elif kind == EventType.EVENT_TYPE_MARKER_RECORDED:
            marker = event.marker_recorded_event_attributes
            if marker.marker_name == LOCAL_ACTIVITY_MARKER:
                local_task_open = True
                actions.free[f"local activity {local_activity_type(marker)} (billed per task)"] += 1
            else:
                actions.free["other markers"] += 1
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            actions.activities += 1
            actions.made_of[f"activity {name}"] += 1
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            retries = max(event.activity_task_started_event_attributes.attempt - 1, 0)
            actions.activities += retries
            if retries:
                actions.made_of["activity retry"] += retries
        elif kind == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            attributes = event.upsert_workflow_search_attributes_event_attributes
            keys = sorted(attributes.search_attributes.indexed_fields)
            if set(keys) <= {CHANGE_VERSION}:
                actions.free[f"upsert {CHANGE_VERSION}"] += 1
            else:
                actions.upserts += 1
                actions.made_of[f"upsert {'+'.join(keys)}"] += 1
        elif kind == EventType.EVENT_TYPE_TIMER_STARTED:
            actions.timers += 1
            actions.made_of["timer"] += 1
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            name = event.workflow_execution_signaled_event_attributes.signal_name
            actions.signals += 1
            actions.made_of[f"signal {name}"] += 1
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            accepted += 1
        elif kind == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
            actions.free["memo changes"] += 1
    close_task()
    return accepted


def runs_named(events: list[Any]) -> set[tuple[str, str]]:
    """The runs one history names as (workflow id, run id): the children it started, and the
    run it continued as (its workflow id left empty: the same as the history's own)."""
    named: set[tuple[str, str]] = set()
    for event in events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
            child = event.child_workflow_execution_started_event_attributes.workflow_execution
            named.add((child.workflow_id, child.run_id))
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            successor = event.workflow_execution_continued_as_new_event_attributes
            named.add(("", successor.new_execution_run_id))
    return named


async def closed(client: Client, workflow_id: str, run_id: str | None) -> Any:
    """The run's description once it has closed (or, after ``CLOSE_WITHIN``, as it is)."""
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    deadline = time.monotonic() + CLOSE_WITHIN
    while True:
        description = await handle.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            return description
        if time.monotonic() > deadline:
            print(f"bench/actions.py: {workflow_id} is still running", file=sys.stderr)
            return description
        await asyncio.sleep(0.05)


async def listed(client: Client, task_queue: str) -> dict[tuple[str, str], Any]:
    """Every execution on ``task_queue`` the server's visibility lists, by (id, run id)."""
    found = {}
    async for execution in client.list_workflows(f"TaskQueue = '{task_queue}'"):
        found[(execution.id, execution.run_id)] = execution
    return found


@dataclass
class FlowRun:
    """One run of a flow, closed, with its whole history."""

    workflow_id: str
    run_id: str
    workflow_type: str
    events: list[Any]


async def flow_runs(
    client: Client, task_queue: str, started: list[str], began: datetime
) -> tuple[list[FlowRun], list[str]]:
    """Every run of a flow, each awaited until it has closed, with its history; and the runs
    left out (the queue's catalogue run, had it started before the flow).

    The runs are those on ``task_queue`` the server's visibility lists, those the flow's clients
    started (``started``, wherever they run), and every child or successor their histories name.
    """
    # Visibility is written a moment after the run: list until every run the client started is
    # there and the listing holds still.
    listing: dict[tuple[str, str], Any] = {}
    for _ in range(100):
        now = await listed(client, task_queue)
        ids = {workflow_id for workflow_id, _ in now}
        if now == listing and ids >= set(started):
            break
        listing = now
        await asyncio.sleep(0.1)
    keys = [(workflow_id, run_id) for workflow_id, run_id in listing]
    for workflow_id in started:  # started by the client, wherever it runs
        if workflow_id not in {known for known, _ in keys}:
            keys.append((workflow_id, ""))
    seen: set[tuple[str, str]] = set()
    runs: list[FlowRun] = []
    excluded: list[str] = []
    while keys:
        workflow_id, run_id = keys.pop()
        description = await closed(client, workflow_id, run_id or None)
        run_id = description.run_id or run_id
        if (workflow_id, run_id) in seen:
            continue
        seen.add((workflow_id, run_id))
        if (
            workflow_id == f"{CATALOGUE_PREFIX}{task_queue}"
            and description.start_time is not None
            and description.start_time < began
        ):
            excluded.append(workflow_id)
            continue
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        events = list(history.events)
        runs.append(FlowRun(workflow_id, run_id, description.workflow_type, events))
        keys.extend(
            (child_id or workflow_id, child_run) for child_id, child_run in runs_named(events)
        )
    return runs, excluded


async def count_actions(
    client: Client, task_queue: str, calls: ClientCalls, began: datetime
) -> Actions:
    """The flow's actions: its histories on ``task_queue`` and the calls its clients made."""
    actions = Actions()
    runs, actions.excluded_before_flow = await flow_runs(client, task_queue, calls.started, began)
    accepted = 0
    for run in runs:
        actions.workflows[run.workflow_type] += 1
        accepted += tally_history(run.events, run.workflow_type, actions)
    actions.updates = len(calls.updates)
    actions.rejected_updates = len(calls.updates) - accepted
    actions.made_of.update(f"update {name}" for name in calls.updates)
    actions.queries = len(calls.queries)
    actions.made_of.update(f"query {name}" for name in calls.queries)
    actions.free.update(f"query {name} rejected as closed" for name in calls.queries_rejected)
    actions.free["describes"] += calls.describes
    return actions


# The flows ---------------------------------------------------------------------------------------


def check(condition: bool, what: Any) -> None:
    if not condition:
        raise RuntimeError(f"bench/actions.py: the flow did not end as it should: {what}")


async def lockgate_pass(client: Client, task_queue: str, people: Identities) -> None:
    writer = GraphClient(client, task_queue, signer=people.signer("ada"))
    shown = await writer.start(essay.EssayReview, PASSES)
    check(shown.get("status") == "finished" and bool(shown.get("fields", {}).get("url")), shown)


async def lockgate_gate(client: Client, task_queue: str, people: Identities) -> None:
    writer = GraphClient(client, task_queue, signer=people.signer("ada"))
    shown = await writer.start(essay.EssayReview, GATED)
    check(shown.get("status") == "waiting", shown)
    editor = GraphClient(client, task_queue, signer=people.signer("ed"))
    answered = await editor.decide(shown["run_id"], essay.EditorCall.PUBLISH_AS_IS.value)
    check(answered.get("status") == "finished", answered)


async def floor_pass(client: Client, task_queue: str, people: Identities) -> None:
    handle = await client.start_workflow(
        HandEssay.run,
        EssayInput(PASSES["title"], PASSES["rubric"], local_tools=True),
        id=f"hand-essay-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
        request_eager_start=True,
    )
    result = await handle.result()
    check(bool(result["url"]) and result["steps"] == 3, result)


async def floor_gate(client: Client, task_queue: str, people: Identities) -> None:
    handle = await client.start_workflow(
        HandEssay.run,
        EssayInput(GATED["title"], GATED["rubric"], local_tools=True),
        id=f"hand-essay-gate-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
        request_eager_start=True,
    )
    # Sent at once: the handler waits until the run reaches the gate.
    await handle.execute_update(
        HandEssay.decide, DecideInput(choice=essay.EditorCall.PUBLISH_AS_IS.value)
    )
    result = await handle.result()
    check(bool(result["url"]) and result["steps"] == 9, result)


Flow = Callable[[Client, str, Identities], Awaitable[None]]
FLOWS: dict[str, dict[str, Flow]] = {
    "pass_flow": {"lockgate": lockgate_pass, "floor": floor_pass},
    "gate_flow": {"lockgate": lockgate_gate, "floor": floor_gate},
}


def worker_for(side: str, client: Client, task_queue: str, people: Identities) -> Worker:
    if side == "floor":
        return bench_worker(client, task_queue)
    plugin = LockgatePlugin(
        tools=cast("list[Callable[..., Any]]", essay.TOOLS),
        graphs=essay.GRAPHS,
        directory=people.directory,
        secret=WorkerSecret.generate(),
    )
    return Worker(client, task_queue=task_queue, plugins=[plugin])


async def measure(client: Client, flow: str, side: str, people: Identities) -> Actions:
    """One run of ``flow`` on ``side``: a fresh task queue and worker, its actions counted."""
    task_queue = f"bench-actions-{flow}-{side}-{uuid.uuid4().hex[:8]}"
    counted, calls = counting_client(client)
    async with worker_for(side, counted, task_queue, people):
        began = datetime.now(timezone.utc)
        await FLOWS[flow][side](counted, task_queue, people)
        return await count_actions(client, task_queue, calls, began)


async def main(repeats: int) -> None:
    people = Identities(PEOPLE)
    measured: dict[tuple[str, str], list[Actions]] = {
        (flow, side): [] for flow in FLOWS for side in SIDES
    }
    async with dev_server() as environment:
        for _ in range(repeats):
            for flow in FLOWS:
                for side in SIDES:
                    measured[flow, side].append(
                        await measure(environment.client, flow, side, people)
                    )
    medians: dict[tuple[str, str], float] = {}
    for (flow, side), runs in measured.items():
        totals = [actions.total for actions in runs]
        same = all(actions.breakdown() == runs[0].breakdown() for actions in runs)
        if not same:
            print(f"bench/actions.py: {flow} {side} counted {totals}", file=sys.stderr)
        medians[flow, side] = statistics.median(totals)
        shown = runs[totals.index(statistics.median_low(totals))]
        emit(
            BENCH,
            f"{flow}_{side}",
            medians[flow, side],
            "actions",
            **shown.breakdown(),
            made_of=dict(shown.made_of),
            free=dict(shown.free),
            workflows=dict(shown.workflows),
            excluded_before_flow=shown.excluded_before_flow,
            runs=totals,
            same_every_run=same,
        )
    for flow, target in TARGETS.items():
        emit(
            BENCH,
            f"{flow}_lockgate_minus_floor",
            medians[flow, "lockgate"] - medians[flow, "floor"],
            "actions",
            target,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each flow on each side")
    options = parser.parse_args()
    asyncio.run(main(options.repeats))
    leave()

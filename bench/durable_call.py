"""A signed durable tool call (``lockgate.tool_call``) against a standalone activity as its home.

lockgate makes a signed durable tool call a workflow per call: ``ToolClient.call`` starts
``lockgate.tool_call`` held back, signs a proof naming the execution the server started, and
sends it as the ``call`` update; the call checks the caller's scopes (the local activity
``lockgate.prepare_call``) and runs the tool's activity (a local one for a ``local=True`` tool).
temporalio 1.35 and the dev server also run standalone activities (``Client.start_activity``),
with no workflow around them. This script puts figures from this machine on four questions,
each printed as JSON lines (bench ``durable_call``, every ``target`` None: nothing here has a
target, the figures are for a decision):

1. Latency. Three sides, interleaved (the order flipping every round), ``--calls`` each on one
   worker against one dev server: ``signed_call`` (``ToolClient.call`` of ``bench:add``, scope
   ``math``, signed by ``ada`` who holds it), ``signed_call_local`` (the same of
   ``bench:add-local``, declared ``local=True``) and ``standalone`` (``start_activity`` of
   ``lockgate.tool:bench:add-open`` and its ``result()``: the same function as a tool that
   needs no scope, since a standalone tool activity runs unsigned, as ``unverified:temporal``).
   A fourth, ``standalone_scoped``, starts ``lockgate.tool:bench:add`` itself the same way: it
   is refused ``FORBIDDEN`` (checked), and timed anyway. Each side's median is in ms;
   ``*_over_standalone`` is the median of pairwise ratios of one round.
2. Actions per call, Temporal Cloud's rules as ``bench/actions.py`` counts them (its counting
   client and history tally): one signed call of each tool on a fresh queue and worker, from
   its history plus the client's own updates and queries; and one standalone activity, whose
   count is 1 start plus its retries (from ``describe()``, whose record is printed too).
3. What the server vouches for to a standalone activity: what ``activity.info()`` holds inside
   one (``bench.durable_call.whoami``, registered beside the tools), against what its client
   knew before the start.
4. Single use: a standalone activity started twice under one id, the second start after the
   first has closed, under each pair of id reuse and conflict policies (``runs`` is how often
   the activity body ran: 2 means the server ran it again). ``reject_then_replayer_allows``
   is the case that matters: the policy is an option of each start, so whoever starts the id
   again chooses it. Beside them, the workflow's side: one signed ``ToolClient.call`` asked
   twice with one request id (``same_request_id_signed_call_runs``).

The last line, ``choice``, states what these figures support, with the reason.

How to read it: a proof can only name what its signer knows before the proof goes out. A
workflow's proof names the execution the server started (its run id, known after the held-back
start); a standalone activity's input is fixed at its start, so its proof could name only what
the client chose before (its id). If the server runs the same id again, that proof could be
spent twice unless something kept a ledger of spent ids.

    python bench/durable_call.py [--calls 40] [--warmup 2]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import collections
import dataclasses
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel
from temporalio import activity
from temporalio.client import ActivityFailureError, ActivityHandle, Client
from temporalio.common import ActivityIDConflictPolicy, ActivityIDReusePolicy
from temporalio.exceptions import ActivityAlreadyStartedError, ApplicationError
from temporalio.service import RPCError
from temporalio.worker import Worker

from bench._exit import leave
from bench._workloads import dev_server, emit, median_ratio
from bench.actions import count_actions, counting_client
from lockgate import LockgatePlugin, ToolClient, tool
from lockgate.activities._activity_inputs import ToolActivityInput, tool_activity_name
from lockgate.testing import Identities
from lockgate.workflows._activity_options import tool_retry_policy

BENCH = "durable_call"
PEOPLE: dict[str, dict[str, list[str]]] = {"ada": {"scopes": ["math"]}}
ARGUMENTS = {"a": 2, "b": 3}
TIMEOUT = timedelta(seconds=30)
WHOAMI = "bench.durable_call.whoami"


class Sum(BaseModel):
    total: int


TOOL_RUNS: collections.Counter[str] = collections.Counter()
"""How often ``bench:add`` ran (the worker runs in this process)."""


@tool("bench:add", "Add two numbers (for who holds math).", scopes=["math"])
async def add(a: int, b: int) -> Sum:
    TOOL_RUNS["bench:add"] += 1
    return Sum(total=a + b)


@tool("bench:add-local", "Add two numbers, as a local activity.", scopes=["math"], local=True)
async def add_local(a: int, b: int) -> Sum:
    return Sum(total=a + b)


@tool("bench:add-open", "Add two numbers (anyone may).")
async def add_open(a: int, b: int) -> Sum:
    return Sum(total=a + b)


TOOLS = [add, add_local, add_open]

RAN: collections.Counter[str] = collections.Counter()
"""How often ``whoami`` ran, by activity id (the worker runs in this process)."""


@activity.defn(name=WHOAMI)
async def whoami(label: str) -> dict[str, Any]:
    """What the server told this activity about itself."""
    info = activity.info()
    RAN[info.activity_id] += 1
    return {
        "label": label,
        "workflow_id": info.workflow_id,
        "workflow_run_id": info.workflow_run_id,
        "workflow_type": info.workflow_type,
        "activity_id": info.activity_id,
        "activity_run_id": info.activity_run_id,
        "activity_type": info.activity_type,
        "task_queue": info.task_queue,
        "attempt": info.attempt,
        "is_local": info.is_local,
        "in_workflow": info.in_workflow,
    }


def info_fields() -> list[str]:
    return [field.name for field in dataclasses.fields(activity.Info)]


def worker(client: Client, task_queue: str, people: Identities) -> Worker:
    plugin = LockgatePlugin(tools=TOOLS, directory=people.directory, secret=people.secret)
    return Worker(client, task_queue=task_queue, activities=[whoami], plugins=[plugin])


def check(condition: bool, what: Any) -> None:
    if not condition:
        raise RuntimeError(f"bench/durable_call.py: a call did not end as it should: {what}")


# 1. Latency --------------------------------------------------------------------------------------


def signed_call(caller: ToolClient, name: str) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        result = await caller.call(name, ARGUMENTS)
        check(result.get("success") is True and result["data"] == {"total": 5}, result)

    return call


async def start_tool_activity(
    client: Client, task_queue: str, name: str
) -> ActivityHandle[dict[str, Any]]:
    handle: ActivityHandle[dict[str, Any]] = await client.start_activity(
        tool_activity_name(name),
        ToolActivityInput(arguments=dict(ARGUMENTS)),
        id=f"bench-standalone-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
        start_to_close_timeout=TIMEOUT,
        retry_policy=tool_retry_policy(None),
        result_type=dict,
    )
    return handle


def standalone(client: Client, task_queue: str) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        handle = await start_tool_activity(client, task_queue, "bench:add-open")
        result = await handle.result()
        check(result.get("success") is True and result["data"] == {"total": 5}, result)

    return call


def standalone_scoped(client: Client, task_queue: str) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        handle = await start_tool_activity(client, task_queue, "bench:add")
        try:
            result = await handle.result()
        except ActivityFailureError as failure:
            cause = failure.cause
            check(isinstance(cause, ApplicationError) and cause.type == "FORBIDDEN", cause)
            return
        check(False, f"ran unsigned: {result}")

    return call


async def latency(
    client: Client, task_queue: str, people: Identities, calls: int, warmup: int
) -> dict[str, list[float]]:
    caller = ToolClient(client, task_queue, signer=people.signer("ada"))
    sides: dict[str, Callable[[], Awaitable[None]]] = {
        "signed_call": signed_call(caller, "bench:add"),
        "signed_call_local": signed_call(caller, "bench:add-local"),
        "standalone": standalone(client, task_queue),
        "standalone_scoped": standalone_scoped(client, task_queue),
    }
    for _ in range(warmup):
        for call in sides.values():
            await call()
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    order = list(sides)
    for _ in range(calls):
        for name in order:
            began = time.perf_counter()
            await sides[name]()
            seconds[name].append(time.perf_counter() - began)
        order.reverse()
    emit(BENCH, "calls", calls, "calls per side", interleaved=True)
    for name, measured in seconds.items():
        emit(BENCH, f"{name}_ms", 1000 * statistics.median(measured), "ms")
    for name in ("signed_call", "signed_call_local", "standalone_scoped"):
        emit(
            BENCH,
            f"{name}_over_standalone",
            median_ratio(seconds[name], seconds["standalone"]),
            "ratio",
        )
    return seconds


# 2. Actions --------------------------------------------------------------------------------------


async def signed_call_actions(client: Client, people: Identities, name: str) -> Any:
    task_queue = f"bench-durable-actions-{uuid.uuid4().hex[:8]}"
    counted, calls = counting_client(client)
    async with worker(counted, task_queue, people):
        began = datetime.now(timezone.utc)
        await signed_call(ToolClient(counted, task_queue, signer=people.signer("ada")), name)()
        return await count_actions(client, task_queue, calls, began)


async def standalone_actions(client: Client, people: Identities) -> tuple[int, dict[str, Any]]:
    task_queue = f"bench-durable-actions-{uuid.uuid4().hex[:8]}"
    async with worker(client, task_queue, people):
        handle = await start_tool_activity(client, task_queue, "bench:add-open")
        await handle.result()
        described = await handle.describe()
    record = {
        "status": described.status.name,
        "attempt": described.attempt,
        "activity_id": described.activity_id,
        "activity_run_id": described.activity_run_id,
        "handle_run_id_matches": described.activity_run_id == handle.run_id,
        "state_transition_count": described.raw_info.state_transition_count,
        "execution_duration_ms": (
            round(described.execution_duration.total_seconds() * 1000, 3)
            if described.execution_duration
            else None
        ),
        "last_worker_identity": described.last_worker_identity,
    }
    return 1 + max(described.attempt - 1, 0), record


async def actions(client: Client, people: Identities) -> dict[str, float]:
    totals: dict[str, float] = {}
    for side, name in (("signed_call", "bench:add"), ("signed_call_local", "bench:add-local")):
        counted = await signed_call_actions(client, people, name)
        totals[side] = counted.total
        emit(
            BENCH,
            f"{side}_actions",
            counted.total,
            "actions",
            **counted.breakdown(),
            made_of=dict(counted.made_of),
            free=dict(counted.free),
            workflows=dict(counted.workflows),
        )
    count, record = await standalone_actions(client, people)
    totals["standalone"] = count
    emit(
        BENCH,
        "standalone_actions",
        count,
        "actions",
        made_of={"start (standalone activity)": 1, "retries": count - 1},
        described=record,
    )
    return totals


# 3. What the activity is told --------------------------------------------------------------------


async def vouched(client: Client, task_queue: str) -> None:
    chosen = f"bench-whoami-{uuid.uuid4().hex[:12]}"
    handle = await client.start_activity(
        WHOAMI,
        "who am I",
        id=chosen,
        task_queue=task_queue,
        start_to_close_timeout=TIMEOUT,
        result_type=dict,
    )
    told: dict[str, Any] = await handle.result()
    # What the client passed to start_activity, against what the activity was told.
    passed = {chosen, WHOAMI, task_queue}
    named = {key: value for key, value in told.items() if key != "label" and value is not None}
    before = sorted(key for key, value in named.items() if value in passed)
    after = sorted(
        key for key, value in named.items() if isinstance(value, str) and key not in before
    )
    emit(
        BENCH,
        "standalone_info",
        len([key for key in before if key.endswith("_id")]),
        "identifiers known before the start",
        info=told,
        chosen_by_client_before_start=before,
        assigned_by_server_at_start=after,
        run_id_in_start_reply=handle.run_id,
        run_id_matches_start_reply=told["activity_run_id"] == handle.run_id,
        info_fields=info_fields(),
    )


# 4. Single use -----------------------------------------------------------------------------------

POLICIES: dict[str, tuple[tuple[ActivityIDReusePolicy, ActivityIDConflictPolicy], ...]] = {
    # (first start, second start)
    "default": (
        (ActivityIDReusePolicy.ALLOW_DUPLICATE, ActivityIDConflictPolicy.FAIL),
        (ActivityIDReusePolicy.ALLOW_DUPLICATE, ActivityIDConflictPolicy.FAIL),
    ),
    "permissive": (
        (ActivityIDReusePolicy.ALLOW_DUPLICATE, ActivityIDConflictPolicy.USE_EXISTING),
        (ActivityIDReusePolicy.ALLOW_DUPLICATE, ActivityIDConflictPolicy.USE_EXISTING),
    ),
    "reject_duplicate": (
        (ActivityIDReusePolicy.REJECT_DUPLICATE, ActivityIDConflictPolicy.FAIL),
        (ActivityIDReusePolicy.REJECT_DUPLICATE, ActivityIDConflictPolicy.FAIL),
    ),
    "reject_then_replayer_allows": (
        (ActivityIDReusePolicy.REJECT_DUPLICATE, ActivityIDConflictPolicy.FAIL),
        (ActivityIDReusePolicy.ALLOW_DUPLICATE, ActivityIDConflictPolicy.FAIL),
    ),
    "failed_only": (
        (ActivityIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY, ActivityIDConflictPolicy.FAIL),
        (ActivityIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY, ActivityIDConflictPolicy.FAIL),
    ),
}


async def start_twice(client: Client, task_queue: str, case: str) -> int:
    chosen = f"bench-twice-{case}-{uuid.uuid4().hex[:8]}"
    run_ids: list[str | None] = []
    second = "started"
    for reuse, conflict in POLICIES[case]:
        try:
            handle = await client.start_activity(
                WHOAMI,
                case,
                id=chosen,
                task_queue=task_queue,
                start_to_close_timeout=TIMEOUT,
                id_reuse_policy=reuse,
                id_conflict_policy=conflict,
                result_type=dict,
            )
        except (ActivityAlreadyStartedError, RPCError) as refused:
            second = f"refused: {type(refused).__name__}: {refused}"
            break
        await handle.result()
        run_ids.append(handle.run_id)
    runs = RAN[chosen]
    emit(
        BENCH,
        f"same_id_{case}_runs",
        runs,
        "runs",
        policies=[[reuse.name, conflict.name] for reuse, conflict in POLICIES[case]],
        second_start=second,
        run_ids=run_ids,
        ran_again=runs > 1,
    )
    return runs


async def same_request_id(client: Client, task_queue: str, people: Identities) -> int:
    """The workflow's side: one signed call asked twice with one request id."""
    caller = ToolClient(client, task_queue, signer=people.signer("ada"))
    request_id = uuid.uuid4().hex
    before = TOOL_RUNS["bench:add"]
    first = await caller.call("bench:add", ARGUMENTS, request_id=request_id)
    second = await caller.call("bench:add", ARGUMENTS, request_id=request_id)
    runs = TOOL_RUNS["bench:add"] - before
    emit(
        BENCH,
        "same_request_id_signed_call_runs",
        runs,
        "runs",
        same_answer=first == second,
        ran_again=runs > 1,
    )
    return runs


# The choice --------------------------------------------------------------------------------------


def choose(
    seconds: dict[str, list[float]], totals: dict[str, float], reruns: dict[str, int]
) -> None:
    faster = median_ratio(seconds["signed_call"], seconds["standalone"])
    again = sorted(case for case, runs in reruns.items() if runs > 1)
    if again:
        choice = "keep the workflow lockgate.tool_call as the home of a signed durable call"
        reason = (
            f"the server ran one standalone activity id twice ({', '.join(again)}), and the id "
            "is all a proof could name before a standalone start, so a signed proof could be "
            "spent again without a ledger of spent ids; the workflow's proof names the "
            "execution the server started, so it is single use as it stands, which is worth "
            f"its {faster:.2f}x latency and {totals['signed_call']:.0f} against "
            f"{totals['standalone']:.0f} actions per call."
        )
    else:
        choice = "a standalone activity could hold a signed durable call"
        reason = (
            "the server never ran one standalone activity id twice, so a proof naming the id "
            f"is single use, at 1/{faster:.2f} the latency and {totals['standalone']:.0f} "
            f"instead of {totals['signed_call']:.0f} actions per call."
        )
    emit(
        BENCH,
        "choice",
        max(reruns.values()),
        "most runs of one standalone id",
        choice=choice,
        reason=reason,
    )


async def main(calls: int, warmup: int) -> None:
    people = Identities(PEOPLE)
    async with dev_server() as environment:
        client = environment.client
        task_queue = f"bench-durable-{uuid.uuid4().hex[:8]}"
        async with worker(client, task_queue, people):
            seconds = await latency(client, task_queue, people, calls, warmup)
            await vouched(client, task_queue)
            reruns = {case: await start_twice(client, task_queue, case) for case in POLICIES}
            await same_request_id(client, task_queue, people)
        totals = await actions(client, people)
    choose(seconds, totals, reruns)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="calls per side, interleaved")
    parser.add_argument("--warmup", type=int, default=2)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.warmup))
    leave()

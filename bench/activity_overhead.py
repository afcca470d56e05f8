"""Per-call cost of a tool run through lockgate's activity against the same function as a bare one.

One dev server, one worker (with ``LockgatePlugin``), one task queue. Two workflows each make the
same number of sequential activity calls of one trivial async function: one schedules the tool's
lockgate activity (``ToolActivityInput``, an unsigned caller, a tool that needs no scope: the
whole pipeline and its audit record, the caller judged on the worker, heartbeating off because
no heartbeat timeout is set), the other schedules the very same function registered as a bare
``@activity.defn``. Runs are sequential and interleaved, the order flipping every round
(lockgate, bare, bare, lockgate, lockgate, bare, ...). ``lockgate_over_bare`` (target 1.05) pairs
two consecutive rounds, one in each order: their lockgate seconds over their bare seconds, so
that what favours the first (or second) run of a round, and any drift of the machine's load over
those four runs, falls on both sides alike; the figure is the median of these ratios (18 of them
by default: 36 rounds of 64 calls, 2,304 calls a side, 40-50 s in all). Many short rounds keep
each ratio's runs close in time on a machine whose load moves, and the median lets a pair that
other load disturbed fall out: on a shared 2-core machine three runs of the script agreed to
within 0.015 (7 rounds of 200 calls, one ratio per round, spread over 0.04). Prints one JSON
line per figure.

The round trip through the server dominates both sides, so the worker-side time of each
activity (an activity interceptor's clock around the activity function, arguments already
decoded) is printed too: that is what lockgate itself adds per call.

    python bench/activity_overhead.py [--rounds 36] [--calls 64]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from lockgate import WorkerSecret, tool
from lockgate.activities._activity_inputs import ToolActivityInput, tool_activity_name

BENCH = "activity_overhead"
TARGET_RATIO = 1.05
_TIMEOUT = timedelta(seconds=30)


async def add(a: int, b: int) -> dict[str, Any]:
    return {"sum": a + b}


# The same function object, twice: as a lockgate tool, and as a bare Temporal activity.
tool("bench:add", "Add two numbers.")(add)
bare_add = activity.defn(name="bench.bare_add")(add)


@workflow.defn(name="bench.lockgate_calls")
class LockgateCalls:
    @workflow.run
    async def run(self, calls: int) -> int:
        total = 0
        for number in range(calls):
            result = await workflow.execute_activity(
                tool_activity_name("bench:add"),
                ToolActivityInput(arguments={"a": number, "b": 1}),
                start_to_close_timeout=_TIMEOUT,
                result_type=dict,
            )
            total += result["data"]["sum"]
        return total


@workflow.defn(name="bench.bare_calls")
class BareCalls:
    @workflow.run
    async def run(self, calls: int) -> int:
        total = 0
        for number in range(calls):
            result = await workflow.execute_activity(
                "bench.bare_add",
                args=[number, 1],
                start_to_close_timeout=_TIMEOUT,
                result_type=dict,
            )
            total += result["sum"]
        return total


class ActivityClock(Interceptor):
    """Records how long each activity's function takes on the worker, by activity type."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, list[float]] = defaultdict(list)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ClockedActivity(next, self.seconds)


class _ClockedActivity(ActivityInboundInterceptor):
    def __init__(
        self, next: ActivityInboundInterceptor, seconds: defaultdict[str, list[float]]
    ) -> None:
        super().__init__(next)
        self._seconds = seconds

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        started = time.perf_counter()
        try:
            return await self.next.execute_activity(input)
        finally:
            elapsed = time.perf_counter() - started
            self._seconds[activity.info().activity_type].append(elapsed)


@contextlib.contextmanager
def children_print_to_stderr() -> Iterator[None]:
    """Points file descriptor 1 at stderr while a child process starts, then restores it.

    The dev server prints its banner and warnings on its stdout, which it inherits; this keeps
    this script's stdout for the JSON lines alone.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def emit(metric: str, value: float, unit: str, target: float | None = None) -> None:
    line = {"bench": BENCH, "metric": metric, "value": round(value, 3), "target": target}
    line["unit"] = unit
    print(json.dumps(line), flush=True)


async def main(rounds: int, calls: int) -> None:
    from temporalio.client import Client
    from temporalio.testing import WorkflowEnvironment
    from temporalio.worker import Worker

    from lockgate import LockgatePlugin
    from lockgate.devserver import server_args, temporal_binary
    from lockgate.namespace import LOCKGATE_SEARCH_ATTRIBUTES

    expected = sum(range(calls)) + calls

    async def timed(client: Client, workflow_name: str, task_queue: str) -> float:
        started = time.perf_counter()
        total = await client.execute_workflow(
            workflow_name,
            calls,
            id=f"{workflow_name}-{uuid.uuid4().hex[:12]}",
            task_queue=task_queue,
            result_type=int,
        )
        seconds = time.perf_counter() - started
        assert total == expected, (workflow_name, total, expected)
        return seconds

    with children_print_to_stderr():
        environment = await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(temporal_binary()),
            search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
            dev_server_extra_args=server_args(database=False),
            ui=False,
        )
    clock = ActivityClock()
    try:
        client = environment.client
        task_queue = f"bench-activity-overhead-{uuid.uuid4().hex[:8]}"
        async with Worker(
            client,
            task_queue=task_queue,
            workflows=[LockgateCalls, BareCalls],
            activities=[bare_add],
            interceptors=[clock],
            plugins=[LockgatePlugin(tools=[add], secret=WorkerSecret.generate())],
        ):
            # One warm-up run each: the sandbox's first import of this module, the converters'
            # caches, the server's first task queue partitions.
            await timed(client, "bench.lockgate_calls", task_queue)
            await timed(client, "bench.bare_calls", task_queue)
            clock.seconds.clear()
            lockgate_seconds: list[float] = []
            bare_seconds: list[float] = []
            for round_number in range(rounds):
                if round_number % 2 == 0:
                    lockgate = await timed(client, "bench.lockgate_calls", task_queue)
                    bare = await timed(client, "bench.bare_calls", task_queue)
                else:
                    bare = await timed(client, "bench.bare_calls", task_queue)
                    lockgate = await timed(client, "bench.lockgate_calls", task_queue)
                lockgate_seconds.append(lockgate)
                bare_seconds.append(bare)
    finally:
        await environment.shutdown()

    # Two consecutive rounds, one in each order, make one ratio.
    ratios = [
        sum(lockgate_seconds[first : first + 2]) / sum(bare_seconds[first : first + 2])
        for first in range(0, rounds - 1, 2)
    ]

    emit("lockgate_ms_per_call", statistics.median(lockgate_seconds) * 1000 / calls, "ms")
    emit("bare_ms_per_call", statistics.median(bare_seconds) * 1000 / calls, "ms")
    emit("lockgate_seconds_per_run", statistics.median(lockgate_seconds), "s")
    emit("bare_seconds_per_run", statistics.median(bare_seconds), "s")
    emit("lockgate_over_bare", statistics.median(ratios), "ratio", TARGET_RATIO)
    emit("ratios_in_median", len(ratios), "pairs of rounds")
    lockgate_activity = statistics.median(clock.seconds[tool_activity_name("bench:add")]) * 1e6
    bare_activity = statistics.median(clock.seconds["bench.bare_add"]) * 1e6
    emit("lockgate_activity_us_on_worker", lockgate_activity, "us")
    emit("bare_activity_us_on_worker", bare_activity, "us")
    emit("lockgate_added_us_per_call_on_worker", lockgate_activity - bare_activity, "us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=36, help="even: two rounds, one in each order, per ratio"
    )
    parser.add_argument("--calls", type=int, default=64, help="calls per run")
    options = parser.parse_args()
    if options.rounds < 2 or options.rounds % 2:
        parser.error("--rounds takes an even number, at least 2")
    asyncio.run(main(options.rounds, options.calls))
    # Here, not at the top: the workflow sandbox re-imports this module and may not touch sys.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench._exit import leave

    leave()

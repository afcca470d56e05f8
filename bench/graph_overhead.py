"""Wall time per run of a 20-node linear declared graph against a hand-written Temporal workflow.

Both sides run on one worker (one task queue, one sandbox configuration) against one dev server.
The graph's 20 nodes are trivial async ``@tool`` functions passing a counter channel along; the
hand-written workflow calls the same 20 functions as bare ``@activity.defn`` activities, one
after another. Both are started the same way: ``start_workflow`` (for lockgate through
``GraphClient.start(..., wait=False)``, unsigned), then the handle's ``result()``. Runs are
sequential and interleaved (lockgate, hand-written, then the other order), and the figure,
``lockgate_over_handwritten`` (target 1.05), is the median of the pairwise ratios. A signed start
(the run held back until its proof arrives as its ``start`` update, which the run's own update
validator verifies; ``wait=False`` returns once the proof is accepted) is measured as a third
side, for information. CPU seconds per run, of this process (worker and client) and of the dev
server, are reported beside the wall time.

    python bench/graph_overhead.py [--repeats 20]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import statistics
import uuid
from collections.abc import Awaitable, Callable

from temporalio.client import Client

from bench._exit import leave
from bench._workloads import (
    HandLinear,
    Linear20,
    bench_worker,
    dev_server,
    emit,
    median_ratio,
    timed,
)
from lockgate import GraphClient, LockgatePlugin
from lockgate.testing import Identities

BENCH = "graph_overhead"
TARGET_RATIO = 1.05


async def run_lockgate(client: Client, graphs: GraphClient) -> None:
    started = await graphs.start(Linear20, {"counter": 0}, wait=False)
    result = await client.get_workflow_handle(started["run_id"], result_type=dict).result()
    assert result["status"] == "finished" and result["fields"]["counter"] == 20, result


async def run_handwritten(client: Client, task_queue: str) -> None:
    handle = await client.start_workflow(
        HandLinear.run, 0, id=f"hand-linear-{uuid.uuid4().hex[:12]}", task_queue=task_queue
    )
    assert await handle.result() == 20


async def main(repeats: int, warmup: int) -> None:
    people = Identities({"starter": {}})
    async with dev_server() as environment:
        client = environment.client
        task_queue = f"bench-overhead-{uuid.uuid4().hex[:8]}"
        plugin = LockgatePlugin(graphs=[Linear20], directory=people.directory, secret=people.secret)
        unsigned = GraphClient(client, task_queue)
        signed = GraphClient(client, task_queue, signer=people.signer("starter"))
        sides: dict[str, Callable[[], Awaitable[None]]] = {
            "lockgate": lambda: run_lockgate(client, unsigned),
            "handwritten": lambda: run_handwritten(client, task_queue),
            "lockgate_signed": lambda: run_lockgate(client, signed),
        }
        async with bench_worker(client, task_queue, plugin):
            for _ in range(warmup):
                for run in sides.values():
                    await run()
            seconds: dict[str, list[float]] = {name: [] for name in sides}
            cpu: dict[str, list[float]] = {name: [] for name in sides}
            server_cpu: dict[str, list[float]] = {name: [] for name in sides}
            order = list(sides)
            for _ in range(repeats):
                for name in order:
                    wall, used, served = await timed(sides[name])
                    seconds[name].append(wall)
                    cpu[name].append(used)
                    server_cpu[name].append(served)
                order.reverse()

    emit(BENCH, "repeats", repeats, "runs per side", nodes=20)
    for name in sides:
        emit(BENCH, f"{name}_seconds_per_run", statistics.median(seconds[name]), "s")
    emit(
        BENCH,
        "lockgate_over_handwritten",
        median_ratio(seconds["lockgate"], seconds["handwritten"]),
        "ratio",
        TARGET_RATIO,
        start="GraphClient.start(wait=False) unsigned + handle.result()",
    )
    emit(
        BENCH,
        "lockgate_signed_over_handwritten",
        median_ratio(seconds["lockgate_signed"], seconds["handwritten"]),
        "ratio",
        start="GraphClient.start(wait=False) signed + handle.result()",
    )
    # A run's wall time is mostly waiting for the server to hand out the next task, alike for
    # both sides; the CPU spent per run (here and in the server) shows what lockgate adds.
    for name in sides:
        emit(BENCH, f"{name}_cpu_seconds_per_run", statistics.median(cpu[name]), "s")
        emit(BENCH, f"{name}_server_cpu_seconds_per_run", statistics.median(server_cpu[name]), "s")
    emit(
        BENCH,
        "lockgate_cpu_over_handwritten_cpu",
        median_ratio(cpu["lockgate"], cpu["handwritten"]),
        "ratio",
        measured="this process: worker and client",
    )
    emit(
        BENCH,
        "lockgate_server_cpu_over_handwritten_server_cpu",
        median_ratio(server_cpu["lockgate"], server_cpu["handwritten"]),
        "ratio",
        measured="dev server process",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    options = parser.parse_args()
    asyncio.run(main(options.repeats, options.warmup))
    leave()

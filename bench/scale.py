"""10,000 runs parked at gates: listing them, and the worker's memory while they wait.

The runs (``bench:gate-loop``: one node, then a gate asking an editor) are started unsigned and
concurrently, in batches, and served by one worker running in a child process, so that its
resident memory (``VmRSS`` of ``/proc/<child pid>/status``) is the worker's alone. Once the
server's visibility counts all of them at their gate, ``GraphClient.pending(of="editor")`` is
timed against iterating a raw ``client.list_workflows`` of the very query ``pending`` sends
(its state, status, task queue and role), interleaved: ``pending_over_raw_list`` (target 1.20)
is the median of pairwise ratios, what ``pending`` adds (reading each run's gate from its memo,
checking that the gate names its execution, judging the viewer) over the listing it cannot do
without.

``worker_rss_per_parked_run_kb`` (target 100) is the worker's resident memory once every run
is parked, less what it held idle (ready, before the first start), divided by the runs parked.
A worker keeps at most ``max_cached_workflows`` runs in memory (temporalio's default, 1,000, as
this worker has it) and evicts the rest, which are read again from history when they next get a
task. So past that many runs the figure is the cache's memory spread over all parked runs: it
falls as more runs park, and says what parking costs a worker that keeps its default cache.
``worker_rss_per_cached_run_kb`` (for information) divides the same memory by the runs the
cache can hold, what one run costs while it is held.

The default is 10,000 runs (``--runs`` shrinks it); the time they took to park is printed
(``seconds_to_park``: 6-7 minutes on a shared 2-core machine, the script 8-9 in all). Parking is
bound by CPU, not by the starts: per run some 38 ms of the dev server's (its start alone ~12 ms,
then two workflow tasks, an activity and the gate's search-attribute and memo writes) and 16 ms
of the worker's.

    python bench/scale.py [--runs 10000] [--repeats 9]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import inspect
import statistics
import time
import uuid

from temporalio.client import Client
from temporalio.worker import Worker

from bench._exit import leave
from bench._workloads import (
    REPO_ROOT,
    GateLoop,
    child_environment,
    chunks,
    dev_server,
    emit,
    median_ratio,
    rss_megabytes,
    serve_in_subprocess_command,
)
from lockgate import GraphClient
from lockgate.clients._client_support import quote_literal
from lockgate.testing import Identities
from lockgate.workflows._search_attributes import LOCKGATE_AWAITING, LOCKGATE_STATE

BENCH = "scale"
TARGET_LIST_RATIO = 1.20
TARGET_RSS_MB = 300.0
TARGET_RSS_PER_PARKED_RUN_KB = 100.0
WORKER_CACHE = inspect.signature(Worker).parameters["max_cached_workflows"].default
"""The runs a worker keeps in memory by default, as the worker child keeps them."""
PARK_SECONDS_PER_RUN = 0.1
"""How long, per run, the runs may take to park before the benchmark gives up (plus two
minutes): ten times what they take on a quiet 2-core machine."""


def pending_query(task_queue: str) -> str:
    """What ``GraphClient(client, task_queue).pending(of="editor")`` asks the server for."""
    return (
        f"{LOCKGATE_STATE.name} = 'waiting' AND ExecutionStatus = 'Running' "
        f"AND TaskQueue = {quote_literal(task_queue)} AND {LOCKGATE_AWAITING.name} = 'editor'"
    )


async def wait_for_count(client: Client, query: str, wanted: int, timeout: float) -> float:
    """Seconds until visibility counts ``wanted`` runs at a gate (it is eventually consistent)."""
    started = time.perf_counter()
    while True:
        count = (await client.count_workflows(query)).count
        if count >= wanted:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"only {count} of {wanted} runs reached their gate in {timeout}s")
        # Each count is a query over every run parked so far: asked less often while many
        # runs are still on their way (the server parks some 40 a second on 2 cores).
        await asyncio.sleep(min(5.0, max(0.5, (wanted - count) / 200)))


async def raw_list(client: Client, query: str) -> int:
    return sum([1 async for _ in client.list_workflows(query)])


async def main(runs: int, repeats: int, batch: int) -> None:
    people = Identities({"ed": {"roles": ["editor"]}})
    async with dev_server() as environment:
        client = environment.client
        task_queue = f"bench-scale-{uuid.uuid4().hex[:8]}"
        worker = await asyncio.create_subprocess_exec(
            *serve_in_subprocess_command(client.service_client.config.target_host, task_queue),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=REPO_ROOT,
            env=child_environment(people.toml),
        )
        try:
            assert worker.stdout is not None and worker.stdin is not None
            ready = await asyncio.wait_for(worker.stdout.readline(), 60)
            assert ready.strip() == b"ready", ready
            rss_idle = rss_megabytes(worker.pid)

            starter = GraphClient(client, task_queue)
            started_at = time.perf_counter()
            for indexes in chunks(range(runs), batch):
                started = await asyncio.gather(
                    *(starter.start(GateLoop, {}, wait=False) for _ in indexes)
                )
                assert all(run["status"] == "started" for run in started), started
            query = pending_query(task_queue)
            await wait_for_count(client, query, runs, 120 + PARK_SECONDS_PER_RUN * runs)
            parking_seconds = time.perf_counter() - started_at
            rss_parked = rss_megabytes(worker.pid)

            editor = GraphClient(client, task_queue, signer=people.signer("ed"))
            pending = await editor.pending(of="editor")
            assert len(pending) == runs, len(pending)  # a sanity check, not a timing
            assert await raw_list(client, query) == runs

            pending_seconds: list[float] = []
            raw_seconds: list[float] = []
            for repeat in range(repeats):
                first_pending = repeat % 2 == 0
                for side in ("pending", "raw") if first_pending else ("raw", "pending"):
                    began = time.perf_counter()
                    if side == "pending":
                        listed = len(await editor.pending(of="editor"))
                        pending_seconds.append(time.perf_counter() - began)
                    else:
                        listed = await raw_list(client, query)
                        raw_seconds.append(time.perf_counter() - began)
                    assert listed == runs, (side, listed)
            rss_after_listing = rss_megabytes(worker.pid)
        finally:
            if worker.stdin is not None:
                worker.stdin.close()
            try:
                await asyncio.wait_for(worker.wait(), 30)
            except asyncio.TimeoutError:
                worker.kill()
                await worker.wait()

    emit(BENCH, "runs_parked", runs, "runs", batch=batch, seconds_to_park=round(parking_seconds, 1))
    emit(BENCH, "list_repeats", repeats, "lists per side")
    emit(BENCH, "pending_seconds", statistics.median(pending_seconds), "s")
    emit(BENCH, "raw_list_workflows_seconds", statistics.median(raw_seconds), "s")
    emit(
        BENCH,
        "pending_over_raw_list",
        median_ratio(pending_seconds, raw_seconds),
        "ratio",
        TARGET_LIST_RATIO,
    )
    emit(BENCH, "worker_rss_idle_mb", rss_idle, "MB", measured="worker child process VmRSS")
    emit(
        BENCH,
        "worker_rss_parked_mb",
        max(rss_parked, rss_after_listing),
        "MB",
        TARGET_RSS_MB,
        measured="worker child process VmRSS",
    )
    emit(
        BENCH,
        "worker_rss_per_parked_run_kb",
        (rss_parked - rss_idle) * 1024 / runs,
        "KB",
        TARGET_RSS_PER_PARKED_RUN_KB,
        measured="(worker VmRSS once all runs are parked - VmRSS idle) / runs parked",
        max_cached_workflows=WORKER_CACHE,
    )
    emit(
        BENCH,
        "worker_rss_per_cached_run_kb",
        (rss_parked - rss_idle) * 1024 / min(runs, WORKER_CACHE),
        "KB",
        measured="the same memory / the runs the worker's cache holds",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--batch", type=int, default=50)
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.repeats, options.batch))
    leave()

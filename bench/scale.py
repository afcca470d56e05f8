"""1,000 runs parked at gates: listing them, and the worker's memory while they wait.

The runs (``bench:gate-loop``: one node, then a gate asking an editor) are started unsigned and
concurrently, in batches, and served by one worker running in a child process, so that its
resident memory (``VmRSS`` of ``/proc/<child pid>/status``) is the worker's alone. Once the
server's visibility counts all 1,000 at their gate, ``GraphClient.pending(of="editor")`` is timed
against iterating a raw ``client.list_workflows`` of the same query, interleaved; the figure is
the median of pairwise ratios.

    python bench/scale.py [--runs 1000] [--repeats 9]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import statistics
import time
import uuid

from temporalio.client import Client

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
from lockgate.testing import Identities
from lockgate.workflows._search_attributes import LOCKGATE_AWAITING, LOCKGATE_STATE

BENCH = "scale"
TARGET_LIST_RATIO = 2.0
TARGET_RSS_MB = 300.0
# What GraphClient.pending(of="editor") asks the server for.
QUERY = (
    f"{LOCKGATE_STATE.name} = 'waiting' AND ExecutionStatus = 'Running' "
    f"AND {LOCKGATE_AWAITING.name} = 'editor'"
)


async def wait_for_count(client: Client, wanted: int, timeout: float) -> float:
    """Seconds until visibility counts ``wanted`` runs at a gate (it is eventually consistent)."""
    started = time.perf_counter()
    while True:
        count = (await client.count_workflows(QUERY)).count
        if count >= wanted:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"only {count} of {wanted} runs reached their gate in {timeout}s")
        await asyncio.sleep(0.5)


async def raw_list(client: Client) -> int:
    return sum([1 async for _ in client.list_workflows(QUERY)])


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
            await wait_for_count(client, runs, timeout=300)
            parking_seconds = time.perf_counter() - started_at
            rss_parked = rss_megabytes(worker.pid)

            editor = GraphClient(client, task_queue, signer=people.signer("ed"))
            pending = await editor.pending(of="editor")
            assert len(pending) == runs, len(pending)  # a sanity check, not a timing
            assert await raw_list(client) == runs

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
                        listed = await raw_list(client)
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
    emit(BENCH, "worker_rss_per_parked_run_kb", (rss_parked - rss_idle) * 1024 / runs, "KB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--batch", type=int, default=50)
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.repeats, options.batch))
    leave()

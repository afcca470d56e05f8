"""``lockgate worker`` as an operator runs it: it drains on SIGTERM within its grace."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client

from lockgate import GraphClient
from tests.reliability_graphs import SlowJob
from tests.support import worker_process


async def _eventually(check: Callable[[], Awaitable[Any]], timeout: float = 60) -> Any:
    """Polls ``check`` until it returns something truthy, failing after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not (found := await check()):
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.05)
    return found


def _started(folder: Path) -> list[list[str]]:
    """``job key pid`` of each attempt of the slow tool that began in ``folder``."""
    path = folder / "started"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def _effects(folder: Path) -> list[str]:
    path = folder / "effects"
    return path.read_text().splitlines() if path.exists() else []


async def _start_held(client: GraphClient, folder: Path, job: str) -> str:
    """Starts a run whose one tool call waits for ``folder/release``; its run id, once the call
    began."""
    folder.mkdir()
    run = await client.start(SlowJob, {"job": job, "release_dir": str(folder)}, wait=False)

    async def began() -> bool:
        return bool(_started(folder))

    await _eventually(began)
    return str(run["run_id"])


async def _stop(*workers: asyncio.subprocess.Process) -> None:
    for worker in workers:
        if worker.returncode is None:
            worker.send_signal(signal.SIGTERM)
        await worker.wait()


async def test_a_worker_told_to_stop_finishes_the_call_it_holds_and_takes_no_new_work(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = temporal_client.service_client.config.target_host
    client = GraphClient(temporal_client, task_queue)
    draining = await worker_process(address, task_queue, "", "--grace-seconds", "60")
    workers = [draining]
    try:
        held = await _start_held(client, tmp_path / "held", "held")
        draining.send_signal(signal.SIGTERM)
        workers.append(await worker_process(address, task_queue, ""))
        new = await _start_held(client, tmp_path / "new", "new")
        (tmp_path / "new" / "release").touch()
        (tmp_path / "held" / "release").touch()
        status = await asyncio.wait_for(draining.wait(), 60)
        results = [
            await asyncio.wait_for(temporal_client.get_workflow_handle(run).result(), 60)
            for run in (held, new)
        ]
    finally:
        await _stop(*workers)

    assert status == 0
    assert [attempt[2] for attempt in _started(tmp_path / "held")] == [str(draining.pid)]
    assert [attempt[2] for attempt in _started(tmp_path / "new")] == [str(workers[1].pid)]
    assert [result["channels"]["result"] for result in results] == ["held done", "new done"]
    assert _effects(tmp_path / "held") == [f"held {_started(tmp_path / 'held')[0][1]}"]


async def test_a_call_still_running_when_the_grace_runs_out_is_retried_on_another_worker(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = temporal_client.service_client.config.target_host
    client = GraphClient(temporal_client, task_queue)
    stopping = await worker_process(address, task_queue, "", "--grace-seconds", "1")
    workers = [stopping]
    folder = tmp_path / "held"
    try:
        held = await _start_held(client, folder, "held")
        stopping.send_signal(signal.SIGTERM)
        status = await asyncio.wait_for(stopping.wait(), 30)
        workers.append(await worker_process(address, task_queue, ""))

        async def retried() -> bool:
            return len(_started(folder)) == 2

        await _eventually(retried)
        (folder / "release").touch()
        result = await asyncio.wait_for(temporal_client.get_workflow_handle(held).result(), 60)
    finally:
        await _stop(*workers)

    first, second = _started(folder)
    assert status == 0
    assert (first[2], second[2]) == (str(stopping.pid), str(workers[1].pid))
    assert first[1] == second[1]  # the same idempotency key on both attempts
    assert result["status"] == "finished"
    assert result["channels"]["result"] == "held done"
    assert _effects(folder) == [f"held {first[1]}"]

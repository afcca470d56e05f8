"""``lockgate worker`` as an operator runs it: it drains on SIGTERM within its grace, says over
HTTP whether it is alive and ready, and serves Prometheus metrics, the SDK's and lockgate's."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Replayer

from lockgate import GraphClient, LockgatePlugin, ToolClient
from lockgate.devserver import free_port
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import Identities
from lockgate.worker import WorkerHealth, run_worker, serve_health
from tests.helpers.graphs import ALWAYS_FAILS
from tests.helpers.reliability_graphs import SlowJob
from tests.helpers.support import REPOSITORY, SECRET, error_of, gate_of, worker_process


async def _eventually(check: Callable[[], Awaitable[Any]], timeout: float = 60) -> Any:
    """Polls ``check`` until it returns something truthy, failing after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not (found := await check()):
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.05)
    return found


async def _get(port: int, path: str) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of ``GET http://127.0.0.1:PORT/PATH``."""

    def get() -> tuple[int, dict[str, Any]]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    return await asyncio.to_thread(get)


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
    port = free_port()
    draining = await worker_process(
        address, task_queue, "", "--grace-seconds", "60", "--health-port", str(port)
    )
    workers = [draining]
    try:
        held = await _start_held(client, tmp_path / "held", "held")
        ready = await _get(port, "/readyz")
        draining.send_signal(signal.SIGTERM)

        async def not_ready() -> tuple[int, dict[str, Any]] | None:
            answer = await _get(port, "/readyz")
            return answer if answer[0] == 503 else None

        while_draining = await _eventually(not_ready)
        alive_while_draining = await _get(port, "/livez")
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

    assert ready == (200, {"ready": True})
    assert while_draining[1]["reason"].startswith("draining")
    assert alive_while_draining == (200, {"alive": True})
    assert status == 0
    assert [attempt[2] for attempt in _started(tmp_path / "held")] == [str(draining.pid)]
    assert [attempt[2] for attempt in _started(tmp_path / "new")] == [str(workers[1].pid)]
    assert [result["fields"]["result"] for result in results] == ["held done", "new done"]
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
    assert result["fields"]["result"] == "held done"
    assert _effects(folder) == [f"held {first[1]}"]


class _NamespaceCheckHeld(LockgatePlugin):
    """A plugin whose namespace check waits until the test lets it through."""

    def __init__(self) -> None:
        super().__init__(graphs=[SlowJob], secret=SECRET)
        self.checked = asyncio.Event()

    async def check_namespace(self, client: Client) -> None:
        await self.checked.wait()
        await super().check_namespace(client)


async def test_readyz_says_what_the_worker_waits_for_until_it_polls(
    temporal_client: Client, task_queue: str
) -> None:
    health = WorkerHealth()
    port = free_port()
    probes = await serve_health(health, "127.0.0.1", port)
    plugin = _NamespaceCheckHeld()
    stop = asyncio.Event()
    before_anything = await _get(port, "/readyz")
    serving = asyncio.create_task(
        run_worker(temporal_client, plugin, task_queue, stop=stop, health=health)
    )
    try:
        await asyncio.sleep(0.1)
        while_checking = await _get(port, "/readyz")
        alive = await _get(port, "/livez")
        plugin.checked.set()

        async def ready() -> tuple[int, dict[str, Any]] | None:
            answer = await _get(port, "/readyz")
            return answer if answer[0] == 200 else None

        once_polling = await _eventually(ready)
        stop.set()
        await serving
        stopped = await _get(port, "/readyz")
        unknown = await _get(port, "/metrics")
    finally:
        plugin.checked.set()
        stop.set()
        await serving
        probes.close()
        await probes.wait_closed()

    assert before_anything[0] == 503
    assert before_anything[1]["waiting_for"] == [
        "directory",
        "worker secret",
        "namespace",
        "polling",
    ]
    assert while_checking == (
        503,
        {
            "ready": False,
            "reason": "waiting for: namespace, polling",
            "waiting_for": ["namespace", "polling"],
        },
    )
    assert alive == (200, {"alive": True})
    assert once_polling == (200, {"ready": True})
    assert stopped[0] == 503
    assert unknown[0] == 404


_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _samples(exposition: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``, in a Prometheus
    text exposition."""
    total = 0.0
    for line in exposition.splitlines():
        found = _SAMPLE.match(line)
        if found is None or found["name"] != name:
            continue
        have = dict(_LABEL.findall(found["labels"] or ""))
        if all(have.get(key) == value for key, value in labels.items()):
            total += float(found["value"])
    return total


async def _scrape(port: int) -> str:
    def get() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text: str = answer.read().decode()
            return text

    return await asyncio.to_thread(get)


async def test_the_metrics_port_serves_the_sdks_series_and_lockgates_own(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    people = Identities({"ada": {}, "ed": {"roles": ["editor"], "scopes": ["essay:publish"]}})
    (tmp_path / "directory.toml").write_text(people.toml)
    port = free_port()
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "worker",
        "--graphs",
        "lockgate.examples.essay_review",
        "--allow-examples",
        "--directory",
        str(tmp_path / "directory.toml"),
        "--task-queue",
        task_queue,
        "--metrics-port",
        str(port),
        "--metrics-host",
        "127.0.0.1",
        cwd=tmp_path,
        env={
            **os.environ,
            "TEMPORAL_ADDRESS": temporal_client.service_client.config.target_host,
            "PYTHONPATH": str(REPOSITORY),
            "LOCKGATE_WORKER_SECRET": people.secret.to_text(),
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert worker.stdout is not None
        ready = await asyncio.wait_for(worker.stdout.readline(), 60)
        assert b"worker ready" in ready, ready
        published = await ToolClient(temporal_client, task_queue, signer=people.signer("ed")).call(
            "essay:publish", {"title": "Tides", "draft": "y"}
        )
        refused = await ToolClient(temporal_client, task_queue, signer=people.signer("ada")).call(
            "essay:publish", {"title": "Tides", "draft": "y"}
        )
        run = await GraphClient(temporal_client, task_queue, signer=people.signer("ada")).start(
            EssayReview, ALWAYS_FAILS
        )
        gate_of(run)
        await GraphClient(temporal_client, task_queue, signer=people.signer("ed")).decide(
            run["run_id"], "publish_as_is"
        )
        handle = temporal_client.get_workflow_handle(run["run_id"])
        finished = await handle.result()
        # Recorded by a worker counting metrics, replayed by one that counts none.
        replayer = Replayer(
            workflows=[], plugins=[LockgatePlugin(graphs=[EssayReview], secret=people.secret)]
        )
        replayed = await replayer.replay_workflow(
            await handle.fetch_history(), raise_on_replay_failure=False
        )

        async def counted() -> str | None:
            scraped = await _scrape(port)
            every_call = _samples(scraped, "lockgate_tool_calls", tool="essay:publish")
            completed = _samples(scraped, "temporal_workflow_completed")
            return scraped if every_call == 3 and completed >= 3 else None

        scraped = await _eventually(counted)
    finally:
        worker.send_signal(signal.SIGTERM)
        await worker.wait()

    code = error_of(refused)["code"]
    assert published["error"] is None
    assert finished["status"] == "finished"
    assert replayed.replay_failure is None
    assert _samples(scraped, "lockgate_tool_calls", tool="essay:publish", outcome="ok") == 2
    assert (
        _samples(scraped, "lockgate_tool_calls", tool="essay:publish", outcome="error", code=code)
        == 1
    )
    assert _samples(scraped, "lockgate_tool_calls", tool="essay:grade", outcome="ok") == 4
    assert _samples(scraped, "lockgate_refusals", code=code, event="tool.call") == 1
    gate = {"graph": "essay:review", "role": "editor"}
    assert _samples(scraped, "lockgate_gates_opened", **gate) == 1
    assert _samples(scraped, "lockgate_gates_answered", **gate) == 1
    assert _samples(scraped, "lockgate_gate_decision_seconds_count", **gate) == 1
    assert _samples(scraped, "lockgate_gate_decision_seconds_bucket", le="+Inf", **gate) == 1
    assert _samples(scraped, "lockgate_gates_opened", workflow_type="essay:review") == 1
    assert _samples(scraped, "temporal_request") > 0
    assert _samples(scraped, "temporal_workflow_completed", workflow_type="essay:review") == 1

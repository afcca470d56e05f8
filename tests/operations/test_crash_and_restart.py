"""Workers die and servers restart: every run finishes, every write and trail row exactly once.

A tool's side effect is at least once (a killed worker may have done it before dying), so
tools get an idempotency key that is the same on every attempt of one step: the run, the node
and how many times the run reached it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowUpdateInput,
    WorkflowUpdateHandle,
)
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.devserver import DevServer, free_port
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import Identities
from tests.helpers.graphs import ALWAYS_FAILS
from tests.helpers.reliability_graphs import SlowJob
from tests.helpers.support import worker_process


async def _eventually(check: Any, timeout: float = 60, every: float = 0.05) -> Any:
    """Polls ``check`` (async) until it returns something truthy, failing after ``timeout``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await check()
        if found:
            return found
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(every)


def _lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


async def test_runs_finish_on_the_other_worker_when_the_one_running_their_node_is_killed(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    address = temporal_client.service_client.config.target_host
    workers = [await worker_process(address, task_queue, "") for _ in range(2)]
    client = GraphClient(temporal_client, task_queue)
    jobs = [f"job{number}" for number in range(4)]
    try:
        runs = [
            await client.start(SlowJob, {"job": job, "release_dir": str(tmp_path)}, wait=False)
            for job in jobs
        ]

        async def all_started() -> bool:
            return {line[0] for line in _lines(tmp_path / "started")} == set(jobs)

        await _eventually(all_started)
        victim = int(_lines(tmp_path / "started")[0][2])
        os.kill(victim, signal.SIGKILL)
        (tmp_path / "release").touch()
        results = [
            await asyncio.wait_for(temporal_client.get_workflow_handle(run["run_id"]).result(), 90)
            for run in runs
        ]
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.send_signal(signal.SIGTERM)
            await worker.wait()

    effects = Counter(tuple(line) for line in _lines(tmp_path / "effects"))
    print(
        json.dumps(
            {
                "crash": {
                    "runs": len(runs),
                    "finished": sum(r["status"] == "finished" for r in results),
                }
            }
        )
    )
    assert any(worker.pid == victim for worker in workers)
    for job, result in zip(jobs, results, strict=True):
        assert result["status"] == "finished"
        assert result["fields"]["result"] == f"{job} done"
        assert [(row["node"], row["outcome"]) for row in result["trail"]] == [("work", "ran")]
        keys = {key for (done, key) in effects if done == job}
        assert keys == {f"{result['run_id']}/{result['execution']}:work:1"}  # one step, one key


async def test_runs_parked_at_gates_and_mid_node_survive_a_server_restart(
    tmp_path: Path, task_queue: str
) -> None:
    port = free_port()
    database = tmp_path / "temporal.db"
    people = Identities({"ada": {}, "ed": {"roles": ["editor"], "scopes": ["essay:publish"]}})
    plugin = LockgatePlugin(
        graphs=[EssayReview, SlowJob], directory=people.directory, secret=people.secret
    )
    server = DevServer(port=port, ui=False, db_file=database)
    await server.start()
    client = await Client.connect(server.target)
    ada = GraphClient(client, task_queue, signer=people.signer("ada"))
    try:
        async with Worker(client, task_queue=task_queue, plugins=[plugin]):
            essays = [await ada.start(EssayReview, ALWAYS_FAILS) for _ in range(3)]
            jobs = [
                await ada.start(
                    SlowJob, {"job": f"job{n}", "release_dir": str(tmp_path)}, wait=False
                )
                for n in range(3)
            ]

            async def all_started() -> bool:
                return len(_lines(tmp_path / "started")) >= 3

            await _eventually(all_started)
            await server.stop()
            server = DevServer(port=port, ui=False, db_file=database)
            await server.start()
            (tmp_path / "release").touch()
            ed = GraphClient(client, task_queue, signer=people.signer("ed"))
            answers = [await ed.decide(run["run_id"], "publish_as_is") for run in essays]
            results = [
                await asyncio.wait_for(client.get_workflow_handle(run["run_id"]).result(), 90)
                for run in [*essays, *jobs]
            ]
    finally:
        await server.stop()

    finished = sum(result["status"] == "finished" for result in results)
    print(json.dumps({"restart": {"runs": len(results), "finished": finished}}))
    assert all(answer.get("ok") is not False for answer in answers), answers
    assert finished == len(results) == 6
    for result in results[:3]:
        rows = [(row["node"], row["outcome"]) for row in result["trail"]]
        assert rows[-2:] == [("editor_call", "answered"), ("publish", "ran")]
        assert rows.count(("publish", "ran")) == 1
        assert result["fields"]["url"] == "https://essays.example/tides"
    for result in results[3:]:
        assert [(row["node"], row["outcome"]) for row in result["trail"]] == [("work", "ran")]


class _CountsUpdateCalls(Interceptor):
    """Counts the update calls a client sends to the server, by update name."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        calls = self.calls

        class Outbound(OutboundInterceptor):
            async def start_workflow_update(
                self, input: StartWorkflowUpdateInput
            ) -> WorkflowUpdateHandle[Any]:
                calls[input.update] += 1
                return await super().start_workflow_update(input)

        return Outbound(next)


async def test_an_answer_sent_while_no_worker_runs_is_asked_again_by_its_id_and_counted_once(
    temporal_client: Client, task_queue: str
) -> None:
    people = Identities({"ada": {}, "ed": {"roles": ["editor"], "scopes": ["essay:publish"]}})
    plugin = LockgatePlugin(graphs=[EssayReview], directory=people.directory, secret=people.secret)
    counting = _CountsUpdateCalls()
    config = temporal_client.config()
    config["interceptors"] = [counting]
    client = Client(**config)
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    ed = GraphClient(client, task_queue, signer=people.signer("ed"), poll_seconds=0.5)
    async with Worker(temporal_client, task_queue=task_queue, plugins=[plugin]):
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        handle = temporal_client.get_workflow_handle(run["run_id"])

        async def task_done() -> bool:
            # Nothing of the run is in flight on this worker when it stops (no local activity).
            described = await handle.describe()
            return not described.raw_description.HasField("pending_workflow_task")

        await _eventually(task_done)
    assert run["status"] == "waiting", run

    # No worker polls: each call for the answer waits half a second, and is sent again.
    answering = asyncio.create_task(ed.decide(run["run_id"], "publish_as_is"))

    async def asked_again() -> bool:
        return counting.calls["decide"] >= 3

    await _eventually(asked_again)
    async with Worker(temporal_client, task_queue=task_queue, plugins=[plugin]):
        answer = await asyncio.wait_for(answering, 60)
        result = await asyncio.wait_for(handle.result(), 60)

    assert answer.get("ok") is not False, answer
    rows = [(row["node"], row["outcome"]) for row in result["trail"]]
    assert rows.count(("editor_call", "answered")) == 1, rows
    assert rows[-2:] == [("editor_call", "answered"), ("publish", "ran")]

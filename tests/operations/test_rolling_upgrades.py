"""Rolling upgrades under traffic: ``lockgate worker`` processes are replaced one at a time while a
client starts gated and ungated runs and two editors answer every gate that opens.

The new workers serve a new version of ``doc:review`` beside the old one. One pass rolls with
lockgate's graph versions alone; the other rolls to a new build of a Temporal worker deployment,
switching the deployment's current version as Temporal's procedure says. Either way no run is
lost, stuck or failed, a run finishes on the graph version it started with, new runs take the new
one, and every gate is answered once. Each pass prints what it counted.

``make test`` rolls three workers per pass with a few runs started between replacements;
``make soak`` rolls them under heavier traffic: three client loops, thirty runs between
replacements.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from lockgate import GraphClient
from lockgate.contracts import RunView
from lockgate.testing import Identities
from tests.helpers.reliability_graphs import DocReviewV1
from tests.helpers.support import failed_workflow_tasks, outcome, worker_process
from tests.helpers.worker_versioning import set_current_version

PEOPLE = {"ada": {}, "ed": {"roles": ["editor"]}, "eve": {"roles": ["editor"]}}

OLD, MIXED, NEW = "old", "mixed", "new"
"""When a run was started: only old workers took tasks; old and new may have; only new ones."""


@dataclass
class Traffic:
    """What the client loop started and the editors answered, as it happened."""

    era: str = OLD
    gated: dict[str, tuple[str, RunView]] = field(default_factory=dict)
    ungated: dict[str, tuple[str, RunView]] = field(default_factory=dict)
    accepted: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    unanswered_errors: list[str] = field(default_factory=list)

    def started(self) -> int:
        return len(self.gated) + len(self.ungated)

    async def moves_on(self, runs: int = 3, answers: int = 1) -> None:
        """Returns once ``runs`` more runs have started and ``answers`` more gates were answered."""
        started, answered = self.started(), sum(self.accepted.values())
        await _until(
            lambda: (
                self.started() >= started + runs
                and sum(self.accepted.values()) >= answered + answers
            ),
            f"{runs} more runs started and {answers} more answered",
        )


async def _until(condition: Callable[[], bool], what: str, seconds: float = 120) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"never: {what}"
        await asyncio.sleep(0.05)


async def _start_runs(
    traffic: Traffic, ada: GraphClient, anyone: GraphClient, stop: asyncio.Event
) -> None:
    """The client loop: a gated review, then an ungated count, again and again."""
    number = 0
    while not stop.is_set():
        number += 1
        era = traffic.era
        if number % 2 == 0:
            run = await ada.start(DocReviewV1, {"title": f"doc {number}"})
            traffic.gated[run["run_id"]] = (era, run)
        else:
            run = await anyone.start("loop:count", {"target": 3})
            traffic.ungated[run["run_id"]] = (era, run)


async def _answer_gates(traffic: Traffic, editor: GraphClient, done: asyncio.Event) -> None:
    """An editor answering every open review gate as it shows in ``pending``."""
    while not done.is_set():
        for gate in await editor.pending(of="editor"):
            try:
                answered = await editor.decide(gate["run_id"], "approve")
            except Exception as raised:
                traffic.unanswered_errors.append(f"{gate['run_id']}: {raised!r}")
                continue
            if answered.get("ok") is False:
                refusal = answered.get("error")
                traffic.refused[refusal["code"] if refusal else "?"] += 1
            else:
                traffic.accepted[gate["run_id"]] += 1
        await asyncio.sleep(0.1)


async def _retire(worker: asyncio.subprocess.Process) -> int:
    """SIGTERM, as an orchestrator stops a worker: it stops polling and drains; its exit code."""
    worker.send_signal(signal.SIGTERM)
    return await asyncio.wait_for(worker.wait(), 60)


async def _all_closed(client: Client, run_ids: list[str]) -> None:
    open_runs = list(run_ids)
    deadline = asyncio.get_running_loop().time() + 180
    while open_runs:
        assert asyncio.get_running_loop().time() < deadline, f"stuck: {open_runs}"
        described = [await client.get_workflow_handle(run).describe() for run in open_runs]
        open_runs = [d.id for d in described if d.status == WorkflowExecutionStatus.RUNNING]
        if open_runs:
            await asyncio.sleep(0.2)


async def roll(
    temporal_client: Client,
    task_queue: str,
    folder: Path,
    *,
    versioned: bool,
    workers: int = 3,
    loops: int = 1,
    runs_per_step: int = 3,
) -> dict[str, Any]:
    """Rolls ``workers`` old workers to new ones while ``loops`` client loops start runs, and
    ``runs_per_step`` more have started between any two steps; checks and returns the counts."""
    people = Identities(PEOPLE)
    directory = folder / "directory.toml"
    directory.write_text(people.toml)
    address = temporal_client.service_client.config.target_host
    deployment = f"roll-{task_queue}"

    def options(build: str) -> list[str]:
        versioning = ["--deployment", deployment, "--build-id", build] if versioned else []
        return ["--directory", str(directory), *versioning]

    async def launch(components: str, build: str) -> asyncio.subprocess.Process:
        return await worker_process(address, task_queue, components, *options(build))

    traffic = Traffic()
    ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
    anyone = GraphClient(temporal_client, task_queue)
    editors = [
        GraphClient(temporal_client, task_queue, signer=people.signer(e)) for e in ("ed", "eve")
    ]
    stop, done = asyncio.Event(), asyncio.Event()
    fleet = list(await asyncio.gather(*(launch("ROLL_OLD", "old") for _ in range(workers))))
    drained: list[int] = []
    tasks: list[asyncio.Task[None]] = []
    try:
        if versioned:
            await set_current_version(temporal_client, deployment, "old")
        starting = [
            asyncio.create_task(_start_runs(traffic, ada, anyone, stop)) for _ in range(loops)
        ]
        tasks = [
            *starting,
            *(asyncio.create_task(_answer_gates(traffic, e, done)) for e in editors),
        ]

        async def moves_on() -> None:
            await traffic.moves_on(runs=runs_per_step, answers=max(1, runs_per_step // 3))

        await moves_on()
        for step in range(workers):
            if not versioned:
                traffic.era = MIXED
            fleet.append(await launch("ROLL_NEW", "new"))
            if versioned and step == 0:
                # The new build polls, but it is not current: runs still start on the old one.
                await moves_on()
                traffic.era = MIXED
                await set_current_version(temporal_client, deployment, "new")
            drained.append(await _retire(fleet.pop(0)))
            await moves_on()
        traffic.era = NEW
        await moves_on()
        await traffic.moves_on(runs=2 * loops)  # a gated run among them, from every loop
        stop.set()
        await asyncio.gather(*starting)
        await _all_closed(temporal_client, [*traffic.gated, *traffic.ungated])
        done.set()
        await asyncio.gather(*tasks[loops:])
    finally:
        stop.set()
        done.set()
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for worker in fleet:
            if worker.returncode is None:
                worker.send_signal(signal.SIGTERM)
            await worker.wait()

    return await _checked(temporal_client, traffic, drained, workers=workers, versioned=versioned)


async def _checked(
    client: Client, traffic: Traffic, drained: list[int], *, workers: int, versioned: bool
) -> dict[str, Any]:
    async def result(run_id: str) -> dict[str, Any]:
        return await outcome(client.get_workflow_handle(run_id))

    async def failed_tasks(run_id: str) -> int:
        return len(await failed_workflow_tasks(client.get_workflow_handle(run_id)))

    gated = {run: await result(run) for run in traffic.gated}
    ungated = {run: await result(run) for run in traffic.ungated}
    failures = sum([await failed_tasks(run) for run in [*gated, *ungated]])
    versions: Counter[str] = Counter()
    for run, (era, started) in traffic.gated.items():
        finished = gated[run]
        versions[f"{era} v{started['version']}"] += 1
        assert started["status"] == "waiting", started
        assert finished["status"] == "finished", finished
        assert finished["version"] == started["version"], (run, era)
        assert started["version"] == {OLD: 1, NEW: 2}.get(era, started["version"]), (run, era)
        assert finished["fields"]["outcome"] == {1: "published", 2: "archived"}[finished["version"]]
        answered = [row for row in finished["trail"] if row["outcome"] == "answered"]
        assert len(answered) == 1, finished["trail"]
        assert traffic.accepted[run] == 1, (run, traffic.accepted[run])
    for run, (_, started) in traffic.ungated.items():
        assert ungated[run]["status"] == "finished", (started, ungated[run])
        assert ungated[run]["fields"]["finished"] is True
    assert traffic.unanswered_errors == []
    assert drained == [0] * workers
    counts: dict[str, Any] = {
        "pass": "worker deployment build" if versioned else "graph versions",
        "workers_replaced": len(drained),
        "runs": len(gated) + len(ungated),
        "gated": len(gated),
        "ungated": len(ungated),
        "finished": sum(r["status"] == "finished" for r in [*gated.values(), *ungated.values()]),
        "started_by_era_and_version": dict(sorted(versions.items())),
        "answers_accepted": sum(traffic.accepted.values()),
        "second_answers_refused": dict(traffic.refused),
        "failed_workflow_tasks": failures,
    }
    print(json.dumps({"rolling_upgrade": counts}))
    assert counts["finished"] == counts["runs"]
    assert counts["answers_accepted"] == counts["gated"]
    assert versions[f"{OLD} v1"] > 0 and versions[f"{NEW} v2"] > 0, versions
    return counts


async def test_three_workers_rolled_to_a_new_graph_version_under_traffic_lose_no_run(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Without Worker Versioning, a run a new worker started on version 2 may have a task land on
    # an old worker before the roll ends: it fails there and is retried until a new one takes it.
    # So failed tasks are counted here, not ruled out.
    await roll(temporal_client, task_queue, tmp_path, versioned=False)


async def test_three_workers_rolled_to_a_new_build_under_traffic_lose_no_run(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    counts = await roll(temporal_client, task_queue, tmp_path, versioned=True)

    # The new build gets tasks only once it is current, and every run's tasks then go to it.
    assert counts["failed_workflow_tasks"] == 0


@pytest.mark.soak
@pytest.mark.timeout(900)
async def test_a_rolling_upgrade_under_heavy_traffic_loses_no_run(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    first = await roll(
        temporal_client, task_queue, tmp_path, versioned=False, loops=3, runs_per_step=30
    )
    (tmp_path / "build").mkdir()
    second = await roll(
        temporal_client,
        f"{task_queue}-build",
        tmp_path / "build",
        versioned=True,
        loops=3,
        runs_per_step=30,
    )

    assert second["failed_workflow_tasks"] == 0
    assert first["runs"] >= 150 and second["runs"] >= 150

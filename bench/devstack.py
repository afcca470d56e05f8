"""The stack a newcomer gets: a node's latency and essay throughput on ``lockgate dev``'s server.

``lockgate dev`` runs a file-backed dev server with ``lockgate.devserver.server_args``; this
measures that server (a ``DevServer`` on free ports, headless, its SQLite file in a temporary
directory) with one worker in this process, built as ``lockgate dev`` builds its own (a
``Worker`` with the ``LockgatePlugin`` and nothing else), on the event loop ``lockgate dev`` runs
on (uvloop where it is installed). Three figures:

- ``sequential_node_ms``: the 20-node linear graph (``Linear20``), one run at a time, started
  with ``GraphClient.start(..., wait=False)`` (unsigned; its first workflow task is handed back
  eagerly where the server allows it) from this process, then the handle's ``result()``; the
  median run's wall time divided by its 20 nodes.
- ``essay_runs_per_second``: ``--runs`` essays (``essay:review``, inputs that pass the first
  time: write, grade, publish) started signed all at once, to the end.
- ``lockgate_over_handwritten_node_ms`` (target 1.10), on ``lockgate_dev``'s server only: the
  same sequential ``Linear20`` runs against ``HandLinear``, the hand-written Temporal workflow
  calling the same 20 functions as bare activities one after another (``bench/graph_overhead.py``
  compares the two on the in-memory server). Both run on one worker in each turn (as
  ``graph_overhead`` builds it: the ``LockgatePlugin`` beside the hand-written workflows and
  activities), a fresh one after the turn's other figures, and both start alike: lockgate's with
  ``GraphClient.start(..., wait=False)``, which asks for an eager start, the hand-written one with
  ``start_workflow(..., request_eager_start=True)``; then each handle's ``result()``. The runs
  alternate, the order flipping each pair; the figure is the median of the pairs' ratios of
  per-node ms (``--pairs`` pairs over the rounds). The per-node ms of each side are printed too,
  each saying whether its runs started eagerly.

The absolute figures (ms per node, runs per second) depend on the machine: they are printed as
information (target None); only the ratio has a target.

So that each setting's share can be told, the first two figures are measured in the same run on
the configurations that lead there, each on its own fresh server: ``before`` (what ``lockgate
dev`` ran: a SQLite file with default pragmas, only the search-attribute cache flag),
``prompt_transfer`` (plus the transfer-queue poll limit), ``lockgate_dev`` (plus SQLite's
write-ahead log: all of ``server_args(database=True)``, the main figures) and ``durability_fast``
(``--durability fast``: SQLite syncs at checkpoints only). All four servers stay up and the
configurations take turns for ``--rounds`` rounds, the order reversed each round; in its turn a
configuration gets a fresh worker, a warm-up, its share of the sequential runs and one essay
phase. Ratios are medians of pairs from the same round:
``before`` against ``lockgate_dev``, and each configuration against the one before it (what its
one setting bought). ``other_load_cores`` says how much CPU other processes took meanwhile.
Each ``sequential_node_ms`` line says whether its runs started eagerly (``started_eagerly``, as
the server answered): ``GraphClient.start`` asks for it and Server 1.32 allows it by default,
so every configuration does, ``before`` included.

    python bench/devstack.py [--runs 200] [--repeats 15] [--rounds 3] [--pairs 30]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import contextlib
import itertools
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bench._exit import leave
from bench._workloads import (
    CpuMeter,
    HandLinear,
    Linear20,
    bench_worker,
    emit,
    median_ratio,
    stdout_to_stderr,
)
from lockgate import GraphClient, LockgatePlugin
from lockgate.cli._loop import event_loop_name, run_on_the_fastest_loop
from lockgate.devserver import DevServer, free_port, server_args, temporal_binary
from lockgate.examples import essay_review as essay
from lockgate.namespace import LOCKGATE_SEARCH_ATTRIBUTES
from lockgate.testing import Identities

BENCH = "devstack"
NODES = 20
PASSES_FIRST_TIME = {"title": "Tides and the moon", "rubric": "tides, moon"}  # 3 node steps
WARMUP_ESSAYS = 4
LOCKGATE_OVER_HANDWRITTEN_NODE_MS = 1.10
"""Target: a sequential node on lockgate dev's server within 10% of a hand-written workflow's."""

# The settings of the configurations before lockgate_dev, spelled out: they are a history, not
# defaults. Each must still be one of server_args'; main() checks it, so a renamed key shows.
_REFRESH_SEARCH_ATTRIBUTES = [
    "--dynamic-config-value",
    "system.forceSearchAttributesCacheRefreshOnRead=true",
]
_PROMPT_TRANSFER = ["--dynamic-config-value", "history.transferProcessorMaxPollRPS=10000"]


@dataclass(frozen=True)
class Configuration:
    """One server configuration: either explicit settings, or a ``DevServer`` with a durability."""

    name: str
    step: str
    """The setting this configuration adds to the one before it in ``CONFIGURATIONS``."""
    adds: str
    settings: list[str] = field(default_factory=list)
    durability: str | None = None
    main: bool = False
    """The configuration whose figures are printed unsuffixed (what ``lockgate dev`` runs)."""


CONFIGURATIONS = [
    Configuration(
        "before",
        "",
        "what lockgate dev ran: SQLite file, default pragmas, search-attribute cache flag only",
        settings=_REFRESH_SEARCH_ATTRIBUTES,
    ),
    Configuration(
        "prompt_transfer",
        "prompt_transfer",
        "history.transferProcessorMaxPollRPS=10000",
        settings=[*_REFRESH_SEARCH_ATTRIBUTES, *_PROMPT_TRANSFER],
    ),
    Configuration(
        "lockgate_dev",
        "wal",
        "SQLite journal_mode=wal (all of server_args(database=True))",
        durability="full",
        main=True,
    ),
    Configuration(
        "durability_fast",
        "synchronous_normal",
        "SQLite synchronous=normal (server_args(database=True, durability='fast'))",
        durability="fast",
    ),
]


@contextlib.asynccontextmanager
async def fresh_server(configuration: Configuration, directory: Path) -> AsyncIterator[Client]:
    """A new file-backed dev server for ``configuration``, started as ``DevServer`` starts one."""
    database = directory / f"{configuration.name}.db"
    if configuration.durability is not None:
        server = DevServer(
            port=free_port(), ui=False, db_file=database, durability=configuration.durability
        )
        with stdout_to_stderr():
            await server.start()
        try:
            yield server.client
        finally:
            await server.stop()
        return
    with stdout_to_stderr():
        environment = await WorkflowEnvironment.start_local(
            ip="127.0.0.1",
            port=free_port(),
            ui=False,
            search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
            dev_server_existing_path=str(temporal_binary()),
            dev_server_database_filename=str(database),
            dev_server_log_level="warn",
            dev_server_extra_args=configuration.settings,
        )
    try:
        yield environment.client
    finally:
        await environment.shutdown()


async def linear_run(client: Client, graphs: GraphClient) -> tuple[float, str]:
    """Wall seconds of one ``Linear20`` run, from the start request to its result, and its id."""
    began = time.perf_counter()
    started = await graphs.start(Linear20, {"counter": 0}, wait=False)
    result = await client.get_workflow_handle(started["run_id"], result_type=dict).result()
    seconds = time.perf_counter() - began
    assert result["status"] == "finished" and result["fields"]["counter"] == NODES, result
    return seconds, started["run_id"]


async def handwritten_linear_run(client: Client, task_queue: str) -> tuple[float, str]:
    """Wall seconds of one ``HandLinear`` run, started eagerly as ``GraphClient.start`` starts
    an unsigned run, from the start request to its result, and its id."""
    began = time.perf_counter()
    handle = await client.start_workflow(
        HandLinear.run,
        0,
        id=f"hand-linear-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
        request_eager_start=True,
    )
    result = await handle.result()
    seconds = time.perf_counter() - began
    assert result == NODES, result
    return seconds, handle.id


async def started_eagerly(client: Client, run_id: str) -> bool:
    """Whether the server handed run ``run_id``'s first workflow task back in the start's reply."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    return history.events[0].workflow_execution_started_event_attributes.eager_execution_accepted


async def essay_phase(client: Client, writer: GraphClient, runs: int) -> float:
    """Starts ``runs`` essays at once (signed) and returns the seconds until all have finished."""
    began = time.perf_counter()
    started = await asyncio.gather(
        *(writer.start(essay.EssayReview, PASSES_FIRST_TIME, wait=False) for _ in range(runs))
    )
    results = await asyncio.gather(
        *(client.get_workflow_handle(run["run_id"], result_type=dict).result() for run in started)
    )
    seconds = time.perf_counter() - began
    for result in results:
        assert result["status"] == "finished" and result["fields"]["url"], result
    return seconds


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot, from ``/proc/stat``."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass
class Stack:
    """One configuration's server, kept up for the whole run, and what was measured on it."""

    configuration: Configuration
    client: Client
    repeats_per_round: list[int]
    node_ms: list[float] = field(default_factory=list)
    runs_per_second: list[float] = field(default_factory=list)
    eager: set[bool] = field(default_factory=set)
    """Whether runs started eagerly, as the server answered (checked once a turn)."""
    pairs_per_round: list[int] = field(default_factory=list)
    """Linear20 / HandLinear pairs a turn runs (the main configuration's only)."""
    paired_lockgate_ms: list[float] = field(default_factory=list)
    paired_handwritten_ms: list[float] = field(default_factory=list)
    """Per-node ms of each pair's two runs, in the order they were run."""
    paired_eager: dict[str, set[bool]] = field(
        default_factory=lambda: {"lockgate": set(), "handwritten": set()}
    )


async def take_turn(
    stack: Stack, people: Identities, round_index: int, runs: int, warmup: int
) -> float:
    """One turn on ``stack``: sequential runs, then an essay phase, on a fresh worker (the only
    one polling meanwhile), built as ``lockgate.worker.run_worker`` builds ``lockgate dev``'s.

    Returns:
        The cores other processes on the machine kept busy meanwhile, on average.
    """
    client = stack.client
    task_queue = f"bench-devstack-{uuid.uuid4().hex[:8]}"
    plugin = LockgatePlugin(
        graphs=[Linear20, essay.EssayReview], directory=people.directory, secret=people.secret
    )
    graphs = GraphClient(client, task_queue)
    writer = GraphClient(client, task_queue, signer=people.signer("wren"))
    busy_before, began = machine_busy_seconds(), time.perf_counter()
    with CpuMeter() as ours:
        async with Worker(client, task_queue=task_queue, plugins=[plugin]):
            # The warm-up also drains what an idle server saved up: the transfer queue's poll
            # limit acts as a token bucket, so the first steps after a pause run faster.
            last_run = None
            for _ in range(warmup):
                _, last_run = await linear_run(client, graphs)
            for _ in range(stack.repeats_per_round[round_index]):
                seconds, last_run = await linear_run(client, graphs)
                stack.node_ms.append(1000 * seconds / NODES)
            if last_run is not None:
                stack.eager.add(await started_eagerly(client, last_run))
            await essay_phase(client, writer, WARMUP_ESSAYS)
            stack.runs_per_second.append(runs / await essay_phase(client, writer, runs))
        if stack.pairs_per_round:
            await paired_runs(stack, people, stack.pairs_per_round[round_index], warmup)
    others = machine_busy_seconds() - busy_before - ours.process - ours.server
    return max(others, 0.0) / (time.perf_counter() - began)


async def paired_runs(stack: Stack, people: Identities, pairs: int, warmup: int) -> None:
    """``pairs`` sequential ``Linear20`` runs alternating with ``HandLinear`` runs, on a fresh
    worker serving both (the only one polling meanwhile), the order flipping each pair."""
    client = stack.client
    task_queue = f"bench-devstack-pairs-{uuid.uuid4().hex[:8]}"
    plugin = LockgatePlugin(graphs=[Linear20], directory=people.directory, secret=people.secret)
    graphs = GraphClient(client, task_queue)
    async with bench_worker(client, task_queue, plugin):
        for _ in range(warmup):
            await linear_run(client, graphs)
            await handwritten_linear_run(client, task_queue)
        last: dict[str, str] = {}
        for pair in range(pairs):
            if pair % 2 == 0:
                lockgate, last["lockgate"] = await linear_run(client, graphs)
                handwritten, last["handwritten"] = await handwritten_linear_run(client, task_queue)
            else:
                handwritten, last["handwritten"] = await handwritten_linear_run(client, task_queue)
                lockgate, last["lockgate"] = await linear_run(client, graphs)
            stack.paired_lockgate_ms.append(1000 * lockgate / NODES)
            stack.paired_handwritten_ms.append(1000 * handwritten / NODES)
        for side, run_id in last.items():
            stack.paired_eager[side].add(await started_eagerly(client, run_id))


def spread(total: int, rounds: int) -> list[int]:
    """``total`` runs over ``rounds`` rounds, as evenly as can be."""
    return [total // rounds + (1 if index < total % rounds else 0) for index in range(rounds)]


async def main(runs: int, repeats: int, rounds: int, warmup: int, pairs: int) -> int:
    known = server_args(database=True)
    for configuration in CONFIGURATIONS:
        missing = [setting for setting in configuration.settings if setting not in known]
        assert not missing, f"{configuration.name}: not lockgate's settings any more: {missing}"
    people = Identities({"wren": {"scopes": ["essay:publish"]}})
    stacks: list[Stack] = []
    other_load: list[float] = []
    with tempfile.TemporaryDirectory(prefix="lockgate-devstack-") as scratch:
        async with contextlib.AsyncExitStack() as servers:
            for configuration in CONFIGURATIONS:
                client = await servers.enter_async_context(
                    fresh_server(configuration, Path(scratch))
                )
                stack = Stack(configuration, client, spread(repeats, rounds))
                if configuration.main:
                    stack.pairs_per_round = spread(pairs, rounds)
                stacks.append(stack)
            # Every server is up (an idle one costs ~0.2% of a core) and the configurations take
            # turns, the order reversed each round, so a machine that slows down or speeds up
            # during the run weighs on all of them alike.
            order = list(stacks)
            for round_index in range(rounds):
                for stack in order:
                    other_load.append(await take_turn(stack, people, round_index, runs, warmup))
                order.reverse()

    emit(
        BENCH,
        "essay_runs_per_phase",
        runs,
        "runs",
        rounds=rounds,
        worker="one, in-process, fresh each turn",
        loop=event_loop_name(),
        inputs="pass the first time: write, grade, publish",
    )
    for stack in stacks:
        configuration = stack.configuration
        suffix = "" if configuration.main else f"_{configuration.name}"
        emit(
            BENCH,
            f"sequential_node_ms{suffix}",
            statistics.median(stack.node_ms),
            "ms",
            target=None,
            configuration=configuration.name,
            adds=configuration.adds,
            runs=len(stack.node_ms),
            nodes=NODES,
            started_eagerly=sorted(stack.eager),
        )
        emit(
            BENCH,
            f"essay_runs_per_second{suffix}",
            statistics.median(stack.runs_per_second),
            "runs/s",
            target=None,
            configuration=configuration.name,
            phases=len(stack.runs_per_second),
        )
    before = stacks[0]
    main_stack = next(stack for stack in stacks if stack.configuration.main)
    main_name = main_stack.configuration.name
    # lockgate against the hand-written workflow on lockgate dev's own server, side by side.
    for side, node_ms in (
        ("lockgate", main_stack.paired_lockgate_ms),
        ("handwritten", main_stack.paired_handwritten_ms),
    ):
        emit(
            BENCH,
            f"paired_{side}_node_ms",
            statistics.median(node_ms),
            "ms",
            target=None,
            configuration=main_name,
            runs=len(node_ms),
            nodes=NODES,
            started_eagerly=sorted(main_stack.paired_eager[side]),
        )
    emit(
        BENCH,
        "lockgate_over_handwritten_node_ms",
        median_ratio(main_stack.paired_lockgate_ms, main_stack.paired_handwritten_ms),
        "ratio",
        target=LOCKGATE_OVER_HANDWRITTEN_NODE_MS,
        configuration=main_name,
        server="server_args(database=True) on a SQLite file",
        pairs=len(main_stack.paired_lockgate_ms),
        lockgate="Linear20, GraphClient.start(wait=False) unsigned + handle.result()",
        handwritten="HandLinear, start_workflow(request_eager_start=True) + handle.result()",
        note="median of the per-node ms ratios of pairs run back to back",
    )
    emit(
        BENCH,
        "sequential_node_speedup",
        median_ratio(before.node_ms, main_stack.node_ms),
        "ratio",
        note=f"before / {main_name}, median of pairs run in the same round",
    )
    emit(
        BENCH,
        "essay_runs_per_second_gain",
        median_ratio(main_stack.runs_per_second, before.runs_per_second),
        "ratio",
        note=f"{main_name} / before, median of pairs run in the same round",
    )
    # What each setting bought: each configuration against the one it adds a setting to.
    for earlier, later in itertools.pairwise(stacks):
        step = later.configuration.step
        pair = f"{earlier.configuration.name} -> {later.configuration.name}"
        emit(
            BENCH,
            f"sequential_node_speedup_by_{step}",
            median_ratio(earlier.node_ms, later.node_ms),
            "ratio",
            adds=later.configuration.adds,
            pair=pair,
        )
        emit(
            BENCH,
            f"essay_runs_per_second_gain_by_{step}",
            median_ratio(later.runs_per_second, earlier.runs_per_second),
            "ratio",
            adds=later.configuration.adds,
            pair=pair,
        )
    emit(
        BENCH,
        "other_load_cores",
        max(other_load),
        "cores",
        median=round(statistics.median(other_load), 3),
        cores=os.cpu_count(),
        note="the most CPU other processes on the machine used during one turn (from "
        "/proc/stat, less this process and its servers); near 0 on a quiet machine",
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="concurrent essays per phase")
    parser.add_argument(
        "--repeats", type=int, default=15, help="sequential Linear20 runs per configuration"
    )
    parser.add_argument("--rounds", type=int, default=3, help="turns each configuration takes")
    parser.add_argument("--warmup", type=int, default=2, help="untimed Linear20 runs per turn")
    parser.add_argument(
        "--pairs",
        type=int,
        default=30,
        help="Linear20 / HandLinear pairs on lockgate_dev's server, over the rounds",
    )
    options = parser.parse_args()
    run_on_the_fastest_loop(
        main(
            options.runs,
            options.repeats,
            options.rounds,
            options.warmup,
            options.pairs,
        )
    )
    leave()

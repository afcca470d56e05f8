"""The counted table: client RPCs, history events, bytes and worker CPU, lockgate against its floor.

Timing on a shared 2-core machine is noisy; counts are not. For five operations this script runs
lockgate's side and the floor another script of ``bench/`` already defines, and counts what each
one costs:

- ``decide``: one answer by ``GraphClient.decide`` (the default, no ``shown=``) on
  ``bench:gate-loop``, which runs one node and parks at the gate again (two editors in turn);
  the floor is the bare ``decide`` update of ``HandGateLoop`` (one bare activity, back at the
  gate). These are ``bench/gate_latency.py``'s two timed sides.
- ``adapter_gate``: a whole run of ``bench/adapter.py``'s ``lockgate`` side (a LangGraph graph
  asking lockgate's gate: signed start, ``show`` until it waits, the default ``decide``, the
  result); the floor is its hand-written side (LangGraph's ``interrupt()`` answered by a bare
  update, polled with a query until it waits).
- ``ungated_essay``: ``bench/actions.py``'s ``pass_flow``, a signed essay that passes first
  time; the floor is ``HandEssay``, write and grade local, started eagerly and awaited.
- ``gated_essay``: ``bench/actions.py``'s ``gate_flow``, a signed essay parked at the editor
  gate and answered by ``GraphClient.decide``; the floor is ``HandEssay`` with its ``decide``
  update sent at once.
- ``durable_tool_call``: ``bench/durable_call.py``'s ``signed_call``, ``ToolClient.call`` of
  ``bench:add`` signed by a caller who holds its scope; the floor is
  ``bench/activity_overhead.py``'s ``bench.bare_calls`` at one call: the same kind of function
  as one bare activity of a hand-written workflow, started and awaited.

(``bench/durable_call.py`` also times a standalone activity, ``Client.start_activity``; it writes
no workflow history, so its events and history bytes cannot be set beside a run's. The floor here
is the hand-written workflow, whose history can.)

What is counted, for each operation on each side:

- **client RPCs**: every call the operation's clients send to the server, counted on the wire
  side of ``temporalio``: the ``Client`` they use has a service client that counts each
  ``_rpc_call`` by name before sending it on (``start_workflow_execution``,
  ``update_workflow_execution``, ``poll_workflow_execution_update``,
  ``describe_workflow_execution``, ``query_workflow``, ``get_workflow_execution_history`` for a
  result...). A readiness poll (the adapter's sides poll until the run waits) is a call like
  any other; its count depends on timing, and the line says how many there were. The worker's
  own client is counted the same way (``worker_rpcs``, not in the figure: a worker's polls go
  through Temporal's core, not this client, and are not counted at all).
- **history events** and **bytes**: from ``fetch_history()`` (``bench/_histories.py``): for a
  whole run, every run of the flow, found as ``bench/actions.py`` finds them; for ``decide``,
  the events that one answer appended to the run's history. **Payload bytes** are the sum of
  ``Payload.ByteSize()`` over every payload in those events (what the application wrote);
  **history bytes** the size of those events as a serialized ``History`` message (what the
  server stores and sends on every read).
- **worker CPU**: the CPU time of the worker, which runs in a child process of its own, read
  from ``/proc/<pid>/task/*/schedstat`` (nanoseconds, every thread: Python and Temporal's core)
  just before the operation and just after it returns. The client's CPU (this process,
  ``time.process_time()``) and the dev server's (its threads, the same way) are on the same
  line. CPU is noisy where counts are not: each figure is the median of ``--repeats``.

The worker runs in a child process, so no start here is eager: every side starts as a client
that is not also a worker of the queue starts it (the CLI, the HTTP API, a service), as a signed
lockgate run always starts. One count moves with that: the hand-written gated essay's ``decide``
update, sent at once, then reaches the run with its first workflow task and needs no task of
its own (21 events, where ``bench/history.py``'s eager in-process run writes 24).

Each operation runs ``--repeats`` times on each side, the sides interleaved (the order flipping
every repeat), after one warm-up of each that is not counted. A whole run gets a fresh task
queue, served by a fresh worker in the same child process; ``decide`` answers one run of each
side on one queue, as ``bench/gate_latency.py`` does. Every count is one JSON line
(``<operation>_<count>_<side>``: the median, every repeat's value and whether they were all the
same, and what made it up); then the table is printed once, in Markdown, to stderr, with what
lockgate sends and writes that its floor does not, below it.

    python bench/counts.py [--repeats 5]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import collections
import contextlib
import functools
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, cast

import google.protobuf.message
from temporalio.client import Client
from temporalio.service import ServiceClient, ServiceResponse
from temporalio.worker import Worker

from bench import actions, durable_call, gate_latency
from bench._exit import leave
from bench._histories import Weight, weigh
from bench._workloads import (
    REPO_ROOT,
    GateLoop,
    HandGateLoop,
    bench_runner,
    bench_worker,
    child_environment,
    dev_server,
    dev_server_pids,
    emit,
)
from bench.activity_overhead import BareCalls, bare_add
from lockgate import Directory, GraphClient, LockgatePlugin, ToolClient, WorkerSecret
from lockgate.testing import Identities

try:
    from bench import adapter
except ImportError:  # LangGraph's interrupt() needs Python 3.11+ and the langgraph extra
    adapter = None  # type: ignore[assignment]

BENCH = "counts"
SIDES = ("lockgate", "floor")
PEOPLE: dict[str, dict[str, list[str]]] = {
    # Everyone the five operations' scripts sign as, with what each holds there.
    "ada": {"scopes": ["essay:publish", "math"]},
    "ed": {"roles": ["editor"], "scopes": ["essay:publish"]},
    "eve": {"roles": ["editor"]},
    "lee": {"roles": ["support-lead"]},
}
OPERATIONS = {
    "decide": "one `decide` vs a bare update",
    "adapter_gate": "adapter gate, whole run",
    "ungated_essay": "ungated essay",
    "gated_essay": "gated essay + decide",
    "durable_tool_call": "durable tool call",
}
POLL_SECONDS = 0.01
"""The adapter's readiness poll, as ``bench/adapter.py`` polls by default."""


# Counting every RPC a client sends ---------------------------------------------------------------


class CountingServiceClient(ServiceClient):
    """Sends every RPC through ``inner`` and counts it by name; notes the workflows started."""

    def __init__(self, inner: ServiceClient) -> None:
        super().__init__(inner.config)
        self.inner = inner
        self.rpcs: collections.Counter[str] = collections.Counter()
        self.started: list[str] = []

    @property
    def worker_service_client(self) -> Any:
        # A worker on this client polls through the connection itself (Temporal's core).
        return self.inner.worker_service_client

    def update_rpc_metadata(self, metadata: Mapping[str, str | bytes]) -> None:
        self.inner.update_rpc_metadata(metadata)

    def update_api_key(self, api_key: str | None) -> None:
        self.inner.update_api_key(api_key)

    async def _rpc_call(
        self,
        rpc: str,
        req: google.protobuf.message.Message,
        resp_type: type[ServiceResponse],
        *,
        service: str,
        retry: bool,
        metadata: Mapping[str, str | bytes],
        timeout: timedelta | None,
    ) -> ServiceResponse:
        self.rpcs[rpc] += 1
        if rpc == "start_workflow_execution":
            self.started.append(cast(Any, req).workflow_id)
        elif rpc == "execute_multi_operation":
            for operation in cast(Any, req).operations:
                if operation.HasField("start_workflow"):
                    self.started.append(operation.start_workflow.workflow_id)
        return await self.inner._rpc_call(
            rpc,
            req,
            resp_type,
            service=service,
            retry=retry,
            metadata=metadata,
            timeout=timeout,
        )

    def take(self) -> tuple[collections.Counter[str], list[str]]:
        """The RPCs and starts counted since the last ``take``, and a fresh count."""
        taken = self.rpcs, self.started
        self.rpcs, self.started = collections.Counter(), []
        return taken


def counting(client: Client) -> tuple[Client, CountingServiceClient]:
    """A client on ``client``'s connection whose every RPC is counted."""
    counter = CountingServiceClient(client.service_client)
    config = client.config()
    config["service_client"] = counter
    return Client(**config), counter


# CPU, to the nanosecond, of every thread of a process ---------------------------------------------


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """Nanoseconds each live thread of ``pid`` has run (``/proc/<pid>/task/*/schedstat``)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            found[int(task.name)] = int((task / "schedstat").read_text().split()[0])
    return found


class Cpu:
    """CPU seconds of the worker, this process (the client) and the dev server over a block."""

    def __init__(self, worker_pid: int) -> None:
        self.pids = {"worker": [worker_pid], "server": dev_server_pids()}
        self.seconds: dict[str, float] = {}

    def _read(self) -> dict[str, dict[int, int]]:
        return {
            f"{name}:{pid}": thread_cpu_ns(pid) for name, pids in self.pids.items() for pid in pids
        }

    def __enter__(self) -> Cpu:
        self._client = time.process_time()
        self._threads = self._read()
        return self

    def __exit__(self, *exc_info: object) -> None:
        client = time.process_time() - self._client
        now = self._read()
        self.seconds = {"client": client, "worker": 0.0, "server": 0.0}
        for key, threads in now.items():
            before = self._threads.get(key, {})
            # A thread born meanwhile counts from zero; one that ended meanwhile is lost (rare).
            used = sum(ns - before.get(tid, 0) for tid, ns in threads.items())
            self.seconds[key.split(":")[0]] += used / 1e9


# The worker, in a child process of its own --------------------------------------------------------


def worker_for(
    operation: str, side: str, client: Client, task_queue: str, people: Directory
) -> Worker:
    """The worker the operation's own script runs for ``side``."""
    secret = WorkerSecret.generate()
    if operation == "decide":  # bench/gate_latency.py: one worker for both sides
        plugin = LockgatePlugin(graphs=[GateLoop], directory=people, secret=secret)
        return bench_worker(client, task_queue, plugin)
    if operation == "adapter_gate":  # bench/adapter.py: one worker for both sides
        assert adapter is not None
        return Worker(
            client,
            task_queue=task_queue,
            workflows=[adapter.UpdateApproval, adapter.GateApproval],
            workflow_runner=bench_runner(),
            plugins=[
                adapter.LangGraphPlugin(
                    graphs={
                        adapter.UPDATE_GRAPH: adapter.approval_graph(adapter.approve_by_update),
                        adapter.GATE_GRAPH: adapter.approval_graph(adapter.approve_by_gate),
                    }
                ),
                LockgatePlugin(directory=people, secret=secret),
            ],
        )
    if operation in ("ungated_essay", "gated_essay"):  # bench/actions.py
        if side == "floor":
            return bench_worker(client, task_queue)
        plugin = LockgatePlugin(
            tools=cast("list[Callable[..., Any]]", actions.essay.TOOLS),
            graphs=actions.essay.GRAPHS,
            directory=people,
            secret=secret,
        )
        return Worker(client, task_queue=task_queue, plugins=[plugin])
    if operation == "durable_tool_call":
        if side == "floor":  # bench/activity_overhead.py's hand-written side
            return Worker(
                client,
                task_queue=task_queue,
                workflows=[BareCalls],
                activities=[bare_add],
                workflow_runner=bench_runner(),
            )
        plugin = LockgatePlugin(tools=durable_call.TOOLS, directory=people, secret=secret)
        return Worker(client, task_queue=task_queue, plugins=[plugin])
    raise ValueError(f"no operation {operation!r}")


async def serve(target: str, principals_toml: str) -> None:
    """The child: serves one operation's worker at a time, as its parent asks on stdin.

    ``serve <operation> <side> <queue>`` starts one (``ok`` once it polls); ``stop`` stops it;
    ``rpcs`` prints (as JSON) the RPCs the worker's client sent since the last ``rpcs``.
    """
    directory = Directory.from_toml(principals_toml, source="<bench identities>")
    client, counter = counting(await Client.connect(target))
    loop = asyncio.get_running_loop()
    running = contextlib.AsyncExitStack()
    print("ready", flush=True)
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        command, *arguments = line.split()
        if command == "serve":
            operation, side, task_queue = arguments
            worker = worker_for(operation, side, client, task_queue, directory)
            await running.enter_async_context(worker)
            print("ok", flush=True)
        elif command == "stop":
            await running.aclose()
            print("ok", flush=True)
        elif command == "rpcs":
            print(json.dumps(dict(counter.take()[0])), flush=True)
    await running.aclose()


class ChildWorker:
    """The parent's end of the child process that runs the workers."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pid = process.pid

    @classmethod
    async def start(cls, target: str, people: Identities) -> ChildWorker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import asyncio, os, sys; from bench.counts import serve; "
            "asyncio.run(serve(sys.argv[1], os.environ['BENCH_PRINCIPALS']))",
            target,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=REPO_ROOT,
            env=child_environment(people.toml),
        )
        child = cls(process)
        assert await child._answer() == "ready"
        return child

    async def _answer(self) -> str:
        assert self.process.stdout is not None
        return (await asyncio.wait_for(self.process.stdout.readline(), 120)).decode().strip()

    async def ask(self, *command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write((" ".join(command) + "\n").encode())
        await self.process.stdin.drain()
        return await self._answer()

    async def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 30)
        except asyncio.TimeoutError:
            self.process.kill()
            await self.process.wait()


# One count of one operation on one side -----------------------------------------------------------


@dataclass
class Count:
    rpcs: collections.Counter[str] = field(default_factory=collections.Counter)
    worker_rpcs: collections.Counter[str] = field(default_factory=collections.Counter)
    weight: Weight = field(default_factory=Weight)
    cpu: dict[str, float] = field(default_factory=dict)


Operation = Callable[[Client, str], Awaitable[None]]
"""Runs one whole operation on a client and task queue."""


def whole_runs(people: Identities) -> dict[str, dict[str, Operation]]:
    """The operations that are whole runs, each side as its own script drives it."""

    async def adapter_side(side: str, client: Client, task_queue: str) -> None:
        assert adapter is not None
        sides = adapter.Sides(client, task_queue, people, POLL_SECONDS)
        await getattr(sides, side)(adapter.Stopwatch())

    async def signed_tool_call(client: Client, task_queue: str) -> None:
        caller = ToolClient(client, task_queue, signer=people.signer("ada"))
        await durable_call.signed_call(caller, "bench:add")()

    async def bare_tool_call(client: Client, task_queue: str) -> None:
        total = await client.execute_workflow(
            "bench.bare_calls",
            1,
            id=f"bench-bare-call-{uuid.uuid4().hex[:12]}",
            task_queue=task_queue,
            result_type=int,
        )
        assert total == 1, total

    def flow(function: Callable[[Client, str, Identities], Awaitable[None]]) -> Operation:
        return lambda client, task_queue: function(client, task_queue, people)

    operations: dict[str, dict[str, Operation]] = {
        "adapter_gate": {
            "lockgate": functools.partial(adapter_side, "lockgate"),
            "floor": functools.partial(adapter_side, "handwritten"),
        },
        "ungated_essay": {
            "lockgate": flow(actions.lockgate_pass),
            "floor": flow(actions.floor_pass),
        },
        "gated_essay": {
            "lockgate": flow(actions.lockgate_gate),
            "floor": flow(actions.floor_gate),
        },
        "durable_tool_call": {"lockgate": signed_tool_call, "floor": bare_tool_call},
    }
    if adapter is None:
        print("bench/counts.py: adapter_gate skipped, needs lockgate[langgraph]", file=sys.stderr)
        del operations["adapter_gate"]
    return operations


async def count_whole_run(
    client: Client, child: ChildWorker, name: str, side: str, operation: Operation
) -> Count:
    """One whole run of ``operation`` on a fresh queue and worker: every run of it counted."""
    task_queue = f"bench-counts-{name}-{side}-{uuid.uuid4().hex[:8]}"
    assert await child.ask("serve", name, side, task_queue) == "ok"
    counted, counter = counting(client)
    await child.ask("rpcs")  # the worker's start is not the operation's
    began = datetime.now(timezone.utc)
    with Cpu(child.pid) as cpu:
        await operation(counted, task_queue)
    rpcs, started = counter.take()
    worker_rpcs = collections.Counter(json.loads(await child.ask("rpcs")))
    runs, _ = await actions.flow_runs(client, task_queue, started, began)
    assert await child.ask("stop") == "ok"
    weight = functools.reduce(Weight.__add__, (weigh(run.events) for run in runs), Weight())
    return Count(rpcs, worker_rpcs, weight, cpu.seconds)


async def count_decides(
    client: Client, child: ChildWorker, people: Identities, repeats: int
) -> dict[str, list[Count]]:
    """One answer at a time on each side's run, as ``bench/gate_latency.py`` answers."""
    task_queue = f"bench-counts-decide-{uuid.uuid4().hex[:8]}"
    assert await child.ask("serve", "decide", "both", task_queue) == "ok"
    counted, counter = counting(client)
    started = await GraphClient(counted, task_queue).start(GateLoop, {})
    assert started["status"] == "waiting", started
    editors = [GraphClient(counted, task_queue, signer=people.signer(n)) for n in ("ed", "eve")]
    hand_handle = await counted.start_workflow(
        HandGateLoop.run, id=f"hand-gate-{uuid.uuid4().hex[:12]}", task_queue=task_queue
    )
    hand = gate_latency.HandwrittenLoop(hand_handle)
    await hand.wait_until_waiting()
    sides: dict[str, tuple[str, Callable[[], Awaitable[None]]]] = {
        "lockgate": (
            started["run_id"],
            gate_latency.LockgateLoop(editors, started["run_id"]).answer,
        ),
        "floor": (hand_handle.id, hand.answer),
    }
    for _, answer in sides.values():  # a warm-up, not counted
        await answer()
    counts: dict[str, list[Count]] = {side: [] for side in SIDES}
    for repeat in range(repeats):
        for side in SIDES if repeat % 2 == 0 else SIDES[::-1]:
            workflow_id, answer = sides[side]
            handle = client.get_workflow_handle(workflow_id)
            before = len((await handle.fetch_history()).events)
            counter.take()
            await child.ask("rpcs")
            with Cpu(child.pid) as cpu:
                await answer()
            rpcs, _ = counter.take()
            worker_rpcs = collections.Counter(json.loads(await child.ask("rpcs")))
            appended = list((await handle.fetch_history()).events)[before:]
            counts[side].append(Count(rpcs, worker_rpcs, weigh(appended), cpu.seconds))
    assert await child.ask("stop") == "ok"
    return counts


# Reporting ----------------------------------------------------------------------------------------

FIGURES: dict[str, tuple[str, Callable[[Count], float]]] = {
    "client_rpcs": ("RPCs", lambda count: sum(count.rpcs.values())),
    "history_events": ("events", lambda count: count.weight.events),
    "payload_bytes": ("bytes", lambda count: count.weight.payload_bytes),
    "history_bytes": ("bytes", lambda count: count.weight.history_bytes),
    "worker_cpu_ms": ("ms", lambda count: 1000 * count.cpu["worker"]),
}


def median_count(counts: list[Count], figure: str) -> tuple[float, Count]:
    """The median of one figure over the repeats, and a repeat that has it (the lower median)."""
    values = [FIGURES[figure][1](count) for count in counts]
    return statistics.median(values), counts[values.index(statistics.median_low(values))]


def emit_counts(name: str, side: str, counts: list[Count]) -> dict[str, float]:
    """One JSON line per figure of ``name`` on ``side``; returns the medians."""
    medians = {}
    for figure, (unit, value_of) in FIGURES.items():
        values = [value_of(count) for count in counts]
        median, shown = median_count(counts, figure)
        medians[figure] = median
        extra: dict[str, Any] = {"runs": [round(value, 3) for value in values]}
        if figure == "client_rpcs":
            extra |= {
                "rpcs": dict(shown.rpcs.most_common()),
                "worker_rpcs": dict(shown.worker_rpcs),
            }
        elif figure == "history_events":
            extra |= {"events_by_type": dict(shown.weight.kinds.most_common())}
        elif figure == "payload_bytes":
            extra |= {"by_type": dict(shown.weight.payload_bytes_by_kind.most_common())}
        elif figure == "history_bytes":
            extra |= {"by_type": dict(shown.weight.history_bytes_by_kind.most_common())}
        else:
            extra |= {
                "client_cpu_ms": round(
                    1000 * statistics.median(c.cpu["client"] for c in counts), 3
                ),
                "server_cpu_ms": round(
                    1000 * statistics.median(c.cpu["server"] for c in counts), 3
                ),
                "measured": "worker child process, every thread, /proc/<pid>/task/*/schedstat; "
                "median of the repeats, noisy",
            }
        if figure != "worker_cpu_ms":
            extra["same_every_run"] = len(set(values)) == 1
        emit(BENCH, f"{name}_{figure}_{side}", median, unit, **extra)
    return medians


def difference(lockgate: collections.Counter[str], floor: collections.Counter[str]) -> str:
    """What ``lockgate`` has more of than ``floor``, largest first (``name +n``)."""
    more = collections.Counter(lockgate)
    more.subtract(floor)
    return ", ".join(f"{name} {value:+,}" for name, value in more.most_common() if value > 0)


def table(
    medians: dict[str, dict[str, dict[str, float]]], shown: dict[str, dict[str, Count]]
) -> str:
    """The counted table in Markdown, and below it what lockgate has that its floor has not."""

    def pair(name: str, figure: str, decimals: int = 0) -> str:
        lockgate, floor = medians[name]["lockgate"][figure], medians[name]["floor"][figure]
        return f"{lockgate:,.{decimals}f} vs {floor:,.{decimals}f}"

    lines = [
        "| operation | client RPCs | history events | payload bytes | history bytes "
        "| worker CPU ms |",
        "|---|---|---|---|---|---|",
    ]
    for name in medians:
        lockgate_cpu = medians[name]["lockgate"]["worker_cpu_ms"]
        floor_cpu = medians[name]["floor"]["worker_cpu_ms"]
        more = 100 * (lockgate_cpu / floor_cpu - 1) if floor_cpu else float("nan")
        lines.append(
            f"| {OPERATIONS[name]} | {pair(name, 'client_rpcs')} | {pair(name, 'history_events')} "
            f"| {pair(name, 'payload_bytes')} | {pair(name, 'history_bytes')} "
            f"| {pair(name, 'worker_cpu_ms', 1)} ({more:+.0f}%) |"
        )
    lines += [
        "",
        "What lockgate sends and writes that its floor does not (one repeat of each):",
        "",
    ]
    for name in medians:
        lockgate, floor = shown[name]["lockgate"], shown[name]["floor"]
        lines.append(f"- {OPERATIONS[name]}:")
        lines.append(f"  - RPCs: {difference(lockgate.rpcs, floor.rpcs) or 'none'}")
        lines.append(
            f"  - events: {difference(lockgate.weight.kinds, floor.weight.kinds) or 'none'}"
        )
        lines.append(
            "  - payload bytes: "
            + (
                difference(
                    lockgate.weight.payload_bytes_by_kind, floor.weight.payload_bytes_by_kind
                )
                or "none"
            )
        )
    return "\n".join(lines)


async def main(repeats: int) -> None:
    people = Identities(PEOPLE)
    counts: dict[str, dict[str, list[Count]]] = {}
    async with dev_server() as environment:
        client = environment.client
        child = await ChildWorker.start(client.service_client.config.target_host, people)
        try:
            counts["decide"] = await count_decides(client, child, people, repeats)
            for name, sides in whole_runs(people).items():
                for side in SIDES:  # a warm-up of each side, not counted
                    await count_whole_run(client, child, name, side, sides[side])
                counts[name] = {side: [] for side in SIDES}
                for repeat in range(repeats):
                    for side in SIDES if repeat % 2 == 0 else SIDES[::-1]:
                        counts[name][side].append(
                            await count_whole_run(client, child, name, side, sides[side])
                        )
        finally:
            await child.close()
    emit(BENCH, "repeats", repeats, "repeats per operation and side", interleaved=True)
    medians: dict[str, dict[str, dict[str, float]]] = {}
    shown: dict[str, dict[str, Count]] = {}
    for name, sides in counts.items():
        medians[name] = {side: emit_counts(name, side, sides[side]) for side in SIDES}
        shown[name] = {side: median_count(sides[side], "history_bytes")[1] for side in SIDES}
    print(
        f"\nCounted, lockgate vs its floor (medians of {repeats} repeats; worker CPU is noisy):\n",
        file=sys.stderr,
    )
    print(table(medians, shown), file=sys.stderr, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="counts of each operation a side")
    options = parser.parse_args()
    asyncio.run(main(options.repeats))
    leave()

"""End-to-end latency of a LangGraph run answered at lockgate's gate, against a bare update.

Both sides are one LangGraph graph on Temporal's LangGraph plugin (every node and router in the
workflow): ``read`` (no-op), ``approve`` (asks), ``refund`` (no-op). The hand-written side's
``approve`` calls LangGraph's ``interrupt()``; its workflow runs ``app.ainvoke``, waits for a
hand-written ``answer`` update (with a validator) and resumes with ``Command(resume=...)``.
lockgate's side asks with ``ask_gate`` and runs the graph with ``run_graph``: the run is started
signed by the requester (``GraphClient.start_workflow``: the run held back, then its proof sent
as its ``lockgate.start`` update) and answered by a verified approver with the default
``GraphClient.decide`` (the gate read from the server's description of the run, its memo, then
the signed ``decide`` update, which returns once the run settles). A run, for each side, is:
start, poll until the run waits (a query for the hand-written side, ``GraphClient.show`` for
lockgate's; the same loop and interval), answer, await the result. One worker with both plugins
serves both against one dev server; runs are interleaved, the order flipping each round, and
``lockgate_gate_over_handwritten_update`` (target 1.30) is the median of per-round ratios.

Three more sides, for information, tell where lockgate's extra time goes: the same gated run
answered with ``decide(..., shown=view)``, signing the gate ``show`` showed and sending it at
once, pinned to the execution the view names (no description read); started
unsigned (no held-back start, no start proof to send and verify); and driven with the bare
queries and update (the ``awaiting`` query to poll, one signed ``decide`` update, without the
``describe`` calls ``show`` and ``decide`` make first). Each side's run is also split into its
phases: until the run waits, the answer, and the rest of the run to its result.

    python bench/adapter.py [--rounds 60] [--warmup 3] [--poll-ms 10]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import collections
import functools
import importlib.util
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypedDict

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.worker import Worker

from bench._exit import leave
from bench._workloads import bench_runner, dev_server, emit, median_ratio, timed
from lockgate import Ask, GraphClient, LockgatePlugin, Signer
from lockgate.identity._bindings import answer_binding
from lockgate.testing import Identities

if sys.version_info < (3, 11) or importlib.util.find_spec("temporalio.langgraph") is None:
    # LangGraph's interrupt() works on Temporal from Python 3.11, with the `langgraph` extra:
    # elsewhere there is nothing to measure, and `make bench` goes on to the next script.
    if __name__ == "__main__":
        print(
            "bench/adapter.py: skipped, needs lockgate[langgraph] on Python 3.11+", file=sys.stderr
        )
        leave()
    raise ImportError("bench.adapter needs lockgate[langgraph] on Python 3.11 or later")

with workflow.unsafe.imports_passed_through():
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt
    from temporalio.langgraph import LangGraphPlugin
    from temporalio.langgraph import graph as langgraph_graph

    from lockgate.adapters.langgraph import ask_gate, run_graph

__all__ = [
    "GATE_GRAPH",
    "UPDATE_GRAPH",
    "ApprovalRequest",
    "ApprovalState",
    "GateApproval",
    "Refund",
    "UpdateApproval",
    "approval_graph",
    "main",
]

BENCH = "adapter"
TARGET_RATIO = 1.30
UPDATE_GRAPH = "bench:adapter-update"
GATE_GRAPH = "bench:adapter-gate"
PHASES = ("to_gate", "answer", "to_result")


class Refund(str, Enum):
    ISSUE = "issue"
    DECLINE = "decline"


REFUND_GATE = Ask(Refund, of="support-lead", because="A refund needs a support lead.")


@dataclass
class ApprovalRequest:
    ticket: int
    amount: int


class ApprovalState(TypedDict, total=False):
    ticket: int
    amount: int
    customer: str
    decision: dict[str, Any]
    outcome: str


# The graphs' nodes: the same no-op work on both sides, only the asking differs ----------------


async def read(state: ApprovalState) -> dict[str, Any]:
    return {"customer": f"customer-{state['ticket']}"}


def approve_by_update(state: ApprovalState) -> dict[str, Any]:
    subject = {"ticket": state["ticket"], "amount": state["amount"]}
    return {"decision": interrupt({"ask": "refund", "subject": subject})}


def approve_by_gate(state: ApprovalState) -> dict[str, Any]:
    return {"decision": ask_gate("refund", {"ticket": state["ticket"], "amount": state["amount"]})}


async def refund(state: ApprovalState) -> dict[str, Any]:
    return {"outcome": "refunded"}


# Routers run in the workflow, where LangGraph would hand a plain function to a thread executor
# (which a workflow has not): they are coroutines.
async def after_approve(state: ApprovalState) -> str:
    return "refund" if state["decision"]["choice"] == Refund.ISSUE.value else END


def approval_graph(approve: Callable[..., dict[str, Any]]) -> StateGraph[Any, Any, Any, Any]:
    """read, then ``approve``, then refund when the answer is to issue; all in the workflow."""
    in_workflow = {"execute_in": "workflow"}
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(ApprovalState)
    for name, node in (("read", read), ("approve", approve), ("refund", refund)):
        builder.add_node(name, node, metadata=in_workflow)
    builder.add_edge(START, "read")
    builder.add_edge("read", "approve")
    builder.add_conditional_edges("approve", after_approve, ["refund", END])
    builder.add_edge("refund", END)
    return builder


def _result(state: dict[str, Any]) -> dict[str, Any]:
    decision = state["decision"]
    return {
        "outcome": state.get("outcome", "declined"),
        "choice": decision["choice"],
        "by": (decision.get("by") or {}).get("actor"),
    }


@workflow.defn(name="bench.adapter_update")
class UpdateApproval:
    """The graph's interrupt answered by hand: a bare update with a validator, then resume."""

    def __init__(self) -> None:
        self.asked: list[Any] = []
        self.choice: str | None = None

    @workflow.run
    async def run(self, request: ApprovalRequest) -> dict[str, Any]:
        app = langgraph_graph(UPDATE_GRAPH).compile(checkpointer=InMemorySaver())
        config: RunnableConfig = {"configurable": {"thread_id": workflow.info().workflow_id}}
        payload: Any = {"ticket": request.ticket, "amount": request.amount}
        while True:
            state = await app.ainvoke(payload, config)
            self.asked = list(state.get("__interrupt__") or ())
            if not self.asked:
                return _result(state)
            await workflow.wait_condition(lambda: self.choice is not None)
            asked, choice = self.asked, self.choice
            self.asked, self.choice = [], None
            payload = Command(resume={interrupted.id: {"choice": choice} for interrupted in asked})

    def _waiting(self) -> bool:
        return bool(self.asked) and self.choice is None

    @workflow.query
    def waiting(self) -> bool:
        return self._waiting()

    @workflow.update
    def answer(self, choice: str) -> None:
        self.choice = choice

    @answer.validator
    def validate_answer(self, choice: str) -> None:
        if not self._waiting():
            raise ApplicationError("Not waiting for an answer.", type="GATE_NOT_PENDING")
        if choice not in {case.value for case in Refund}:
            raise ApplicationError(f"No option {choice!r}.", type="VALIDATION_ERROR")


@workflow.defn(name="bench.adapter_gate")
class GateApproval:
    """The same graph asking lockgate's gate, run with ``run_graph``."""

    @workflow.run
    async def run(self, request: ApprovalRequest) -> dict[str, Any]:
        app = langgraph_graph(GATE_GRAPH).compile(checkpointer=InMemorySaver())
        state = await run_graph(
            app, {"ticket": request.ticket, "amount": request.amount}, gates={"refund": REFUND_GATE}
        )
        return _result(state)


# The client's side of one run, split into phases -----------------------------------------------


class Stopwatch:
    """The seconds each phase of one run took, one lap after another, and the run."""

    def __init__(self) -> None:
        self.last = time.perf_counter()
        self.laps: dict[str, float] = {}
        self.handle: WorkflowHandle[Any, Any] | None = None

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.laps[phase] = now - self.last
        self.last = now


async def until(ready: Callable[[], Awaitable[bool]], pause: float) -> None:
    """Asks ``ready`` every ``pause`` seconds until it says yes: both sides wait so."""
    while not await ready():
        await asyncio.sleep(pause)


REQUEST = ApprovalRequest(ticket=42, amount=250)

_ENDED = {"finished", "declined", "refused", "cancelled", "failed", "terminated", "timed_out"}
"""The statuses ``show`` gives a run that has ended, which no poll will see waiting."""


def _run_id(side: str) -> str:
    return f"bench-adapter-{side}-{uuid.uuid4().hex[:12]}"


class Sides:
    """The five ways one run is driven, on one client and task queue."""

    def __init__(self, client: Client, task_queue: str, people: Identities, pause: float) -> None:
        self.client = client
        self.task_queue = task_queue
        self.pause = pause
        self.requester = GraphClient(client, task_queue, signer=people.signer("ada"))
        self.unsigned = GraphClient(client, task_queue)
        self.approver_signer: Signer = people.signer("lee")
        self.approver = GraphClient(client, task_queue, signer=self.approver_signer)

    async def handwritten(self, watch: Stopwatch) -> None:
        handle = await self.client.start_workflow(
            UpdateApproval.run, REQUEST, id=_run_id("update"), task_queue=self.task_queue
        )
        watch.handle = handle

        async def waiting() -> bool:
            try:
                return await handle.query(UpdateApproval.waiting)
            except (WorkflowQueryFailedError, RPCError):  # not yet answering queries
                return False

        await until(waiting, self.pause)
        watch.lap("to_gate")
        await handle.execute_update(UpdateApproval.answer, Refund.ISSUE.value)
        watch.lap("answer")
        result = await handle.result()
        watch.lap("to_result")
        assert result == {"outcome": "refunded", "choice": "issue", "by": None}, result

    async def lockgate(self, watch: Stopwatch) -> None:
        await self._gated(self.requester, watch)

    async def lockgate_shown(self, watch: Stopwatch) -> None:
        await self._gated(self.requester, watch, answer_what_was_shown=True)

    async def lockgate_unsigned_start(self, watch: Stopwatch) -> None:
        await self._gated(self.unsigned, watch)

    async def _gated(
        self, starter: GraphClient, watch: Stopwatch, *, answer_what_was_shown: bool = False
    ) -> None:
        handle = await starter.start_workflow(GateApproval.run, REQUEST, id=_run_id("gate"))
        watch.handle = handle
        shown: dict[str, Any] = {}

        async def gate_shown() -> bool:
            shown.update(await starter.show(handle.id))
            if shown.get("status") in _ENDED:
                # A run that ended (or was refused) never waits: say why instead of polling on.
                raise RuntimeError(f"the run ended before its gate opened: {shown}")
            return shown.get("awaiting") is not None

        await until(gate_shown, self.pause)
        watch.lap("to_gate")
        answered = await self.approver.decide(
            handle.id, Refund.ISSUE.value, shown=shown if answer_what_was_shown else None
        )
        watch.lap("answer")
        assert "error" not in answered, answered
        await self._check(handle, watch)

    async def lockgate_bare_client(self, watch: Stopwatch) -> None:
        handle = await self.requester.start_workflow(GateApproval.run, REQUEST, id=_run_id("bare"))
        watch.handle = handle
        reported: dict[str, Any] = {}

        async def gate_reported() -> bool:
            try:
                reported.update(await handle.query("awaiting", result_type=dict))
            except (WorkflowQueryFailedError, RPCError):
                return False
            return reported.get("gate") is not None

        await until(gate_reported, self.pause)
        watch.lap("to_gate")
        binding = answer_binding(
            reported["gate"], Refund.ISSUE.value, execution=reported["execution"]
        )
        proof = self.approver_signer.sign(binding)
        await handle.execute_update("decide", proof, result_type=dict)
        watch.lap("answer")
        await self._check(handle, watch)

    @staticmethod
    async def _check(handle: WorkflowHandle[Any, Any], watch: Stopwatch) -> None:
        result = await handle.result()
        watch.lap("to_result")
        assert result == {"outcome": "refunded", "choice": "issue", "by": "lee"}, result


async def history_events(watch: Stopwatch) -> collections.Counter[str]:
    """How many events of each type the run ``watch`` timed wrote to its history."""
    assert watch.handle is not None
    history = await watch.handle.fetch_history()
    return collections.Counter(
        EventType.Name(event.event_type).removeprefix("EVENT_TYPE_").lower()
        for event in history.events
    )


async def main(rounds: int, warmup: int, poll_ms: float) -> None:
    people = Identities({"ada": {}, "lee": {"roles": ["support-lead"]}})
    async with dev_server() as environment:
        client = environment.client
        task_queue = f"bench-adapter-{uuid.uuid4().hex[:8]}"
        plugins = [
            LangGraphPlugin(
                graphs={
                    UPDATE_GRAPH: approval_graph(approve_by_update),
                    GATE_GRAPH: approval_graph(approve_by_gate),
                }
            ),
            # The side started unsigned opens its gate only where the worker lets it.
            LockgatePlugin(
                directory=people.directory,
                secret=people.secret,
                unsigned_starts=[GateApproval],
            ),
        ]
        driven = Sides(client, task_queue, people, poll_ms / 1000)
        sides: dict[str, Callable[[Stopwatch], Awaitable[None]]] = {
            "handwritten": driven.handwritten,
            "lockgate": driven.lockgate,
            "lockgate_shown": driven.lockgate_shown,
            "lockgate_unsigned_start": driven.lockgate_unsigned_start,
            "lockgate_bare_client": driven.lockgate_bare_client,
        }
        async with Worker(
            client,
            task_queue=task_queue,
            workflows=[UpdateApproval, GateApproval],
            workflow_runner=bench_runner(),
            plugins=plugins,
        ):
            for _ in range(warmup):
                for run in sides.values():
                    await run(Stopwatch())
            seconds: dict[str, list[float]] = {name: [] for name in sides}
            phases: dict[str, dict[str, list[float]]] = {
                name: {phase: [] for phase in PHASES} for name in sides
            }
            cpu: dict[str, list[float]] = {name: [] for name in sides}
            server_cpu: dict[str, list[float]] = {name: [] for name in sides}
            order = list(sides)
            last: dict[str, Stopwatch] = {}
            for _ in range(rounds):
                for name in order:
                    watch = last[name] = Stopwatch()
                    wall, used, served = await timed(functools.partial(sides[name], watch))
                    seconds[name].append(wall)
                    cpu[name].append(used)
                    server_cpu[name].append(served)
                    for phase in PHASES:
                        phases[name][phase].append(watch.laps[phase])
                order.reverse()
            events = {name: await history_events(watch) for name, watch in last.items()}

    emit(BENCH, "rounds", rounds, "runs per side", poll_ms=poll_ms)
    for name in sides:
        emit(BENCH, f"{name}_ms_per_run", 1000 * statistics.median(seconds[name]), "ms")
    emit(
        BENCH,
        "lockgate_gate_over_handwritten_update",
        median_ratio(seconds["lockgate"], seconds["handwritten"]),
        "ratio",
        TARGET_RATIO,
    )
    for name in ("lockgate_shown", "lockgate_unsigned_start", "lockgate_bare_client"):
        emit(
            BENCH,
            f"{name}_over_handwritten_update",
            median_ratio(seconds[name], seconds["handwritten"]),
            "ratio",
        )
    # Where a run's time goes: until it waits (start, first nodes, the gate's opening; polled),
    # the answer (the update's round trip; lockgate's decide describes the run first), the rest.
    for name in sides:
        for phase in PHASES:
            emit(BENCH, f"{name}_{phase}_ms", 1000 * statistics.median(phases[name][phase]), "ms")
    for name in sides:
        emit(BENCH, f"{name}_cpu_ms_per_run", 1000 * sum(cpu[name]) / rounds, "ms")
        emit(BENCH, f"{name}_server_cpu_ms_per_run", 1000 * sum(server_cpu[name]) / rounds, "ms")
    # What each run wrote to its history (a signed start's proof is its `lockgate.start` update,
    # counted here: there is no record of spent proofs elsewhere).
    for name, kinds in events.items():
        emit(BENCH, f"{name}_history_events", sum(kinds.values()), "events", kinds=dict(kinds))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--poll-ms", type=float, default=10.0, help="readiness poll interval")
    options = parser.parse_args()
    # The workflow sandbox imports a workflow's module by name, and __main__ is not one it can
    # import: the run uses this file's workflows as the module bench.adapter.
    from bench import adapter

    asyncio.run(adapter.main(options.rounds, options.warmup, options.poll_ms))
    leave()

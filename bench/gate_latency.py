"""Latency of a gate answer that runs one node and parks at the next gate, against a bare update.

lockgate's side is the default ``GraphClient.decide`` (no ``shown=``) signed by a verified
editor (from ``Identities``), on the ``bench:gate-loop`` graph: answering ``one_more`` runs one
node and comes back to the same gate, so every answer advances one node and returns once the run
waits again. Two editors take turns: whoever answered drove the next node, so the gate it comes
back to is the other's (four eyes). The hand-written side is a workflow with a bare update
handler (and validator) that runs one bare activity (the same function) and returns when it is
waiting again. The default ``decide`` asks no worker
before its update: it reads the execution and the open gate (which the run's worker writes in
its memo) from one ``describe`` of the run on the server, signs, and sends the ``decide`` update,
which returns once the run settles. Both run on one worker against one dev server, answers
interleaved; ``lockgate_decide_over_handwritten`` (target 1.20) is the median of pairwise ratios.

For information, a third side answers with ``decide(..., shown=view)``, the view the previous
answer returned: it signs the gate shown and sends the update at once, pinned to the execution
the view names (the server refuses it for another), with no ``describe`` first: one round trip,
as the hand-written side. A fourth splits ``decide`` in two: the signed
``execute_update("decide", ...)`` alone, unpinned, without the ``describe`` ``decide`` makes
first.

``sso_decide_over_key_decide`` (target 1.10) is the worker's cost of an answer an identity
provider signed against one a key signed, on one run: a real ``oidc-provider`` (``tests/idp``,
``make idp``) signs in the editor ``eve``, the key editor ``ed`` takes the other turns, and each
signed ``decide`` update is timed alone (the sign-in that gets the token is not: that is the
IdP's time, not the worker's). Each update is sent ``SETTLE_SECONDS`` after its proof was made,
whoever signed it: the IdP, a Node process on the same cores, goes on working for a few
milliseconds after it hands out a token, and an update sent at once was timed against that work
(about 1.23 where the worker's own verifying costs 0.1 ms more). The median of pairwise ratios;
skipped, saying so, without Node. For information, the CPU this process (the worker and the
client, not the IdP) spends per update of each kind.

    python bench/gate_latency.py [--answers 60]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError

from bench._exit import leave
from bench._workloads import (
    DecideInput,
    GateLoop,
    HandGateLoop,
    LoopCall,
    bench_worker,
    dev_server,
    emit,
    median_ratio,
    timed,
)
from lockgate import Directory, GraphClient, LockgatePlugin, Signer
from lockgate.contracts import RunView
from lockgate.identity._bindings import answer_binding
from lockgate.testing import Identities

BENCH = "gate_latency"
TARGET_RATIO = 1.20
SSO_TARGET_RATIO = 1.10
SETTLE_SECONDS = 0.05
"""How long after its proof is made each update of the key-and-IdP turns is sent."""
IDP = Path(__file__).resolve().parent.parent / "tests" / "idp"
ONE_MORE = LoopCall.ONE_MORE.value


class LockgateLoop:
    """A gate-loop run answered through ``GraphClient.decide``, by two editors in turn; with
    ``started``, each answers the gate the previous answer returned (``decide(shown=...)``)."""

    def __init__(
        self, editors: list[GraphClient], run_id: str, started: RunView | None = None
    ) -> None:
        self.editors = editors
        self.run_id = run_id
        self.counter = 1
        self.view = started

    async def answer(self) -> None:
        editor = self.editors[self.counter % len(self.editors)]
        shown = await editor.decide(self.run_id, ONE_MORE, shown=self.view)
        if self.view is not None:
            self.view = shown
        self.counter += 1
        assert shown.get("status") == "waiting", shown
        assert shown["fields"]["counter"] == self.counter, shown


class LockgateUpdateOnly:
    """A gate-loop run answered with the signed update alone (what ``decide`` sends)."""

    def __init__(self, client: Client, signers: list[Signer], run: dict[str, Any]) -> None:
        self.handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(run["run_id"])
        self.signers = signers
        self.run_id = run["run_id"]
        self.gate = run["awaiting"]
        self.counter = 1

    async def answer(self) -> None:
        signer = self.signers[self.counter % len(self.signers)]
        proof = signer.sign(answer_binding(self.gate, ONE_MORE))
        shown = await self.handle.execute_update("decide", proof, result_type=dict)
        self.counter += 1
        assert shown.get("status") == "waiting", shown
        assert shown["fields"]["counter"] == self.counter, shown
        self.gate = shown["awaiting"]


class KeyAndSsoTurns:
    """A gate-loop run answered in turn by a key editor and an editor the IdP signs in; each
    signed ``decide`` update is timed without the signing."""

    def __init__(self, client: Client, key: Signer, sso: Signer, run: dict[str, Any]) -> None:
        self.handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(run["run_id"])
        self.signers: list[Any] = [key, sso]
        self.gate = run["awaiting"]
        self.counter = 1

    async def answer(self) -> tuple[float, float]:
        """The signed update's wall seconds and this process's CPU seconds for it."""
        signer = self.signers[self.counter % 2]
        proof = await asyncio.to_thread(signer.sign, answer_binding(self.gate, ONE_MORE))
        await asyncio.sleep(SETTLE_SECONDS)
        began, cpu = time.perf_counter(), time.process_time()
        shown = await self.handle.execute_update("decide", proof, result_type=dict)
        wall, used = time.perf_counter() - began, time.process_time() - cpu
        self.counter += 1
        assert shown.get("status") == "waiting", shown
        assert shown["fields"]["counter"] == self.counter, shown
        self.gate = shown["awaiting"]
        return wall, used

    async def pair(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """(the key's answer, the IdP's answer), in the order the run asks for them."""
        first_is_key = self.counter % 2 == 0
        first, second = await self.answer(), await self.answer()
        return (first, second) if first_is_key else (second, first)


def identity_provider(folder: Path) -> Any:
    """A started ``oidc-provider`` whose person ``eve`` is in ``editors``, or None without Node."""
    if shutil.which("node") is None or not (IDP / "node_modules" / "oidc-provider").is_dir():
        print(
            "gate_latency: no Node or no tests/idp (make idp): sso_decide_over_key_decide skipped",
            file=sys.stderr,
        )
        return None
    from tests.helpers.idp import IdentityProvider

    people = {"eve": {"email": "eve@example.com", "groups": ["editors"]}}
    return IdentityProvider(folder, people).start()


class HandwrittenLoop:
    """The hand-written gate loop answered with its bare update."""

    def __init__(self, handle: WorkflowHandle[Any, Any]) -> None:
        self.handle = handle
        self.counter = 1

    async def wait_until_waiting(self) -> None:
        # The first tick runs before the first gate; until it is done the validator refuses.
        while True:
            try:
                await self.answer()
                return
            except WorkflowUpdateFailedError:
                await asyncio.sleep(0.05)

    async def answer(self) -> None:
        shown = await self.handle.execute_update(HandGateLoop.decide, DecideInput(ONE_MORE))
        self.counter += 1
        assert shown == {"counter": self.counter, "waiting": True}, shown


async def main(answers: int, warmup: int) -> None:
    people = Identities({"ed": {"roles": ["editor"]}, "eve": {"roles": ["editor"]}})
    folder = tempfile.TemporaryDirectory(prefix="lockgate-bench-idp-")
    idp = identity_provider(Path(folder.name))
    directory = people.directory
    if idp is not None:
        directory = Directory.from_toml(
            people.toml
            + f'\n[issuers.corp]\nissuer = "{idp.issuer}"\naudience = "lockgate"\n'
            + '[issuers.corp.groups.editors]\nroles = ["editor"]\n'
        )
    try:
        await _measure(people, directory, idp, answers, warmup)
    finally:
        if idp is not None:
            idp.stop()
        folder.cleanup()


async def _measure(
    people: Identities, directory: Directory, idp: Any, answers: int, warmup: int
) -> None:
    async with dev_server() as environment:
        client = environment.client
        task_queue = f"bench-gate-{uuid.uuid4().hex[:8]}"
        plugin = LockgatePlugin(graphs=[GateLoop], directory=directory, secret=people.secret)
        starter = GraphClient(client, task_queue)
        editors = [
            GraphClient(client, task_queue, signer=people.signer(name)) for name in ("ed", "eve")
        ]
        async with bench_worker(client, task_queue, plugin):
            first = await starter.start(GateLoop, {})
            second = await starter.start(GateLoop, {})
            third = await starter.start(GateLoop, {})
            assert first["status"] == second["status"] == third["status"] == "waiting"
            hand = HandwrittenLoop(
                await client.start_workflow(
                    HandGateLoop.run,
                    id=f"hand-gate-{uuid.uuid4().hex[:12]}",
                    task_queue=task_queue,
                )
            )
            await hand.wait_until_waiting()
            sides: dict[str, Callable[[], Awaitable[None]]] = {
                "lockgate_decide": LockgateLoop(editors, first["run_id"]).answer,
                "lockgate_decide_shown": LockgateLoop(editors, third["run_id"], third).answer,
                "lockgate_update_only": LockgateUpdateOnly(
                    client, [people.signer("ed"), people.signer("eve")], second
                ).answer,
                "handwritten": hand.answer,
            }
            for _ in range(warmup):
                for answer in sides.values():
                    await answer()
            seconds: dict[str, list[float]] = {name: [] for name in sides}
            cpu: dict[str, list[float]] = {name: [] for name in sides}
            server_cpu: dict[str, list[float]] = {name: [] for name in sides}
            order = list(sides)
            for _ in range(answers):
                for name in order:
                    wall, used, served = await timed(sides[name])
                    seconds[name].append(wall)
                    cpu[name].append(used)
                    server_cpu[name].append(served)
                order.reverse()
            turns: tuple[list[float], list[float]] = ([], [])
            turn_cpu: tuple[list[float], list[float]] = ([], [])
            if idp is not None:
                sso = Signer.from_identity_provider(
                    "sso:corp:eve@example.com", lambda nonce: idp.id_token("eve", nonce)
                )
                fourth = await starter.start(GateLoop, {})
                mixed = KeyAndSsoTurns(client, people.signer("ed"), sso, fourth)
                for _ in range(warmup):
                    await mixed.pair()
                for _ in range(answers):
                    (key_wall, key_cpu), (sso_wall, sso_cpu) = await mixed.pair()
                    turns[0].append(key_wall)
                    turns[1].append(sso_wall)
                    turn_cpu[0].append(key_cpu)
                    turn_cpu[1].append(sso_cpu)

    emit(BENCH, "answers", answers, "answers per side")
    for name in sides:
        emit(BENCH, f"{name}_seconds", statistics.median(seconds[name]), "s")
    emit(
        BENCH,
        "lockgate_decide_over_handwritten",
        median_ratio(seconds["lockgate_decide"], seconds["handwritten"]),
        "ratio",
        TARGET_RATIO,
    )
    emit(
        BENCH,
        "lockgate_decide_shown_over_handwritten",
        median_ratio(seconds["lockgate_decide_shown"], seconds["handwritten"]),
        "ratio",
    )
    emit(
        BENCH,
        "lockgate_update_only_over_handwritten",
        median_ratio(seconds["lockgate_update_only"], seconds["handwritten"]),
        "ratio",
    )
    if turns[0]:
        emit(BENCH, "key_decide_update_seconds", statistics.median(turns[0]), "s")
        emit(BENCH, "sso_decide_update_seconds", statistics.median(turns[1]), "s")
        emit(
            BENCH,
            "sso_decide_over_key_decide",
            median_ratio(turns[1], turns[0]),
            "ratio",
            SSO_TARGET_RATIO,
            settle_seconds=SETTLE_SECONDS,
        )
        for name, spent in zip(("key", "sso"), turn_cpu, strict=True):
            emit(
                BENCH,
                f"{name}_decide_update_cpu_ms",
                1000 * statistics.median(spent),
                "ms",
                measured="this process (worker and client), time.process_time(), median",
            )
    # CPU per answer, summed over all answers (one answer is too short for /proc's 10 ms ticks).
    for name in sides:
        emit(BENCH, f"{name}_cpu_ms_per_answer", 1000 * sum(cpu[name]) / answers, "ms")
        emit(
            BENCH,
            f"{name}_server_cpu_ms_per_answer",
            1000 * sum(server_cpu[name]) / answers,
            "ms",
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=2)
    options = parser.parse_args()
    asyncio.run(main(options.answers, options.warmup))
    leave()

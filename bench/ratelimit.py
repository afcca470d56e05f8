"""A durable tool call rate-limited in Redis (shared by a fleet) against one limited in memory.

Two sides, interleaved (the order flipping every round), ``--calls`` each, against one dev
server and one Debian ``redis-server`` this script starts: ``local`` is a signed
``ToolClient.call`` of ``bench:add`` on a worker whose registry counts budgets with
:class:`InMemoryRateLimiter`; ``shared`` is the same call on a worker (same process, a task
queue of its own) counting them with :class:`RedisRateLimiter`. The budget is large enough that
no call is refused (checked), so both sides do the same work but for where the tokens are
counted. Printed as JSON lines (bench ``ratelimit``): each side's median in ms,
``shared_over_local`` (the median of pairwise ratios, target at most 1.10), and the median of
one ``consume`` alone on each limiter.

Without ``redis-server`` it says so and measures nothing (``apt-get install redis-server``).

    python bench/ratelimit.py [--calls 60] [--warmup 3]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import contextlib
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from bench._exit import leave
from bench._workloads import dev_server, emit, median_ratio
from lockgate import InMemoryRateLimiter, LockgatePlugin, ToolClient, tool
from lockgate.devserver import free_port
from lockgate.redis_ratelimit import RedisRateLimiter
from lockgate.testing import Identities
from lockgate.tool_runtime import RateLimiter

BENCH = "ratelimit"
TARGET = 1.10
PEOPLE: dict[str, dict[str, list[str]]] = {"ada": {"scopes": ["math"]}}
ARGUMENTS = {"a": 2, "b": 3}
BUDGET = 10**9
"""No call is refused: both sides run the tool, and differ only in where tokens are counted."""


@tool("bench:add", "Add two numbers (for who holds math).", scopes=["math"])
async def add(a: int, b: int) -> dict[str, int]:
    return {"total": a + b}


@contextlib.asynccontextmanager
async def redis_server() -> AsyncIterator[str | None]:
    """A ``redis-server`` on a free port, keeping nothing on disk; None where there is none."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-redis-") as folder:
        process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
             "no", "--dir", folder],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            await answers_ping(port)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.kill()
            process.wait(10)


async def answers_ping(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"PING\r\n")
            await writer.drain()
            answered = await reader.readline()
            writer.close()
            if answered == b"+PONG\r\n":
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"bench/ratelimit.py: redis-server on port {port} never answered")
        await asyncio.sleep(0.05)


def worker(client: Client, task_queue: str, people: Identities, limiter: RateLimiter) -> Worker:
    plugin = LockgatePlugin(
        tools=[add], directory=people.directory, secret=people.secret, rate_limiter=limiter
    )
    return Worker(client, task_queue=task_queue, plugins=[plugin])


def signed_call(caller: ToolClient) -> Callable[[], Awaitable[None]]:
    async def call() -> None:
        result = await caller.call("bench:add", ARGUMENTS)
        if not (result.get("success") is True and result["data"] == {"total": 5}):
            raise RuntimeError(f"bench/ratelimit.py: a call did not end as it should: {result}")

    return call


async def consume_ms(limiter: RateLimiter, rounds: int) -> float:
    """The median of one ``consume`` alone, in ms."""
    seconds = []
    for _ in range(rounds):
        began = time.perf_counter()
        decision: Any = limiter.consume(f"bench:ada:consume-{uuid.uuid4().hex[:6]}")
        if not hasattr(decision, "allowed"):
            decision = await decision
        seconds.append(time.perf_counter() - began)
    return 1000 * statistics.median(seconds)


async def main(calls: int, warmup: int) -> None:
    async with redis_server() as url:
        if url is None:
            print(
                "bench/ratelimit.py: no redis-server here, so the shared limiter is not measured "
                "(apt-get install redis-server)",
                file=sys.stderr,
            )
            return
        people = Identities(PEOPLE)
        limiters: dict[str, RateLimiter] = {
            "local": InMemoryRateLimiter(max_tokens=BUDGET),
            "shared": RedisRateLimiter(url, max_tokens=BUDGET),
        }
        async with dev_server() as environment:
            client = environment.client
            queues = {side: f"bench-ratelimit-{side}-{uuid.uuid4().hex[:8]}" for side in limiters}
            async with (
                worker(client, queues["local"], people, limiters["local"]),
                worker(client, queues["shared"], people, limiters["shared"]),
            ):
                sides = {
                    side: signed_call(ToolClient(client, queue, signer=people.signer("ada")))
                    for side, queue in queues.items()
                }
                for _ in range(warmup):
                    for call in sides.values():
                        await call()
                seconds: dict[str, list[float]] = {side: [] for side in sides}
                order = list(sides)
                for _ in range(calls):
                    for side in order:
                        began = time.perf_counter()
                        await sides[side]()
                        seconds[side].append(time.perf_counter() - began)
                    order.reverse()
        emit(BENCH, "calls", calls, "calls per side", interleaved=True)
        for side, measured in seconds.items():
            emit(BENCH, f"{side}_ms", 1000 * statistics.median(measured), "ms")
        emit(
            BENCH,
            "shared_over_local",
            median_ratio(seconds["shared"], seconds["local"]),
            "ratio",
            TARGET,
        )
        for side, limiter in limiters.items():
            emit(BENCH, f"consume_{side}_ms", await consume_ms(limiter, calls), "ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60, help="calls per side, interleaved")
    parser.add_argument("--warmup", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.warmup))
    leave()

"""Rate limits a fleet shares: budgets counted in a real Redis, once for every worker.

The limiter is :class:`RedisRateLimiter` against Debian's ``redis-server`` (see
``tests/helpers/redis_server.py``); the fleet is three ``lockgate worker`` processes on one task
queue of the real dev server.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from temporalio.client import Client

from lockgate import ErrorCode, InMemoryRateLimiter, ToolClient, ToolContext, ToolRegistry, tool
from lockgate.contracts import ToolCallResult
from lockgate.redis_ratelimit import RedisRateLimiter
from lockgate.testing import Identities
from lockgate.workflows._tool_call import call_workflow_id
from tests.helpers.redis_server import RedisServer, own_redis, redis_url
from tests.helpers.support import error_of, failed_workflow_tasks, lockgate_worker_command

__all__ = ["own_redis", "redis_url"]  # fixtures, imported for pytest to find

WINDOW = 3600.0
"""Long enough that no test's window ends while it runs (none asserts a timing)."""


def fresh_key() -> str:
    return f"web:ada:notes.{uuid.uuid4().hex[:8]}"


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 60) -> Any:
    """Polls ``check`` until it returns something truthy, failing after ``timeout``."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await check()
        if found:
            return found
        assert asyncio.get_running_loop().time() < deadline, "the condition never held"
        await asyncio.sleep(0.05)


# The limiter against a real Redis ----------------------------------------------------------------


async def test_a_key_spends_its_budget_and_is_then_refused_in_a_sentence_naming_it(
    redis_url: str,
) -> None:
    limiter = RedisRateLimiter(redis_url, max_tokens=3, window_seconds=WINDOW)
    key = fresh_key()

    spent = [await limiter.consume(key) for _ in range(3)]
    refused = await limiter.consume(key)

    assert [decision.allowed for decision in spent] == [True, True, True]
    assert [decision.remaining for decision in spent] == [2, 1, 0]
    assert not refused.allowed
    assert refused.reason is not None
    assert refused.reason.startswith(
        f"Rate limit exceeded for '{key}': max 3 tokens per 3600s; try again in "
    )
    assert 0 < refused.retry_after_seconds <= WINDOW
    assert refused.unavailable_store is None


async def test_the_refusal_reads_as_the_in_memory_limiters_does(redis_url: str) -> None:
    key = fresh_key()
    shared = RedisRateLimiter(redis_url, max_tokens=1, window_seconds=WINDOW)
    local = InMemoryRateLimiter(max_tokens=1, window_seconds=WINDOW, clock=lambda: 0.0)
    await shared.consume(key)
    local.consume(key)

    shared_reason = (await shared.consume(key)).reason
    local_reason = local.consume(key).reason

    assert shared_reason is not None and local_reason is not None
    # Everything but the seconds to wait, which the shared store measures on its own clock.
    assert shared_reason.rsplit(" in ", 1)[0] == local_reason.rsplit(" in ", 1)[0]


async def test_a_call_costing_more_than_is_left_is_refused_without_spending(
    redis_url: str,
) -> None:
    limiter = RedisRateLimiter(redis_url, max_tokens=10, window_seconds=WINDOW)
    key = fresh_key()

    first = await limiter.consume(key, 5)
    second = await limiter.consume(key, 4)
    too_dear = await limiter.consume(key, 5)
    cheap = await limiter.consume(key, 1)

    assert (first.allowed, second.allowed, too_dear.allowed, cheap.allowed) == (
        True,
        True,
        False,
        True,
    )
    assert cheap.remaining == 0


async def test_two_workers_limiters_share_one_budget(redis_url: str) -> None:
    one = RedisRateLimiter(redis_url, max_tokens=4, window_seconds=WINDOW)
    other = RedisRateLimiter(redis_url, max_tokens=4, window_seconds=WINDOW)
    key = fresh_key()

    decisions = await asyncio.gather(*(limiter.consume(key) for limiter in [one, other] * 5))

    assert sum(decision.allowed for decision in decisions) == 4


async def test_a_budgets_key_expires_with_its_window_and_a_new_window_starts_full(
    redis_url: str,
) -> None:
    limiter = RedisRateLimiter(redis_url, max_tokens=2, window_seconds=0.5)
    key = fresh_key()
    store = Redis.from_url(redis_url, decode_responses=True)
    try:
        await limiter.consume(key, 2)
        assert not (await limiter.consume(key)).allowed
        left = await store.pttl(f"lockgate:rate:{key}")
        assert 0 < left <= 500

        async def gone() -> bool:
            return not await store.exists(f"lockgate:rate:{key}")

        await eventually(gone)
        again = await limiter.consume(key)
    finally:
        await store.aclose()

    assert again.allowed and again.remaining == 1


async def test_workers_whose_clocks_disagree_by_days_share_one_window(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = fresh_key()
    ahead = RedisRateLimiter(redis_url, max_tokens=3, window_seconds=WINDOW)
    behind = RedisRateLimiter(redis_url, max_tokens=3, window_seconds=WINDOW)
    real_time, real_monotonic = time.time, time.monotonic

    def clocks(shift: float) -> None:
        monkeypatch.setattr(time, "time", lambda: real_time() + shift)
        monkeypatch.setattr(time, "monotonic", lambda: real_monotonic() + shift)

    clocks(+2 * 86400)
    first = [await ahead.consume(key) for _ in range(2)]
    clocks(-2 * 86400)
    second = [await behind.consume(key) for _ in range(2)]
    monkeypatch.undo()

    assert [decision.allowed for decision in first + second] == [True, True, True, False]
    # The worker behind is refused within the window the worker ahead opened, not days later.
    assert 0 < second[-1].retry_after_seconds <= WINDOW
    store = Redis.from_url(redis_url, decode_responses=True)
    try:
        seconds, microseconds = await store.time()
        started = int(await store.hget(f"lockgate:rate:{key}", "started") or 0)
    finally:
        await store.aclose()
    # The window began on the store's clock (TIME), not on either worker's.
    store_now = seconds * 1000 + microseconds // 1000
    assert store_now - WINDOW * 1000 < started <= store_now


async def test_a_store_nobody_answers_at_refuses_naming_it_and_never_its_password() -> None:
    limiter = RedisRateLimiter(
        "redis://lockgate:hunter2@127.0.0.1:1/3", max_tokens=5, window_seconds=WINDOW
    )
    key = fresh_key()

    refused = await limiter.consume(key)

    assert not refused.allowed
    assert refused.unavailable_store == "redis://127.0.0.1:1/3"
    assert refused.reason is not None
    assert refused.reason.startswith(
        f"Rate limit for '{key}' not checked: the shared rate-limit store at "
        "redis://127.0.0.1:1/3 cannot be reached ("
    )
    assert "so nothing ran" in refused.reason
    assert "hunter2" not in refused.reason
    assert "hunter2" not in repr(limiter)


async def test_a_store_that_accepts_and_never_answers_refuses_within_its_timeout() -> None:
    silent: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        silent.append(writer)  # reads nothing, answers nothing, keeps the connection open

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        limiter = RedisRateLimiter(f"redis://127.0.0.1:{port}/0", timeout_seconds=0.2)
        refused = await asyncio.wait_for(limiter.consume(fresh_key()), 30)
    finally:
        for writer in silent:
            writer.close()
        server.close()
        await server.wait_closed()

    assert not refused.allowed
    assert refused.unavailable_store == f"redis://127.0.0.1:{port}/0"


async def test_a_store_killed_while_in_use_refuses_the_calls_after(
    own_redis: RedisServer,
) -> None:
    limiter = RedisRateLimiter(own_redis.url, max_tokens=100, window_seconds=WINDOW)
    key = fresh_key()
    assert (await limiter.consume(key)).allowed

    own_redis.stop()
    after = await limiter.consume(key)

    assert not after.allowed
    assert after.unavailable_store == own_redis.url


def test_the_limiter_serves_registries_called_from_one_event_loop_after_another(
    redis_url: str,
) -> None:
    @tool("notes.read", "Read notes", scopes=["notes:read"])
    def read() -> dict[str, Any]:
        return {"notes": []}

    registry = ToolRegistry(rate_limiter=RedisRateLimiter(redis_url, max_tokens=2))
    registry.register(read)
    ctx = ToolContext(f"ada-{uuid.uuid4().hex[:6]}", "web", ["notes:read"])

    # call_sync runs a new event loop each time: the limiter opens a connection in each.
    codes = [registry.call_sync("notes.read", {}, ctx).code for _ in range(3)]

    assert codes == [None, None, ErrorCode.RATE_LIMITED]


async def test_through_the_pipeline_a_mutating_call_spends_five_and_nothing_runs_once_refused(
    redis_url: str,
) -> None:
    runs: list[str] = []

    @tool("notes.write", "Write a note", scopes=["notes:read"], mutating=True)
    def write(text: str) -> dict[str, Any]:
        runs.append(text)
        return {"written": text}

    registry = ToolRegistry(rate_limiter=RedisRateLimiter(redis_url, max_tokens=10))
    registry.register(write)
    ctx = ToolContext(f"ada-{uuid.uuid4().hex[:6]}", "web", ["notes:read"])

    results = [await registry.call("notes.write", {"text": str(n)}, ctx) for n in range(3)]

    assert [result.code for result in results] == [None, None, ErrorCode.RATE_LIMITED]
    assert runs == ["0", "1"]
    refusal = results[-1].error
    assert refusal is not None
    assert f"Rate limit exceeded for 'web:{ctx.principal}:notes.write'" in refusal.message
    assert results[-1].meta["retry_after_seconds"] > 0


# A fleet of workers against one store ------------------------------------------------------------

FLEET_BUDGET = 6
"""Tokens per key per window on every worker of the fleet; a call of fleet:record costs one."""


@contextlib.asynccontextmanager
async def fleet(
    address: str, task_queue: str, store: str, people: Identities, folder: Path, size: int = 3
) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """``size`` ``lockgate worker`` processes on one task queue, all limited through ``store``,
    each once it says it is ready; stopped with SIGTERM after."""
    directory = folder / "directory.toml"
    directory.write_text(people.toml)
    workers: list[asyncio.subprocess.Process] = []
    try:
        for number in range(size):
            process, ready = await lockgate_worker_command(
                address,
                "--tools",
                "tests.helpers.fleet_tools",
                "--directory",
                str(directory),
                "--task-queue",
                task_queue,
                "--rate-limit",
                store,
                "--rate-limit-tokens",
                str(FLEET_BUDGET),
                "--rate-limit-window",
                str(WINDOW),
                secret=people.secret,
                stderr=(folder / f"worker-{number}.log").open("wb"),
            )
            workers.append(process)
            assert store.encode() in ready, ready  # it says where budgets are counted
        yield workers
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.send_signal(signal.SIGTERM)
        for worker in workers:
            await asyncio.wait_for(worker.wait(), 60)


def runs_in(path: Path) -> list[str]:
    """The labels of the calls that ran, one line each."""
    return [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []


async def test_a_fleet_of_three_workers_spends_one_budget_and_refuses_once_its_store_dies(
    temporal_client: Client, task_queue: str, own_redis: RedisServer, tmp_path: Path
) -> None:
    people = Identities({"ada": {}, "bob": {}})
    address = temporal_client.service_client.config.target_host
    ran = tmp_path / "runs"
    second_connection = await Client.connect(address, namespace=temporal_client.namespace)
    callers = [
        ToolClient(connection, task_queue, signer=people.signer("ada"))
        for connection in (temporal_client, second_connection)
    ]
    request_ids: list[str] = []

    async def call(caller: ToolClient, label: str) -> ToolCallResult:
        request_ids.append(uuid.uuid4().hex)
        arguments = {"path": str(ran), "label": label}
        return await caller.call("fleet:record", arguments, request_id=request_ids[-1])

    async with fleet(address, task_queue, own_redis.url, people, tmp_path):
        # Two clients, one agent, twice the budget at once.
        burst = await asyncio.gather(
            *(call(callers[n % 2], f"ada-{n}") for n in range(2 * FLEET_BUDGET))
        )
        accepted = [result for result in burst if result["success"]]
        refused = [error_of(result) for result in burst if not result["success"]]

        assert len(accepted) == FLEET_BUDGET
        assert len(refused) == FLEET_BUDGET
        for error in refused:
            assert error["code"] == "RATE_LIMITED"
            assert error["message"].startswith(
                f"Rate limit exceeded for 'cli:ada:fleet:record': max {FLEET_BUDGET} tokens "
                "per 3600s"
            )
        assert sorted(runs_in(ran)) == sorted(result["data"]["label"] for result in accepted)

        # Another agent, with a budget of its own, while the store is up and then once it is not.
        bob = ToolClient(temporal_client, task_queue, signer=people.signer("bob"))
        before = [await call(bob, f"bob-{n}") for n in range(2)]
        own_redis.stop()
        after = [await call(bob, f"bob-late-{n}") for n in range(3)]

    assert [result["success"] for result in before] == [True, True]
    for result in after:
        error = error_of(result)
        assert error["code"] == "RATE_LIMITED"
        assert error["message"].startswith(
            "Rate limit for 'cli:bob:fleet:record' not checked: the shared rate-limit store at "
            f"{own_redis.url} cannot be reached ("
        )
        assert "so nothing ran" in error["message"]
    assert len(runs_in(ran)) == FLEET_BUDGET + 2
    assert not [label for label in runs_in(ran) if label.startswith("bob-late")]
    for request_id in request_ids:
        handle = temporal_client.get_workflow_handle(call_workflow_id(request_id))
        assert await failed_workflow_tasks(handle) == []


async def test_a_principal_holding_a_colon_spends_a_budget_of_its_own_in_redis(
    redis_url: str,
) -> None:
    """``ed:essay`` calling ``publish`` once spent ``ed``'s Redis budget for ``essay:publish``."""
    ran: list[str] = []

    @tool("publish", "Publish", mutating=True)
    def publish() -> dict[str, Any]:
        ran.append("publish")
        return {}

    @tool("essay:publish", "Publish an essay", mutating=True)
    def publish_essay() -> dict[str, Any]:
        ran.append("essay:publish")
        return {}

    prefix = f"lockgate:rate:{uuid.uuid4().hex[:8]}:"
    registry = ToolRegistry(
        rate_limiter=RedisRateLimiter(redis_url, max_tokens=5, window_seconds=WINDOW, prefix=prefix)
    )
    registry.register(publish)
    registry.register(publish_essay)

    eds = await registry.call("essay:publish", {}, ToolContext("ed", "web", []))
    other = await registry.call("publish", {}, ToolContext("ed:essay", "web", []))

    assert [eds.code, other.code] == [None, None], other.error
    assert ran == ["essay:publish", "publish"]
    store = Redis.from_url(redis_url, decode_responses=True)
    try:
        keys = sorted(await store.keys(prefix + "*"))
    finally:
        await store.aclose()
    assert keys == [prefix + "web:ed%3Aessay:publish", prefix + "web:ed:essay:publish"]

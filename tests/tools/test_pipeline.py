"""The registry pipeline: stage order, plan mode, hooks, exceptions, timeouts, kinds of tools."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from lockgate import ErrorCode, InMemoryRateLimiter, ToolContext, ToolRegistry, ToolResult, tool
from lockgate.authorization import ConfirmationStore
from lockgate.errors import ToolFailure
from lockgate.tool_runtime import ExecutedEvent, ExecutingEvent, FailedEvent, RateDecision
from lockgate.tools._confirm import Confirmation
from lockgate.tools._ratelimit import store_unavailable
from lockgate.tools._registry import PIPELINE_STAGES
from tests.helpers.support import definition_of

READER = ToolContext("ada", "web", ["notes:read"])
STRANGER = ToolContext("eve", "web", ["other:thing"])
# Telegram asks a confirmation token before any mutating tool runs.
CHATTER = ToolContext("ada", "telegram", ["notes:read"])


class SpyLimiter:
    """Records every key it is asked about; allows or refuses everything."""

    def __init__(self, allow: bool = True) -> None:
        self.allow = allow
        self.keys: list[tuple[str, int]] = []

    def consume(self, key: str, cost: int = 1) -> RateDecision:
        self.keys.append((key, cost))
        if self.allow:
            return RateDecision(True, 99)
        return RateDecision(False, 0, 42.0, f"Rate limit exceeded for '{key}'.")


class CountingStore(ConfirmationStore):
    """Counts the tokens it mints."""

    def __init__(self) -> None:
        super().__init__()
        self.minted = 0

    def create(self, tool: str, principal: str | None, arguments: Any) -> Confirmation:
        self.minted += 1
        return super().create(tool, principal, arguments)


class Counter:
    """Tools that count how often they really ran."""

    def __init__(self) -> None:
        self.runs = 0

    @tool("notes.read", "Read notes", scopes=["notes:read"])
    def read(self, page: int = 1) -> dict[str, Any]:
        self.runs += 1
        return {"page": page}

    @tool("notes.write", "Write a note", scopes=["notes:read"], mutating=True)
    def write(self, text: str) -> dict[str, Any]:
        self.runs += 1
        return {"written": text}

    @tool("notes.purge", "Purge notes", confirm=True)
    def purge(self, older_than_days: int) -> dict[str, Any]:
        self.runs += 1
        return {"purged": older_than_days}


def make(**options: Any) -> tuple[ToolRegistry, Counter]:
    registry = ToolRegistry(**options)
    counter = Counter()
    registry.scan(counter)
    return registry, counter


def test_the_pipeline_stages_are_named_in_the_seed_order() -> None:
    assert PIPELINE_STAGES == (
        "resolve",
        "validate",
        "clamp",
        "authorize",
        "rate_limit",
        "plan",
        "confirm",
        "executing_hook",
        "execute",
        "contain_exception",
        "audit",
    )


# Precedence: a call failing two checks reports the earlier one ------------------------------------


async def test_an_unknown_tool_with_bad_arguments_reports_the_unknown_tool() -> None:
    registry, _ = make()

    result = await registry.call("notes.missing", ["not", "an", "object"])  # type: ignore[arg-type]

    assert result.code == ErrorCode.TOOL_NOT_FOUND


async def test_a_call_that_fails_validation_and_authorization_reports_validation() -> None:
    registry, _ = make()

    result = await registry.call("notes.read", {"page": "many"}, STRANGER)

    assert result.code == ErrorCode.VALIDATION_ERROR


async def test_a_call_that_fails_authorization_and_the_rate_limit_reports_authorization() -> None:
    limiter = SpyLimiter(allow=False)
    registry, _ = make(rate_limiter=limiter)

    result = await registry.call("notes.read", {}, STRANGER)

    assert result.code == ErrorCode.FORBIDDEN
    assert limiter.keys == []


async def test_a_plan_over_its_rate_limit_reports_the_rate_limit() -> None:
    registry, _ = make(rate_limiter=SpyLimiter(allow=False))

    result = await registry.call("notes.read", {}, READER.as_plan())

    assert result.code == ErrorCode.RATE_LIMITED


async def test_a_plan_of_a_tool_that_needs_confirmation_returns_the_plan_without_a_token() -> None:
    registry, _ = make()
    result = await registry.call("notes.write", {"text": "hi"}, CHATTER.as_plan())

    assert result.success
    assert result.data["plan"]["requires_confirmation"] is True
    assert result.confirm_token is None
    assert not ToolResult.asks_for_confirmation(result)


async def test_a_call_awaiting_confirmation_never_reaches_the_executing_hook() -> None:
    registry, _ = make()
    seen: list[str] = []
    registry.on_executing(lambda event: seen.append(event.name))

    result = await registry.call("notes.write", {"text": "hi"}, CHATTER)

    assert result.meta["requires_confirmation"] is True
    assert seen == []


async def test_a_hook_veto_stops_the_call_before_the_tool_runs() -> None:
    registry, counter = make()
    registry.on_executing(lambda event: event.veto("Maintenance window."))

    await registry.call("notes.read", {}, READER)

    assert counter.runs == 0


# Plan mode ----------------------------------------------------------------------------------------


async def test_plan_mode_never_runs_the_tool() -> None:
    registry, counter = make()

    await registry.call("notes.read", {"page": 3}, READER.as_plan())

    assert counter.runs == 0


async def test_plan_mode_describes_the_validated_call() -> None:
    registry, _ = make()

    result = await registry.call("notes.read", {"page": 3}, READER.as_plan())

    assert result.data == {
        "plan": {
            "tool": "notes.read",
            "mutating": False,
            "requires_confirmation": False,
            "scopes_required": ["notes:read"],
            "timeout": 30.0,
            "args": {"page": 3},
        }
    }


async def test_plan_mode_never_mints_a_confirmation_token() -> None:
    store = CountingStore()
    registry, _ = make(confirmations=store)

    await registry.call("notes.write", {"text": "hi"}, CHATTER.as_plan())

    assert store.minted == 0


async def test_plan_mode_spends_rate_budget() -> None:
    registry, _ = make(rate_limiter=InMemoryRateLimiter(max_tokens=1, clock=lambda: 0.0))
    await registry.call("notes.read", {}, READER.as_plan())

    result = await registry.call("notes.read", {}, READER)

    assert result.code == ErrorCode.RATE_LIMITED


async def test_plan_mode_still_reports_a_denial() -> None:
    registry, _ = make()

    result = await registry.call("notes.read", {}, STRANGER.as_plan())

    assert result.code == ErrorCode.FORBIDDEN


# Rate limiting ------------------------------------------------------------------------------------


async def test_a_mutating_call_spends_five_tokens_and_a_read_one() -> None:
    limiter = SpyLimiter()
    registry, _ = make(rate_limiter=limiter)

    await registry.call("notes.read", {}, READER)
    await registry.call("notes.write", {"text": "x"}, READER)

    assert limiter.keys == [("web:ada:notes.read", 1), ("web:ada:notes.write", 5)]


class AwaitedLimiter(SpyLimiter):
    """Answers with a coroutine, as a limiter on a shared store does."""

    async def consume(self, key: str, cost: int = 1) -> RateDecision:  # type: ignore[override]
        await asyncio.sleep(0)
        return SpyLimiter.consume(self, key, cost)


async def test_a_limiter_that_answers_with_an_awaitable_is_awaited_before_the_tool_runs() -> None:
    registry, counter = make(rate_limiter=AwaitedLimiter(allow=False))

    result = await registry.call("notes.read", {}, READER)

    assert result.code == ErrorCode.RATE_LIMITED
    assert result.error is not None and "'web:ada:notes.read'" in result.error.message
    assert result.meta["retry_after_seconds"] == 42.0
    assert counter.runs == 0


async def test_a_limiter_whose_store_cannot_count_refuses_and_names_the_store() -> None:
    class DownLimiter:
        async def consume(self, key: str, cost: int = 1) -> RateDecision:
            return store_unavailable(key, "redis://store:6379/0", "ConnectionError: refused")

    registry, counter = make(rate_limiter=DownLimiter())

    result = await registry.call("notes.read", {}, READER)

    assert result.code == ErrorCode.RATE_LIMITED
    assert result.meta["rate_limit_store_unavailable"] == "redis://store:6379/0"
    assert result.error is not None
    assert "the shared rate-limit store at redis://store:6379/0 cannot be reached" in (
        result.error.message
    )
    assert "nothing ran" in result.error.message
    assert counter.runs == 0


# The executing hook only sees calls every check admitted ------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "ctx", "limited"),
    [
        pytest.param({}, STRANGER, False, id="denied"),
        pytest.param({"page": "x"}, READER, False, id="invalid"),
        pytest.param({}, READER, True, id="rate-limited"),
    ],
)
async def test_the_executing_hook_never_sees_a_refused_call(
    arguments: dict[str, Any], ctx: ToolContext, limited: bool
) -> None:
    registry, _ = make(rate_limiter=SpyLimiter(allow=not limited))
    seen: list[str] = []
    registry.on_executing(lambda event: seen.append(event.name))

    result = await registry.call("notes.read", arguments, ctx)

    assert not result.success
    assert seen == []


async def test_the_executing_hook_sees_the_validated_arguments_and_the_caller() -> None:
    registry, _ = make()
    seen: list[ExecutingEvent] = []
    registry.on_executing(seen.append)

    await registry.call("notes.read", {"page": 2}, READER)

    assert [(e.name, dict(e.arguments), e.ctx) for e in seen] == [
        ("notes.read", {"page": 2}, READER)
    ]


async def test_a_hook_short_circuit_answers_without_running_the_tool() -> None:
    registry, counter = make()
    registry.on_executing(lambda event: event.short_circuit(ToolResult.ok({"cached": True})))

    result = await registry.call("notes.read", {}, READER)

    assert result.data == {"cached": True}
    assert counter.runs == 0


async def test_the_executed_hook_marks_a_short_circuited_call_as_cache_served() -> None:
    registry, _ = make()
    registry.on_executing(lambda event: event.short_circuit(ToolResult.ok("cached")))
    seen: list[ExecutedEvent] = []
    registry.on_executed(seen.append)

    await registry.call("notes.read", {}, READER)

    assert [event.cache_served for event in seen] == [True]


async def test_the_executed_hook_marks_a_live_call_as_not_cache_served() -> None:
    registry, _ = make()
    seen: list[ExecutedEvent] = []
    registry.on_executed(seen.append)

    await registry.call("notes.read", {}, READER)

    assert [(event.cache_served, event.result.data) for event in seen] == [(False, {"page": 1})]


async def test_a_hook_veto_returns_a_blocked_forbidden_result_with_its_reason() -> None:
    registry, _ = make()
    registry.on_executing(lambda event: event.veto("Maintenance window."))

    result = await registry.call("notes.read", {}, READER)

    assert result.error is not None
    assert (result.success, result.code, result.error.message, result.is_blocked) == (
        False,
        ErrorCode.FORBIDDEN,
        "Maintenance window.",
        True,
    )


async def test_an_async_hook_is_awaited() -> None:
    registry, counter = make()

    async def veto(event: ExecutingEvent) -> None:
        event.veto()

    registry.on_executing(veto)

    result = await registry.call("notes.read", {}, READER)

    assert (result.is_blocked, counter.runs) == (True, 0)


# Exceptions ---------------------------------------------------------------------------------------


@tool("explode", "Always fails")
def explode(reason: str = "disk on fire") -> None:
    raise RuntimeError(reason)


async def test_a_raising_tool_becomes_an_internal_error_naming_the_tool_and_exception() -> None:
    registry = ToolRegistry()
    registry.register(explode)

    result = await registry.call("explode", {})

    assert result.code == ErrorCode.INTERNAL_ERROR
    assert result.error is not None
    assert "explode" in result.error.message
    assert "RuntimeError" in result.error.message
    assert "disk on fire" in result.error.message


async def test_the_failed_hook_receives_the_tools_exception() -> None:
    registry = ToolRegistry()
    registry.register(explode)
    seen: list[FailedEvent] = []
    registry.on_failed(seen.append)

    await registry.call("explode", {"reason": "no space"})

    assert [(e.name, type(e.exception), str(e.exception)) for e in seen] == [
        ("explode", RuntimeError, "no space")
    ]


async def test_the_executed_hook_does_not_fire_for_a_raising_tool() -> None:
    registry = ToolRegistry()
    registry.register(explode)
    seen: list[ExecutedEvent] = []
    registry.on_executed(seen.append)

    await registry.call("explode", {})

    assert seen == []


async def test_run_pipeline_without_containment_raises_tool_failure() -> None:
    registry = ToolRegistry()
    registry.register(explode)

    with pytest.raises(ToolFailure) as raised:
        await registry.run_pipeline("explode", {}, None, contain_exceptions=False)

    assert raised.value.result.code == ErrorCode.INTERNAL_ERROR
    assert isinstance(raised.value.cause, RuntimeError)


async def test_run_pipeline_without_containment_audits_before_raising(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    registry = ToolRegistry()
    registry.register(explode)

    with pytest.raises(ToolFailure):
        await registry.run_pipeline("explode", {}, None, contain_exceptions=False)

    audits = [r.lockgate_audit for r in caplog.records if hasattr(r, "lockgate_audit")]
    assert [(a["tool"], a["code"]) for a in audits] == [("explode", "INTERNAL_ERROR")]


# Soft timeout -------------------------------------------------------------------------------------


@tool("instant", "Returns at once, but its budget is a nanosecond", timeout=1e-9)
def instant() -> str:
    return "done"


@tool("roomy", "Returns at once, with a minute to spare", timeout=60)
def roomy() -> str:
    return "done"


async def test_a_call_over_its_soft_timeout_is_marked_and_still_returned() -> None:
    registry = ToolRegistry()
    registry.register(instant)

    result = await registry.call("instant", {})

    assert (result.success, result.data, result.meta["timeout_exceeded"]) == (True, "done", True)
    assert result.meta["timeout_limit"] == 1e-9


async def test_a_call_within_its_soft_timeout_is_not_marked() -> None:
    registry = ToolRegistry()
    registry.register(roomy)

    result = await registry.call("roomy", {})

    assert "timeout_exceeded" not in result.meta


# Kinds of tools -----------------------------------------------------------------------------------


@tool("shout", "Upper-cases text")
def shout(text: str) -> str:
    return text.upper()


@tool("whisper", "Lower-cases text, asynchronously")
async def whisper(text: str) -> str:
    return text.lower()


@tool("whoami", "Says who is calling")
def whoami(ctx: ToolContext, greeting: str = "hello") -> str:
    return f"{greeting}, {ctx.principal} on {ctx.channel}"


async def test_a_synchronous_tool_runs() -> None:
    registry = ToolRegistry()
    registry.register(shout)

    result = await registry.call("shout", {"text": "hi"})

    assert result.data == "HI"


async def test_an_asynchronous_tool_is_awaited() -> None:
    registry = ToolRegistry()
    registry.register(whisper)

    result = await registry.call("whisper", {"text": "HI"})

    assert result.data == "hi"


async def test_a_synchronous_tool_offloaded_to_a_thread_runs() -> None:
    registry = ToolRegistry()
    registry.register(shout)

    result = await registry.run_pipeline("shout", {"text": "hi"}, None, offload_sync=True)

    assert result.data == "HI"


def test_call_sync_runs_a_call_without_an_event_loop() -> None:
    registry = ToolRegistry()
    registry.register(shout)

    result = registry.call_sync("shout", {"text": "hi"})

    assert result.data == "HI"


async def test_scanning_an_object_registers_its_tool_methods_in_definition_order() -> None:
    registry = ToolRegistry()

    names = registry.scan(Counter())

    assert names == registry.names() == ["notes.read", "notes.write", "notes.purge"]


async def test_a_scanned_method_runs_bound_to_its_object() -> None:
    registry, counter = make()

    await registry.call("notes.read", {}, READER)

    assert counter.runs == 1


async def test_a_context_parameter_receives_the_callers_context() -> None:
    registry = ToolRegistry()
    registry.register(whoami)

    result = await registry.call("whoami", {}, READER)

    assert result.data == "hello, ada on web"


def test_a_context_parameter_is_absent_from_the_schema() -> None:
    registry = ToolRegistry()
    registry.register(whoami)

    assert list(definition_of(registry, "whoami").input_schema["properties"]) == ["greeting"]


async def test_a_context_cannot_be_passed_as_an_argument() -> None:
    registry = ToolRegistry()
    registry.register(whoami)

    result = await registry.call("whoami", {"ctx": {"principal": "root"}})

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "'ctx' is not an argument of 'whoami'" in result.error.message


async def test_a_call_without_a_context_runs_as_the_local_shell() -> None:
    registry = ToolRegistry()
    registry.register(whoami)

    result = await registry.call("whoami", {})

    assert result.data == "hello, local-shell on cli"


async def test_every_result_carries_the_call_stamp_in_meta() -> None:
    registry, _ = make()

    result = await registry.call("notes.read", {}, READER)

    assert {key: result.meta[key] for key in ("tool", "request_id", "channel", "principal")} == {
        "tool": "notes.read",
        "request_id": READER.request_id,
        "channel": "web",
        "principal": "ada",
    }


async def test_a_tool_returning_a_result_keeps_it() -> None:
    @tool("listing", "A page of items")
    def listing() -> ToolResult:
        return ToolResult.paginated([{"id": 1}], page=1, total_items=1, limit=10)

    registry = ToolRegistry()
    registry.register(listing)

    result = await registry.call("listing", {})

    assert (result.type, result.meta["pagination"]["total_pages"]) == ("list", 1)


async def test_a_tool_error_result_keeps_its_own_code() -> None:
    @tool("lookup", "Find a note")
    def lookup(note_id: int) -> ToolResult:
        return ToolResult.failed(ErrorCode.NOT_FOUND, f"Note {note_id} does not exist.")

    registry = ToolRegistry()
    registry.register(lookup)

    result = await registry.call("lookup", {"note_id": 7})

    assert result.error is not None
    assert (result.code, result.error.message) == ("NOT_FOUND", "Note 7 does not exist.")


async def test_a_result_object_served_twice_keeps_each_calls_own_request_id() -> None:
    cached = ToolResult.ok({"cached": True})
    registry, _ = make()
    registry.on_executing(lambda event: event.short_circuit(cached))
    first_ctx = ToolContext("ada", "web", ["notes:read"])
    second_ctx = ToolContext("ada", "web", ["notes:read"])

    first = await registry.call("notes.read", {}, first_ctx)
    await registry.call("notes.read", {}, second_ctx)

    assert first.meta["request_id"] == first_ctx.request_id


async def test_a_raising_tools_error_message_is_a_sentence() -> None:
    registry = ToolRegistry()
    registry.register(explode)

    result = await registry.call("explode", {"reason": "disk on fire"})

    assert result.error is not None
    assert result.error.message.endswith(".")

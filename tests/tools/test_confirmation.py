"""Confirmation: a token is one "yes" for one exact call, by one caller, for a short while."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lockgate import ErrorCode, ToolContext, ToolRegistry, ToolResult, tool
from lockgate.authorization import ConfirmationStore, ConsentGrant
from lockgate.tools._confirm import action_summary


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, now: float = 1_764_452_400.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Notes:
    """Mutating tools that count how often they really ran."""

    def __init__(self) -> None:
        self.deleted: list[int] = []
        self.archived: list[int] = []

    @tool("notes.delete", "Delete a note", mutating=True)
    def delete(self, note_id: int, reason: str = "") -> dict[str, Any]:
        self.deleted.append(note_id)
        return {"deleted": note_id}

    @tool("notes.archive", "Archive a note", mutating=True)
    def archive(self, note_id: int) -> dict[str, Any]:
        self.archived.append(note_id)
        return {"archived": note_id}

    @tool("notes.peek", "Read a note")
    def peek(self, note_id: int) -> dict[str, Any]:
        return {"note": note_id}


ADA = ToolContext.telegram("chat-1", "ada")
BOB = ToolContext.telegram("chat-1", "bob")


def make(clock: FakeClock | None = None) -> tuple[ToolRegistry, Notes]:
    store = ConfirmationStore(clock=clock) if clock is not None else ConfirmationStore()
    registry = ToolRegistry(confirmations=store)
    notes = Notes()
    registry.scan(notes)
    return registry, notes


async def ask(registry: ToolRegistry, arguments: dict[str, Any], ctx: ToolContext = ADA) -> str:
    first = await registry.call("notes.delete", arguments, ctx)
    assert first.confirm_token is not None
    return first.confirm_token


# Telegram asks a token for every mutating tool ----------------------------------------------------


async def test_a_first_call_returns_a_confirmation_request_and_runs_nothing() -> None:
    registry, notes = make()

    result = await registry.call("notes.delete", {"note_id": 7}, ADA)

    assert result.success
    assert result.meta["requires_confirmation"] is True
    assert result.meta["type"] == "confirmation"
    assert notes.deleted == []


async def test_a_confirmation_request_carries_a_token_and_a_summary_of_the_call() -> None:
    registry, _ = make()

    result = await registry.call("notes.delete", {"note_id": 7}, ADA)

    assert len(result.data["confirm_token"]) == 32
    assert result.data["action_summary"] == "notes.delete(note_id=7)"
    assert result.data["requires_confirmation"] is True


async def test_a_confirmation_request_says_when_the_token_expires() -> None:
    clock = FakeClock(1_764_452_400.0)
    registry, _ = make(clock)

    result = await registry.call("notes.delete", {"note_id": 7}, ADA)

    assert result.data["expires_at"] == "2025-11-29T21:41:00+00:00"


async def test_a_read_on_telegram_runs_without_a_token() -> None:
    registry, _ = make()

    result = await registry.call("notes.peek", {"note_id": 7}, ADA)

    assert result.data == {"note": 7}


async def test_replaying_the_call_with_its_token_runs_it_once() -> None:
    registry, notes = make()
    token = await ask(registry, {"note_id": 7})

    result = await registry.call("notes.delete", {"note_id": 7, "confirm_token": token}, ADA)

    assert (result.data, notes.deleted) == ({"deleted": 7}, [7])


async def test_a_token_can_be_spent_only_once() -> None:
    registry, notes = make()
    token = await ask(registry, {"note_id": 7})
    await registry.call("notes.delete", {"note_id": 7, "confirm_token": token}, ADA)

    again = await registry.call("notes.delete", {"note_id": 7, "confirm_token": token}, ADA)

    assert again.code == ErrorCode.VALIDATION_ERROR
    assert again.error is not None
    assert "already used" in again.error.message
    assert notes.deleted == [7]


async def test_an_expired_token_is_refused_saying_it_expired() -> None:
    clock = FakeClock()
    registry, notes = make(clock)
    token = await ask(registry, {"note_id": 7})
    clock.now += 61

    result = await registry.call("notes.delete", {"note_id": 7, "confirm_token": token}, ADA)

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "expired" in result.error.message
    assert notes.deleted == []


async def test_a_token_is_still_good_just_before_it_expires() -> None:
    clock = FakeClock()
    registry, notes = make(clock)
    token = await ask(registry, {"note_id": 7})
    clock.now += 60

    await registry.call("notes.delete", {"note_id": 7, "confirm_token": token}, ADA)

    assert notes.deleted == [7]


async def test_an_unknown_token_is_refused_naming_the_tool() -> None:
    registry, _ = make()

    result = await registry.call("notes.delete", {"note_id": 7, "confirm_token": "f" * 32}, ADA)

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "'notes.delete'" in result.error.message


async def test_a_token_that_is_not_a_string_is_refused_saying_what_it_got() -> None:
    registry, _ = make()

    result = await registry.call("notes.delete", {"note_id": 7, "confirm_token": 12}, ADA)

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "must be a string, not a number" in result.error.message


# The binding: tool, principal, arguments ----------------------------------------------------------


async def test_a_token_for_another_tool_is_refused_naming_the_tool_it_was_issued_for() -> None:
    registry, notes = make()
    token = await ask(registry, {"note_id": 7})

    result = await registry.call("notes.archive", {"note_id": 7, "confirm_token": token}, ADA)

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "issued for 'notes.delete', not for 'notes.archive'" in result.error.message
    assert notes.archived == []


async def test_a_token_presented_by_another_principal_is_refused_naming_both() -> None:
    registry, notes = make()
    token = await ask(registry, {"note_id": 7}, ADA)

    result = await registry.call("notes.delete", {"note_id": 7, "confirm_token": token}, BOB)

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "issued to ada, not to bob" in result.error.message
    assert notes.deleted == []


async def test_a_token_replayed_with_different_arguments_is_refused_naming_the_original_call() -> (
    None
):
    registry, notes = make()
    token = await ask(registry, {"note_id": 7})

    result = await registry.call("notes.delete", {"note_id": 8, "confirm_token": token}, ADA)

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "other arguments (notes.delete(note_id=7))" in result.error.message
    assert notes.deleted == []


@pytest.mark.parametrize(
    ("tool", "note_id", "caller"),
    [
        pytest.param("notes.archive", 7, ADA, id="another tool"),
        pytest.param("notes.delete", 7, BOB, id="another principal"),
        pytest.param("notes.delete", 8, ADA, id="different arguments"),
    ],
)
async def test_a_token_refused_for_another_call_stays_valid_for_its_own(
    tool: str, note_id: int, caller: ToolContext
) -> None:
    registry, notes = make()
    token = await ask(registry, {"note_id": 7}, ADA)
    await registry.call(tool, {"note_id": note_id, "confirm_token": token}, caller)

    await registry.call("notes.delete", {"note_id": 7, "confirm_token": token}, ADA)

    assert notes.deleted == [7]


async def test_a_token_binds_the_arguments_whatever_order_they_are_written_in() -> None:
    registry, notes = make()
    token = await ask(registry, {"note_id": 7, "reason": "duplicate"})

    await registry.call(
        "notes.delete", {"confirm_token": token, "reason": "duplicate", "note_id": 7}, ADA
    )

    assert notes.deleted == [7]


async def test_a_non_finite_number_for_a_confirmed_tool_is_a_validation_error() -> None:
    @tool("thermostat.set", "Set the temperature", mutating=True)
    def thermostat_set(celsius: float) -> float:
        return celsius

    registry = ToolRegistry()
    registry.register(thermostat_set)

    result = await registry.call("thermostat.set", {"celsius": math.inf}, ADA)

    assert result.code == ErrorCode.VALIDATION_ERROR


# Signature channels: cli --------------------------------------------------------------------------


@tool("config.set", "Set a configuration value", confirm=True)
def config_set(key: str, value: str) -> dict[str, str]:
    return {key: value}


@tool("cache.clear", "Clear the cache", mutating=True)
def cache_clear() -> str:
    return "cleared"


def cli_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(config_set, cache_clear)
    return registry


async def test_on_cli_a_tool_that_needs_confirmation_is_refused_at_authorize() -> None:
    registry = cli_registry()

    result = await registry.call("config.set", {"key": "a", "value": "b"}, ToolContext.cli())

    assert (result.code, result.meta["check"], result.confirm_token) == (
        ErrorCode.FORBIDDEN,
        "consent",
        None,
    )


async def test_on_cli_a_signed_call_runs_a_tool_that_needs_confirmation() -> None:
    registry = cli_registry()
    ctx = ToolContext.cli().with_extra(signer="BE75D34")

    result = await registry.call("config.set", {"key": "a", "value": "b"}, ctx)

    assert result.data == {"a": "b"}


@pytest.mark.parametrize("operation", ["config.set", "config:set", "config_set", " CONFIG.SET "])
async def test_on_cli_a_consent_grant_covers_every_spelling_of_the_operation(
    operation: str,
) -> None:
    registry = cli_registry()
    ctx = ToolContext.cli().with_extra(**{"consent.grants": [ConsentGrant(operation)]})

    result = await registry.call("config.set", {"key": "a", "value": "b"}, ctx)

    assert result.meta.get("check") != "consent"
    assert result.success


async def test_on_cli_a_single_consent_grant_is_accepted() -> None:
    registry = cli_registry()
    ctx = ToolContext.cli().with_extra(**{"consent.grant": ConsentGrant("config.set")})

    result = await registry.call("config.set", {"key": "a", "value": "b"}, ctx)

    assert result.success


async def test_on_cli_a_grant_for_another_operation_is_refused() -> None:
    registry = cli_registry()
    ctx = ToolContext.cli().with_extra(**{"consent.grants": [ConsentGrant("config.get")]})

    result = await registry.call("config.set", {"key": "a", "value": "b"}, ctx)

    assert result.meta["check"] == "consent"


async def test_on_cli_a_grant_bound_to_other_argument_values_is_refused() -> None:
    registry = cli_registry()
    grant = ConsentGrant("config.set", {"key": "theme"})
    ctx = ToolContext.cli().with_extra(**{"consent.grants": [grant]})

    result = await registry.call("config.set", {"key": "password", "value": "b"}, ctx)

    assert result.meta["check"] == "consent"


async def test_on_cli_a_grant_bound_to_these_argument_values_is_accepted() -> None:
    registry = cli_registry()
    grant = ConsentGrant("config.set", {"key": "theme"})
    ctx = ToolContext.cli().with_extra(**{"consent.grants": [grant]})

    result = await registry.call("config.set", {"key": "theme", "value": "dark"}, ctx)

    assert result.success


async def test_on_cli_a_consent_grant_runs_the_tool_without_asking_a_token() -> None:
    registry = cli_registry()
    ctx = ToolContext.cli().with_extra(**{"consent.grants": [ConsentGrant("config.set")]})

    result = await registry.call("config.set", {"key": "a", "value": "b"}, ctx)

    assert result.data == {"a": "b"}


async def test_on_cli_a_mutating_tool_without_confirm_runs_unattended() -> None:
    registry = cli_registry()

    result = await registry.call("cache.clear", {}, ToolContext.cli())

    assert result.data == "cleared"


# asks_for_confirmation ----------------------------------------------------------------------------


async def test_a_confirmation_request_asks_for_confirmation() -> None:
    registry, _ = make()

    result = await registry.call("notes.delete", {"note_id": 7}, ADA)

    assert ToolResult.asks_for_confirmation(result)
    assert ToolResult.asks_for_confirmation(result.to_json())
    assert ToolResult.asks_for_confirmation(result.to_dict())


def test_a_top_level_requires_confirmation_flag_asks_for_confirmation() -> None:
    assert ToolResult.asks_for_confirmation({"requires_confirmation": True})


def test_a_requires_confirmation_flag_nested_in_a_plan_does_not_ask_for_confirmation() -> None:
    plan = ToolResult.ok({"plan": {"tool": "notes.delete", "requires_confirmation": True}})

    assert not ToolResult.asks_for_confirmation(plan)
    assert not ToolResult.asks_for_confirmation(plan.to_json())
    assert not ToolResult.asks_for_confirmation({"data": {"plan": {"requires_confirmation": True}}})


@pytest.mark.parametrize("payload", [None, "", "not json", "[1, 2]", 42, {"meta": "confirm"}])
def test_anything_that_is_not_a_confirmation_does_not_ask_for_one(payload: object) -> None:
    assert not ToolResult.asks_for_confirmation(payload)


def test_a_truthy_flag_that_is_not_true_does_not_ask_for_confirmation() -> None:
    assert not ToolResult.asks_for_confirmation({"meta": {"requires_confirmation": "yes"}})


# The store on its own -----------------------------------------------------------------------------


def test_an_action_summary_shows_the_first_three_scalar_arguments() -> None:
    summary = action_summary("mail.send", {"to": "ada", "tags": ["x"], "cc": None, "n": 2, "z": 1})

    assert summary == "mail.send(to=ada, cc=None, n=2)"


def test_the_store_refuses_a_token_after_its_ttl_and_forgets_it() -> None:
    clock = FakeClock()
    store = ConfirmationStore(ttl_seconds=5, clock=clock)
    minted = store.create("t", "ada", {})
    clock.now += 6

    assert store.redeem(minted.token, "t", "ada", {}).code == "expired"
    assert store.redeem(minted.token, "t", "ada", {}).code == "unknown"

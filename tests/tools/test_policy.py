"""Authorization: every denial names the check that failed and what was missing; channels."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from lockgate import ErrorCode, InMemoryRateLimiter, ToolContext, ToolRegistry, tool
from lockgate.authorization import Authorizer, ChannelPolicy, PolicyRule


@tool("posts_write", "Write a post", scopes=["posts:write"], mutating=True)
def posts_write(title: str) -> dict[str, Any]:
    return {"title": title}


@tool("posts_read", "Read posts", scopes=["posts:read", "posts:admin"])
def posts_read() -> list[str]:
    return ["first"]


@tool("ping", "Answers pong")
def ping() -> str:
    return "pong"


@tool("wipe", "Wipes the cache", mutating=True)
def wipe() -> str:
    return "wiped"


def make(**options: Any) -> ToolRegistry:
    registry = ToolRegistry(**options)
    registry.register(posts_write, posts_read, ping, wipe)
    return registry


class OneRule:
    """A rule store that answers the same rule for every call, and remembers what it was asked."""

    def __init__(self, rule: PolicyRule | None) -> None:
        self.rule = rule
        self.asked: list[tuple[str, str | None, str, bool]] = []

    def find_matching_rule(
        self, channel: str, principal: str | None, tool: str, mutating: bool
    ) -> PolicyRule | None:
        self.asked.append((channel, principal, tool, mutating))
        return self.rule


# require_auth -------------------------------------------------------------------------------------


async def test_an_anonymous_web_call_is_denied_naming_the_channel_and_require_auth() -> None:
    registry = make()

    result = await registry.call("ping", {}, ToolContext(None, "web"))

    assert result.code == ErrorCode.FORBIDDEN
    assert result.error is not None
    assert "'web'" in result.error.message
    assert "require_auth" in result.error.message
    assert result.meta["check"] == "require_auth"


async def test_an_empty_principal_counts_as_no_principal() -> None:
    registry = make()

    result = await registry.call("ping", {}, ToolContext.mcp("request-1", principal=""))

    assert result.meta["check"] == "require_auth"


async def test_the_principal_zero_is_a_principal() -> None:
    registry = make()

    result = await registry.call("ping", {}, ToolContext("0", "web"))

    assert result.success


# Scopes -------------------------------------------------------------------------------------------


async def test_a_missing_scope_names_the_tool_what_it_needs_and_what_the_caller_has() -> None:
    registry = make()

    result = await registry.call(
        "posts_write", {"title": "x"}, ToolContext.web("ada", ["posts:read"])
    )

    assert result.error is not None
    assert result.error.message == (
        "Missing required scope for tool 'posts_write'. Need one of: posts:write — "
        "context has: posts:read."
    )


async def test_a_caller_holding_no_scope_is_told_it_has_none() -> None:
    registry = make()

    result = await registry.call("posts_read", {}, ToolContext.web("ada", []))

    assert result.error is not None
    assert result.error.message == (
        "Missing required scope for tool 'posts_read'. Need one of: posts:admin, posts:read — "
        "context has: (none)."
    )


@pytest.mark.parametrize("held", ["posts:read", "posts:admin"])
async def test_holding_any_one_of_a_tools_scopes_admits(held: str) -> None:
    registry = make()

    result = await registry.call("posts_read", {}, ToolContext.web("ada", [held]))

    assert result.success


async def test_the_star_scope_holds_every_scope() -> None:
    registry = make()

    result = await registry.call("posts_write", {"title": "x"}, ToolContext("ada", "web", ["*"]))

    assert result.success


async def test_a_prefix_wildcard_scope_grants_nothing() -> None:
    registry = make()

    result = await registry.call("posts_read", {}, ToolContext("ada", "web", ["posts:*"]))

    assert result.meta["check"] == "scopes"


def test_a_web_context_never_holds_the_star_scope() -> None:
    ctx = ToolContext.web("ada", ["*", "posts:read"])

    assert ctx.scopes == frozenset({"posts:read"})


async def test_a_tool_without_scopes_runs_for_a_caller_holding_none() -> None:
    registry = make()

    result = await registry.call("ping", {}, ToolContext.web("ada", []))

    assert result.success


# block_mutating -----------------------------------------------------------------------------------


async def test_a_block_mutating_channel_denies_naming_the_tool_and_channel() -> None:
    registry = make(authorizer=Authorizer({"kiosk": ChannelPolicy(block_mutating=True)}))

    result = await registry.call("wipe", {}, ToolContext("ada", "kiosk"))

    assert result.meta["check"] == "block_mutating"
    assert result.error is not None
    assert "'wipe'" in result.error.message
    assert "'kiosk'" in result.error.message
    assert "block_mutating" in result.error.message


async def test_a_block_mutating_channel_still_runs_reads() -> None:
    registry = make(authorizer=Authorizer({"kiosk": ChannelPolicy(block_mutating=True)}))

    result = await registry.call("ping", {}, ToolContext("ada", "kiosk"))

    assert result.success


async def test_allow_all_lets_a_mutating_tool_through_a_block_mutating_channel() -> None:
    authorizer = Authorizer({"kiosk": ChannelPolicy(allow_all=True, block_mutating=True)})
    registry = make(authorizer=authorizer)

    result = await registry.call("wipe", {}, ToolContext("ada", "kiosk"))

    assert result.success


async def test_allow_all_does_not_skip_require_auth() -> None:
    authorizer = Authorizer({"kiosk": ChannelPolicy(allow_all=True, require_auth=True)})
    registry = make(authorizer=authorizer)

    result = await registry.call("ping", {}, ToolContext(None, "kiosk"))

    assert result.meta["check"] == "require_auth"


async def test_a_replaced_channel_policy_takes_effect() -> None:
    authorizer = Authorizer()
    authorizer.set_channel_policy("web", ChannelPolicy(block_mutating=True))
    registry = make(authorizer=authorizer)

    result = await registry.call("wipe", {}, ToolContext.web("ada", []))

    assert result.meta["check"] == "block_mutating"


# Host rules ---------------------------------------------------------------------------------------


async def test_a_deny_rule_names_the_rule_the_tool_and_the_channel() -> None:
    rules = OneRule(PolicyRule(id=17, effect="deny"))
    registry = make(authorizer=Authorizer(rules=rules))

    result = await registry.call("ping", {}, ToolContext.web("ada", []))

    assert result.meta["check"] == "rule"
    assert result.error is not None
    assert "#17" in result.error.message
    assert "'ping'" in result.error.message
    assert "'web'" in result.error.message


async def test_a_deny_rule_with_a_description_says_it_verbatim() -> None:
    rules = OneRule(PolicyRule(id=3, effect="deny", description="Pings are off on Sundays."))
    registry = make(authorizer=Authorizer(rules=rules))

    result = await registry.call("ping", {}, ToolContext.web("ada", []))

    assert result.error is not None
    assert result.error.message == "Pings are off on Sundays."


async def test_an_allow_rule_admits_a_call_the_channel_would_block() -> None:
    authorizer = Authorizer(
        {"kiosk": ChannelPolicy(block_mutating=True)}, rules=OneRule(PolicyRule(1, "allow"))
    )
    registry = make(authorizer=authorizer)

    result = await registry.call("wipe", {}, ToolContext("ada", "kiosk"))

    assert result.success


async def test_a_rule_requiring_a_scope_names_the_rule_and_the_scopes() -> None:
    rule = PolicyRule(id=9, effect="allow", scopes=frozenset({"ops"}))
    registry = make(authorizer=Authorizer(rules=OneRule(rule)))

    result = await registry.call("ping", {}, ToolContext.web("ada", ["posts:read"]))

    assert result.error is not None
    assert result.error.message == (
        "Policy rule #9 for tool 'ping' requires one of these scopes: ops — "
        "context has: posts:read."
    )


async def test_the_rule_store_is_asked_with_the_calls_facts() -> None:
    rules = OneRule(None)
    registry = make(authorizer=Authorizer(rules=rules))

    await registry.call("wipe", {}, ToolContext.web("ada", []))

    assert rules.asked == [("web", "ada", "wipe", True)]


async def test_a_scope_denial_is_decided_before_the_rule_store_is_asked() -> None:
    rules = OneRule(PolicyRule(1, "allow"))
    registry = make(authorizer=Authorizer(rules=rules))

    result = await registry.call("posts_read", {}, ToolContext.web("ada", []))

    assert (result.meta["check"], rules.asked) == ("scopes", [])


# Consent on signature channels --------------------------------------------------------------------


@tool("config.set", "Set a configuration value", confirm=True)
def config_set(key: str, value: str) -> dict[str, str]:
    return {key: value}


async def test_consent_on_cli_is_denied_naming_the_tool_and_the_channel() -> None:
    registry = ToolRegistry()
    registry.register(config_set)

    result = await registry.call("config.set", {"key": "a", "value": "b"}, ToolContext.cli())

    assert result.meta["check"] == "consent"
    assert result.error is not None
    assert "'config.set'" in result.error.message
    assert "'cli'" in result.error.message


# Rate limiting ------------------------------------------------------------------------------------


async def test_a_rate_limit_denial_names_the_exact_channel_principal_tool_key() -> None:
    registry = make(rate_limiter=InMemoryRateLimiter(max_tokens=1, clock=lambda: 100.0))
    ctx = ToolContext.web("ada", [])
    await registry.call("ping", {}, ctx)

    result = await registry.call("ping", {}, ctx)

    assert result.code == ErrorCode.RATE_LIMITED
    assert result.error is not None
    assert "'web:ada:ping'" in result.error.message


async def test_a_rate_limit_denial_says_when_to_retry() -> None:
    now = [100.0]
    registry = make(rate_limiter=InMemoryRateLimiter(max_tokens=1, clock=lambda: now[0]))
    ctx = ToolContext.web("ada", [])
    await registry.call("ping", {}, ctx)
    now[0] = 115.0

    result = await registry.call("ping", {}, ctx)

    assert result.meta["retry_after_seconds"] == 45.0


async def test_a_rate_limit_budget_refills_after_its_window() -> None:
    now = [100.0]
    registry = make(rate_limiter=InMemoryRateLimiter(max_tokens=1, clock=lambda: now[0]))
    ctx = ToolContext.web("ada", [])
    await registry.call("ping", {}, ctx)
    now[0] = 160.0

    result = await registry.call("ping", {}, ctx)

    assert result.success


async def test_a_rate_limit_is_per_principal() -> None:
    registry = make(rate_limiter=InMemoryRateLimiter(max_tokens=1, clock=lambda: 0.0))
    await registry.call("ping", {}, ToolContext.web("ada", []))

    result = await registry.call("ping", {}, ToolContext.web("bob", []))

    assert result.success


async def test_twenty_mutating_calls_spend_a_default_budget() -> None:
    registry = make(rate_limiter=InMemoryRateLimiter(clock=lambda: 0.0))
    ctx = ToolContext.web("ada", [])
    for _ in range(20):
        assert (await registry.call("wipe", {}, ctx)).success

    result = await registry.call("wipe", {}, ctx)

    assert result.code == ErrorCode.RATE_LIMITED


# Channels -----------------------------------------------------------------------------------------


async def test_an_unknown_channel_denies_an_anonymous_caller_with_require_auth() -> None:
    registry = make()

    result = await registry.call("ping", {}, ToolContext(None, "carrier-pigeon"))

    assert result.meta["check"] == "require_auth"
    assert result.error is not None
    assert "'carrier-pigeon'" in result.error.message


async def test_an_unverified_caller_on_an_unknown_channel_is_not_authenticated() -> None:
    registry = make()

    result = await registry.call("wipe", {}, ToolContext("unverified:evil", "evil"))

    assert result.meta["check"] == "require_auth"
    assert result.error is not None
    assert "unverified:evil is not one" in result.error.message
    assert "not a registered channel" in result.error.message


async def test_an_unverified_caller_never_satisfies_a_registered_require_auth() -> None:
    registry = make()

    result = await registry.call("ping", {}, ToolContext("unverified:web", "web"))

    assert result.meta["check"] == "require_auth"


async def test_an_unknown_channel_logs_a_fail_closed_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lockgate.policy")
    registry = make()

    await registry.call("ping", {}, ToolContext(None, "carrier-pigeon"))

    warnings = [r.getMessage() for r in caplog.records if r.name == "lockgate.policy"]
    assert len(warnings) == 1
    assert "FAIL-CLOSED" in warnings[0]
    assert "carrier-pigeon" in warnings[0]


async def test_a_known_channel_logs_no_fail_closed_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lockgate.policy")
    registry = make()

    await registry.call("ping", {}, ToolContext.web("ada", []))

    assert [r for r in caplog.records if r.name == "lockgate.policy"] == []


async def test_the_stdio_context_is_on_the_mcp_channel_and_passes() -> None:
    registry = make()
    ctx = ToolContext.stdio("request-1")

    result = await registry.call("posts_write", {"title": "x"}, ctx)

    assert (ctx.channel, ctx.principal, result.success) == ("mcp", "stdio", True)


async def test_a_bare_mcp_context_without_a_principal_is_denied() -> None:
    registry = make()

    result = await registry.call("ping", {}, ToolContext(channel="mcp"))

    assert result.meta["check"] == "require_auth"
    assert result.error is not None
    assert "'mcp'" in result.error.message


def test_an_mcp_context_without_a_principal_argument_is_the_mcp_principal() -> None:
    assert ToolContext.mcp("request-1").principal == "mcp"


def test_a_telegram_context_without_a_user_is_the_chat() -> None:
    ctx = ToolContext.telegram("42")

    assert (ctx.principal, ctx.channel, ctx.extra["chat_id"]) == ("chat:42", "telegram", "42")


def test_a_context_refuses_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="mode"):
        ToolContext("ada", "web", mode="dry-run")  # type: ignore[arg-type]


def test_a_context_refuses_scopes_given_as_one_string() -> None:
    with pytest.raises(TypeError, match="posts:read"):
        ToolContext("ada", "web", "posts:read")


# The old name, PolicyGate ------------------------------------------------------------------------

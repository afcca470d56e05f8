"""Budgets keyed without ambiguity.

``rate_key`` joined ``channel:principal:tool`` with ``:`` while names may contain ``:``: the
principal ``ed:essay`` calling ``publish`` spent ``ed``'s budget for ``essay:publish`` (both
``web:ed:essay:publish``), so one caller could exhaust, or borrow, another's budget. The channel
and the principal are now written with ``%`` and ``:`` escaped; the Redis limiter's keys are the
same keys (see ``tests/tools/test_shared_ratelimit.py``).
"""

from __future__ import annotations

from typing import Any

from lockgate import ErrorCode, InMemoryRateLimiter, ToolContext, ToolRegistry, tool
from lockgate.tools._ratelimit import MUTATING_COST, rate_key


def test_names_holding_colons_or_percents_never_share_a_key() -> None:
    pairs = [
        (("web", "ed:essay", "publish"), ("web", "ed", "essay:publish")),
        (("web:ed", "essay", "publish"), ("web", "ed:essay", "publish")),
        (("web", "a%3Ab", "t"), ("web", "a:b", "t")),
        (("web", "", "x:y"), ("web:", "", "y")),
        (("web", "https://idp.example|42", "t"), ("web", "https", "//idp.example|42:t")),
    ]

    for first, second in pairs:
        assert rate_key(*first) != rate_key(*second), (first, second)


def test_a_plain_key_reads_as_it_always_did() -> None:
    assert rate_key("web", "agent-7", "notes:search") == "web:agent-7:notes:search"
    assert rate_key("cli", None, "refund") == "cli::refund"


async def test_ed_essay_calling_publish_does_not_spend_eds_budget_for_essay_publish() -> None:
    ran: list[str] = []

    @tool("publish", "Publish", mutating=True)
    def publish() -> dict[str, Any]:
        ran.append("publish")
        return {}

    @tool("essay:publish", "Publish an essay", mutating=True)
    def publish_essay() -> dict[str, Any]:
        ran.append("essay:publish")
        return {}

    registry = ToolRegistry(rate_limiter=InMemoryRateLimiter(max_tokens=MUTATING_COST))
    registry.register(publish)
    registry.register(publish_essay)

    eds = await registry.call("essay:publish", {}, ToolContext("ed", "web", []))
    eds_again = await registry.call("essay:publish", {}, ToolContext("ed", "web", []))
    other = await registry.call("publish", {}, ToolContext("ed:essay", "web", []))

    assert eds.code is None
    assert eds_again.code == ErrorCode.RATE_LIMITED
    assert other.code is None, other.error
    assert ran == ["essay:publish", "publish"]

"""``lockgate.testing.assert_honours_idempotency_key``: a retry or a reset runs a step's tool again
with the same idempotency key; the check passes a tool that acts once per
key and fails, saying how to fix it, one that acts on every call."""

from __future__ import annotations

from typing import Any

import pytest

from lockgate import ToolContext, tool
from lockgate.testing import assert_honours_idempotency_key

PAID: dict[str, int] = {}
SENT: list[str] = []


@tool("shop:pay_once", "Pays an order, once per idempotency key.", mutating=True, confirm=True)
def pay_once(order: str, ctx: ToolContext) -> dict[str, Any]:
    key = str(ctx.extra.get("idempotency_key") or ctx.request_id)
    PAID.setdefault(key, len(PAID) + 1)
    return {"order": order, "payment": PAID[key]}


@tool("shop:send_every_time", "Sends a message on every call.", mutating=True)
def send_every_time(text: str) -> dict[str, Any]:
    SENT.append(text)
    return {"sent": len(SENT)}


@tool("shop:refuses", "Refuses what it is asked.", scopes=["shop:refuse"])
def refuses(order: str) -> dict[str, Any]:
    raise ValueError(f"no {order}")


async def test_a_tool_that_acts_once_per_key_passes() -> None:
    await assert_honours_idempotency_key(pay_once, {"order": "A-1"}, effects=lambda: len(PAID))


async def test_an_async_effect_count_is_awaited() -> None:
    async def payments() -> int:
        return len(PAID)

    await assert_honours_idempotency_key(
        pay_once, {"order": "A-2"}, effects=payments, key="another-key"
    )


async def test_a_tool_that_acts_on_every_call_fails_with_how_to_honour_the_key() -> None:
    with pytest.raises(AssertionError) as failed:
        await assert_honours_idempotency_key(
            send_every_time, {"text": "hi"}, effects=lambda: len(SENT)
        )

    message = str(failed.value)
    assert "'shop:send_every_time' does not honour its idempotency key" in message
    assert "its effect happened 2 times, not once" in message
    assert "ctx.extra['idempotency_key']" in message


async def test_an_effect_count_that_never_moves_fails_as_counting_nothing() -> None:
    with pytest.raises(AssertionError, match="happened 0 times, not once: `effects` counted"):
        await assert_honours_idempotency_key(pay_once, {"order": "A-3"}, effects=lambda: 0)


async def test_a_call_that_fails_is_reported_with_its_code() -> None:
    with pytest.raises(
        AssertionError, match=r"The first call of 'shop:refuses' .*\(INTERNAL_ERROR"
    ):
        await assert_honours_idempotency_key(refuses, {"order": "A-4"}, effects=lambda: 0)

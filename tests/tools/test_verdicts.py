"""One verdict shape: every yes or no lockgate gives says ``allowed``, ``reason`` and ``code``;
the old spellings still read, and warn."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lockgate import ErrorCode, InMemoryRateLimiter, ToolContext, tool
from lockgate.authorization import Authorizer, ChannelPolicy, ConfirmationStore, PolicyDecision
from lockgate.gates._judgements import Judgement, ViewerChoice
from lockgate.tool_runtime import RateDecision
from lockgate.tools._confirm import TokenCheck
from lockgate.tools._tool import ToolDefinition, definition_of
from lockgate.tools._verdict import Verdict

# mypy holds every verdict class to the shape: a class that spells yes, why not or its code
# another way fails `make typecheck` here.
VERDICT_CLASSES: tuple[type[Verdict], ...] = (
    Judgement,
    PolicyDecision,
    RateDecision,
    TokenCheck,
    ViewerChoice,
)


@tool("write_note", "Writes a note", scopes=["notes:write"])
def write_note(text: str) -> str:
    return text


WRITE_NOTE: ToolDefinition = definition_of(write_note)


def _policy_decisions() -> tuple[Verdict, Verdict]:
    authorizer = Authorizer({"web": ChannelPolicy(require_auth=True)})
    allowed = authorizer.authorize(ToolContext("ada", "web", {"notes:write"}), WRITE_NOTE)
    refused = authorizer.authorize(ToolContext("ada", "web"), WRITE_NOTE)
    return allowed, refused


def _rate_decisions() -> tuple[Verdict, Verdict]:
    limiter = InMemoryRateLimiter(max_tokens=1)
    return limiter.consume("web:ada:write_note"), limiter.consume("web:ada:write_note")


def _token_checks() -> tuple[Verdict, Verdict]:
    store = ConfirmationStore()
    minted = store.create("write_note", "ada", {"text": "hi"})
    refused = store.redeem(minted.token, "write_note", "bob", {"text": "hi"})
    allowed = store.redeem(minted.token, "write_note", "ada", {"text": "hi"})
    return allowed, refused


def _judgements() -> tuple[Verdict, Verdict]:
    refused = Judgement.refuse(ErrorCode.FORBIDDEN, "Ed may not cancel run 'r'.")
    return Judgement(True), Judgement.from_dict(refused.to_dict())


def _viewer_choices() -> tuple[Verdict, Verdict]:
    refused = ViewerChoice("approve", False, "role", "ed does not hold the role 'editor'")
    return ViewerChoice("approve", True), refused


@pytest.mark.parametrize(
    "made",
    [_policy_decisions, _rate_decisions, _token_checks, _judgements, _viewer_choices],
    ids=["PolicyDecision", "RateDecision", "TokenCheck", "Judgement", "ViewerChoice"],
)
def test_each_verdict_says_yes_as_allowed_and_no_with_a_sentence_and_a_code(
    made: Callable[[], tuple[Verdict, Verdict]],
) -> None:
    allowed, refused = made()

    assert type(allowed) in VERDICT_CLASSES and type(refused) is type(allowed)
    assert (allowed.allowed, allowed.reason) == (True, None)
    assert refused.allowed is False
    assert isinstance(refused.reason, str) and refused.reason
    assert isinstance(refused.code, str) and refused.code


def test_a_rate_decision_built_positionally_by_your_own_limiter_still_reads_its_code() -> None:
    assert RateDecision(True, 5).code is None
    assert RateDecision(False, 0, 3.0, "Over budget.").code == "over_budget"
    assert RateDecision(False, 0, 1.0, "No store.", "redis://x:6379/0").code == "store_unavailable"


def test_a_judgement_crosses_temporal_under_its_first_key_accepted() -> None:
    # Saved histories hold `accepted`, and a worker of the release before reads only that key.
    written = Judgement(True, choice="approve").to_dict()

    assert written["accepted"] is True and "allowed" not in written
    assert Judgement.from_dict(written).allowed is True

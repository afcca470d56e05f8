"""Human verification: one tool opens a request, someone else resolves it with another."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lockgate import ErrorCode, ToolContext, ToolRegistry, ToolResult
from lockgate.errors import ToolDeclarationError
from lockgate.tools._verification import (
    HumanVerifier,
    VerificationError,
    register_verification,
)
from tests.helpers.support import definition_of

WORKER = ToolContext("agent:worker", "mcp", ["tasks:write"])
REVIEWER = ToolContext("agent:reviewer", "mcp", ["tasks:write", "verification:resolve"])


def make(**options: Any) -> tuple[ToolRegistry, HumanVerifier]:
    registry = ToolRegistry()
    verifier = register_verification(registry, **options)
    return registry, verifier


async def open_request(registry: ToolRegistry, ctx: ToolContext = WORKER) -> str:
    result = await registry.call("request_verification", {"subject": "gate:report.publish"}, ctx)
    assert result.success, result.error
    return str(result.data["request_id"])


async def resolve(
    registry: ToolRegistry, request_id: str, ctx: ToolContext, decision: str = "grant", **more: Any
) -> ToolResult:
    return await registry.call(
        "resolve_verification", {"request_id": request_id, "decision": decision, **more}, ctx
    )


# Registration and schemas -------------------------------------------------------------------------


def test_registering_adds_the_two_tools() -> None:
    registry, _ = make()

    assert registry.names() == ["request_verification", "resolve_verification"]


def test_both_tools_are_mutating_and_take_no_confirmation_token() -> None:
    registry, _ = make()

    assert [(d.mutating, d.confirm) for d in registry] == [(True, False), (True, False)]


def test_the_resolve_scopes_apply_to_resolving_only() -> None:
    registry, _ = make(resolve_scopes=["verification:resolve"])

    assert (
        definition_of(registry, "request_verification").scopes,
        definition_of(registry, "resolve_verification").scopes,
    ) == (frozenset(), frozenset({"verification:resolve"}))


def test_the_request_schema_has_no_decision_or_principal() -> None:
    registry, _ = make()

    schema = definition_of(registry, "request_verification").input_schema
    assert (list(schema["properties"]), schema["required"]) == (["subject", "policy"], ["subject"])


def test_the_resolve_schema_has_no_principal() -> None:
    registry, _ = make()

    schema = definition_of(registry, "resolve_verification").input_schema
    assert list(schema["properties"]) == ["request_id", "decision", "reason"]
    assert schema["required"] == ["request_id", "decision"]
    assert schema["properties"]["decision"]["enum"] == ["grant", "reject"]


def test_registering_twice_on_one_registry_is_a_declaration_error() -> None:
    registry, _ = make()

    with pytest.raises(ToolDeclarationError, match="request_verification"):
        register_verification(registry)


def test_registering_with_a_verifier_returns_that_verifier() -> None:
    verifier = HumanVerifier()

    assert register_verification(ToolRegistry(), verifier=verifier) is verifier


# Requesting ---------------------------------------------------------------------------------------


async def test_a_request_returns_its_subject_policy_id_and_requester() -> None:
    registry, _ = make()

    result = await registry.call("request_verification", {"subject": "gate:x"}, WORKER)

    assert result.data == {
        "subject": "gate:x",
        "policy": "single",
        "request_id": result.data["request_id"],
        "requested_by": "agent:worker",
    }
    assert result.data["request_id"]


async def test_a_request_keeps_a_given_policy() -> None:
    registry, _ = make()

    result = await registry.call(
        "request_verification", {"subject": "gate:x", "policy": "quorum"}, WORKER
    )

    assert result.data["policy"] == "quorum"


async def test_a_request_cannot_name_its_requester() -> None:
    registry, _ = make()

    result = await registry.call(
        "request_verification", {"subject": "gate:x", "requested_by": "agent:boss"}, WORKER
    )

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "'requested_by' is not an argument" in result.error.message


async def test_each_request_gets_its_own_id() -> None:
    registry, _ = make()

    assert await open_request(registry) != await open_request(registry)


async def test_an_open_request_is_pending() -> None:
    registry, verifier = make()

    request_id = await open_request(registry)

    assert [(r.request_id, r.status, r.requested_by) for r in verifier.pending()] == [
        (request_id, "pending", "agent:worker")
    ]


async def test_a_request_never_asks_for_a_confirmation_token() -> None:
    registry, _ = make()

    result = await registry.call("request_verification", {"subject": "gate:x"}, WORKER)

    assert result.confirm_token is None


async def test_a_request_on_telegram_still_asks_for_a_token_because_it_is_mutating() -> None:
    registry, _ = make()

    result = await registry.call(
        "request_verification", {"subject": "gate:x"}, ToolContext.telegram("c", "ada")
    )

    assert result.meta["requires_confirmation"] is True


# Resolving ----------------------------------------------------------------------------------------


async def test_a_grant_by_someone_else_passes_the_request() -> None:
    registry, _ = make()
    request_id = await open_request(registry)

    result = await resolve(registry, request_id, REVIEWER, reason="Looks right.")

    assert result.data == {
        "request_id": request_id,
        "status": "passed",
        "principal": "agent:reviewer",
        "reason": "Looks right.",
    }


async def test_a_rejection_by_someone_else_rejects_the_request() -> None:
    registry, _ = make()
    request_id = await open_request(registry)

    result = await resolve(registry, request_id, REVIEWER, decision="reject")

    assert (result.data["status"], result.data["reason"]) == ("rejected", None)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        # The resolver is the caller's principal: it cannot be given.
        pytest.param(
            {"principal": "agent:boss"},
            "'principal' is not an argument of 'resolve_verification'",
            id="naming its resolver",
        ),
        pytest.param({"decision": "maybe"}, "'decision'", id="an unknown decision"),
    ],
)
async def test_a_resolve_naming_its_resolver_or_an_unknown_decision_is_a_validation_error(
    arguments: dict[str, Any], named: str
) -> None:
    registry, _ = make()
    request_id = await open_request(registry)

    result = await resolve(registry, request_id, REVIEWER, **arguments)

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert named in result.error.message


async def test_a_resolved_request_is_no_longer_pending() -> None:
    registry, verifier = make()
    request_id = await open_request(registry)

    await resolve(registry, request_id, REVIEWER)

    assert verifier.pending() == []


async def test_a_resolved_request_remembers_who_resolved_it_and_why() -> None:
    registry, verifier = make()
    request_id = await open_request(registry)

    await resolve(registry, request_id, REVIEWER, decision="reject", reason="Wrong figures.")

    resolved = verifier.get(request_id)
    assert resolved is not None
    assert (resolved.status, resolved.resolved_by, resolved.reason) == (
        "rejected",
        "agent:reviewer",
        "Wrong figures.",
    )


# Refusals -----------------------------------------------------------------------------------------


async def test_an_unknown_request_id_is_not_found_naming_it() -> None:
    registry, _ = make()

    result = await resolve(registry, "no-such-id", REVIEWER)

    assert result.code == ErrorCode.NOT_FOUND
    assert result.error is not None
    assert "'no-such-id'" in result.error.message
    assert result.error.message.endswith(".")


async def test_the_requester_cannot_resolve_their_own_request() -> None:
    registry, verifier = make()
    request_id = await open_request(registry)

    result = await resolve(registry, request_id, WORKER)

    assert result.code == ErrorCode.SELF_APPROVAL_FORBIDDEN
    assert result.error is not None
    assert "agent:worker" in result.error.message
    assert [r.request_id for r in verifier.pending()] == [request_id]


async def test_a_request_resolved_already_is_not_pending_naming_its_outcome() -> None:
    registry, _ = make()
    request_id = await open_request(registry)
    await resolve(registry, request_id, REVIEWER)

    result = await resolve(registry, request_id, ToolContext("agent:third", "mcp"), "reject")

    assert result.code == ErrorCode.GATE_NOT_PENDING
    assert result.error is not None
    assert "passed by agent:reviewer" in result.error.message


async def test_a_second_resolution_does_not_change_the_first() -> None:
    registry, verifier = make()
    request_id = await open_request(registry)
    await resolve(registry, request_id, REVIEWER)

    await resolve(registry, request_id, ToolContext("agent:third", "mcp"), "reject")

    request = verifier.get(request_id)
    assert request is not None
    assert request.status == "passed"


async def test_an_anonymous_resolver_is_refused_as_unverified() -> None:
    registry, verifier = make()
    request_id = await open_request(registry)

    result = await resolve(registry, request_id, ToolContext(None, "temporal"))

    assert result.code == ErrorCode.UNVERIFIED_APPROVER
    request = verifier.get(request_id)
    assert request is not None
    assert request.status == "pending"


async def test_an_anonymous_request_may_be_resolved_by_anyone_named() -> None:
    registry, _ = make()
    request_id = await open_request(registry, ToolContext(None, "temporal"))

    result = await resolve(registry, request_id, REVIEWER)

    assert result.data["status"] == "passed"


async def test_a_resolver_without_the_resolve_scope_is_denied_naming_the_scope() -> None:
    registry, _ = make(resolve_scopes=["verification:resolve"])
    request_id = await open_request(registry)

    result = await resolve(registry, request_id, WORKER)

    assert result.error is not None
    assert result.error.message == (
        "Missing required scope for tool 'resolve_verification'. Need one of: "
        "verification:resolve — context has: tasks:write."
    )


async def test_a_caller_without_the_resolve_scope_may_still_open_a_request() -> None:
    registry, _ = make(resolve_scopes=["verification:resolve"])

    result = await registry.call("request_verification", {"subject": "gate:x"}, WORKER)

    assert result.success


async def test_a_resolver_holding_the_resolve_scope_is_admitted() -> None:
    registry, _ = make(resolve_scopes=["verification:resolve"])
    request_id = await open_request(registry)

    result = await resolve(registry, request_id, REVIEWER)

    assert result.data["status"] == "passed"


# The verifier on its own --------------------------------------------------------------------------


def test_the_verifier_refuses_with_a_typed_error() -> None:
    verifier = HumanVerifier()

    with pytest.raises(VerificationError) as raised:
        verifier.resolve("missing", "grant", "agent:reviewer")

    assert raised.value.code == ErrorCode.NOT_FOUND


def test_pending_lists_requests_oldest_first() -> None:
    verifier = HumanVerifier()
    first = verifier.request("a", requested_by="x")
    second = verifier.request("b", requested_by="x")

    assert [r.request_id for r in verifier.pending()] == [first.request_id, second.request_id]


def test_only_one_of_many_concurrent_resolutions_wins() -> None:
    verifier = HumanVerifier()
    asked = verifier.request("gate:x", requested_by="worker")
    outcomes: list[str] = []
    start = threading.Barrier(8)

    def try_resolve(index: int) -> None:
        start.wait()
        try:
            verifier.resolve(asked.request_id, "grant", f"reviewer-{index}")
            outcomes.append("won")
        except VerificationError as refused:
            outcomes.append(refused.code.value)

    threads = [threading.Thread(target=try_resolve, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == sorted(["won"] + ["GATE_NOT_PENDING"] * 7)

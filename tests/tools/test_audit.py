"""The audit trail: one structured, redacted record per call, refusals included."""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Any

import pytest

from lockgate import AuditLogger, InMemoryRateLimiter, ToolContext, ToolRegistry, ToolResult, tool
from lockgate.tools._audit import REDACTED, redact
from tests.helpers.support import REPOSITORY, audit_facts

SECRET = "hunter2-s3cr3t"


@tool("login", "Log in somewhere", sensitive=["pin"])
def login(
    user: str,
    password: str = "",
    pin: str = "",
    options: dict[str, Any] | None = None,
) -> str:
    return f"welcome {user}"


@tool("guarded", "Needs a scope", scopes=["ops"])
def guarded(password: str = "") -> str:
    return "ok"


@tool("broken", "Always fails")
def broken(password: str = "") -> str:
    raise RuntimeError("boom.")


def make(**options: Any) -> ToolRegistry:
    registry = ToolRegistry(**options)
    registry.register(login, guarded, broken)
    return registry


def audit_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "lockgate.audit"]


@pytest.fixture
def audited(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    return caplog


# Redaction ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["password", "token", "secret", "api_key", "apiKey", "API-KEY"])
def test_a_sensitive_argument_is_redacted_whatever_its_spelling(name: str) -> None:
    assert redact({name: SECRET, "user": "ada"}) == {name: REDACTED, "user": "ada"}


def test_a_sensitive_argument_is_redacted_inside_nested_objects() -> None:
    shown = redact({"outer": {"inner": {"Password": SECRET, "kept": 1}}})

    assert shown == {"outer": {"inner": {"Password": REDACTED, "kept": 1}}}


def test_a_sensitive_argument_is_redacted_inside_lists() -> None:
    shown = redact({"accounts": [{"user": "ada", "token": SECRET}, {"api_key": SECRET}]})

    assert shown == {"accounts": [{"user": "ada", "token": REDACTED}, {"api_key": REDACTED}]}


def test_a_name_merely_containing_a_sensitive_word_is_kept() -> None:
    assert redact({"token_count": 3}) == {"token_count": 3}


def test_an_added_sensitive_field_is_redacted_from_then_on() -> None:
    audit = AuditLogger()
    audit.add_sensitive_field("ssn")

    assert audit.redact({"SSN": "078-05-1120"}) == {"SSN": REDACTED}


def test_redaction_leaves_the_callers_arguments_untouched() -> None:
    arguments = {"password": SECRET}

    redact(arguments)

    assert arguments == {"password": SECRET}


async def test_a_tools_own_sensitive_names_are_redacted_in_its_record(
    audited: pytest.LogCaptureFixture,
) -> None:
    registry = make()

    await registry.call("login", {"user": "ada", "pin": "1234"})

    (record,) = audit_records(audited)
    assert audit_facts(record)["arguments"] == {"user": "ada", "pin": REDACTED}


async def test_nested_secrets_in_a_calls_arguments_are_redacted_in_its_record(
    audited: pytest.LogCaptureFixture,
) -> None:
    registry = make()

    await registry.call("login", {"user": "ada", "options": {"apiKey": SECRET, "retries": 2}})

    (record,) = audit_records(audited)
    assert audit_facts(record)["arguments"]["options"] == {"apiKey": REDACTED, "retries": 2}


@pytest.mark.parametrize(
    ("name", "arguments", "ctx"),
    [
        pytest.param("login", {"user": "ada", "password": SECRET}, None, id="success"),
        pytest.param("login", {"user": 5, "password": SECRET}, None, id="invalid"),
        pytest.param("guarded", {"password": SECRET}, ToolContext.web("ada", []), id="forbidden"),
        pytest.param("broken", {"password": SECRET}, None, id="exception"),
        pytest.param("lgin", {"password": SECRET}, None, id="unknown-tool"),
    ],
)
async def test_a_secret_never_appears_in_the_formatted_audit_message(
    audited: pytest.LogCaptureFixture, name: str, arguments: dict[str, Any], ctx: ToolContext | None
) -> None:
    registry = make()

    await registry.call(name, arguments, ctx)

    messages = [record.getMessage() for record in audit_records(audited)]
    assert len(messages) == 1
    assert SECRET not in messages[0]
    assert REDACTED in messages[0]


async def test_a_confirm_token_never_appears_in_the_audit_message(
    audited: pytest.LogCaptureFixture,
) -> None:
    @tool("notes.delete", "Delete a note", mutating=True)
    def delete(note_id: int) -> int:
        return note_id

    registry = ToolRegistry()
    registry.register(delete)
    ctx = ToolContext.telegram("c", "ada")
    token = (await registry.call("notes.delete", {"note_id": 1}, ctx)).confirm_token
    assert token is not None

    await registry.call("notes.delete", {"note_id": 1, "confirm_token": token}, ctx)

    assert all(token not in record.getMessage() for record in audit_records(audited))


# One record per call ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "ctx", "code"),
    [
        pytest.param("login", {"user": "ada"}, None, None, id="success"),
        pytest.param("nope", {}, None, "TOOL_NOT_FOUND", id="unknown-tool"),
        pytest.param("login", {}, None, "VALIDATION_ERROR", id="invalid"),
        pytest.param("guarded", {}, ToolContext.web("ada", []), "FORBIDDEN", id="forbidden"),
        pytest.param("broken", {}, None, "INTERNAL_ERROR", id="exception"),
    ],
)
async def test_every_call_writes_exactly_one_audit_record(
    audited: pytest.LogCaptureFixture,
    name: str,
    arguments: dict[str, Any],
    ctx: ToolContext | None,
    code: str | None,
) -> None:
    registry = make()

    await registry.call(name, arguments, ctx)

    assert [audit_facts(record)["code"] for record in audit_records(audited)] == [code]


async def test_a_rate_limited_call_writes_one_audit_record(
    audited: pytest.LogCaptureFixture,
) -> None:
    registry = make(rate_limiter=InMemoryRateLimiter(max_tokens=1, clock=lambda: 0.0))
    await registry.call("login", {"user": "ada"})

    await registry.call("login", {"user": "ada"})

    assert [audit_facts(record)["code"] for record in audit_records(audited)] == [
        None,
        "RATE_LIMITED",
    ]


async def test_a_plan_writes_one_audit_record_in_plan_mode(
    audited: pytest.LogCaptureFixture,
) -> None:
    registry = make()

    await registry.call("login", {"user": "ada"}, ToolContext.cli().as_plan())

    assert [audit_facts(record)["mode"] for record in audit_records(audited)] == ["plan"]


async def test_a_successful_call_is_recorded_at_info_and_a_refusal_at_warning(
    audited: pytest.LogCaptureFixture,
) -> None:
    registry = make()

    await registry.call("login", {"user": "ada"})
    await registry.call("login", {})

    assert [record.levelno for record in audit_records(audited)] == [
        logging.INFO,
        logging.WARNING,
    ]


async def test_the_record_carries_the_facts_of_the_call(audited: pytest.LogCaptureFixture) -> None:
    registry = make()
    ctx = ToolContext.web("ada", ["ops"])

    await registry.call("guarded", {"password": SECRET}, ctx)

    (record,) = audit_records(audited)
    facts = audit_facts(record)
    assert {key: facts[key] for key in facts if key != "took_ms"} == {
        "event": "tool.call",
        "request_id": ctx.request_id,
        "channel": "web",
        "tool": "guarded",
        "principal": "ada",
        "mode": "execute",
        "outcome": "ok",
        "code": None,
        "reason": None,
        "arguments": {"password": REDACTED},
        "cache_served": False,
        "timeout_exceeded": False,
    }


async def test_a_refusals_record_carries_its_reason(audited: pytest.LogCaptureFixture) -> None:
    registry = make()

    await registry.call("guarded", {}, ToolContext.web("ada", []))

    (record,) = audit_records(audited)
    assert audit_facts(record)["reason"].startswith("Missing required scope for tool 'guarded'")


async def test_a_short_circuited_call_is_recorded_as_cache_served(
    audited: pytest.LogCaptureFixture,
) -> None:
    registry = make()
    registry.on_executing(lambda event: event.short_circuit(ToolResult.ok("cached")))

    await registry.call("login", {"user": "ada"})

    (record,) = audit_records(audited)
    assert audit_facts(record)["cache_served"] is True


async def test_the_message_names_request_channel_tool_principal_and_outcome(
    audited: pytest.LogCaptureFixture,
) -> None:
    registry = make()
    ctx = ToolContext.web("ada", [])

    await registry.call("guarded", {}, ctx)

    (record,) = audit_records(audited)
    message = record.getMessage()
    for part in (ctx.request_id, "web", "guarded", "ada", "ERROR:FORBIDDEN"):
        assert part in message


async def test_an_anonymous_caller_is_shown_as_anonymous(audited: pytest.LogCaptureFixture) -> None:
    registry = make()

    await registry.call("login", {"user": "x"}, ToolContext(None, "temporal"))

    assert "| anonymous |" in audit_records(audited)[0].getMessage()


async def test_an_audit_logger_can_write_to_a_logger_of_the_hosts_choice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="host.audit")
    registry = make(audit=AuditLogger(logging.getLogger("host.audit")))

    await registry.call("login", {"user": "ada"})

    assert [record.name for record in caplog.records] == ["host.audit"]


def test_an_event_record_is_redacted_and_names_who_and_what(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    AuditLogger().event(
        "gate.decide",
        accepted=False,
        actor={"actor": "ada"},
        reason="Ada asked for it.",
        code="SELF_APPROVAL_FORBIDDEN",
        gate="editor#1",
        token=SECRET,
    )

    (record,) = audit_records(caplog)
    assert SECRET not in record.getMessage()
    assert (record.levelno, audit_facts(record)["outcome"], audit_facts(record)["token"]) == (
        logging.WARNING,
        "refused",
        REDACTED,
    )
    assert "SELF_APPROVAL_FORBIDDEN: Ada asked for it." in record.getMessage()


# Where records go ---------------------------------------------------------------------------------

_REFUSED_CALL = """
import logging, sys
from lockgate import ToolContext, ToolRegistry, tool

@tool("guarded", "Needs a scope", scopes=["ops"])
def guarded() -> str:
    return "ok"

if sys.argv[1] == "configured":
    logging.basicConfig(format="%(name)s %(message)s")
registry = ToolRegistry()
registry.register(guarded)
result = registry.call_sync("guarded", {}, ToolContext.web("ada", []))
print(result.error.code if result.error else "ok")
"""


def _run_a_refused_call(logging_is: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _REFUSED_CALL, logging_is],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPOSITORY,
    )


def test_a_program_that_configured_no_logging_gets_no_audit_lines_on_stderr() -> None:
    ran = _run_a_refused_call("unconfigured")

    assert ran.stdout.strip() == "FORBIDDEN"
    assert ran.stderr == ""


def test_a_program_that_configured_logging_gets_the_audit_record_of_a_refusal() -> None:
    ran = _run_a_refused_call("configured")

    assert ran.stdout.strip() == "FORBIDDEN"
    assert ran.stderr.startswith("lockgate.audit ")

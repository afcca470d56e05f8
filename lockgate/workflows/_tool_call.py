"""A durable single tool call, and a workflow that describes what a worker serves.

The call runs once per request id: the workflow id is the request id, so asking again returns
the first answer. A tool that must be confirmed waits, durably, for a ``confirm`` update with
the token; the token expires on a workflow timer, and the call runs with the arguments of the
first request whatever a later request sends.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from lockgate.activities._temporal import CALLER_MISTAKES, PrepareCallInput, ToolActivityInput
from lockgate.gating import (
    Actor,
    ErrorCode,
    ProofRefused,
    ToolResult,
    action_summary,
    confirm_binding,
)
from lockgate.workflows._authority_context import current_authority

__all__ = [
    "CallToolInput",
    "ConfirmCallInput",
    "DescribeWorkflow",
    "ToolCallWorkflow",
    "WaitCallInput",
    "call_workflow_id",
]

_LOCAL = timedelta(seconds=30)


def call_workflow_id(request_id: str) -> str:
    """The workflow id of the call with ``request_id``."""
    return f"lockgate-call-{request_id}"


@dataclass
class CallToolInput:
    """One tool call: which tool, its arguments, and who calls (a proof, or a channel)."""

    tool: str
    arguments: Any = None
    proof: dict[str, Any] | None = None
    channel: str = "temporal"
    request_id: str | None = None


@dataclass
class ConfirmCallInput:
    """The token of a pending confirmation, and (for a signed call) the signer's proof of it."""

    token: str
    proof: dict[str, Any] | None = None


@dataclass
class WaitCallInput:
    """Waits for the call's outcome: a confirmation request, or its result."""

    accept_confirmation_request: bool = True


# A start payload the worker cannot decode (an unknown encoding, broken JSON) raises the SDK's
# RuntimeError("Failed decoding arguments") before any of this code runs. As a task failure it
# would be retried forever; as a workflow failure the caller learns the call was refused.
# Unsandboxed like the graph workflows: lockgate's own code, guarded by the replay tests.
@workflow.defn(name="lockgate.tool_call", failure_exception_types=[RuntimeError], sandboxed=False)
class ToolCallWorkflow:
    """Runs one tool call, once, confirmed when the tool or channel asks for it."""

    @workflow.init
    def __init__(self, *calls: Any) -> None:
        self._call: CallToolInput | None = None
        self._problem: str | None = None
        self._status = "checking"
        self._actor: Actor | None = None
        self._token: str | None = None
        self._summary = ""
        self._confirmed = False
        self._result: dict[str, Any] | None = None
        self._request: dict[str, Any] | None = None
        if len(calls) != 1 or not isinstance(calls[0], dict):
            self._problem = (
                "A tool call starts with one object {tool, arguments, proof?, channel?, "
                "request_id?}."
            )
            return
        raw = calls[0]
        unknown = sorted(set(raw) - {"tool", "arguments", "proof", "channel", "request_id"})
        if unknown or not isinstance(raw.get("tool"), str):
            self._problem = "A tool call is {tool, arguments, proof?, channel?, request_id?}" + (
                f"; it has unknown keys {', '.join(unknown)}."
                if unknown
                else "; 'tool' is missing."
            )
            return
        channel = raw.get("channel") or "temporal"
        self._call = CallToolInput(
            tool=raw["tool"],
            arguments=raw.get("arguments"),
            proof=raw.get("proof"),
            channel=channel if isinstance(channel, str) else "temporal",
            request_id=str(raw.get("request_id") or workflow.info().workflow_id),
        )

    @workflow.run
    async def run(self, *calls: Any) -> dict[str, Any]:
        call = self._call
        if call is None:
            return self._done(ToolResult.error(ErrorCode.VALIDATION_ERROR, self._problem or ""))
        prepared = await workflow.execute_local_activity(
            "lockgate.prepare_call",
            PrepareCallInput(call.tool, call.arguments, call.proof, call.channel, call.request_id),
            start_to_close_timeout=_LOCAL,
            result_type=dict,
        )
        if not prepared["ok"]:
            return self._done(ToolResult.from_dict(prepared["result"]))
        self._actor = Actor.from_dict(prepared["actor"])
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        self._summary = action_summary(call.tool, arguments)
        if prepared["needs_confirmation"]:
            expired = await self._await_confirmation(prepared["confirmation_ttl_seconds"])
            if expired is not None:
                return self._done(expired)
        self._status = "running"
        retry = prepared.get("retry") or {}
        heartbeat = prepared.get("heartbeat_seconds")
        try:
            result = await workflow.execute_activity(
                call.tool,
                ToolActivityInput(
                    arguments=arguments,
                    actor=self._actor.to_dict(),
                    request_id=call.request_id,
                    idempotency_key=call.request_id,
                    confirmed=True,
                ),
                result_type=dict,
                start_to_close_timeout=timedelta(seconds=prepared["timeout_seconds"]),
                heartbeat_timeout=timedelta(seconds=heartbeat) if heartbeat else None,
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(seconds=retry.get("initial_interval_seconds", 1)),
                    backoff_coefficient=retry.get("backoff", 2.0),
                    maximum_interval=timedelta(seconds=retry.get("max_interval_seconds", 60)),
                    maximum_attempts=retry.get("max_attempts", 3),
                    non_retryable_error_types=sorted(CALLER_MISTAKES),
                ),
                summary=f"{call.tool} as {self._actor.actor}",
            )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type in CALLER_MISTAKES:
                return self._done(ToolResult.error(cause.type, cause.message))
            message = str(getattr(cause, "message", None) or cause or error)
            return self._done(
                ToolResult.error(
                    ErrorCode.INTERNAL_ERROR, f"'{call.tool}' failed after its retries: {message}"
                )
            )
        return self._done(ToolResult.from_dict(result))

    async def _await_confirmation(self, ttl_seconds: float) -> ToolResult | None:
        assert self._call is not None
        self._token = workflow.uuid4().hex
        expires_at = workflow.now() + timedelta(seconds=ttl_seconds)
        self._status = "awaiting_confirmation"
        self._request = {
            "requires_confirmation": True,
            "confirm_token": self._token,
            "action_summary": self._summary,
            "expires_at": expires_at.isoformat(timespec="seconds"),
            "request_id": self._call.request_id,
        }
        try:
            await workflow.wait_condition(
                lambda: self._confirmed, timeout=timedelta(seconds=ttl_seconds)
            )
        except TimeoutError:
            self._token = None
            return ToolResult.error(
                ErrorCode.VALIDATION_ERROR,
                f"The confirmation token for '{self._call.tool}' expired at "
                f"{self._request['expires_at']}; call '{self._call.tool}' again with a new "
                "request id to get a new one.",
            )
        return None

    def _done(self, result: ToolResult) -> dict[str, Any]:
        self._status = "done"
        if self._call is not None:
            result.meta.setdefault("tool", self._call.tool)
            result.meta.setdefault("request_id", self._call.request_id)
        if self._actor is not None:
            result.meta.setdefault("principal", self._actor.principal)
            result.meta.setdefault("channel", self._actor.channel)
        self._result = result.to_dict()
        return self._result

    # The update handlers take their input untyped and read it themselves: with a dataclass
    # annotation the SDK would reject a malformed payload as "Failed decoding arguments"
    # (RuntimeError), a null confirmation would crash the validator, and neither says what to send.
    @workflow.update(name="outcome", description="Wait for a confirmation request or the result.")
    async def outcome(self, wait: Any = None) -> dict[str, Any]:
        """The result, or, while the call waits for its confirmation, the request for it.

        ``wait`` is a :class:`WaitCallInput` (or nothing, for the defaults).
        """
        wait = _wait_of(wait)
        await workflow.wait_condition(
            lambda: (
                self._result is not None
                or (wait.accept_confirmation_request and self._status == "awaiting_confirmation")
            )
        )
        if self._result is not None:
            return self._result
        assert self._request is not None
        return ToolResult.confirmation(
            f"Confirm {self._summary}: send the confirm_token back with `confirm`.",
            self._request,
        ).to_dict()

    @outcome.validator
    def validate_outcome(self, wait: Any = None) -> None:
        """Refuses a payload that is not a :class:`WaitCallInput`."""
        _wait_of(wait)

    @workflow.update(name="confirm", description="Confirm the pending call with its token.")
    async def confirm(self, confirmation: Any) -> dict[str, Any]:
        """Lets the call run, then returns its result.

        ``confirmation`` is a :class:`ConfirmCallInput`: ``{token, proof?}``.
        """
        self._confirmed = True
        await workflow.wait_condition(lambda: self._result is not None)
        assert self._result is not None
        return self._result

    @confirm.validator
    def validate_confirm(self, confirmation: Any) -> None:
        """Refuses a wrong, late or spent token, and a signed call confirmed by someone else."""
        confirmation = _confirmation_of(confirmation)
        call = self._call
        if self._status != "awaiting_confirmation" or self._token is None or call is None:
            raise ApplicationError(
                "This call is not waiting for a confirmation (it ran, expired, or never asked).",
                type=ErrorCode.VALIDATION_ERROR.value,
            )
        if not isinstance(confirmation.token, str) or not hmac.compare_digest(
            confirmation.token, self._token
        ):
            raise ApplicationError(
                f"The confirmation token for '{call.tool}' is not the one this call handed out.",
                type=ErrorCode.VALIDATION_ERROR.value,
            )
        actor = self._actor
        if actor is not None and actor.verified:
            authority = current_authority()
            if authority is None:
                raise ApplicationError(
                    "This worker cannot check who confirms: add LockgatePlugin to it.",
                    type=ErrorCode.UNAUTHORIZED.value,
                )
            binding = confirm_binding(str(call.request_id), self._token)
            try:
                confirmer = authority.run_verifier.verify(confirmation.proof, binding)
            except ProofRefused as refused:
                raise ApplicationError(
                    f"A signed call is confirmed by its signer: {refused.sentence}",
                    type=ErrorCode.UNAUTHORIZED.value,
                ) from None
            if confirmer.actor != actor.actor:
                raise ApplicationError(
                    f"The confirmation token was issued to {actor.actor}, not to "
                    f"{confirmer.actor}: only who asked can confirm.",
                    type=ErrorCode.FORBIDDEN.value,
                )

    @workflow.query(name="status", description="Where the call stands.")
    def status(self) -> dict[str, Any]:
        """``checking``, ``awaiting_confirmation``, ``running`` or ``done``, with the summary."""
        return {
            "status": self._status,
            "summary": self._summary,
            "expires_at": self._request["expires_at"] if self._request else None,
            "result": self._result,
        }


def _wait_of(value: object) -> WaitCallInput:
    """The :class:`WaitCallInput` in an ``outcome`` payload, or a VALIDATION_ERROR saying why."""
    if value is None:
        return WaitCallInput()
    if isinstance(value, WaitCallInput):
        return value
    if (
        isinstance(value, dict)
        and set(value) <= {"accept_confirmation_request"}
        and isinstance(value.get("accept_confirmation_request", True), bool)
    ):
        return WaitCallInput(**value)
    raise ApplicationError(
        "`outcome` takes one object {accept_confirmation_request?: true|false}, or nothing.",
        type=ErrorCode.VALIDATION_ERROR.value,
    )


def _confirmation_of(value: object) -> ConfirmCallInput:
    """The :class:`ConfirmCallInput` in a ``confirm`` payload, or a VALIDATION_ERROR saying why."""
    if isinstance(value, ConfirmCallInput):
        return value
    if (
        isinstance(value, dict)
        and set(value) <= {"token", "proof"}
        and isinstance(value.get("token"), str)
        and isinstance(value.get("proof"), (dict, type(None)))
    ):
        return ConfirmCallInput(value["token"], value.get("proof"))
    raise ApplicationError(
        "`confirm` takes one object {token, proof?}: the confirm_token the call handed out, and "
        "for a signed call its signer's proof of that token.",
        type=ErrorCode.VALIDATION_ERROR.value,
    )


@workflow.defn(name="lockgate.describe", sandboxed=False)
class DescribeWorkflow:
    """Answers what the worker on this task queue serves: its tools and graphs."""

    @workflow.run
    async def run(self) -> dict[str, Any]:
        described: dict[str, Any] = await workflow.execute_local_activity(
            "lockgate.describe", start_to_close_timeout=_LOCAL, result_type=dict
        )
        return described

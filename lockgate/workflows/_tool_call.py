"""A durable single tool call.

The call runs once per request id: the workflow id is the request id, so asking again returns
the first answer. A signed call is started first and held back; its caller's proof, naming the
execution the server started (:func:`~lockgate.identity._bindings.tool_binding`), comes as the
``call`` update, judged by its validator before anything is written (see :mod:`._signed_starts`).

A tool that must be confirmed waits, durably, for a ``confirm`` update with
the token; the token expires on a workflow timer, and the call runs with the arguments of the
first request whatever a later request sends. The token is derived from the worker secret and
handed out by a query, so it is never written to the call's history.

A tool declared ``local=True`` runs as a local activity here too, after the same checks: its
result is recorded with the call's workflow task, so a worker that dies first has it run again
(with the same request id and idempotency key) on the next one. Such a tool changes nothing, so
the call still has one outcome. A call that waits for a confirmation has saved its checks first.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from lockgate.activities._activity_inputs import (
    PREPARE_CALL,
    PrepareCallInput,
    ToolActivityInput,
)
from lockgate.activities._refusal import Refusal
from lockgate.gates._authority import Authority
from lockgate.gates._judgements import Judgement, judge_call
from lockgate.gates._limits import MAX_ANSWER_BYTES, MAX_START_BYTES, measure
from lockgate.identity._actors import Actor
from lockgate.identity._bindings import confirm_binding
from lockgate.identity._identity_errors import ProofRefused
from lockgate.identity._proofs import Proof
from lockgate.tools._confirm import action_summary
from lockgate.tools._tool import Retry
from lockgate.tools._tool_result import ErrorCode, ToolResult
from lockgate.workflows._accepted_updates import Acceptance, acceptance, believe_update
from lockgate.workflows._activity_options import execute_tool, local, refused_tool_call
from lockgate.workflows._authority_context import current_authority, judging_authority
from lockgate.workflows._failures import (
    refusals_complete,
    refuse_update,
    refused_run,
)
from lockgate.workflows._graph_inputs import one_answer
from lockgate.workflows._signed_starts import await_signed_start
from lockgate.workflows._undecodable_starts import UnreadableStart

__all__ = [
    "CallToolInput",
    "ConfirmCallInput",
    "ToolCallWorkflow",
    "WaitCallInput",
    "call_workflow_id",
]


def call_workflow_id(request_id: str) -> str:
    """The workflow id of the call with ``request_id``."""
    return f"lockgate-call-{request_id}"


@dataclass
class CallToolInput:
    """One tool call: which tool, its arguments, and who calls.

    Attributes:
        tool: The tool.
        arguments: Its arguments.
        proof: A proof inside the call's start input, as lockgate sent it before proofs named
            their execution: a call recorded then keeps its verdict; a new one is refused.
        channel: The channel of an unsigned caller.
        request_id: The call's request id (its workflow id is ``lockgate-call-<request_id>``).
        plan: Check everything (caller, arguments, scopes, confirmation) and run nothing: the
            result is the plan.
        signed: Its caller signs it: the call runs nothing until the ``call`` update brings a
            proof naming this execution, and ends refused if none comes in time.
    """

    tool: str
    arguments: Any = None
    proof: dict[str, Any] | None = None
    channel: str = "temporal"
    request_id: str | None = None
    plan: bool = False
    signed: bool = False


@dataclass
class ConfirmCallInput:
    """The token of a pending confirmation, and (for a signed call) the signer's proof of it."""

    token: str
    proof: dict[str, Any] | None = None


@dataclass
class WaitCallInput:
    """Waits for the call's outcome: a confirmation request, or its result."""

    accept_confirmation_request: bool = True


# Unsandboxed like the graph workflows: lockgate's own code, guarded by the replay tests. A start
# payload the SDK cannot decode fails the run (UnreadableStart) instead of wedging its task.
@workflow.defn(
    name="lockgate.tool_call", failure_exception_types=[UnreadableStart], sandboxed=False
)
class ToolCallWorkflow:
    """Runs one tool call, once, confirmed when the tool or channel asks for it."""

    # Its tool activities carry the worker secret's seal (see _authority_context).
    __lockgate_workflow__ = True

    @workflow.init
    def __init__(self, *calls: Any) -> None:
        self._call: CallToolInput | None = None
        self._problem: tuple[str, str] | None = None
        self._status = "checking"
        self._actor: Actor | None = None
        self._summary = ""
        self._confirmed = False
        self._result: dict[str, Any] | None = None
        self._request: dict[str, Any] | None = None
        self._caller: Actor | None = None  # who signed the call, once `call` was accepted
        self._acceptance: Acceptance | None = None  # the seal on that `call`, to be recorded
        self._protocol: int | None = None  # as its check recorded it (see RUN_PROTOCOL)
        self._problem = self._read(calls)

    def _read(self, calls: tuple[Any, ...]) -> tuple[str, str] | None:
        shape = "{tool, arguments, signed?, channel?, request_id?, plan?}"
        if len(calls) != 1 or not isinstance(calls[0], dict):
            return (
                ErrorCode.VALIDATION_ERROR.value,
                f"A tool call starts with one object {shape}.",
            )
        raw = calls[0]
        too_big = measure(raw, what="The tool call", max_bytes=MAX_START_BYTES)
        if too_big is not None:
            return (too_big.code, too_big.sentence)
        unknown = sorted(str(key)[:40] for key in set(raw) - set(_CALL_KEYS))
        if unknown or not isinstance(raw.get("tool"), str):
            return (
                ErrorCode.VALIDATION_ERROR.value,
                f"A tool call is {shape}"
                + (
                    f"; it has unknown keys {', '.join(unknown[:5])}."
                    if unknown
                    else "; 'tool' is missing."
                ),
            )
        channel = raw.get("channel") or "temporal"
        workflow_id = workflow.info().workflow_id
        request_id = str(raw.get("request_id") or workflow_id)
        self._call = CallToolInput(
            tool=raw["tool"][:200],
            arguments=raw.get("arguments"),
            proof=raw.get("proof"),
            channel=channel if isinstance(channel, str) else "temporal",
            request_id=request_id,
            plan=raw.get("plan") is True,
            signed=raw.get("signed") is True,
        )
        signed = raw.get("proof") is not None or self._call.signed
        if signed and workflow_id != call_workflow_id(request_id):
            # One request id, one call: a signed call runs under the id its request names.
            return (
                ErrorCode.UNAUTHORIZED.value,
                f"A signed call runs under the workflow id {call_workflow_id(request_id)!r}, "
                f"the one its request id names, not {workflow_id!r}.",
            )
        return None

    @workflow.run
    async def run(self, *calls: Any) -> dict[str, Any]:
        """The call's result.

        A call refused (its caller's mistake, or a confirmation that expired) completes with the
        refusal as its result, so it counts in no failure metric; one whose tool failed, or that
        could not be checked, fails with its code and sentence. (A call recorded before
        :data:`SETTLING_PROTOCOL` failed on a refusal too.)"""
        result = await self._call_once()
        if not result.get("success"):
            # The `outcome` updates waiting for the result answer first.
            await workflow.wait_condition(workflow.all_handlers_finished)
            error = result.get("error") or {}
            code = str(error.get("code") or ErrorCode.INTERNAL_ERROR.value)
            if code not in _FAILURES and refusals_complete(self._protocol, _REFUSALS_COMPLETE):
                return result
            raise refused_run(
                code, str(error.get("message") or "The call did not succeed."), result
            )
        return result

    async def _call_once(self) -> dict[str, Any]:
        call = self._call
        if call is None or self._problem is not None:
            code, sentence = self._problem or (ErrorCode.VALIDATION_ERROR.value, "")
            return self._done(ToolResult.failed(code, sentence))
        if call.signed:
            missing = await await_signed_start(lambda: self._caller is not None, "its proof")
            if missing is not None:
                return self._done(
                    ToolResult.failed(
                        ErrorCode.UNAUTHORIZED,
                        f"Call '{call.request_id}' was made as signed and holds no proof, so "
                        f"nothing ran: {missing}.",
                    )
                )
        try:
            prepared = await local(
                PREPARE_CALL,
                PrepareCallInput(
                    call.tool,
                    call.arguments,
                    call.proof,
                    call.channel,
                    call.request_id,
                    execution=workflow.info().first_execution_run_id,
                    actor=self._caller.to_dict() if self._caller is not None else None,
                    accepted=self._acceptance.made if self._acceptance else None,
                    plan=call.plan,
                ),
            )
        except ActivityError as error:
            return self._done(
                ToolResult.failed(
                    ErrorCode.INTERNAL_ERROR,
                    f"The call could not be checked: {error.cause or error}",
                )
            )
        if self._acceptance is not None and "accepted" in prepared:
            # The `call` update is believed only now, before anything runs as its signer.
            self._acceptance.confirm(prepared["accepted"])
        if "protocol" in prepared:
            self._protocol = int(prepared["protocol"])
        if not prepared["ok"]:
            return self._done(ToolResult.from_dict(prepared["result"]))
        self._actor = Actor.from_dict(prepared["actor"])
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        self._summary = action_summary(call.tool, arguments)
        if call.plan:
            return self._done(ToolResult.ok({"plan": prepared["plan"]}, f"Plan for '{call.tool}'."))
        if prepared["needs_confirmation"]:
            expired = await self._await_confirmation(prepared["confirmation_ttl_seconds"])
            if expired is not None:
                return self._done(expired)
        self._status = "running"
        retry = prepared.get("retry")
        try:
            result = await execute_tool(
                call.tool,
                ToolActivityInput(
                    arguments=arguments,
                    actor=self._actor.to_dict(),
                    request_id=call.request_id,
                    idempotency_key=call.request_id,
                    confirmed=True,
                ),
                # A call prepared before tools could be local has no "local": a regular activity,
                # as its history has it.
                local=bool(prepared.get("local")),
                timeout_seconds=prepared["timeout_seconds"],
                heartbeat_seconds=prepared.get("heartbeat_seconds"),
                retry=Retry(**retry) if retry else None,
                summary=f"{call.tool} as {self._actor.actor}",
            )
        except ActivityError as error:
            # A refusal keeps its meta (a rate limit's `retry_after_seconds`), as in graph runs.
            return self._done(refused_tool_call(error, tool=call.tool))
        return self._done(ToolResult.from_dict(result))

    async def _await_confirmation(self, ttl_seconds: float) -> ToolResult | None:
        assert self._call is not None
        expires_at = workflow.now() + timedelta(seconds=ttl_seconds)
        self._status = "awaiting_confirmation"
        # No token here: this is recorded in the history (an update's result). The token comes
        # from the `confirmation` query, which history never holds.
        self._request = {
            "requires_confirmation": True,
            "action_summary": self._summary,
            "expires_at": expires_at.isoformat(timespec="seconds"),
            "request_id": self._call.request_id,
        }
        try:
            await workflow.wait_condition(
                lambda: self._confirmed, timeout=timedelta(seconds=ttl_seconds)
            )
        except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
            self._status = "expired"
            return ToolResult.failed(
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

    # The update handlers take their payloads untyped and read them themselves: with a dataclass
    # annotation the SDK would reject a malformed payload as "Failed decoding arguments", a
    # payload of the wrong arity would answer with Python's own words, and neither says what to
    # send.
    @workflow.update(name="outcome", description="Wait for a confirmation request or the result.")
    async def outcome(self, *args: Any) -> dict[str, Any]:
        """The result, or, while the call waits for its confirmation, the request for it.

        Takes a :class:`WaitCallInput` (or nothing, for the defaults). The request carries no
        token (it is written to history): :meth:`ToolClient.call` asks the `confirmation` query.
        """
        return await self._outcome(_wait_of(args))

    @outcome.validator
    def validate_outcome(self, *args: Any) -> None:
        """Refuses a payload that is not a :class:`WaitCallInput`."""
        _wait_of(args)

    async def _outcome(self, wait: WaitCallInput) -> dict[str, Any]:
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

    @workflow.update(
        name="call",
        description="Make this call as the signer of the proof: what `ToolClient` sends.",
    )
    async def call(self, *args: Any) -> dict[str, Any]:
        """Records the caller the validator accepted; returns the result, or the request to
        confirm the call. The call's check records the seal on it (see ``_call_once``)."""
        accepted = acceptance(args)
        proof = Proof.parse(args[0])
        if self._caller is not None or self._status != "checking":
            # Another proof got in first, validated in the same task as this one.
            raise Refusal(
                ErrorCode.GATE_NOT_PENDING.value,
                "This call already knows who makes it.",
            )
        self._acceptance = accepted
        self._caller = Actor.of_proof(proof)
        return await self._outcome(WaitCallInput())

    @call.validator
    def validate_call(self, *args: Any) -> None:
        """Refuses, before anything is written, a proof that does not name exactly this call
        (request, execution, tool, arguments), and any once the call knows its caller; a
        refused proof is audited (``tool.proof``), as a refused start proof is."""
        value, problem = one_answer(args, "call")
        call = self._call
        if problem is not None:
            judgement = Judgement.refuse(ErrorCode(problem.code), problem.sentence)
        elif call is None or self._problem is not None:
            judgement = Judgement.refuse(
                ErrorCode.VALIDATION_ERROR, "This call could not be read, so no proof makes it."
            )
        else:
            judgement = self._proof_not_taken(call) or judge_call(
                judging_authority(),
                value,
                tool=call.tool,
                arguments=call.arguments if isinstance(call.arguments, dict) else {},
                request=str(call.request_id),
                execution=workflow.info().first_execution_run_id,
            )
        if not judgement.allowed:
            authority = current_authority()
            refuse_update(
                authority.audit if authority is not None else None,
                "tool.proof",
                judgement,
                tool=call.tool if call is not None else None,
                request_id=call.request_id if call is not None else None,
                run=workflow.info().workflow_id,
            )

    def _proof_not_taken(self, call: CallToolInput) -> Judgement | None:
        """A refusal once the call takes no proof: it knows its caller, was not made signed, or
        has begun."""
        if self._caller is not None:
            why = f"is made by {self._caller.actor}"
        elif not call.signed:
            why = "was not made as a signed call"
        elif self._status != "checking":
            why = "has begun"
        else:
            return None
        return Judgement.refuse(
            ErrorCode.GATE_NOT_PENDING,
            f"Call '{call.request_id}' {why}: it takes its proof once, before it begins.",
        )

    @workflow.update(name="confirm", description="Confirm the pending call with its token.")
    async def confirm(self, *args: Any) -> dict[str, Any]:
        """Lets the call run, then returns its result.

        Takes a :class:`ConfirmCallInput`: ``{token, proof?}``.
        """
        await believe_update(args)
        self._confirmed = True
        await workflow.wait_condition(lambda: self._result is not None)
        assert self._result is not None
        return self._result

    @confirm.validator
    def validate_confirm(self, *args: Any) -> None:
        """Refuses a wrong, late or spent token, and a signed call confirmed by someone else."""
        confirmation = _confirmation_of(args)
        call = self._call
        if self._status != "awaiting_confirmation" or call is None:
            raise Refusal(
                ErrorCode.VALIDATION_ERROR.value,
                "This call is not waiting for a confirmation (it ran, expired, or never asked).",
                never_stored=True,
            )
        authority = _authority()
        if not authority.sealer.token_matches(confirmation.token, "confirm", self._token_binding()):
            raise Refusal(
                ErrorCode.VALIDATION_ERROR.value,
                f"The confirmation token for '{call.tool}' is not the one this call handed out.",
                never_stored=True,
            )
        actor = self._actor
        if actor is not None and actor.verified:
            binding = confirm_binding(str(call.request_id), confirmation.token)
            try:
                confirmer = authority.verifier.verify(confirmation.proof, binding)
            except ProofRefused as refused:
                raise Refusal(
                    ErrorCode.UNAUTHORIZED.value,
                    f"A signed call is confirmed by its signer: {refused.sentence}",
                    never_stored=True,
                ) from None
            if confirmer.actor != actor.actor:
                raise Refusal(
                    ErrorCode.FORBIDDEN.value,
                    f"The confirmation token was issued to {actor.actor}, not to "
                    f"{confirmer.actor}: only who asked can confirm.",
                    never_stored=True,
                )

    def _token_binding(self) -> dict[str, Any]:
        info = workflow.info()
        request = self._call.request_id if self._call is not None else None
        return {"workflow_id": info.workflow_id, "run_id": info.run_id, "request": request}

    @workflow.query(
        name="confirmation",
        description="The token that confirms this call, while it waits for one.",
    )
    def confirmation(self) -> dict[str, Any]:
        """``{confirm_token, expires_at, action_summary}`` while the call awaits confirmation.

        Queries are never written to history, and the token is derived from the worker secret,
        so the history of the call holds no token anyone could read and use.
        """
        if self._status != "awaiting_confirmation" or self._request is None:
            raise ValueError("This call is not waiting for a confirmation.")
        token = _authority().sealer.token("confirm", self._token_binding())
        return {**self._request, "confirm_token": token}

    @workflow.query(name="status", description="Where the call stands.")
    def status(self) -> dict[str, Any]:
        """``checking``, ``awaiting_confirmation``, ``running``, ``expired`` or ``done``."""
        return {
            "status": self._status,
            "summary": self._summary,
            "expires_at": self._request["expires_at"] if self._request else None,
            "result": self._result,
        }


_CALL_KEYS = ("tool", "arguments", "proof", "channel", "request_id", "plan", "signed")

_FAILURES = frozenset({ErrorCode.INTERNAL_ERROR.value, ErrorCode.TIMEOUT.value})
"""Codes of a call that failed (its tool, or its check), rather than was refused."""

_REFUSALS_COMPLETE = "lockgate:call-refusals-complete"
"""The patch marking a call refused before its check ran as one that completes (with the
refusal as its result); a call whose check ran records that instead."""


def _authority() -> Authority:
    authority = current_authority()
    if authority is None:
        raise Refusal(
            ErrorCode.UNAUTHORIZED.value,
            "This worker cannot check confirmations: add LockgatePlugin to it.",
            never_stored=True,
        )
    if authority.secret is None:
        raise Refusal(
            ErrorCode.UNAUTHORIZED.value,
            "This worker has no worker secret, so it cannot hand out or check confirmation "
            "tokens: give LockgatePlugin a secret.",
            never_stored=True,
        )
    return authority


def _wait_of(args: tuple[Any, ...]) -> WaitCallInput:
    """The :class:`WaitCallInput` in an ``outcome`` payload, or a VALIDATION_ERROR saying why."""
    value = args[0] if len(args) == 1 else (None if not args else ...)
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
    raise Refusal(
        ErrorCode.VALIDATION_ERROR.value,
        "`outcome` takes one object {accept_confirmation_request?: true|false}, or nothing.",
    )


def _confirmation_of(args: tuple[Any, ...]) -> ConfirmCallInput:
    """The :class:`ConfirmCallInput` in a ``confirm`` payload, or a VALIDATION_ERROR saying why."""
    value = args[0] if len(args) == 1 else None
    if isinstance(value, ConfirmCallInput):
        return value
    if (
        isinstance(value, dict)
        and set(value) <= {"token", "proof"}
        and isinstance(value.get("token"), str)
        and len(value["token"]) <= 100
        and isinstance(value.get("proof"), (dict, type(None)))
        and measure(value, what="confirm", max_bytes=MAX_ANSWER_BYTES) is None
    ):
        return ConfirmCallInput(value["token"], value.get("proof"))
    raise Refusal(
        ErrorCode.VALIDATION_ERROR.value,
        "`confirm` takes one object {token, proof?}: the confirm_token the call handed out, and "
        "for a signed call its signer's proof of that token.",
    )

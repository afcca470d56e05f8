"""The tool registry: every call passes one pipeline, in one order, and never raises.

It owns :class:`ToolRegistry` (registration, hooks, exposure and the pipeline's stages) and
:data:`PIPELINE_STAGES`. The hook events and :class:`ToolFailure` live in ``_events``; turning
arguments and return values into results lives in ``_results``.
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

from typing_extensions import Unpack

from lockgate.identity._canonical import to_jsonable
from lockgate.tools._audit import AuditLogger
from lockgate.tools._authorization import Authorizer, PolicyDecision
from lockgate.tools._budget import BudgetReport, tools_within_budget
from lockgate.tools._call_values import (
    _as_arguments,
    _as_result,
    _copy,
    _sentence,
    _type_in_words,
)
from lockgate.tools._configuration import check_setting, refused_setting
from lockgate.tools._confirm import ConfirmationStore, action_summary
from lockgate.tools._context import ToolContext, local_shell_context
from lockgate.tools._events import ExecutedEvent, ExecutingEvent, FailedEvent, ToolFailure
from lockgate.tools._ratelimit import MUTATING_COST, RateDecision, RateLimiter, rate_key
from lockgate.tools._schema_tool import arguments_schema, schema_validator
from lockgate.tools._tool import (
    ArgumentsInvalid,
    ToolDeclarationError,
    ToolDefinition,
    ToolOptions,
    definition_of,
    tool_methods,
    tool_spec,
)
from lockgate.tools._tool_result import ErrorCode, ToolResult

__all__ = [
    "PIPELINE_STAGES",
    "ToolRegistry",
]

PIPELINE_STAGES = (
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
"""The stages every call passes, in order; the first that refuses decides the result."""

_Hook = TypeVar("_Hook", bound=Callable[..., Any])


_now = time.perf_counter

Confirmation = Literal["token", "ask", "confirmed"]


class ToolRegistry:
    """Holds tools and runs every call through the pipeline.

    Stages, in order: resolve, validate, clamp, authorize, rate-limit, plan, confirm, the
    ``executing`` hook, execute (with a soft timeout), contain exceptions, audit. A caller's
    mistake is a :class:`ToolResult` whose ``error`` names the check and what was missing;
    :meth:`call` never raises for it.

    Example::

        registry = ToolRegistry()
        registry.register(list_notes)
        result = await registry.call("list_notes", {"page": 1})
        result.success, result.data

    Args:
        authorizer: Who may run what, on which channel (the built-in channel policies by
            default).
        rate_limiter: Budgets per ``channel:principal:tool``; ``None`` (the default) limits
            nothing. :class:`InMemoryRateLimiter` gives 100 tokens a minute, 5 per mutating call.
        confirmations: Where confirmation tokens live (60 s by default).
        audit: Where audit records go (logger ``lockgate.audit`` by default).
    """

    def __init__(
        self,
        *,
        authorizer: Authorizer | None = None,
        rate_limiter: RateLimiter | None = None,
        confirmations: ConfirmationStore | None = None,
        audit: AuditLogger | None = None,
    ) -> None:
        where = "ToolRegistry"
        check_setting(where, "authorizer", authorizer, Authorizer, "an Authorizer", optional=True)
        if rate_limiter is not None and not callable(getattr(rate_limiter, "consume", None)):
            raise refused_setting(
                where, "rate_limiter", rate_limiter, "a RateLimiter (InMemoryRateLimiter())"
            )
        check_setting(
            where,
            "confirmations",
            confirmations,
            ConfirmationStore,
            "a ConfirmationStore",
            optional=True,
        )
        check_setting(where, "audit", audit, AuditLogger, "an AuditLogger", optional=True)
        self.authorizer = authorizer or Authorizer()
        self.rate_limiter = rate_limiter
        self.confirmations = confirmations or ConfirmationStore()
        self.audit = audit or AuditLogger()
        self._tools: dict[str, ToolDefinition] = {}
        self._executing: list[Callable[[ExecutingEvent], Any]] = []
        self._executed: list[Callable[[ExecutedEvent], Any]] = []
        self._failed: list[Callable[[FailedEvent], Any]] = []
        self.trace_stages = False
        """Record when each pipeline stage ended, for the audit record's ``stages`` (tracing)."""
        self._stage_marks: dict[int, list[tuple[str, int]]] = {}

    # Registration ------------------------------------------------------------------------------

    def register(self, *tools: Callable[..., Any] | ToolDefinition) -> None:
        """Registers ``@tool`` functions, bound methods or ready definitions."""
        for candidate in tools:
            definition = (
                candidate if isinstance(candidate, ToolDefinition) else definition_of(candidate)
            )
            existing = self._tools.get(definition.name)
            if existing is not None and existing.handler != definition.handler:
                raise ToolDeclarationError(
                    f"Two tools both call themselves '{definition.name}': "
                    f"{_qualname(existing.handler)} and {_qualname(definition.handler)}."
                )
            self._tools[definition.name] = definition

    def scan(self, instance: object) -> list[str]:
        """Registers every ``@tool`` method of ``instance``; returns their names."""
        methods = tool_methods(instance)
        self.register(*methods)
        return [definition_of(method).name for method in methods]

    def register_schema(
        self,
        name: str,
        description: str,
        schema: Mapping[str, Any],
        handler: Callable[[dict[str, Any], ToolContext], Any],
        **options: Unpack[ToolOptions],
    ) -> ToolDefinition:
        """Registers a tool described by a raw JSON Schema (validated with ``jsonschema``).

        ``handler(arguments, ctx)`` receives the validated arguments as one dict. The options are
        :func:`tool`'s (``local=True`` included).
        """
        spec = tool_spec(name, description, options)
        input_schema = arguments_schema(name, schema)
        definition = spec.definition(
            handler,
            input_schema,
            parameters=tuple(input_schema["properties"]),
            raw_schema=True,
            _validator=schema_validator(name, input_schema),
        )
        self.register(definition)
        return definition

    def get(self, name: str) -> ToolDefinition | None:
        """The definition registered under ``name``."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    # Hooks -------------------------------------------------------------------------------------

    def on_executing(self, hook: _Hook) -> _Hook:
        """Adds a hook run after every check passed, before the tool (usable as a decorator)."""
        self._executing.append(hook)
        return hook

    def on_executed(self, hook: _Hook) -> _Hook:
        """Adds a hook run after a call ran or was answered by a hook."""
        self._executed.append(hook)
        return hook

    def on_failed(self, hook: _Hook) -> _Hook:
        """Adds a hook run when a tool's own code raised."""
        self._failed.append(hook)
        return hook

    # Exposure ----------------------------------------------------------------------------------

    def definitions(self) -> list[dict[str, Any]]:
        """Every tool in the MCP / LLM wire shape, in registration order."""
        return [definition.summary() for definition in self._tools.values()]

    def definitions_within_budget(self, model: str, priority: Sequence[str] = ()) -> BudgetReport:
        """The tools that fit a model's tool budget (30% of its context), greedily.

        Tools named in ``priority`` go first (in registration order among themselves); a tool
        that does not fit is excluded and the next ones are still tried.
        """
        return tools_within_budget(self.definitions(), model, priority)

    # Calling -----------------------------------------------------------------------------------

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> Coroutine[Any, Any, ToolResult]:
        """Runs one call through the pipeline; ``ctx`` defaults to :meth:`ToolContext.cli`.

        Await it: ``result = await registry.call("notes:list", {"page": 2}, ctx)``.
        """
        # Returning the pipeline's coroutine rather than awaiting it saves a coroutine per call.
        return self.run_pipeline(name, arguments, ctx)

    def call_sync(
        self, name: str, arguments: Mapping[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """:meth:`call` for scripts without an event loop."""
        return asyncio.run(self.run_pipeline(name, arguments, ctx))

    async def run_pipeline(
        self,
        name: object,
        arguments: object,
        ctx: ToolContext | None,
        *,
        confirmation: Confirmation = "token",
        rate_limit: bool = True,
        contain_exceptions: bool = True,
        offload_sync: bool = False,
    ) -> ToolResult:
        """The pipeline, stage by stage, with the knobs the Temporal activity needs.

        Args:
            name: The tool's name (anything: a wrong type is a ``TOOL_NOT_FOUND``).
            arguments: The arguments (anything: a wrong type is a ``VALIDATION_ERROR``).
            ctx: The caller; ``None`` is :meth:`ToolContext.cli`.
            confirmation: How a call that must be confirmed is handled: ``"token"`` mints a
                token in :attr:`confirmations` (in process); ``"ask"`` answers a confirmation
                request without a token (a durable workflow holds the token); ``"confirmed"``
                runs it (the workflow received the confirmation).
            rate_limit: Spend rate budget (a dry run that precedes the real call does not).
            contain_exceptions: When false, a tool's exception is audited and re-raised as
                :class:`ToolFailure` instead of becoming an ``INTERNAL_ERROR`` result.
            offload_sync: Runs a synchronous tool in a thread, keeping the event loop free.
        """
        # This function is the hot path of every in-process call, so the common case is written
        # inline, stage after stage; refusals and rare paths live in helpers.
        started = _now()
        if ctx is None:
            ctx = local_shell_context()
        marks = None
        if self.trace_stages:
            marks = self._stage_marks[id(ctx)] = [("", time.time_ns())]

        # Resolve.
        definition = self._tools.get(name) if type(name) is str else None
        if marks is not None:
            marks.append(("resolve", time.time_ns()))
        if definition is None:
            shown = name if isinstance(name, str) else repr(name)
            return self._close(self._not_found(name), shown, arguments, ctx, started)

        # Validate and clamp.
        token: object = None
        if type(arguments) is not dict or "confirm_token" in arguments:
            taken = _as_arguments(definition.name, arguments)
            if isinstance(taken, ToolResult):
                return self._close(taken, definition.name, arguments, ctx, started)
            arguments, token = taken
        try:
            validated = definition.validate(arguments)
        except ArgumentsInvalid as invalid:
            refusal = ToolResult.failed(ErrorCode.VALIDATION_ERROR, str(invalid))
            return self._close(refusal, definition.name, arguments, ctx, started)
        if marks is not None:
            marks.append(("validate", time.time_ns()))

        # Authorize.
        decision = self.authorizer.authorize(ctx, definition, validated)
        if marks is not None:
            marks.append(("authorize", time.time_ns()))
        if not decision.allowed:
            refusal = ToolResult.failed(
                ErrorCode.FORBIDDEN, decision.reason or "Forbidden.", meta={"check": decision.code}
            )
            return self._close(refusal, definition.name, validated, ctx, started, definition)

        # Rate-limit, plan, confirm.
        limiter = self.rate_limiter if rate_limit else None
        if limiter is not None or ctx.mode == "plan" or decision.needs_confirmation:
            answer = None
            if limiter is not None:
                key = rate_key(ctx.channel, ctx.principal, definition.name)
                spent = limiter.consume(key, MUTATING_COST if definition.mutating else 1)
                # A limiter in memory answers at once; one on a shared store, once it has.
                if not isinstance(spent, RateDecision):
                    spent = await spent
                if not spent.allowed:
                    answer = _rate_limited(key, spent)
            if answer is None:
                answer = self._plan_confirm(
                    definition, validated, ctx, decision, token, confirmation
                )
            if marks is not None:
                marks.append(("rate_limit_plan_confirm", time.time_ns()))
            if answer is not None:
                return self._close(answer, definition.name, validated, ctx, started, definition)

        # The executing hook: reached only when every check said yes.
        result: ToolResult | None = None
        cache_served = False
        if self._executing:
            event = ExecutingEvent(definition.name, ctx, validated)
            for hook in self._executing:
                await _maybe_await(hook(event))
                if event._veto is not None:
                    result = ToolResult.blocked(event._veto)
                    return self._close(result, definition.name, validated, ctx, started, definition)
                if event._result is not None:
                    result, cache_served = _copy(event._result), True
                    break

        # Execute, containing the tool's own exceptions.
        if marks is not None and self._executing:
            marks.append(("executing_hook", time.time_ns()))
        if result is None:
            try:
                if definition.raw_schema or definition.context_parameter is not None:
                    result = await self._execute(definition, validated, ctx, offload_sync)
                elif definition.is_async:
                    result = _as_result(await definition.handler(**validated))
                elif offload_sync:
                    result = _as_result(await asyncio.to_thread(definition.handler, **validated))
                else:
                    returned = definition.handler(**validated)
                    if type(returned) is dict:
                        result = ToolResult(True, returned)
                    else:
                        if inspect.isawaitable(returned):
                            returned = await returned
                        result = _as_result(returned)
            except Exception as error:
                return await self._contain(
                    definition, error, validated, ctx, started, contain_exceptions
                )

        # Audit, then the executed hook.
        if marks is not None:
            marks.append(("execute", time.time_ns()))
        self._close(result, definition.name, validated, ctx, started, definition, cache_served)
        if self._executed:
            executed = ExecutedEvent(definition.name, ctx, validated, result, cache_served)
            for after in self._executed:
                await _maybe_await(after(executed))
        return result

    def _plan_confirm(
        self,
        definition: ToolDefinition,
        validated: dict[str, Any],
        ctx: ToolContext,
        decision: PolicyDecision,
        token: object,
        confirmation: Confirmation,
    ) -> ToolResult | None:
        """Plan, confirm: a plan, a confirmation or its refusal, or ``None`` to run."""
        if ctx.mode == "plan":
            plan = {
                "tool": definition.name,
                "mutating": definition.mutating,
                "requires_confirmation": decision.needs_confirmation,
                "scopes_required": sorted(definition.scopes),
                "timeout": definition.timeout,
                "args": to_jsonable(validated),
            }
            return ToolResult.ok({"plan": plan}, f"Plan for '{definition.name}'.")
        if not decision.needs_confirmation or confirmation == "confirmed":
            return None
        if confirmation == "ask":
            summary = action_summary(definition.name, to_jsonable(validated))
            return ToolResult(
                True,
                {"requires_confirmation": True, "action_summary": summary},
                f"Confirm {summary} before it runs.",
                None,
                {"type": "confirmation", "requires_confirmation": True},
            )
        return self._confirm(definition, token, validated, ctx)

    def _confirm(
        self,
        definition: ToolDefinition,
        token: object,
        validated: dict[str, Any],
        ctx: ToolContext,
    ) -> ToolResult | None:
        bound = to_jsonable(validated)
        if token is None:
            confirmation = self.confirmations.create(definition.name, ctx.principal, bound)
            return ToolResult(
                True,
                {
                    "requires_confirmation": True,
                    "confirm_token": confirmation.token,
                    "action_summary": confirmation.summary,
                    "expires_at": confirmation.expires_at_iso,
                },
                f"Confirm {confirmation.summary}: call '{definition.name}' again with the same "
                "arguments and this confirm_token.",
                None,
                {"type": "confirmation", "requires_confirmation": True},
            )
        if not isinstance(token, str):
            return ToolResult.failed(
                ErrorCode.VALIDATION_ERROR,
                f"confirm_token for '{definition.name}' must be a string, not "
                f"{_type_in_words(token)}.",
            )
        check = self.confirmations.redeem(token, definition.name, ctx.principal, bound)
        if not check.allowed:
            return ToolResult.failed(
                ErrorCode.VALIDATION_ERROR, check.reason or "Invalid confirmation token."
            )
        return None

    async def _execute(
        self,
        definition: ToolDefinition,
        validated: dict[str, Any],
        ctx: ToolContext,
        offload_sync: bool,
    ) -> ToolResult:
        """Runs a tool that takes its context, or a raw-schema tool."""
        handler = definition.handler
        if definition.raw_schema:
            positional: tuple[Any, ...] = (validated, ctx)
            keywords: dict[str, Any] = {}
        else:
            positional = ()
            keywords = validated
            if definition.context_parameter is not None:
                keywords = {**validated, definition.context_parameter: ctx}
        if definition.is_async:
            returned = await handler(*positional, **keywords)
        elif offload_sync:
            returned = await asyncio.to_thread(handler, *positional, **keywords)
        else:
            returned = handler(*positional, **keywords)
            if inspect.isawaitable(returned):
                returned = await returned
        return _as_result(returned)

    async def _contain(
        self,
        definition: ToolDefinition,
        error: Exception,
        validated: dict[str, Any],
        ctx: ToolContext,
        started: float,
        contain_exceptions: bool,
    ) -> ToolResult:
        result = ToolResult.failed(
            ErrorCode.INTERNAL_ERROR,
            f"'{definition.name}' failed: {_sentence(type(error).__name__, str(error))}",
        )
        took_ms = (time.perf_counter() - started) * 1000
        for hook in self._failed:
            await _maybe_await(hook(FailedEvent(definition.name, ctx, validated, error, took_ms)))
        closed = self._close(result, definition.name, validated, ctx, started, definition)
        if not contain_exceptions:
            raise ToolFailure(closed, error) from error
        return closed

    def _not_found(self, name: object) -> ToolResult:
        if not isinstance(name, str):
            return ToolResult.failed(
                ErrorCode.TOOL_NOT_FOUND,
                f"Tool not found: a tool is named by a string, not {_type_in_words(name)}.",
            )
        close = difflib.get_close_matches(name, self._tools, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        return ToolResult.failed(ErrorCode.TOOL_NOT_FOUND, f"Tool not found: '{name}'.{hint}")

    def _close(
        self,
        result: ToolResult,
        name: str,
        arguments: object,
        ctx: ToolContext,
        started: float,
        definition: ToolDefinition | None = None,
        cache_served: bool = False,
    ) -> ToolResult:
        """Stamps the result's meta and writes the call's one audit record."""
        took_ms = (_now() - started) * 1000
        stamp = {
            "tool": name,
            # Whole microseconds; `round(x, 3)` costs more than the rest of the stamp.
            "took_ms": int(took_ms * 1000) / 1000,
            "request_id": ctx.request_id,
            "channel": ctx.channel,
            "principal": ctx.principal,
        }
        meta = result.meta
        if meta:
            meta.update(stamp)
        else:
            result.meta = meta = stamp
        if definition is not None and took_ms > definition.timeout * 1000:
            meta.update(
                timeout_exceeded=True,
                execution_time=round(took_ms / 1000, 3),
                timeout_limit=definition.timeout,
            )
        audit = self.audit
        marks = self._stage_marks.pop(id(ctx), None) if self.trace_stages else None
        if audit.records(result):
            audit.tool_call(
                ctx,
                name,
                arguments,
                result,
                took_ms,
                definition.sensitive if definition is not None else (),
                cache_served,
                stages=_stages(marks) if marks else None,
            )
        return result


def _stages(marks: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
    """``(stage, started_ns, ended_ns)`` from the times each stage ended."""
    return [(stage, marks[index][1], ended) for index, (stage, ended) in enumerate(marks[1:])]


def _qualname(handler: Callable[..., Any]) -> str:
    return f"{getattr(handler, '__module__', '?')}.{getattr(handler, '__qualname__', handler)}"


def _rate_limited(key: str, spent: RateDecision) -> ToolResult:
    """The refusal of a call its limiter did not let spend: over its budget, or the shared
    store that keeps the budget could not count it (``meta`` names the store then)."""
    meta: dict[str, Any] = {"retry_after_seconds": spent.retry_after_seconds}
    if spent.unavailable_store is not None:
        meta["rate_limit_store_unavailable"] = spent.unavailable_store
    return ToolResult.failed(
        ErrorCode.RATE_LIMITED, spent.reason or f"Rate limit exceeded for '{key}'.", meta=meta
    )


async def _maybe_await(value: Awaitable[Any] | Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value

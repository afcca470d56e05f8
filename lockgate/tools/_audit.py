"""The audit trail: one structured log record per call, per gate answer and per refusal."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from lockgate.identity._canonical import to_jsonable
from lockgate.tools._audit_sinks import AuditSink
from lockgate.tools._context import ToolContext
from lockgate.tools._tool_result import ErrorCode, ToolResult

__all__ = ["AUDIT_LOGGER_NAME", "DEFAULT_SENSITIVE_NAMES", "REDACTED", "AuditLogger", "redact"]

AUDIT_LOGGER_NAME = "lockgate.audit"
REDACTED = "***REDACTED***"

DEFAULT_SENSITIVE_NAMES: frozenset[str] = frozenset(
    {
        "password",
        "passwd",
        "token",
        "secret",
        "api_key",
        "apikey",
        "access_token",
        "refresh_token",
        "confirm_token",
        "authorization",
        "private_key",
        "client_secret",
        "signature",
    }
)
"""Argument names whose values never reach a log line, compared case- and separator-blind."""


def _normalise(name: str) -> str:
    # `apiKey`, `api_key`, `API-KEY` are one name.
    return name.lower().replace("_", "").replace("-", "")


def redact(value: Any, sensitive: Iterable[str] = DEFAULT_SENSITIVE_NAMES) -> Any:
    """A copy of ``value`` as JSON data, every sensitive key's value replaced at any depth."""
    names = frozenset(_normalise(name) for name in sensitive)
    return _redact(to_jsonable_lenient(value), names)


def _redact(value: Any, names: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {
            key: REDACTED if _normalise(str(key)) in names else _redact(item, names)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_redact(item, names) for item in value]
    return value


def to_jsonable_lenient(value: Any) -> Any:
    """Like :func:`to_jsonable`, but anything that is not JSON data becomes its ``repr``."""
    try:
        return to_jsonable(value)
    except TypeError:
        if isinstance(value, Mapping):
            return {str(key): to_jsonable_lenient(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [to_jsonable_lenient(item) for item in value]
        return repr(value)


class AuditLogger:
    """Writes audit records to stdlib ``logging`` (logger ``lockgate.audit`` by default), and to
    each of its sinks.

    Each record's message is one readable line, and ``record.lockgate_audit`` holds the same
    facts as a dict for structured handlers. Arguments are redacted before they are formatted.
    Sinks (a :class:`JsonLinesAuditSink`, OpenTelemetry logs) get every record, whatever the
    logger's level.
    """

    def __init__(
        self,
        logger: logging.Logger | None = None,
        sensitive: Iterable[str] = DEFAULT_SENSITIVE_NAMES,
        sinks: Iterable[AuditSink] = (),
    ) -> None:
        self.logger = logger or logging.getLogger(AUDIT_LOGGER_NAME)
        self._sensitive = {_normalise(name) for name in sensitive}
        self.sinks: list[AuditSink] = list(sinks)
        """Where every record goes besides the logger; add to it before the worker starts."""

    def add_sensitive_field(self, name: str) -> None:
        """Redacts ``name`` from now on, in every record."""
        self._sensitive.add(_normalise(name))

    def redact(self, value: Any, extra_sensitive: Iterable[str] = ()) -> Any:
        """``value`` redacted with this logger's names plus ``extra_sensitive``."""
        names = frozenset(self._sensitive | {_normalise(name) for name in extra_sensitive})
        return _redact(to_jsonable_lenient(value), names)

    def records(self, result: ToolResult) -> bool:
        """Whether a call with this result would be recorded (its log level is enabled).

        The registry asks first, so a call whose record nobody collects costs no more; a
        subclass that records elsewhere answers True.
        """
        if self.sinks:
            return True
        return self.logger.isEnabledFor(
            logging.INFO if result.__dict__["success"] else logging.WARNING
        )

    def tool_call(
        self,
        ctx: ToolContext,
        tool: str,
        arguments: object,
        result: ToolResult,
        took_ms: float,
        sensitive: Iterable[str] = (),
        cache_served: bool = False,
        stages: list[tuple[str, int, int]] | None = None,
    ) -> None:
        """Records one finished call: who, where, which tool, the outcome and its arguments
        (and, when the registry traces them, when each pipeline stage started and ended, as
        ``(stage, started_ns, ended_ns)``)."""
        level = logging.INFO if result.__dict__["success"] else logging.WARNING
        logged = self.logger.isEnabledFor(level)
        if not logged and not self.sinks:
            return
        outcome = "OK" if result.success else f"ERROR:{result.code}"
        arguments_shown = self.redact(arguments, sensitive)
        record = {
            "event": "tool.call",
            "request_id": ctx.request_id,
            "channel": ctx.channel,
            "tool": tool,
            "principal": ctx.principal,
            "mode": ctx.mode,
            "outcome": "ok" if result.success else "error",
            "code": result.code,
            "reason": None if result.success else result.error.message if result.error else None,
            "took_ms": round(took_ms, 3),
            "arguments": arguments_shown,
            "cache_served": cache_served,
            "timeout_exceeded": bool(result.meta.get("timeout_exceeded")),
        }
        if stages is not None:
            record["stages"] = stages
        self._to_sinks(record, result.success)
        if not logged:
            return
        self.logger.log(
            level,
            "[lockgate.audit] tool.call %s | %s | %s | %s | %.1fms | %s | args=%s",
            ctx.request_id,
            ctx.channel,
            tool,
            ctx.principal or "anonymous",
            took_ms,
            outcome,
            json.dumps(arguments_shown, ensure_ascii=False, default=repr),
            extra={"lockgate_audit": record},
        )

    def event(
        self,
        event: str,
        *,
        accepted: bool,
        actor: Mapping[str, Any] | None,
        reason: str | None = None,
        code: str | None = None,
        **facts: Any,
    ) -> None:
        """Records a judgement that is not a tool call: a gate answer, a resume, a refusal.

        Args:
            event: What was judged (``gate.decide``, ``run.resume``, ``node.run``, ...).
            accepted: Whether it was let through.
            actor: Who asked, as an actor record (never what they hold).
            reason: The refusal's sentence.
            code: The refusal's code.
            **facts: Where it happened: ``graph``, ``run``, ``gate``, ``node``, ``answer``...
        """
        level = logging.INFO if accepted else logging.WARNING
        logged = self.logger.isEnabledFor(level)
        if not logged and not self.sinks:
            return
        shown = self.redact(dict(facts))
        record = {
            "event": event,
            "outcome": "accepted" if accepted else "refused",
            "actor": dict(actor) if actor is not None else None,
            "code": code,
            "reason": reason,
            **shown,
        }
        self._to_sinks(record, accepted)
        if not logged:
            return
        where = " ".join(f"{key}={value}" for key, value in shown.items() if value is not None)
        who = (actor or {}).get("actor", "nobody")
        self.logger.log(
            level,
            "[lockgate.audit] %s %s | %s | %s%s",
            event,
            record["outcome"],
            who,
            where,
            f" | {code}: {reason}" if reason else "",
            extra={"lockgate_audit": record},
        )

    def refused(
        self,
        event: str,
        code: ErrorCode | str | None,
        reason: str | None,
        *,
        actor: Mapping[str, Any] | None = None,
        **facts: Any,
    ) -> None:
        """Records a refusal that is not a tool call (an :meth:`event` not let through): its
        code and sentence, who asked (by default nobody, for what no verified actor sent), and
        where it happened.

        Example::

            audit.refused("run.carried", ErrorCode.UNAUTHORIZED, sentence, run=workflow_id)
        """
        self.event(
            event,
            accepted=False,
            actor=actor,
            reason=reason,
            code=code.value if isinstance(code, ErrorCode) else code,
            **facts,
        )

    def _to_sinks(self, record: Mapping[str, Any], accepted: bool) -> None:
        for sink in self.sinks:
            try:
                sink.write(record, accepted=accepted)
            except Exception:  # a sink's failure must not refuse the call it records
                self.logger.exception("audit sink %r failed to take a record", sink)

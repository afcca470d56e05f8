"""Audit records as OpenTelemetry log records (the ``otel`` extra)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from opentelemetry._logs import LoggerProvider, SeverityNumber, get_logger

__all__ = ["AUDIT_LOG_SCOPE", "OpenTelemetryAuditSink"]

AUDIT_LOG_SCOPE = "lockgate.audit"
"""The instrumentation scope of the audit log records."""


class OpenTelemetryAuditSink:
    """Emits each audit record as one OpenTelemetry log record (an
    :class:`~lockgate.tools._audit_sinks.AuditSink`).

    The body is the record (redacted, as in every sink); the event, outcome and code are also
    attributes, so a backend can filter on them. A refusal is a WARN, anything else INFO.

    Args:
        logger_provider: Where the records go; the global provider by default.

    Example::

        audit = AuditLogger(sinks=[OpenTelemetryAuditSink()])
        plugin = LockgatePlugin(tools, graphs, directory, audit=audit)
    """

    def __init__(self, logger_provider: LoggerProvider | None = None) -> None:
        self._logger = get_logger(AUDIT_LOG_SCOPE, logger_provider=logger_provider)

    def write(self, record: Mapping[str, Any], *, accepted: bool) -> None:
        """Emits ``record``."""
        attributes = {
            "lockgate.event": str(record.get("event")),
            "lockgate.outcome": str(record.get("outcome")),
        }
        if record.get("code"):
            attributes["lockgate.code"] = str(record["code"])
        self._logger.emit(
            severity_number=SeverityNumber.INFO if accepted else SeverityNumber.WARN,
            severity_text="INFO" if accepted else "WARN",
            # JSON data round-trips: a body of nested maps loses None values in some exporters.
            body=json.loads(json.dumps(dict(record), default=repr)),
            attributes=attributes,
            event_name=str(record.get("event")),
        )

"""Tracing, metrics and audit logs with OpenTelemetry (the ``otel`` extra):
:class:`LockgateTelemetry` and :class:`OpenTelemetryAuditSink`."""

from lockgate.telemetry._logs import AUDIT_LOG_SCOPE, OpenTelemetryAuditSink
from lockgate.telemetry._telemetry import METER_NAME, TRACER_NAME, LockgateTelemetry

__all__ = [
    "AUDIT_LOG_SCOPE",
    "METER_NAME",
    "TRACER_NAME",
    "LockgateTelemetry",
    "OpenTelemetryAuditSink",
]

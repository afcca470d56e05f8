"""Tracing, metrics and audit logs with OpenTelemetry (the ``otel`` extra):
:class:`LockgateTelemetry` and :class:`OpenTelemetryAuditSink`."""

from lockgate.telemetry._logs import OpenTelemetryAuditSink
from lockgate.telemetry._telemetry import LockgateTelemetry

__all__ = ["LockgateTelemetry", "OpenTelemetryAuditSink"]

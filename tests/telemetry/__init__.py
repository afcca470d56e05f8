"""Tests of lockgate.telemetry: tracing and metrics with OpenTelemetry, on the real server."""

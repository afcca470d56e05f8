"""Tracing and metrics with OpenTelemetry: temporalio's own tracing interceptor, plus lockgate's
spans and metrics, made from the audit records every judgement already leaves (what a record
counts as is :func:`~lockgate.tools._audit_counts.audit_counts`'s to say).

Off unless a :class:`LockgateTelemetry` is given to :class:`lockgate.LockgatePlugin`; it needs
the ``otel`` extra (``pip install 'lockgate[otel]'``), and lockgate imports OpenTelemetry
nowhere else.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

try:
    from opentelemetry import metrics, trace
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Status, StatusCode, TracerProvider
    from temporalio.contrib.opentelemetry import TracingInterceptor
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "lockgate.telemetry needs OpenTelemetry: pip install 'lockgate[otel]'"
    ) from missing

from lockgate.tools._audit_counts import AuditCount, audit_counts

__all__ = ["METER_NAME", "TRACER_NAME", "LockgateTelemetry"]

TRACER_NAME = "lockgate"
"""The instrumentation scope of lockgate's spans."""

METER_NAME = "lockgate"
"""The instrumentation scope of lockgate's metrics."""


class LockgateTelemetry:
    """Spans and metrics for a lockgate deployment, through OpenTelemetry.

    Spans: temporalio's (client calls, workflows, activities) from its
    ``TracingInterceptor``, and lockgate's own: ``lockgate.tool_call`` per tool call, with a
    child span per pipeline stage it passed; ``lockgate.gate.open``,
    ``lockgate.gate.answer`` and ``lockgate.refusal`` (with its code), each attributed with
    the graph, run and gate. Metrics (all with the ``lockgate.`` prefix):

    - ``lockgate.tool.calls`` (counter): by ``tool``, ``outcome`` and ``code``;
    - ``lockgate.refusals`` (counter): by ``code`` and ``event``;
    - ``lockgate.gates.open`` (up-down counter): by ``role`` and ``graph``;
    - ``lockgate.gate.time_to_answer`` (histogram, seconds): by ``role`` and ``graph``;
    - ``lockgate.nodes.parked`` (up-down counter): by ``graph`` and ``node``.

    Who acted is a span attribute (``lockgate.actor``), never a metric label, and what a call
    carried (its arguments) is never put on a span.

    Args:
        tracer_provider: Where spans go; the global provider by default.
        meter_provider: Where metrics go; the global provider by default.

    Example::

        telemetry = LockgateTelemetry()
        plugin = LockgatePlugin(tools, graphs, directory, telemetry=telemetry)
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.tracer = trace.get_tracer(TRACER_NAME, tracer_provider=tracer_provider)
        self.meter = metrics.get_meter(METER_NAME, meter_provider=meter_provider)
        self.interceptor = TracingInterceptor(self.tracer)
        """temporalio's tracing interceptor, for the client and the worker."""
        self._tool_calls = self.meter.create_counter(
            "lockgate.tool.calls", unit="{call}", description="Tool calls, by outcome and code."
        )
        self._refusals = self.meter.create_counter(
            "lockgate.refusals", unit="{refusal}", description="Refusals, by code and event."
        )
        self._gates_open = self.meter.create_up_down_counter(
            "lockgate.gates.open", unit="{gate}", description="Gates waiting for an answer."
        )
        self._time_to_answer = self.meter.create_histogram(
            "lockgate.gate.time_to_answer",
            unit="s",
            description="From a gate opening to its accepted answer.",
        )
        self._nodes_parked = self.meter.create_up_down_counter(
            "lockgate.nodes.parked", unit="{node}", description="Nodes parked, not yet resumed."
        )

    # The audit sink ------------------------------------------------------------------------

    def write(self, record: Mapping[str, Any], *, accepted: bool) -> None:
        """Takes one audit record (this object is an audit sink)."""
        for count in audit_counts(record, accepted=accepted):
            self._count(count)
        event = str(record.get("event"))
        if event == "tool.call":
            self._tool_call(record, accepted)
            return
        where = _where(record)
        if not accepted:
            code = str(record.get("code") or "UNKNOWN")
            self._span(
                "lockgate.refusal",
                {**where, "lockgate.event": event, "lockgate.code": code},
                record,
                error=str(record.get("reason") or code),
            )
            return
        role = str(record.get("role") or "")
        if event == "gate.open":
            self._span("lockgate.gate.open", {**where, "lockgate.role": role}, record)
        elif event in ("gate.decide", "signal.decide"):
            attributes = {
                **where,
                "lockgate.role": role,
                "lockgate.answer": record.get("answer"),
            }
            self._span("lockgate.gate.answer", attributes, record)

    def _count(self, count: AuditCount) -> None:
        labels = dict(count.labels)
        if count.counted == "tool_call":
            self._tool_calls.add(1, labels)
        elif count.counted == "refusal":
            self._refusals.add(1, labels)
        elif count.counted == "gate_opened":
            self._gates_open.add(1, labels)
        elif count.counted == "gate_answered":
            self._gates_open.add(-1, labels)
            if count.waited_seconds is not None:
                self._time_to_answer.record(count.waited_seconds, labels)
        elif count.counted == "node_parked":
            self._nodes_parked.add(1, labels)
        elif count.counted == "node_resumed":
            self._nodes_parked.add(-1, labels)

    def _tool_call(self, record: Mapping[str, Any], accepted: bool) -> None:
        tool = str(record.get("tool"))
        code = str(record.get("code") or "")
        outcome = "ok" if accepted else "error"
        end = time.time_ns()
        stages = record.get("stages") or ()
        took_ns = int(float(record.get("took_ms") or 0) * 1_000_000)
        started = stages[0][1] if stages else end - took_ns
        attributes = {
            "lockgate.tool": tool,
            "lockgate.outcome": outcome,
            "lockgate.code": code,
            "lockgate.mode": str(record.get("mode") or ""),
            "lockgate.channel": str(record.get("channel") or ""),
            "lockgate.principal": str(record.get("principal") or ""),
            "lockgate.request_id": str(record.get("request_id") or ""),
        }
        span = self.tracer.start_span(
            "lockgate.tool_call", attributes=attributes, start_time=started
        )
        context = trace.set_span_in_context(span)
        for stage, stage_started, stage_ended in stages:
            self.tracer.start_span(
                f"lockgate.stage.{stage}",
                context=context,
                attributes={"lockgate.stage": stage},
                start_time=stage_started,
            ).end(end_time=stage_ended)
        if not accepted:
            # The code only: a tool's refusal sentence can quote the arguments it refused.
            span.set_status(Status(StatusCode.ERROR, code or "error"))
        span.end(end_time=end)

    def _span(
        self,
        name: str,
        attributes: Mapping[str, Any],
        record: Mapping[str, Any],
        *,
        error: str | None = None,
    ) -> None:
        actor = record.get("actor")
        who = actor.get("actor") if isinstance(actor, Mapping) else None
        shown = {key: value for key, value in attributes.items() if value is not None}
        if who:
            shown["lockgate.actor"] = str(who)
        with self.tracer.start_as_current_span(name, attributes=shown) as span:
            if error is not None:
                span.set_status(Status(StatusCode.ERROR, error))


def _where(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "lockgate.graph": record.get("graph"),
        "lockgate.run": record.get("run"),
        "lockgate.gate": record.get("gate"),
        "lockgate.node": record.get("node"),
    }

"""Tracing and metrics on the real server, read back with OpenTelemetry's in-memory exporters:
temporalio's spans, lockgate's spans for a tool call's stages, a gate and a refusal, and the
metrics an operator watches."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client

from lockgate import AuditLogger, GraphClient, LockgatePlugin, ToolClient, tool
from lockgate.examples.essay_review import EssayReview
from lockgate.telemetry import LockgateTelemetry, OpenTelemetryAuditSink
from lockgate.testing import WorkerFactory
from lockgate.tools._audit import REDACTED
from tests.helpers.graphs import ALWAYS_FAILS, essay_people
from tests.helpers.support import REPOSITORY


@tool("telemetry:sign_in", "Signs a user in (a test tool with a secret argument).")
def sign_in(user: str, password: str) -> dict[str, Any]:
    return {"signed_in": user}


@dataclass
class Exported:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    telemetry: LockgateTelemetry

    def finished(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans.get_finished_spans() if span.name == name]

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        """The data points of ``metric`` as (attributes, value or histogram count)."""
        found = []
        data = self.metrics.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for each in scope.metrics:
                    if each.name != metric:
                        continue
                    for point in each.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = point.count  # type: ignore[union-attr]
                        found.append((dict(point.attributes or {}), value))
        return found


@pytest.fixture
def exported() -> Iterator[Exported]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Exported(spans, reader, LockgateTelemetry(tracer_provider, meter_provider))
    tracer_provider.shutdown()
    meter_provider.shutdown()


def traced(client: Client, exported: Exported) -> Client:
    """The test's client with temporalio's tracing interceptor, as the plugin gives a client."""
    config = client.config()
    config["interceptors"] = [exported.telemetry.interceptor]
    return Client(**config)


async def test_a_gate_and_its_answers_leave_spans_and_metrics(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, exported: Exported
) -> None:
    people = essay_people()
    plugin = LockgatePlugin(
        graphs=[EssayReview],
        directory=people.directory,
        secret=people.secret,
        telemetry=exported.telemetry,
    )
    client = traced(temporal_client, exported)
    async with lockgate_worker(plugin=plugin):
        ada = GraphClient(client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        open_while_waiting = exported.points("lockgate.gates.open")
        await ada.decide(run["run_id"], "abandon")  # refused: ada opened it
        answered = await GraphClient(client, task_queue, signer=people.signer("ed")).decide(
            run["run_id"], "abandon"
        )

    assert answered["status"] == "finished"
    editor = {"role": "editor", "graph": "essay:review"}
    assert open_while_waiting == [(editor, 1)]
    assert exported.points("lockgate.gates.open") == [(editor, 0)]
    assert exported.points("lockgate.gate.time_to_answer") == [(editor, 1)]
    assert ({"code": "SELF_APPROVAL_FORBIDDEN", "event": "gate.decide"}, 1) in exported.points(
        "lockgate.refusals"
    )
    (refusal,) = exported.finished("lockgate.refusal")
    assert refusal.attributes is not None
    assert refusal.attributes["lockgate.code"] == "SELF_APPROVAL_FORBIDDEN"
    assert refusal.attributes["lockgate.actor"] == "ada"
    (opened,) = exported.finished("lockgate.gate.open")
    (answer,) = exported.finished("lockgate.gate.answer")
    assert opened.attributes is not None and answer.attributes is not None
    assert opened.attributes["lockgate.role"] == "editor"
    assert answer.attributes["lockgate.actor"] == "ed"
    # temporalio's own spans, from its contrib interceptor on the client and the worker.
    names = {span.name for span in exported.spans.get_finished_spans()}
    assert "StartWorkflow:essay:review" in names and "RunWorkflow:essay:review" in names


async def test_a_tool_call_has_a_span_per_pipeline_stage_and_is_counted(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, exported: Exported
) -> None:
    plugin = LockgatePlugin([sign_in], secret=essay_people().secret, telemetry=exported.telemetry)
    async with lockgate_worker(plugin=plugin):
        called = await ToolClient(traced(temporal_client, exported), task_queue).call(
            "telemetry:sign_in", {"user": "ada", "password": "hunter2"}
        )
        # Refused, and pydantic's sentence quotes the input it refused.
        refused = await ToolClient(temporal_client, task_queue).call(
            "telemetry:sign_in", {"user": ["hunter2"], "password": "x"}
        )

    assert called["success"] is True and refused["success"] is False
    assert refused["error"] is not None and "hunter2" in refused["error"]["message"]
    executed = [
        span
        for span in exported.finished("lockgate.tool_call")
        if span.attributes is not None and span.attributes["lockgate.mode"] == "execute"
    ]
    assert executed
    call = executed[0]
    stages = [
        span.name
        for span in exported.spans.get_finished_spans()
        if span.parent is not None and span.parent.span_id == call.context.span_id
    ]
    # No rate limiter, no confirmation, no executing hook: those stages are not passed.
    assert stages == [
        "lockgate.stage.resolve",
        "lockgate.stage.validate",
        "lockgate.stage.authorize",
        "lockgate.stage.execute",
    ]
    spans = exported.spans.get_finished_spans()
    assert "hunter2" not in str([(span.attributes, span.status.description) for span in spans])
    counted = exported.points("lockgate.tool.calls")
    assert any(
        attributes["tool"] == "telemetry:sign_in" and attributes["outcome"] == "ok"
        for attributes, _ in counted
    )
    assert any(attributes["code"] == "VALIDATION_ERROR" for attributes, _ in counted)


async def test_a_parked_node_is_counted_until_it_is_resumed(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, exported: Exported
) -> None:
    people = essay_people()
    plugin = LockgatePlugin(
        graphs=[EssayReview],
        directory=people.directory,
        secret=people.secret,
        telemetry=exported.telemetry,
    )
    async with lockgate_worker(plugin=plugin):
        # Passes at once, so `publish` would run as ada, who may not publish: it parks.
        run = await GraphClient(temporal_client, task_queue, signer=people.signer("ada")).start(
            EssayReview, {"title": "Tides", "rubric": "tides"}
        )
        parked = exported.points("lockgate.nodes.parked")
        resumed = await GraphClient(temporal_client, task_queue, signer=people.signer("ed")).resume(
            run["run_id"]
        )

    assert run["status"] == "parked" and resumed["status"] == "finished"
    assert parked == [({"graph": "essay:review", "node": "publish"}, 1)]
    assert exported.points("lockgate.nodes.parked") == [
        ({"graph": "essay:review", "node": "publish"}, 0)
    ]


def test_audit_records_go_to_opentelemetry_logs_redacted() -> None:
    logs = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    audit = AuditLogger(sinks=[OpenTelemetryAuditSink(provider)])

    audit.event("gate.decide", accepted=False, actor={"actor": "ada"}, code="X", token="t")

    (emitted,) = logs.get_finished_logs()
    record = emitted.log_record
    assert record.attributes is not None
    assert record.attributes["lockgate.event"] == "gate.decide"
    assert record.attributes["lockgate.code"] == "X"
    assert record.severity_text == "WARN"
    assert isinstance(record.body, dict) and record.body["token"] == REDACTED


def test_lockgate_loads_no_opentelemetry_unless_telemetry_is_asked_for() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, lockgate, lockgate.worker, lockgate.cli._entry; "
            "print(sorted({m.split('.')[0] for m in sys.modules if 'opentelemetry' in m}))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPOSITORY,
    )

    assert loaded.stdout.strip() == "[]"

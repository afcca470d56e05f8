"""The audit sink: every record, redacted as in the log, as one JSON line in a file, from a real
worker on the real server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from temporalio.client import Client

from lockgate import AuditLogger, GraphClient, JsonLinesAuditSink, LockgatePlugin, ToolClient, tool
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import WorkerFactory
from lockgate.tools._audit import REDACTED
from tests.helpers.graphs import ALWAYS_FAILS, essay_people


@tool("audit:sign_in", "Signs a user in (a test tool with a secret argument).")
def sign_in(user: str, password: str) -> dict[str, Any]:
    return {"signed_in": user}


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_the_audit_file_holds_one_redacted_record_per_call_refusal_and_answer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    path = tmp_path / "audit.jsonl"
    people = essay_people()
    audit = AuditLogger(sinks=[JsonLinesAuditSink(path)])
    plugin = LockgatePlugin(
        [sign_in], [EssayReview], people.directory, secret=people.secret, audit=audit
    )
    async with lockgate_worker(plugin=plugin):
        called = await ToolClient(temporal_client, task_queue).call(
            "audit:sign_in", {"user": "ada", "password": "hunter2"}
        )
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        refused = await ada.decide(run["run_id"], "abandon")
        answered = await GraphClient(
            temporal_client, task_queue, signer=people.signer("ed")
        ).decide(run["run_id"], "abandon")
    records = lines_of(path)
    by_event: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_event.setdefault(record["event"], []).append(record)

    assert called["success"] is True
    assert refused["ok"] is False and answered["status"] == "finished"
    # The activity judges the call in plan mode first (the dry run that precedes it), then runs
    # it: one record each, the one that ran marked ``execute``.
    calls = [r for r in by_event["tool.call"] if r["tool"] == "audit:sign_in"]
    assert [r["mode"] for r in calls] == ["plan", "execute"]
    call = calls[-1]
    assert call["arguments"] == {"user": "ada", "password": REDACTED}
    assert call["outcome"] == "ok" and call["at"].endswith("+00:00")
    decisions = by_event["gate.decide"]
    assert [(r["outcome"], r["actor"]["actor"]) for r in decisions] == [
        ("refused", "ada"),
        ("accepted", "ed"),
    ]
    assert decisions[0]["code"] == "SELF_APPROVAL_FORBIDDEN" and decisions[0]["reason"]
    assert "hunter2" not in path.read_text()


def test_the_sink_gets_records_even_when_the_logger_is_silent(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    audit = AuditLogger(sinks=[JsonLinesAuditSink(path)])
    audit.logger.disabled = True
    try:
        audit.event("gate.decide", accepted=False, actor=None, reason="no", code="X", token="t")
    finally:
        audit.logger.disabled = False

    (record,) = lines_of(path)
    assert record["event"] == "gate.decide" and record["outcome"] == "refused"
    assert record["token"] == REDACTED


def test_a_failing_sink_does_not_stop_the_record_or_the_others(tmp_path: Path) -> None:
    class Broken:
        def write(self, record: Any, *, accepted: bool) -> None:
            raise RuntimeError("disk on fire")

    path = tmp_path / "audit.jsonl"
    audit = AuditLogger(sinks=[Broken(), JsonLinesAuditSink(path)])

    audit.event("run.resume", accepted=True, actor={"actor": "ed"})

    assert [record["event"] for record in lines_of(path)] == ["run.resume"]

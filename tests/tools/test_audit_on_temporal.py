"""Every judgement on the worker leaves one structured audit record; no secret reaches a log."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from temporalio.client import Client

from lockgate import GraphClient, ToolClient, tool
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding
from lockgate.testing import Identities, WorkerFactory
from lockgate.tools._audit import AUDIT_LOGGER_NAME
from tests.helpers.graphs import ALWAYS_FAILS
from tests.helpers.support import audit_facts, gate_of

PEOPLE = {
    "ada": {},
    "ed": {"roles": ["editor"], "scopes": ["essay:publish"]},
    "clerk": {"roles": ["editor"]},
}


def _records(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    return [
        audit_facts(record)
        for record in caplog.records
        if record.name == AUDIT_LOGGER_NAME and audit_facts(record).get("event") == event
    ]


@pytest.fixture
def audit(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER_NAME)
    return caplog


async def test_a_refused_update_an_accepted_answer_and_a_refused_signal_each_leave_one_record(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    audit: pytest.LogCaptureFixture,
) -> None:
    people = Identities(PEOPLE)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        run_id, gate = run["run_id"], gate_of(run)["gate"]
        await ada.decide(run_id, "publish_as_is")  # ada opened it
        handle = temporal_client.get_workflow_handle(run_id)
        await handle.signal("decide", {"choice": "abandon"})  # unsigned
        await GraphClient(temporal_client, task_queue, signer=people.signer("ed")).decide(
            run_id, "publish_as_is"
        )

    decided = _records(audit, "gate.decide")
    signalled = _records(audit, "signal.decide")
    refused = [record for record in decided if record["outcome"] == "refused"]
    accepted = [record for record in decided if record["outcome"] == "accepted"]
    assert len(refused) == 1 and len(accepted) == 1 and len(signalled) == 1
    assert refused[0]["actor"]["actor"] == "ada"
    assert refused[0]["code"] == "SELF_APPROVAL_FORBIDDEN" and refused[0]["reason"]
    assert (refused[0]["run"], refused[0]["gate"]) == (run_id, gate)
    assert accepted[0]["actor"]["actor"] == "ed" and accepted[0]["answer"] == "publish_as_is"
    assert signalled[0]["outcome"] == "refused"
    assert signalled[0]["code"] == "UNVERIFIED_APPROVER" and signalled[0]["run"] == run_id


async def test_a_node_refused_at_run_time_leaves_one_record_naming_the_run_and_node(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    audit: pytest.LogCaptureFixture,
) -> None:
    people = Identities(PEOPLE)
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        # Passes the rubric at once, so `publish` runs as ada, who may not publish.
        run = await ada.start(EssayReview, {"title": "Tides", "rubric": "tides"})

    refusals = _records(audit, "node.run")
    assert run["status"] == "parked"
    assert len(refusals) == 1
    assert refusals[0]["actor"]["actor"] == "ada"
    assert (refusals[0]["run"], refusals[0]["node"]) == (run["run_id"], "publish")
    assert refusals[0]["code"] == "FORBIDDEN" and "essay:publish" in refusals[0]["reason"]


@tool("vault:open", "Open the vault.", sensitive=["combination"])
def open_vault(combination: str, password: str, api_key: str) -> dict[str, bool]:
    return {"opened": True}


async def test_secrets_in_arguments_and_proof_signatures_never_reach_a_log_line(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    audit: pytest.LogCaptureFixture,
) -> None:
    people = Identities(PEOPLE)
    secrets = {"combination": "31-41-59", "password": "hunter2-zz", "api_key": "sk-abc-123-xyz"}
    async with lockgate_worker(
        tools=[open_vault], graphs=[EssayReview], directory=people.directory
    ):
        ed = people.signer("ed")
        opened = await ToolClient(temporal_client, task_queue, signer=ed).call(
            "vault:open", secrets
        )
        run = await GraphClient(temporal_client, task_queue, signer=people.signer("ada")).start(
            EssayReview, ALWAYS_FAILS
        )
        answer = ed.sign(answer_binding(gate_of(run), "abandon"))
        await temporal_client.get_workflow_handle(run["run_id"]).signal("decide", answer)
        await temporal_client.get_workflow_handle(run["run_id"]).result()

    logged = "\n".join(
        f"{record.getMessage()} {getattr(record, 'lockgate_audit', '')}" for record in audit.records
    )
    assert opened["success"]
    for secret in [*secrets.values(), answer["signature"]]:
        assert secret not in logged
    assert "***REDACTED***" in logged

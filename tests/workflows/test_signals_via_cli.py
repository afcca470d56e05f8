"""Answers sent through the real ``temporal`` binary: as the signal ``decide`` and as the update.

A signal cannot be refused before it is written, so the worker judges it by the same rules as
the update; a refused signal lands in the trail and the gate keeps waiting. The CLI runs as a
subprocess on the event loop (never a blocking ``subprocess.run``, which would stall the worker
sharing this loop).
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from temporalio.client import Client

from lockgate import GraphClient
from lockgate.contracts import RunView
from lockgate.devserver import temporal_binary
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import ACTOR_KEYS, ALWAYS_FAILS, essay_people, eventually, trail_of
from tests.helpers.support import audit_facts, gate_of


async def temporal_cli(client: Client, *arguments: str) -> tuple[int, str, str]:
    """Runs ``temporal ARGUMENTS`` against the test server; returns (exit code, stdout, stderr)."""
    process = await asyncio.create_subprocess_exec(
        str(temporal_binary()),
        *arguments,
        "--address",
        client.service_client.config.target_host,
        "--namespace",
        "default",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def signed_answer(people: Identities, who: str, run: RunView, choice: str) -> str:
    return json.dumps(people.signer(who).sign(answer_binding(gate_of(run), choice)))


async def test_an_editors_signed_answer_sent_as_a_signal_moves_the_run_on(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        code, _, err = await temporal_cli(
            temporal_client, "workflow", "signal", "--workflow-id", run["run_id"],
            "--name", "decide", "--input", signed_answer(people, "ed", run, "publish_as_is"),
        )  # fmt: skip
        assert code == 0, err
        done = await eventually(
            lambda: ada.show(run["run_id"]),
            lambda shown: shown["status"] == "finished",
            what="the signalled run to finish",
        )

    assert trail_of(done)[-2:] == [("editor_call", "answered", "ed"), ("publish", "ran", "ed")]
    assert done["fields"]["url"] == "https://essays.example/tides"


async def test_the_requesters_own_answer_sent_as_a_signal_is_refused_into_the_trail(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        code, _, err = await temporal_cli(
            temporal_client, "workflow", "signal", "--workflow-id", run["run_id"],
            "--name", "decide", "--input", signed_answer(people, "ada", run, "abandon"),
        )  # fmt: skip
        assert code == 0, err
        shown = await eventually(
            lambda: ada.show(run["run_id"]),
            lambda shown: shown["trail_total"] > run["trail_total"],
            what="the refused signal to reach the trail",
        )

    refused = shown["trail"][-1]
    assert refused["outcome"] == "refused"
    assert refused["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert refused["by"]["actor"] == "ada"
    assert refused["answer"] == "abandon"
    assert refused["why"] == (
        "ada opened this gate, so it cannot approve it: the work and its approval need two "
        "different people."
    )
    assert shown["status"] == "waiting"
    assert gate_of(shown)["gate"] == "editor_call#1"
    assert any(
        getattr(record, "lockgate_audit", {}).get("event") == "signal.decide"
        and audit_facts(record)["code"] == "SELF_APPROVAL_FORBIDDEN"
        and audit_facts(record)["run"] == run["run_id"]
        for record in caplog.records
    )


async def test_an_unsigned_signal_is_refused_into_the_trail_as_an_unverified_caller(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        code, _, err = await temporal_cli(
            temporal_client, "workflow", "signal", "--workflow-id", run["run_id"],
            "--name", "decide", "--input", json.dumps({"choice": "publish_as_is"}),
        )  # fmt: skip
        assert code == 0, err
        shown = await eventually(
            lambda: ada.show(run["run_id"]),
            lambda shown: shown["trail_total"] > run["trail_total"],
            what="the refused signal to reach the trail",
        )

    refused = shown["trail"][-1]
    assert refused["outcome"] == "refused"
    assert refused["code"] == "UNVERIFIED_APPROVER"
    assert set(refused["by"]) == ACTOR_KEYS
    assert refused["by"]["verified"] is False
    assert refused["by"]["actor"].startswith("unverified:")
    assert shown["status"] == "waiting"


async def test_a_signed_answer_sent_with_temporal_workflow_update_execute_is_accepted(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        code, out, err = await temporal_cli(
            temporal_client, "workflow", "update", "execute", "--workflow-id", run["run_id"],
            "--name", "decide", "--input", signed_answer(people, "ed", run, "abandon"),
            "--output", "json",
        )  # fmt: skip
        done = await ada.show(run["run_id"])

    assert code == 0, err
    result = json.loads(out)["result"]
    assert result["status"] == "finished"
    assert trail_of(done)[-2:] == [("editor_call", "answered", "ed"), ("abandon", "ran", "ed")]


async def test_a_refused_answer_sent_with_temporal_workflow_update_execute_exits_1_saying_why(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        run = await ada.start(EssayReview, ALWAYS_FAILS)
        code, out, err = await temporal_cli(
            temporal_client, "workflow", "update", "execute", "--workflow-id", run["run_id"],
            "--name", "decide", "--input", signed_answer(people, "clerk", run, "publish_as_is"),
        )  # fmt: skip
        still = await ada.show(run["run_id"])

    assert code == 1
    assert out == ""
    assert (
        "The answer 'publish_as_is' was not recorded: it leads to the node 'publish' "
        "(essay:publish), and it needs the scope essay:publish, which clerk does not hold."
    ) in err
    assert "FORBIDDEN" in err
    assert still["status"] == "waiting"
    assert still["trail_total"] == run["trail_total"]  # nothing was written

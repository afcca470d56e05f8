"""The TypeScript signer (signers/typescript): its Node test against the conformance vectors, and
a Node service on @temporalio/client that starts a gated graph, answers its gate and calls a
tool durably against a live lockgate worker on the dev server.

The attacker holds the service's code and an approver's key and signs, in TypeScript, answers to
the live run's gate for another run, gate, execution, target or choice, one altered after
signing, and one by the run's own starter: the worker refuses each before anything is written,
and the gate still waits. A new surface: before it, no signer outside Python existed, and the
worker already refused these proofs from the Python signer (tests/attacker/test_answers.py);
these show that a proof from another language is judged the same way.

Node and the signer's npm packages come from `make signers` (``npm ci`` from the committed lock
file). Where there is no npm they are skipped and say so; with ``CI`` set they fail instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from lockgate import GraphClient, ToolContext, tool
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._keys import generate_private_key, write_private_key
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, trail_of
from tests.helpers.support import REPOSITORY, outcome, require_installed

# Node runs the TypeScript signer; the worker's side of what it signs is the Python signer's,
# tested on every Python (see the python_agnostic marker).
pytestmark = pytest.mark.python_agnostic

SIGNER = REPOSITORY / "signers" / "typescript"
NODE = shutil.which("node")
_INSTALLED = SIGNER / "node_modules" / "@temporalio" / "client"
_BUILT = SIGNER / "dist" / "examples" / "service.js"

require_installed(
    NODE is None or not _INSTALLED.exists() or not _BUILT.exists(),
    "node or the TypeScript signer's packages",
    "`make signers`",
)
assert NODE is not None


@tool("notes:save", "Save a note.", scopes=["notes:write"])
def save_note(title: str, body: str, ctx: ToolContext) -> dict[str, Any]:
    return {"saved": title, "words": len(body.split()), "by": ctx.principal}


async def node(script: str, *arguments: str, env: dict[str, str]) -> tuple[int, Any]:
    """Runs ``dist/<script>`` with Node (without blocking the loop the worker runs on); its exit
    status and the JSON it printed."""
    process = await asyncio.create_subprocess_exec(
        str(NODE),
        str(SIGNER / "dist" / script),
        *arguments,
        cwd=SIGNER,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    assert out, f"{script} printed nothing: {err.decode()}"
    return process.returncode, json.loads(out.decode().strip().splitlines()[-1])


async def test_the_signer_reproduces_every_conformance_vector_in_node() -> None:
    process = await asyncio.create_subprocess_exec(
        "npm",
        "test",
        cwd=SIGNER,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    report = out.decode()
    assert process.returncode == 0, report
    assert "# fail 0" in report
    vectors = json.loads((REPOSITORY / "docs" / "proof-vectors.json").read_text())
    assert "not ok" not in report
    for vector in vectors["proofs"]:
        assert f" - the signer makes the vector byte for byte: {vector['name']}\n" in report
    for case in vectors["canonical"]:
        assert f" - canonical JSON: {case['name']}\n" in report


@pytest.fixture
def people(tmp_path: Path) -> Identities:
    identities = Identities(
        {
            "shop-service": {"scopes": ["notes:write"]},
            "ed": {"roles": ["editor"], "scopes": ["essay:publish"]},
        }
    )
    for name in ("shop-service", "ed"):
        write_private_key(tmp_path / "keys" / f"{name}.key", identities.key(name))
    # A key the Directory does not list.
    write_private_key(tmp_path / "keys" / "mallory.key", generate_private_key())
    return identities


@pytest.fixture
def service_env(temporal_client: Client, task_queue: str, tmp_path: Path) -> dict[str, str]:
    return {
        "TEMPORAL_ADDRESS": temporal_client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": temporal_client.namespace,
        "LOCKGATE_TASK_QUEUE": task_queue,
        "LOCKGATE_KEYS_DIR": str(tmp_path / "keys"),
    }


async def test_a_node_service_starts_a_gated_run_that_an_approver_answers_from_node(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    people: Identities,
    service_env: dict[str, str],
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        status, started = await node(
            "examples/service.js",
            "start",
            "essay:review",
            json.dumps(ALWAYS_FAILS),
            "--as",
            "shop-service",
            env=service_env,
        )
        assert status == 0, started
        run_id = started["run_id"]
        assert started["status"] == "waiting"
        assert started["requester"]["actor"] == "shop-service"
        assert started["requester"]["verified"] is True

        status, decided = await node(
            "examples/service.js",
            "decide",
            run_id,
            "publish_as_is",
            "--as",
            "ed",
            env=service_env,
        )
        assert status == 0, decided

        run = await GraphClient(temporal_client, task_queue).show(run_id)
    assert run["status"] == "finished"
    assert run["requester"]["actor"] == "shop-service"
    assert run["fields"]["url"] == "https://essays.example/tides"
    rows = trail_of(run)
    assert rows[0][2] == "shop-service"
    decision = [row for row in run["trail"] if row.get("answer") is not None]
    assert [(row["answer"], row["by"]["actor"], row["by"]["verified"]) for row in decision] == [
        ("publish_as_is", "ed", True)
    ]
    assert rows[-1] == ("publish", "ran", "ed")


async def test_decisions_signed_in_node_for_another_run_gate_or_choice_are_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    people: Identities,
    service_env: dict[str, str],
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        status, started = await node(
            "examples/service.js",
            "start",
            "essay:review",
            json.dumps(ALWAYS_FAILS),
            "--as",
            "shop-service",
            env=service_env,
        )
        assert status == 0, started
        run_id = started["run_id"]
        runs = GraphClient(temporal_client, task_queue)
        trail_before = (await runs.show(run_id))["trail"]

        status, outcomes = await node(
            "e2e/attacks.js", run_id, "ed", "shop-service", env=service_env
        )
        assert status == 0, outcomes
        run = await runs.show(run_id)

    codes = {name: outcome["code"] for name, outcome in outcomes.items()}
    assert codes == {
        "another_run": "UNVERIFIED_APPROVER",
        "another_gate": "GATE_NOT_PENDING",
        "another_execution": "GATE_NOT_PENDING",
        "another_target": "GATE_NOT_PENDING",
        "choice_changed_after_signing": "UNVERIFIED_APPROVER",
        "choice_not_offered": "INVALID_DECISION",
        "the_starter_answering": "SELF_APPROVAL_FORBIDDEN",
    }
    assert "signature does not match" in outcomes["choice_changed_after_signing"]["message"]
    assert "another execution" in outcomes["another_execution"]["message"]
    assert "other than what gate" in outcomes["another_target"]["message"]
    assert run["status"] == "waiting"
    assert run["awaiting"] is not None
    assert trail_before and run["trail"] == trail_before


async def test_a_start_signed_by_a_stranger_in_node_is_refused_and_the_run_ends_at_once(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    people: Identities,
    service_env: dict[str, str],
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        status, refused = await node(
            "examples/service.js",
            "start",
            "essay:review",
            json.dumps(ALWAYS_FAILS),
            "--as",
            "mallory",
            env=service_env,
        )
        assert status == 1
        assert refused["error"]["code"] == "UNAUTHORIZED"
        assert "lists no principal 'mallory'" in refused["error"]["message"]
        # Withdrawn by the service, it ends refused now (not after five minutes), having run
        # nothing.
        ended = await outcome(temporal_client.get_workflow_handle(refused["run_id"]))
    assert ended["status"] == "refused"
    assert ended["requester"]["verified"] is False
    assert ended["trail"] == []


async def test_a_node_service_calls_a_tool_durably_as_itself(
    lockgate_worker: WorkerFactory,
    people: Identities,
    service_env: dict[str, str],
) -> None:
    async with lockgate_worker(tools=[save_note], directory=people.directory):
        status, called = await node(
            "examples/service.js",
            "call",
            "notes:save",
            json.dumps({"title": "Tides", "body": "High water at 06:12."}),
            "--as",
            "shop-service",
            env=service_env,
        )
        assert status == 0, called
        assert called["success"] is True
        assert called["data"] == {"saved": "Tides", "words": 4, "by": "shop-service"}

        status, refused = await node(
            "examples/service.js",
            "call",
            "notes:save",
            json.dumps({"title": "Tides", "body": "Not mine to save."}),
            "--as",
            "ed",
            env=service_env,
        )
    assert status == 1
    assert refused["success"] is False
    assert refused["error"]["code"] == "FORBIDDEN"
    assert "notes:write" in refused["error"]["message"]

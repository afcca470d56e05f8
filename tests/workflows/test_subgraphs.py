"""Sub-graphs: a node runs another declared graph as a child workflow, driven by who drives the
parent there; the child's gates show in pending naming the parent; its outcome routes the
parent; cancelling the parent cancels the child; nobody can hand a child authority by hand.

``pay:released`` runs ``payment:execute`` (a treasurer's gate inside) once an officer releases
(see ``tests.helpers.subgraph_graphs``).
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from temporalio import workflow
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.exceptions import ChildWorkflowError
from temporalio.worker import Worker

from lockgate import GraphClient
from lockgate.contracts import RunView
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.gate_graphs import PAYMENT
from tests.helpers.graphs import eventually
from tests.helpers.subgraph_graphs import (
    SUBGRAPH_GRAPHS,
    SUBGRAPH_TOOLS,
    ReleasedPayment,
    subgraph_people,
)
from tests.helpers.support import gate_of, outcome


def desk(client: Client, task_queue: str, people: Identities) -> dict[str, GraphClient]:
    return {
        who: GraphClient(client, task_queue, signer=people.signer(who), directory=people.directory)
        for who in ("ada", "olga", "tess", "nora")
    }


async def released(as_: dict[str, GraphClient]) -> tuple[RunView, RunView]:
    """A payment released by olga: the parent, resting while its child waits for a treasurer,
    and the child."""
    run = await as_["ada"].start(ReleasedPayment, PAYMENT)
    parent = await as_["olga"].decide(run["run_id"], "release")
    child_id = f"{run['run_id']}/execute:1"
    child = await eventually(
        lambda: as_["ada"].show(child_id),
        lambda shown: shown.get("status") == "waiting",
        what="the child to wait at its gate",
    )
    return parent, child


async def test_a_release_runs_the_child_graph_whose_outcome_routes_the_parent(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = subgraph_people()
    async with lockgate_worker(
        tools=SUBGRAPH_TOOLS, graphs=SUBGRAPH_GRAPHS, directory=people.directory
    ):
        as_ = desk(temporal_client, task_queue, people)
        parent, child = await released(as_)
        sent = await as_["tess"].decide(child["run_id"], "send")
        done = await eventually(
            lambda: as_["ada"].show(parent["run_id"]),
            lambda shown: shown.get("status") == "finished",
            what="the parent to finish",
        )

    assert parent["status"] == "running"
    assert parent.get("child") == {"graph": "payment:execute", "run_id": child["run_id"]}
    assert child["requester"]["actor"] == "olga"  # the driver passes down
    assert child.get("parent") == {
        "graph": "pay:released",
        "run_id": parent["run_id"],
        "execution": parent["execution"],
    }
    assert child["fields"]["memo"] == "staged: 25000 to Acme Ltd"
    assert sent["status"] == "finished"
    ran = next(row for row in done["trail"] if row["node"] == "execute")
    assert ran["operation"] == "payment:execute"
    assert ran["by"]["actor"] == "olga"
    assert ran.get("child") == {
        "graph": "payment:execute",
        "run_id": child["run_id"],
        "status": "finished",
        "outcome": "sent",
    }
    assert done["fields"]["memo"] == "staged: 25000 to Acme Ltd"  # handed back
    assert done["fields"]["notified"] is True
    assert [row["node"] for row in done["trail"]][-1] == "notify"


async def test_the_childs_gate_is_pending_with_its_parent_named(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = subgraph_people()
    async with lockgate_worker(
        tools=SUBGRAPH_TOOLS, graphs=SUBGRAPH_GRAPHS, directory=people.directory
    ):
        as_ = desk(temporal_client, task_queue, people)
        parent, child = await released(as_)
        rows = await eventually(
            lambda: as_["tess"].pending(of="treasurer"),
            lambda found: any(row["run_id"] == child["run_id"] for row in found),
            what="the child's gate in pending",
        )
        refused = await as_["olga"].decide(child["run_id"], "send")

    row = next(row for row in rows if row["run_id"] == child["run_id"])
    assert row.get("parent") == {
        "graph": "pay:released",
        "run_id": parent["run_id"],
        "execution": parent["execution"],
    }
    assert row["requester"] == "olga"
    assert [choice.get("may") for choice in row["choices"]] == [True, True]
    # olga drove the release, so the child's gate is hers to review no more than her own.
    assert refused["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"


async def test_a_held_transfer_routes_the_parent_to_chase(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = subgraph_people()
    async with lockgate_worker(
        tools=SUBGRAPH_TOOLS, graphs=SUBGRAPH_GRAPHS, directory=people.directory
    ):
        as_ = desk(temporal_client, task_queue, people)
        parent, child = await released(as_)
        await as_["tess"].decide(child["run_id"], "hold")
        done = await eventually(
            lambda: as_["ada"].show(parent["run_id"]),
            lambda shown: shown.get("status") == "finished",
            what="the parent to finish",
        )

    assert done["trail"][-1]["node"] == "chase"
    assert done["fields"]["notified"] is False


async def test_cancelling_the_parent_cancels_the_child(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = subgraph_people()
    async with lockgate_worker(
        tools=SUBGRAPH_TOOLS, graphs=SUBGRAPH_GRAPHS, directory=people.directory
    ):
        as_ = desk(temporal_client, task_queue, people)
        parent, child = await released(as_)
        await temporal_client.get_workflow_handle(parent["run_id"]).cancel()
        statuses = await eventually(
            lambda: _statuses(temporal_client, parent["run_id"], child["run_id"]),
            lambda found: found == [WorkflowExecutionStatus.CANCELED] * 2,
            what="parent and child cancelled",
        )

    assert statuses == [WorkflowExecutionStatus.CANCELED, WorkflowExecutionStatus.CANCELED]


async def _statuses(client: Client, *run_ids: str) -> list[WorkflowExecutionStatus | None]:
    return [(await client.get_workflow_handle(run_id).describe()).status for run_id in run_ids]


async def test_a_child_graph_started_directly_with_a_handover_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = subgraph_people()
    async with lockgate_worker(
        tools=SUBGRAPH_TOOLS, graphs=SUBGRAPH_GRAPHS, directory=people.directory
    ):
        handle = await temporal_client.start_workflow(
            "payment:execute",
            {"inputs": {"payee": "Mallory"}, "handed": _handed_as("tess")},
            id=f"forged-{uuid4().hex[:8]}",
            task_queue=task_queue,
        )
        refused = await outcome(handle)

    assert refused["status"] == "refused"
    assert refused["error"]["code"] == "UNAUTHORIZED"
    assert "'handed' is lockgate's own" in refused["error"]["message"]


@workflow.defn(name="attacker.adopt", sandboxed=False)
class Adopt:
    """The attacker's own parent: starts payment:execute on lockgate's queue as its child, with
    a handover naming whoever it likes."""

    @workflow.run
    async def run(self, queue: str, handed: dict[str, Any]) -> dict[str, Any]:
        try:
            return dict(
                await workflow.execute_child_workflow(
                    "payment:execute",
                    {"inputs": {"payee": "Mallory"}, "handed": handed},
                    id=f"{workflow.info().workflow_id}/adopted",
                    task_queue=queue,
                    result_type=dict,
                )
            )
        except ChildWorkflowError as error:
            return {"failed": str(error.cause)}


async def test_a_child_started_by_the_attackers_own_parent_believes_no_handover(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = subgraph_people()
    attacker_queue = f"attacker-{uuid4().hex[:8]}"
    async with (
        lockgate_worker(tools=SUBGRAPH_TOOLS, graphs=SUBGRAPH_GRAPHS, directory=people.directory),
        Worker(temporal_client, task_queue=attacker_queue, workflows=[Adopt]),
    ):
        ended = await temporal_client.execute_workflow(
            Adopt.run,
            args=[task_queue, _handed_as("tess")],
            id=f"attacker-{uuid4().hex[:8]}",
            task_queue=attacker_queue,
        )

    # Refused, it completes with its refusal as its result: nothing it was handed was believed.
    assert ended["status"] == "refused" and ended["error"]["code"] == "UNAUTHORIZED"
    assert "no seal of this deployment's workers" in ended["error"]["message"]
    assert ended["trail"] == [] and ended["requester"]["verified"] is False


def _handed_as(principal: str) -> dict[str, Any]:
    return {
        "actor": {
            "actor": principal,
            "verified": True,
            "channel": "cli",
            "principal": principal,
            "authorization": f"forged-{uuid4().hex}",
        },
        "depth": 1,
        "parent": {"graph": "pay:released", "run_id": "somebody", "execution": "x"},
    }


async def test_a_parent_show_names_the_gate_of_its_child_only_through_the_child(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = subgraph_people()
    async with lockgate_worker(
        tools=SUBGRAPH_TOOLS, graphs=SUBGRAPH_GRAPHS, directory=people.directory
    ):
        as_ = desk(temporal_client, task_queue, people)
        parent, child = await released(as_)
        shown = await as_["ada"].show(parent["run_id"])

    assert shown.get("awaiting") is None
    assert gate_of(child)["ask"] == "confirm"

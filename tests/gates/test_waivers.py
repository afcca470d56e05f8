"""Waivers: a higher role decides a waivable gate alone, with a reason, in a trail row of its
own; a gate that is not waivable refuses them, and a waiver is judged like any answer.

``pay:waivable`` is a dual officers' gate that a ``finance_lead`` may waive; ``pay:dual`` is the
same gate, not waivable (see ``tests.helpers.gate_graphs``).
"""

from __future__ import annotations

import pytest
from temporalio.client import Client

from lockgate import GraphClient
from lockgate.contracts import RunView
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.gate_graphs import (
    PAYMENT,
    WAIVER_GRAPHS,
    DualPayment,
    WaivablePayment,
    payment_people,
)
from tests.helpers.graphs import eventually
from tests.helpers.support import gate_of

REASON = "Quarter close: the second officer is on leave, CFO approved by phone."


class Desk:
    def __init__(self, client: Client, task_queue: str, people: Identities) -> None:
        self.of = {
            who: GraphClient(client, task_queue, signer=people.signer(who))
            for who in ("ada", "cal", "olga", "fran")
        }

    async def at_the_release_gate(self, graph: type) -> RunView:
        run = await self.of["ada"].start(graph, PAYMENT)
        return await self.of["cal"].decide(run["run_id"], "checked")


async def test_a_finance_lead_waives_a_dual_gate_alone_with_a_reason(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=WAIVER_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(WaivablePayment)
        partial = await desk.of["olga"].decide(run["run_id"], "release")
        done = await desk.of["fran"].waive(run["run_id"], "release", REASON)

    assert gate_of(run)["waivable_by"] == "finance_lead"
    assert partial["status"] == "waiting"
    assert done["status"] == "finished"
    assert done["fields"]["sent"] is True
    waived = [row for row in done["trail"] if row["outcome"] == "waived"]
    assert len(waived) == 1
    assert waived[0]["operation"] == "waive:finance_lead"
    assert waived[0]["by"]["actor"] == "fran"
    assert waived[0]["answer"] == "release"
    assert waived[0]["why"] == REASON
    assert done["trail"][-1]["node"] == "send"
    assert done["trail"][-1]["by"]["actor"] == "fran"


@pytest.mark.parametrize(
    ("graph", "waiver", "code", "message"),
    [
        pytest.param(
            DualPayment,
            "fran",
            "NOT_WAIVABLE",
            "Gate 'release#2' is not waivable: only its approvers' answers decide it.",
            id="a gate that is not waivable",
        ),
        pytest.param(
            WaivablePayment,
            "olga",
            "FORBIDDEN",
            "olga does not hold the role 'finance_lead' that gate 'release#2' may be waived by, "
            "so the waiver was not recorded. The gate is still waiting.",
            id="an approver without the higher role",
        ),
    ],
)
async def test_a_waiver_is_refused_where_the_gate_is_not_waivable_or_the_waiver_lacks_the_role(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    graph: type,
    waiver: str,
    code: str,
    message: str,
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=WAIVER_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(graph)
        refused = await desk.of[waiver].waive(run["run_id"], "release", REASON)

    assert refused["error"]["code"] == code
    assert refused["error"]["message"] == message


async def test_a_waiver_without_a_reason_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=WAIVER_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(WaivablePayment)
        refused = await desk.of["fran"].waive(run["run_id"], "release", "   ")

    assert refused["error"]["code"] == "VALIDATION_ERROR"
    assert "gives its reason" in refused["error"]["message"]


async def test_the_requester_cannot_waive_their_own_gate(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=WAIVER_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(WaivablePayment)
        refused = await desk.of["ada"].waive(run["run_id"], "release", REASON)

    assert refused["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"


async def test_a_waiver_by_signal_is_judged_and_recorded_alike(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=WAIVER_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(WaivablePayment)
        handle = temporal_client.get_workflow_handle(run["run_id"])
        olga = await desk.of["olga"].sign_decide(run["run_id"], "release", waiver=REASON)
        fran = await desk.of["fran"].sign_decide(run["run_id"], "reject", waiver=REASON)
        await handle.signal("decide", olga)
        await handle.signal("decide", fran)
        done = await eventually(
            lambda: desk.of["ada"].show(run["run_id"]),
            lambda shown: shown.get("status") == "finished",
            what="the run to finish",
        )

    rows = [row for row in done["trail"] if row["node"] == "release"]
    assert [(row["by"]["actor"], row["outcome"], row.get("code")) for row in rows] == [
        ("olga", "refused", "FORBIDDEN"),
        ("fran", "waived", None),
    ]
    assert done["trail"][-1]["node"] == "cancel"

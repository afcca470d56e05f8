"""Evidence with an answer: validated by its model before the answer is accepted, signed with
it, recorded in the trail, and handed to the node the answer leads to.

``pay:evidenced`` is a dual gate whose ``release`` needs a :class:`ReleaseEvidence` (an invoice
number and a reason) and whose ``reject`` needs none (see ``tests.helpers.gate_graphs``).
"""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from lockgate import GraphClient
from lockgate.contracts import RunView
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.gate_graphs import (
    EVIDENCE_GRAPHS,
    GOOD_EVIDENCE,
    PAYMENT,
    EvidencedPayment,
    payment_people,
)
from tests.helpers.graphs import event_types, eventually
from tests.helpers.support import assert_nothing_written_but_a_workflow_task, gate_of, send_decide


class Desk:
    def __init__(self, client: Client, task_queue: str, people: Identities) -> None:
        self.of = {
            who: GraphClient(client, task_queue, signer=people.signer(who))
            for who in ("ada", "cal", "olga", "otto")
        }

    async def at_the_release_gate(self) -> RunView:
        run = await self.of["ada"].start(EvidencedPayment, PAYMENT)
        return await self.of["cal"].decide(run["run_id"], "checked")


async def test_a_release_without_its_evidence_is_refused_naming_what_it_needs(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=EVIDENCE_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate()
        before = await event_types(temporal_client, run["run_id"])
        refused = await desk.of["olga"].decide(run["run_id"], "release")
        after = await event_types(temporal_client, run["run_id"])

    assert refused["error"]["code"] == "INVALID_EVIDENCE"
    assert refused["error"]["message"] == (
        "The answer 'release' needs evidence (ReleaseEvidence: invoice_number, reason) signed "
        "with it, and this one carries none."
    )
    assert_nothing_written_but_a_workflow_task(before, after)


async def test_invalid_evidence_is_refused_naming_each_field_and_never_its_value(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=EVIDENCE_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate()
        bad = await desk.of["olga"].decide(
            run["run_id"], "release", evidence={"invoice_number": "PO-secret-77"}
        )

    assert bad["error"]["code"] == "INVALID_EVIDENCE"
    message = bad["error"]["message"]
    assert message.startswith("The evidence for 'release' (ReleaseEvidence) was refused: ")
    assert "field 'invoice_number': String should match pattern" in message
    assert "field 'reason': Field required" in message
    assert "PO-secret-77" not in message


async def test_evidence_with_an_option_that_takes_none_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=EVIDENCE_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate()
        refused = await desk.of["olga"].decide(run["run_id"], "reject", evidence=GOOD_EVIDENCE)

    assert refused["error"]["code"] == "INVALID_EVIDENCE"
    assert "takes no evidence at this gate" in refused["error"]["message"]


async def test_accepted_evidence_is_in_the_trail_and_reaches_the_node_it_leads_to(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    second = {"invoice_number": "INV-1043", "reason": "Second invoice of the order"}
    async with lockgate_worker(graphs=EVIDENCE_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate()
        first = await desk.of["olga"].decide(run["run_id"], "release", evidence=GOOD_EVIDENCE)
        done = await desk.of["otto"].decide(run["run_id"], "release", evidence=second)
        whole = await desk.of["otto"].show(run["run_id"])

    assert gate_of(first)["answers"] == [
        {"principal": "olga", "option": "release", "evidence": GOOD_EVIDENCE}
    ]
    rows = [row for row in whole["trail"] if row["node"] == "release"]
    assert [row.get("evidence") for row in rows] == [GOOD_EVIDENCE, second]
    assert done["fields"]["approvals"] == [
        {"by": "olga", "answer": "release", "evidence": GOOD_EVIDENCE},
        {"by": "otto", "answer": "release", "evidence": second},
    ]
    assert done["fields"]["paid_invoices"] == "INV-1042, INV-1043"


async def test_pending_shows_the_evidence_each_option_needs(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=EVIDENCE_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate()
        rows = await eventually(
            lambda: desk.of["olga"].pending(of="officer"),
            lambda found: any(row["run_id"] == run["run_id"] for row in found),
            what="the gate in pending",
        )

    row = next(row for row in rows if row["run_id"] == run["run_id"])
    assert row["evidence"] == {
        "release": {
            "model": "ReleaseEvidence",
            "fields": {
                "invoice_number": "The invoice this pays",
                "reason": "Why it should be paid",
            },
            "required": ["invoice_number", "reason"],
        }
    }


async def test_evidence_changed_after_signing_is_refused_as_unverified(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=EVIDENCE_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate()
        signed = await desk.of["olga"].sign_decide(run["run_id"], "release", evidence=GOOD_EVIDENCE)
        forged: dict[str, Any] = {
            **signed,
            "authorizes": {
                **signed["authorizes"],
                "evidence": {**GOOD_EVIDENCE, "invoice_number": "INV-9999"},
            },
        }
        refused = await send_decide(temporal_client, run["run_id"], forged)

    assert refused["error"]["code"] == "UNVERIFIED_APPROVER"


async def test_invalid_evidence_by_signal_is_refused_into_the_trail(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=EVIDENCE_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate()
        handle = temporal_client.get_workflow_handle(run["run_id"])
        await handle.signal(
            "decide",
            await desk.of["olga"].sign_decide(run["run_id"], "release", evidence={"reason": "ok"}),
        )
        await handle.signal(
            "decide",
            await desk.of["otto"].sign_decide(run["run_id"], "release", evidence=GOOD_EVIDENCE),
        )
        shown = await eventually(
            lambda: desk.of["ada"].show(run["run_id"]),
            lambda found: len([row for row in found["trail"] if row["node"] == "release"]) == 2,
            what="both signals judged",
        )

    refused, accepted = [row for row in shown["trail"] if row["node"] == "release"]
    assert (refused["outcome"], refused.get("code")) == ("refused", "INVALID_EVIDENCE")
    assert "field 'invoice_number': Field required" in refused.get("why", "")
    assert (accepted["outcome"], accepted.get("evidence")) == ("answered", GOOD_EVIDENCE)

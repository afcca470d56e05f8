"""The payment release example: within the threshold it runs payment:execute at once; above it,
two officers with evidence release it, or a finance lead once 48 hours have passed; the
sub-graph's outcome routes the release."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.examples.payment_release import GRAPHS, TOOLS, PaymentRelease
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import eventually
from tests.helpers.support import SECRET, gate_of

INVOICE = {"invoice_number": "INV-2207", "reason": "Servers delivered and installed"}


def payment_people() -> Identities:
    """ap requests payments (and may send small ones), olga and otto are officers, fay is the
    finance lead."""
    sends = ["payment:send"]
    return Identities(
        {
            "ap": {"scopes": sends},
            "olga": {"roles": ["officer"], "scopes": sends},
            "otto": {"roles": ["officer"], "scopes": sends},
            "fay": {"roles": ["finance_lead"], "scopes": sends},
        }
    )


def clients(client: Client, task_queue: str, people: Identities) -> dict[str, GraphClient]:
    return {
        who: GraphClient(client, task_queue, signer=people.signer(who))
        for who in ("ap", "olga", "otto", "fay")
    }


async def test_a_payment_within_the_threshold_runs_its_transfer_at_once(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(tools=TOOLS, graphs=GRAPHS, directory=people.directory):
        as_ = clients(temporal_client, task_queue, people)
        run = await as_["ap"].start(PaymentRelease, {"payee": "Acme Ltd", "amount": 900})
        done = await eventually(
            lambda: as_["ap"].show(run["run_id"]),
            lambda shown: shown.get("status") == "finished",
            what="the payment to finish",
        )

    assert [row["node"] for row in done["trail"]] == ["assess", "execute", "record"]
    assert done["fields"]["reference"] == "TX-DIRECT-900"
    assert done["fields"]["recorded"] is True


async def test_a_large_payment_needs_two_officers_each_naming_the_invoice(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(tools=TOOLS, graphs=GRAPHS, directory=people.directory):
        as_ = clients(temporal_client, task_queue, people)
        run = await as_["ap"].start(PaymentRelease, {"payee": "Acme Ltd", "amount": 25_000})
        bare = await as_["olga"].decide(run["run_id"], "release")
        first = await as_["olga"].decide(run["run_id"], "release", evidence=INVOICE)
        await as_["otto"].decide(run["run_id"], "release", evidence=INVOICE)
        done = await eventually(
            lambda: as_["ap"].show(run["run_id"]),
            lambda shown: shown.get("status") == "finished",
            what="the payment to finish",
        )

    assert gate_of(run)["policy"]["name"] == "dual"
    assert gate_of(run)["deadline"] == {
        "seconds": 172800.0,
        "escalate_to": "finance_lead",
        "take": None,
    }
    assert bare["error"]["code"] == "INVALID_EVIDENCE"
    assert first["status"] == "waiting"
    assert done["fields"]["reference"] == "TX-INV-2207-25000"
    ran = next(row for row in done["trail"] if row["node"] == "execute")
    assert ran["by"]["actor"] == "otto"
    assert ran.get("child", {}).get("outcome") == "sent"


async def test_a_bounced_transfer_chases_the_payee(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(tools=TOOLS, graphs=GRAPHS, directory=people.directory):
        as_ = clients(temporal_client, task_queue, people)
        run = await as_["ap"].start(PaymentRelease, {"payee": "Closed Bank", "amount": 50})
        done = await eventually(
            lambda: as_["ap"].show(run["run_id"]),
            lambda shown: shown.get("status") == "finished",
            what="the payment to finish",
        )

    assert done["trail"][-1]["node"] == "chase"
    assert done["fields"]["recorded"] is False


async def test_unanswered_for_48_hours_a_large_payment_goes_to_the_finance_lead(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    people = payment_people()
    client = time_skipping_env.client
    plugin = LockgatePlugin(TOOLS, GRAPHS, people.directory, secret=SECRET)
    async with Worker(client, task_queue=task_queue, plugins=[plugin]):
        as_ = clients(client, task_queue, people)
        run = await as_["ap"].start(PaymentRelease, {"payee": "Acme Ltd", "amount": 25_000})
        escalated = await eventually(
            lambda: as_["ap"].show(run["run_id"]),
            lambda shown: (
                gate_of(shown)["role"] == "finance_lead" if shown.get("awaiting") else False
            ),
            seconds=60,
            what="the finance lead's gate",
        )
        await as_["fay"].decide(run["run_id"], "release", evidence=INVOICE)
        done = await eventually(
            lambda: as_["ap"].show(run["run_id"]),
            lambda shown: shown.get("status") == "finished",
            what="the payment to finish",
        )

    assert gate_of(escalated)["escalated_from"] == "officer"
    assert done["status"] == "finished"
    assert done["fields"]["recorded"] is True
    outcomes = [row["outcome"] for row in done["trail"]]
    assert outcomes == ["ran", "escalated", "answered", "ran", "ran"]

"""Saved histories of runs through the gate rules replay on today's code, with no server.

One history per rule, under ``tests/histories/gates/``: a dual gate answered by two officers
(after the same officer was refused by signal); evidence given with two releases; a waiver; a
deadline that escalates after a partial approval, and one that takes its option; a sub-graph
run to its end, and one cancelled with its parent (parent and child each). Regenerate them
after a deliberate change to the interpreter::

    LOCKGATE_REGENERATE_HISTORIES=1 .venv/bin/pytest tests/workflows/test_replay_gates.py
"""

from __future__ import annotations

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.testing import WorkerFactory
from tests.helpers.gate_graphs import (
    DEADLINE_GRAPHS,
    EVIDENCE_GRAPHS,
    GOOD_EVIDENCE,
    PAYMENT,
    POLICY_GRAPHS,
    POLICY_TOOLS,
    TWO_DAYS,
    DualPayment,
    EscalatingPayment,
    EvidencedPayment,
    LapsingPayment,
    WaivablePayment,
    payment_people,
)
from tests.helpers.graphs import eventually
from tests.helpers.saved_histories import (
    HISTORIES,
    HISTORY_SECRET,
    REGENERATE,
    UNSEALED,
    replayer,
    save,
    saved_history,
    without_stack_traces,
)
from tests.helpers.subgraph_graphs import (
    SUBGRAPH_GRAPHS,
    SUBGRAPH_TOOLS,
    ReleasedPayment,
    subgraph_people,
)
from tests.helpers.support import gate_of

GRAPHS: list[type] = [
    *POLICY_GRAPHS,
    *EVIDENCE_GRAPHS,
    WaivablePayment,
    *DEADLINE_GRAPHS,
    *SUBGRAPH_GRAPHS,
]
SAVED = {
    "payment_dual": "replay-payment_dual",
    "payment_evidence": "replay-payment_evidence",
    "payment_waiver": "replay-payment_waiver",
    "payment_escalated": "replay-payment_escalated",
    "payment_lapsed": "replay-payment_lapsed",
    "payment_released": "replay-payment_released",
    "payment_released_child": "replay-payment_released/execute:1",
    "payment_cancelled": "replay-payment_cancelled",
    "payment_cancelled_child": "replay-payment_cancelled/execute:1",
}
"""Under ``tests/histories/gates/``, each recorded under the workflow id ``replay-<name>``."""


@pytest.mark.skipif(not REGENERATE, reason="set LOCKGATE_REGENERATE_HISTORIES=1 to re-record")
async def test_record_the_saved_gate_histories(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    as_ = {
        who: GraphClient(temporal_client, task_queue, signer=people.signer(who))
        for who in ("ada", "cal", "olga", "otto", "fran")
    }
    async with lockgate_worker(graphs=GRAPHS, directory=people.directory, secret=HISTORY_SECRET):
        run = await as_["ada"].start(DualPayment, PAYMENT, run_id="replay-payment_dual")
        await as_["cal"].decide(run["run_id"], "checked")
        assert (await as_["olga"].decide(run["run_id"], "release"))["status"] == "waiting"
        handle = temporal_client.get_workflow_handle(run["run_id"])
        await handle.signal("decide", await as_["olga"].sign_decide(run["run_id"], "release"))
        await eventually(
            lambda: as_["ada"].show(run["run_id"]),
            lambda shown: shown["trail"][-1]["outcome"] == "refused",
            what="the refused signal in the trail",
        )
        assert (await as_["otto"].decide(run["run_id"], "release"))["status"] == "finished"
        await save(temporal_client, run["run_id"], "gates/payment_dual")

        # Evidence: refused without it (nothing written), then two releases that carry it.
        run = await as_["ada"].start(EvidencedPayment, PAYMENT, run_id="replay-payment_evidence")
        await as_["cal"].decide(run["run_id"], "checked")
        assert "error" in await as_["olga"].decide(run["run_id"], "release")
        await as_["olga"].decide(run["run_id"], "release", evidence=GOOD_EVIDENCE)
        done = await as_["otto"].decide(run["run_id"], "release", evidence=GOOD_EVIDENCE)
        assert done["status"] == "finished"
        await save(temporal_client, run["run_id"], "gates/payment_evidence")

        # A waiver after one officer's partial answer.
        run = await as_["ada"].start(WaivablePayment, PAYMENT, run_id="replay-payment_waiver")
        await as_["cal"].decide(run["run_id"], "checked")
        await as_["olga"].decide(run["run_id"], "release")
        done = await as_["fran"].waive(run["run_id"], "release", "The second officer is away.")
        assert done["status"] == "finished"
        await save(temporal_client, run["run_id"], "gates/payment_waiver")


@pytest.mark.skipif(not REGENERATE, reason="set LOCKGATE_REGENERATE_HISTORIES=1 to re-record")
async def test_record_the_saved_subgraph_histories(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = subgraph_people()
    as_ = {
        who: GraphClient(temporal_client, task_queue, signer=people.signer(who))
        for who in ("ada", "olga", "tess")
    }
    async with lockgate_worker(
        tools=SUBGRAPH_TOOLS,
        graphs=SUBGRAPH_GRAPHS,
        directory=people.directory,
        secret=HISTORY_SECRET,
    ):
        # A release runs payment:execute; its treasurer sends it; the parent notifies.
        run = await as_["ada"].start(ReleasedPayment, PAYMENT, run_id="replay-payment_released")
        await as_["olga"].decide(run["run_id"], "release")
        child = SAVED["payment_released_child"]
        await eventually(
            lambda: as_["ada"].show(child),
            lambda shown: shown.get("status") == "waiting",
            what="the child's gate",
        )
        await as_["tess"].decide(child, "send")
        await save(temporal_client, child, "gates/payment_released_child")
        await save(temporal_client, run["run_id"], "gates/payment_released")

        # The parent is cancelled while its child waits: both end cancelled.
        run = await as_["ada"].start(ReleasedPayment, PAYMENT, run_id="replay-payment_cancelled")
        await as_["olga"].decide(run["run_id"], "release")
        child = SAVED["payment_cancelled_child"]
        await eventually(
            lambda: as_["ada"].show(child),
            lambda shown: shown.get("status") == "waiting",
            what="the child's gate",
        )
        await temporal_client.get_workflow_handle(run["run_id"]).cancel()
        for run_id, name in (
            (child, "payment_cancelled_child"),
            (run["run_id"], "payment_cancelled"),
        ):
            await save_ended(temporal_client, run_id, f"gates/{name}")


async def save_ended(client: Client, run_id: str, name: str) -> None:
    """Saves a history once its run has ended, however it ended."""
    handle = client.get_workflow_handle(run_id)
    await eventually(
        lambda: handle.describe(),
        lambda described: described.status != WorkflowExecutionStatus.RUNNING,
        what=f"{run_id} to end",
    )
    history = await handle.fetch_history()
    (HISTORIES / f"{name}.json").write_text(without_stack_traces(history.to_json()) + "\n")


@pytest.mark.skipif(not REGENERATE, reason="set LOCKGATE_REGENERATE_HISTORIES=1 to re-record")
async def test_record_the_saved_deadline_histories(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    people = payment_people()
    client = time_skipping_env.client
    as_ = {
        who: GraphClient(client, task_queue, signer=people.signer(who))
        for who in ("ada", "cal", "olga", "fran")
    }
    plugin = LockgatePlugin(POLICY_TOOLS, GRAPHS, people.directory, secret=HISTORY_SECRET)
    async with Worker(client, task_queue=task_queue, plugins=[plugin]):
        # A partial approval, then the deadline escalates and the finance lead decides alone.
        with time_skipping_env.with_time_skipping_disabled():
            run = await as_["ada"].start(
                EscalatingPayment, PAYMENT, run_id="replay-payment_escalated"
            )
        await as_["cal"].decide(run["run_id"], "checked")
        await as_["olga"].decide(run["run_id"], "release")
        handle = client.get_workflow_handle(run["run_id"])
        assert await time_skipping_env.fast_forward(handle, TWO_DAYS)
        await eventually(
            lambda: as_["ada"].show(run["run_id"]),
            lambda shown: (
                shown.get("awaiting") is not None and gate_of(shown)["role"] == "finance_lead"
            ),
            what="the escalated gate",
        )
        assert (await as_["fran"].decide(run["run_id"], "release"))["status"] == "finished"
        await save(client, run["run_id"], "gates/payment_escalated")

        # The deadline takes its declared option, as the system.
        run = await as_["ada"].start(LapsingPayment, PAYMENT, run_id="replay-payment_lapsed")
        await as_["cal"].decide(run["run_id"], "checked")
        await save(client, run["run_id"], "gates/payment_lapsed")


@pytest.mark.parametrize("folder", ["gates", f"{UNSEALED}/gates"])
@pytest.mark.parametrize("name", SAVED)
async def test_a_saved_gate_history_replays_on_todays_code(folder: str, name: str) -> None:
    assert (HISTORIES / folder / f"{name}.json").exists()
    result = await replayer(GRAPHS).replay_workflow(
        saved_history(f"{folder}/{name}", SAVED[name]), raise_on_replay_failure=False
    )
    assert result.replay_failure is None

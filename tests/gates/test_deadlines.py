"""Deadlines on the time-skipping server: a gate left undecided escalates to another role or
takes its declared option as the system, on a durable timer that outlives its worker.

``pay:escalating`` is a dual officers' gate that escalates to a finance lead after 48 hours;
``pay:lapsing`` takes ``reject`` after 48 hours (see ``tests.helpers.gate_graphs``). Runs
started with time skipping on reach the deadline as soon as the gate waits; runs started with it
off wait until the test moves their clock on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.contracts import RunView
from lockgate.devserver import temporal_binary
from lockgate.namespace import LOCKGATE_SEARCH_ATTRIBUTES
from lockgate.testing import Identities
from tests.helpers.gate_graphs import (
    DEADLINE_GRAPHS,
    PAYMENT,
    POLICY_TOOLS,
    TWO_DAYS,
    EscalatingPayment,
    LapsingPayment,
    payment_people,
)
from tests.helpers.graphs import eventually
from tests.helpers.support import SECRET, gate_of, send_decide


@asynccontextmanager
async def worker(client: Client, task_queue: str, people: Identities) -> AsyncIterator[Worker]:
    plugin = LockgatePlugin(POLICY_TOOLS, DEADLINE_GRAPHS, people.directory, secret=SECRET)
    async with Worker(client, task_queue=task_queue, plugins=[plugin]) as running:
        yield running


def desk(client: Client, task_queue: str, people: Identities) -> dict[str, GraphClient]:
    return {
        who: GraphClient(client, task_queue, signer=people.signer(who))
        for who in ("ada", "cal", "olga", "otto", "fran")
    }


async def waiting_for(of: GraphClient, run_id: str, role: str) -> RunView:
    return await eventually(
        lambda: of.show(run_id),
        lambda shown: role_awaited(shown) == role,
        seconds=60,
        what=f"the run to wait for the role {role}",
    )


def role_awaited(run: RunView) -> str | None:
    gate = run.get("awaiting")
    return gate["role"] if gate else None


def deadline_rows(run: RunView) -> list[dict[str, Any]]:
    return [dict(row) for row in run["trail"] if row["operation"] == "deadline"]


async def test_an_undecided_gate_escalates_to_the_finance_lead_at_its_deadline(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    people = payment_people()
    client = time_skipping_env.client
    async with worker(client, task_queue, people):
        as_ = desk(client, task_queue, people)
        run = await as_["ada"].start(EscalatingPayment, PAYMENT)
        await as_["cal"].decide(run["run_id"], "checked")
        escalated = await waiting_for(as_["ada"], run["run_id"], "finance_lead")
        officer = await as_["olga"].decide(run["run_id"], "release")
        done = await as_["fran"].decide(run["run_id"], "release")

    gate = gate_of(escalated)
    assert gate["escalated_from"] == "officer"
    assert gate["gate"] == "release#3"
    assert "policy" not in gate  # the finance lead decides alone
    (row,) = deadline_rows(escalated)
    assert row["outcome"] == "escalated"
    assert row["by"] == {
        "actor": "unverified:(deadline)",
        "verified": False,
        "channel": "(deadline)",
        "principal": None,
        "authorization": None,
    }
    assert row.get("why") == (
        "No decision within 2 days at gate 'release#2': escalated from 'officer' to "
        "'finance_lead', who decides alone at a new opening."
    )
    assert officer["error"]["code"] == "FORBIDDEN"
    assert done["status"] == "finished"
    assert done["fields"]["sent"] is True
    assert done["trail"][-1]["by"]["actor"] == "fran"


async def test_an_undecided_gate_takes_its_declared_option_as_the_system(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    people = payment_people()
    client = time_skipping_env.client
    async with worker(client, task_queue, people):
        as_ = desk(client, task_queue, people)
        run = await as_["ada"].start(LapsingPayment, PAYMENT)
        await as_["cal"].decide(run["run_id"], "checked")
        done = await eventually(
            lambda: as_["ada"].show(run["run_id"]),
            lambda shown: shown.get("status") == "finished",
            seconds=60,
            what="the run to finish",
        )

    (row,) = deadline_rows(done)
    assert row["outcome"] == "timed_out"
    assert row["answer"] == "reject"
    assert row["by"]["actor"] == "unverified:(deadline)"
    assert row.get("why") == (
        "No decision within 2 days: the gate takes 'reject', as its deadline declares."
    )
    assert done["trail"][-1]["node"] == "cancel"
    assert done["trail"][-1]["by"]["actor"] == "unverified:(deadline)"
    assert done["fields"]["sent"] is False


async def test_a_partial_approval_does_not_stop_the_deadline_and_its_proofs_go_stale(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    people = payment_people()
    client = time_skipping_env.client
    async with worker(client, task_queue, people):
        as_ = desk(client, task_queue, people)
        with time_skipping_env.with_time_skipping_disabled():
            run = await as_["ada"].start(EscalatingPayment, PAYMENT)
        await as_["cal"].decide(run["run_id"], "checked")
        partial = await as_["olga"].decide(run["run_id"], "release")
        otto_signed = await as_["otto"].sign_decide(run["run_id"], "release")
        handle = client.get_workflow_handle(run["run_id"])
        assert await time_skipping_env.fast_forward(handle, TWO_DAYS)
        escalated = await waiting_for(as_["ada"], run["run_id"], "finance_lead")
        late = await send_decide(client, run["run_id"], otto_signed)

    assert gate_of(partial)["answers"] == [{"principal": "olga", "option": "release"}]
    assert gate_of(partial)["due_at"] is not None
    assert [row["outcome"] for row in escalated["trail"] if row["node"] == "release"] == [
        "answered",
        "escalated",
    ]
    assert late["ok"] is False
    assert late["error"]["code"] == "GATE_NOT_PENDING"


async def test_a_gate_decided_before_its_deadline_cancels_the_timer(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    people = payment_people()
    client = time_skipping_env.client
    async with worker(client, task_queue, people):
        as_ = desk(client, task_queue, people)
        with time_skipping_env.with_time_skipping_disabled():
            run = await as_["ada"].start(EscalatingPayment, PAYMENT)
        await as_["cal"].decide(run["run_id"], "checked")
        await as_["olga"].decide(run["run_id"], "release")
        done = await as_["otto"].decide(run["run_id"], "release")
        history = await client.get_workflow_handle(run["run_id"]).fetch_history()

    assert done["status"] == "finished"
    assert deadline_rows(done) == []
    kinds = [event.event_type for event in history.events]
    assert kinds.count(EventType.EVENT_TYPE_TIMER_STARTED) == 1
    assert kinds.count(EventType.EVENT_TYPE_TIMER_CANCELED) == 1
    assert EventType.EVENT_TYPE_TIMER_FIRED not in kinds


async def test_a_deadline_passes_while_no_worker_runs_and_is_kept_when_one_returns(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    people = payment_people()
    client = time_skipping_env.client
    as_ = desk(client, task_queue, people)
    async with worker(client, task_queue, people):
        with time_skipping_env.with_time_skipping_disabled():
            run = await as_["ada"].start(EscalatingPayment, PAYMENT)
        waiting = await as_["cal"].decide(run["run_id"], "checked")
    handle = client.get_workflow_handle(run["run_id"])
    assert await time_skipping_env.fast_forward(handle, TWO_DAYS)
    async with worker(client, task_queue, people):
        escalated = await waiting_for(as_["ada"], run["run_id"], "finance_lead")

    assert gate_of(waiting)["role"] == "officer"
    assert [row["outcome"] for row in deadline_rows(escalated)] == ["escalated"]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def short_history_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server that suggests continue-as-new after 150 history events."""
    environment = await WorkflowEnvironment.start_time_skipping_v2(
        dev_server_existing_path=str(temporal_binary()),
        search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
        dev_server_extra_args=[
            "--dynamic-config-value",
            "frontend.WorkflowTimeSkippingEnabled=true",
            "--dynamic-config-value",
            "limit.historyCount.suggestContinueAsNew=150",
        ],
        ui=False,
    )
    yield environment
    await environment.shutdown()


async def test_a_run_that_moves_to_a_new_history_keeps_its_gate_deadline(
    short_history_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    environment = short_history_skipping_env
    people = payment_people()
    client = environment.client
    async with worker(client, task_queue, people):
        as_ = desk(client, task_queue, people)
        with environment.with_time_skipping_disabled():
            run = await as_["ada"].start(EscalatingPayment, PAYMENT)
        waiting = await as_["cal"].decide(run["run_id"], "checked")
        handle = client.get_workflow_handle(run["run_id"])
        # Unsigned answers are refused into the trail; enough of them grow the history until the
        # server suggests a new one, which the run takes while its gate waits.
        for _ in range(120):
            await handle.signal("decide", {"choice": "release"})
        moved = await eventually(
            lambda: handle.describe(),
            lambda described: described.run_id != waiting["execution"],
            seconds=60,
            what="the run to continue as new",
        )
        assert await environment.fast_forward(handle, TWO_DAYS)
        escalated = await waiting_for(as_["ada"], run["run_id"], "finance_lead")

    assert moved.run_id != run["execution"]
    assert [row["outcome"] for row in deadline_rows(escalated)] == ["escalated"]
    assert gate_of(escalated)["escalated_from"] == "officer"

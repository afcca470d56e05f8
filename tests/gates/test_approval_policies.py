"""Dual and quorum approval: each approver judged as a single answer is, counted once, and
what the answers decide when they agree and when they do not.

Every run is started by ada and checked by cal, so it waits at the officers' ``release`` gate
with ada as its requester and cal as a maker of the work it reviews (see
``tests.helpers.gate_graphs``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from lockgate import GraphClient
from lockgate.cli._runs import gate_rules
from lockgate.contracts import GateView, RunView
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.gate_graphs import (
    PAYMENT,
    POLICY_GRAPHS,
    DualPayment,
    DualRejectingPayment,
    PanelPayment,
    QuorumVetoPayment,
    payment_people,
)
from tests.helpers.graphs import event_types, eventually
from tests.helpers.support import assert_nothing_written_but_a_workflow_task, gate_of


class Desk:
    """One GraphClient per person of :func:`payment_people`."""

    def __init__(self, client: Client, task_queue: str, people: Identities) -> None:
        self.people = people
        self.of = {
            who: GraphClient(
                client, task_queue, signer=people.signer(who), directory=people.directory
            )
            for who in ("ada", "cal", "olga", "otto", "owen", "pete", "nora")
        }
        self.nobody = GraphClient(client, task_queue)

    async def at_the_release_gate(self, graph: type) -> RunView:
        run = await self.of["ada"].start(graph, PAYMENT)
        checked = await self.of["cal"].decide(run["run_id"], "checked")
        assert gate_of(checked)["ask"] == "release", checked
        return checked


def answers_of(run: RunView) -> list[dict[str, Any]]:
    return [dict(answer) for answer in gate_of(run).get("answers", [])]


def answer_rows(run: RunView) -> list[tuple[str | None, str | None, str]]:
    return [
        (row["by"]["actor"], row.get("answer"), row["outcome"])
        for row in run["trail"]
        if row["node"] == "release"
    ]


async def test_two_different_officers_release_a_dual_gate(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        first = await desk.of["olga"].decide(run["run_id"], "release")
        second = await desk.of["otto"].decide(run["run_id"], "release")
        whole = await desk.of["otto"].show(run["run_id"])

    assert first["status"] == "waiting"
    assert answers_of(first) == [{"principal": "olga", "option": "release"}]
    assert gate_of(first)["policy"]["approvals"] == 2
    assert second["status"] == "finished"
    assert second["fields"]["sent"] is True
    assert answer_rows(whole) == [("olga", "release", "answered"), ("otto", "release", "answered")]
    # Each answer's own result carries the rows it added.
    assert answer_rows(first) == [("olga", "release", "answered")]
    assert answer_rows(second) == [("otto", "release", "answered")]
    last = [row for row in second["trail"] if row["node"] == "release"][-1]
    assert last["decided"] == "release"
    assert last["counts"] == {"release": 2, "reject": 0}
    assert second["trail"][-1]["node"] == "send"
    assert second["trail"][-1]["by"]["actor"] == "otto"


async def test_a_partial_approval_shows_in_pending_with_who_answered(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        await desk.of["olga"].decide(run["run_id"], "release")
        rows = await eventually(
            lambda: desk.of["olga"].pending(of="officer"),
            lambda found: any(
                row["run_id"] == run["run_id"] and row.get("answers") for row in found
            ),
            what="the partial approval in pending",
        )
        otto_sees = await desk.of["otto"].pending(of="officer")

    row = next(row for row in rows if row["run_id"] == run["run_id"])
    assert row["answers"] == [{"principal": "olga", "option": "release"}]
    assert row["policy"]["name"] == "dual"
    assert [choice["because"] for choice in row["choices"]] == ["answered", "answered"]
    otto_row = next(found for found in otto_sees if found["run_id"] == run["run_id"])
    assert [choice["may"] for choice in otto_row["choices"]] == [True, True]


async def test_the_same_officer_twice_is_refused_and_nothing_is_written(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        await desk.of["olga"].decide(run["run_id"], "release")
        before = await event_types(temporal_client, run["run_id"])
        again = await desk.of["olga"].decide(run["run_id"], "release")
        after = await event_types(temporal_client, run["run_id"])
        still = await desk.of["ada"].show(run["run_id"])

    assert again["ok"] is False
    assert again["error"]["code"] == "ALREADY_ANSWERED"
    assert again["error"]["message"] == (
        "olga already answered 'release' at gate 'release#2', and each approver counts once: "
        "its dual policy needs 2 different people."
    )
    assert_nothing_written_but_a_workflow_task(before, after)
    assert answers_of(still) == [{"principal": "olga", "option": "release"}]


async def test_the_requester_cannot_be_the_second_officer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        await desk.of["olga"].decide(run["run_id"], "release")
        refused = await desk.of["ada"].decide(run["run_id"], "release")

    assert refused["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert refused["error"]["message"].startswith("ada opened this gate")


async def test_a_maker_of_the_work_cannot_be_the_second_officer(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        await desk.of["olga"].decide(run["run_id"], "release")
        refused = await desk.of["cal"].decide(run["run_id"], "release")

    assert gate_of(run)["makers"] == ["cal"]
    assert refused["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert refused["error"]["message"].startswith("cal drove work this gate reviews")


async def test_an_unsigned_second_answer_is_refused_as_an_unverified_approver(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        await desk.of["olga"].decide(run["run_id"], "release")
        refused = await desk.nobody.decide(run["run_id"], "release")
        still = await desk.of["ada"].show(run["run_id"])

    assert refused["error"]["code"] == "UNVERIFIED_APPROVER"
    assert still["status"] == "waiting"
    assert len(answers_of(still)) == 1


async def test_a_second_answer_from_someone_without_the_role_or_the_scope_is_refused(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        await desk.of["olga"].decide(run["run_id"], "release")
        not_an_officer = await desk.of["nora"].decide(run["run_id"], "release")
        may_not_send = await desk.of["pete"].decide(run["run_id"], "release")

    assert not_an_officer["error"]["code"] == "FORBIDDEN"
    assert "does not hold the role 'officer'" in not_an_officer["error"]["message"]
    assert may_not_send["error"]["code"] == "FORBIDDEN"
    assert "payment:send" in may_not_send["error"]["message"]


async def test_a_disagreement_at_a_dual_gate_waits_for_a_third_who_agrees(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        await desk.of["olga"].decide(run["run_id"], "release")
        split = await desk.of["otto"].decide(run["run_id"], "reject")
        settled = await desk.of["owen"].decide(run["run_id"], "reject")

    assert split["status"] == "waiting"
    assert answers_of(split) == [
        {"principal": "olga", "option": "release"},
        {"principal": "otto", "option": "reject"},
    ]
    assert settled["status"] == "finished"
    assert settled["fields"]["sent"] is False
    assert settled["trail"][-1]["node"] == "cancel"


async def test_any_rejection_rejects_decides_on_the_first_no(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        dual = await desk.at_the_release_gate(DualRejectingPayment)
        await desk.of["olga"].decide(dual["run_id"], "release")
        dual_done = await desk.of["otto"].decide(dual["run_id"], "reject")
        quorum = await desk.at_the_release_gate(QuorumVetoPayment)
        quorum_done = await desk.of["owen"].decide(quorum["run_id"], "reject")

    # Each took its policy's rejection, and ran to its end: declined.
    assert dual_done["status"] == "declined"
    assert dual_done["trail"][-1]["node"] == "cancel"
    assert quorum_done["status"] == "declined"
    decided = [row for row in quorum_done["trail"] if row["node"] == "release"]
    assert decided[-1]["decided"] == "reject"
    assert "any rejection rejects" in decided[-1]["why"]
    assert quorum_done["trail"][-1]["node"] == "cancel"


async def test_a_panel_that_can_no_longer_agree_takes_its_declared_rejection(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(PanelPayment)
        await desk.of["olga"].decide(run["run_id"], "release")
        done = await desk.of["otto"].decide(run["run_id"], "reject")

    rows = [row for row in done["trail"] if row["node"] == "release"]
    assert rows[-1]["decided"] == "reject"
    assert "can no longer give 2 matching answers" in rows[-1]["why"]
    assert done["trail"][-1]["node"] == "cancel"


async def test_a_quorum_counts_three_distinct_officers(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(QuorumVetoPayment)
        one = await desk.of["olga"].decide(run["run_id"], "release")
        two = await desk.of["otto"].decide(run["run_id"], "release")
        three = await desk.of["owen"].decide(run["run_id"], "release")

    assert (one["status"], two["status"], three["status"]) == ("waiting", "waiting", "finished")
    assert three["fields"]["sent"] is True


async def test_two_officers_answering_at_once_both_count(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        olga, otto = await asyncio.gather(
            desk.of["olga"].sign_decide(run["run_id"], "release"),
            desk.of["otto"].sign_decide(run["run_id"], "release"),
        )
        handle = temporal_client.get_workflow_handle(run["run_id"])
        await asyncio.gather(
            handle.execute_update("decide", olga, result_type=dict),
            handle.execute_update("decide", otto, result_type=dict),
        )
        done = await eventually(
            lambda: desk.of["ada"].show(run["run_id"]),
            lambda shown: shown.get("status") == "finished",
            what="the run to finish",
        )

    assert sorted(str(actor) for actor, _, _ in answer_rows(done)) == ["olga", "otto"]


async def test_the_same_officer_twice_at_once_counts_once(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        first = await desk.of["olga"].sign_decide(run["run_id"], "release")
        second = await desk.of["olga"].sign_decide(run["run_id"], "release")
        handle = temporal_client.get_workflow_handle(run["run_id"])
        outcomes = await asyncio.gather(
            handle.execute_update("decide", first, result_type=dict),
            handle.execute_update("decide", second, result_type=dict),
            return_exceptions=True,
        )
        still = await desk.of["ada"].show(run["run_id"])

    refused = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert len(refused) == 1
    assert isinstance(refused[0], WorkflowUpdateFailedError)
    assert isinstance(refused[0].cause, ApplicationError)
    assert refused[0].cause.type == "ALREADY_ANSWERED"
    assert still["status"] == "waiting"
    assert answers_of(still) == [{"principal": "olga", "option": "release"}]


async def test_the_same_officer_twice_by_signal_is_refused_into_the_trail(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = payment_people()
    async with lockgate_worker(graphs=POLICY_GRAPHS, directory=people.directory):
        desk = Desk(temporal_client, task_queue, people)
        run = await desk.at_the_release_gate(DualPayment)
        handle = temporal_client.get_workflow_handle(run["run_id"])
        await handle.signal("decide", await desk.of["olga"].sign_decide(run["run_id"], "release"))
        await handle.signal("decide", await desk.of["olga"].sign_decide(run["run_id"], "release"))
        await handle.signal("decide", await desk.of["otto"].sign_decide(run["run_id"], "release"))
        done = await eventually(
            lambda: desk.of["ada"].show(run["run_id"]),
            lambda shown: shown.get("status") == "finished",
            what="the run to finish",
        )

    assert answer_rows(done) == [
        ("olga", "release", "answered"),
        ("olga", "release", "refused"),
        ("otto", "release", "answered"),
    ]
    refused = [row for row in done["trail"] if row["outcome"] == "refused"]
    assert refused[0]["code"] == "ALREADY_ANSWERED"


def test_the_cli_says_what_a_gate_of_several_approvers_has_so_far() -> None:
    gate: GateView = {
        "graph": "pay:dual",
        "run_id": "r",
        "execution": "e",
        "gate": "release#2",
        "ask": "release",
        "role": "officer",
        "because": "",
        "requester": "ada",
        "choices": [],
        "subject": "",
        "makers": [],
        "policy": {
            "name": "quorum",
            "approvals": 2,
            "panel": 3,
            "rejection": "reject",
            "any_rejection_rejects": True,
        },
        "answers": [{"principal": "olga", "option": "release"}],
    }
    assert gate_rules(gate) == [
        "quorum: needs 2 matching answers of a panel of 3; any 'reject' rejects; 1 so far "
        "(olga → release)"
    ]

"""Saved histories of runs answered at gates, graphs' and workflows' of your own, replay on
today's code, with no server.

Under ``tests/histories/answers/``: an essay answered twice (``one_more_round``, then
``publish_as_is``), a memo shelved (``shelve``, its gate's rejection: the run ends ``declined``)
and a refund of a workflow of your own (read, approved, issued, closed), as today's code records
them; regenerate those after a deliberate change to what a run writes::

    LOCKGATE_REGENERATE_HISTORIES=1 .venv/bin/pytest tests/workflows/test_replay_answers.py

``answers/before_quiet_answers/refund.json`` is the same refund as lockgate recorded it before
its runs stopped writing visibility at answers (protocol 2: an upsert of ``running`` after every
decision, the memo taken out at once) and before a signed start recorded what the run opens
with (its start check, ``lockgate.open_workflow_start``, a local activity of its own), and is
never recorded again: today's code must keep replaying a run in flight across that upgrade.
(The graphs' own histories of that time are the other saved histories, under
``tests/histories/`` and ``tests/histories/gates/``.)

``answers/before_declined/memo_shelved.json`` is the memo shelved as lockgate recorded it before
a run its last gate declined ended ``declined`` (protocol 3), and before the memo clearance's
gate named ``shelve`` its rejection; it is never recorded again: under today's declaration it
must end ``finished`` as it did, writing nothing more.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from lockgate import Ask, Edge, GraphClient, LockgatePlugin, Route, Target, graph
from lockgate.examples.essay_review import EssayReview
from lockgate.examples.memo_clearance import (
    MemoClearance,
    Scan,
    Signoff,
    check,
    prepare,
    release,
    shelve,
)
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, DIRTY_MEMO, essay_people
from tests.helpers.own_workflow_support import open_gate_of, support_people
from tests.helpers.own_workflows import OWN_TOOLS, RefundRequest, RefundWorkflow
from tests.helpers.saved_histories import (
    HISTORIES,
    HISTORY_SECRET,
    REGENERATE,
    SEALED_SINCE,
    save,
)

ESSAY_PEOPLE = essay_people(
    rita={"roles": ["editor"], "scopes": ["essay:publish"]},
    rod={"roles": ["officer"], "scopes": ["memo:release"]},
)
SAVED = {
    "answers/essay_answered_twice": "replay-essay_answered_twice",
    "answers/memo_shelved": "replay-memo_shelved",
    "answers/before_declined/memo_shelved": "replay-memo_shelved",
    "answers/refund": "replay-refund",
    "answers/before_quiet_answers/refund": "replay-refund",
}
"""Each saved history, and the workflow id it was recorded under."""


def replayer(graphs: list[type] | None = None, **options: Any) -> Replayer:
    """Replays the graphs' and the refund workflow's histories, with the histories' secret."""
    plugin = LockgatePlugin(
        graphs=graphs or [EssayReview, MemoClearance],
        tools=OWN_TOOLS,
        secret=HISTORY_SECRET,
        metrics=True,
        unsealed_runs_before=SEALED_SINCE,
        **options,
    )
    return Replayer(workflows=[RefundWorkflow], plugins=[plugin])


@pytest.mark.skipif(not REGENERATE, reason="set LOCKGATE_REGENERATE_HISTORIES=1 to re-record")
async def test_record_the_saved_answer_histories(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    (HISTORIES / "answers").mkdir(exist_ok=True)
    as_ = {
        who: GraphClient(temporal_client, task_queue, signer=ESSAY_PEOPLE.signer(who))
        for who in ("ada", "ed", "rita", "rod")
    }
    async with lockgate_worker(
        graphs=[EssayReview, MemoClearance],
        directory=ESSAY_PEOPLE.directory,
        secret=HISTORY_SECRET,
    ):
        essay = await as_["ada"].start(
            EssayReview, ALWAYS_FAILS, run_id=SAVED["answers/essay_answered_twice"]
        )
        again = await as_["ed"].decide(essay["run_id"], "one_more_round")
        assert again["status"] == "waiting"
        assert (await as_["rita"].decide(essay["run_id"], "publish_as_is"))["status"] == "finished"
        await save(temporal_client, essay["run_id"], "answers/essay_answered_twice")
        memo = await as_["ada"].start(
            MemoClearance, DIRTY_MEMO, run_id=SAVED["answers/memo_shelved"]
        )
        assert (await as_["rod"].decide(memo["run_id"], "shelve"))["status"] == "declined"
        await save(temporal_client, memo["run_id"], "answers/memo_shelved")
    await record_refund(lockgate_worker, temporal_client, task_queue, "answers/refund")


async def record_refund(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, name: str
) -> None:
    """A refund read as ada, approved by lee, issued as lee, closed by mo; saved as ``name``."""
    people = support_people()
    plugin = LockgatePlugin(tools=OWN_TOOLS, directory=people.directory, secret=HISTORY_SECRET)
    as_ = {
        who: GraphClient(temporal_client, task_queue, signer=people.signer(who))
        for who in ("ada", "lee", "mo")
    }
    async with lockgate_worker(plugin=plugin, workflows=[RefundWorkflow]):
        handle = await as_["ada"].start_workflow(
            RefundWorkflow.run, RefundRequest(ticket=42, amount=120), id=SAVED[name]
        )
        await open_gate_of(temporal_client, task_queue, handle.id, "refund#1")
        assert (await as_["lee"].decide(handle.id, "issue"))["ok"] is True
        await open_gate_of(temporal_client, task_queue, handle.id, "closure#2")
        assert (await as_["mo"].decide(handle.id, "close"))["ok"] is True
        await save(temporal_client, handle.id, name)


@pytest.mark.parametrize("name", SAVED)
async def test_a_saved_answer_history_replays_on_todays_code(name: str) -> None:
    history = WorkflowHistory.from_json(SAVED[name], (HISTORIES / f"{name}.json").read_text())

    result = await replayer().replay_workflow(history, raise_on_replay_failure=False)

    assert result.replay_failure is None


@graph(
    "memo:clearance",
    "The memo clearance as declared before its gate named its rejection.",
    start=prepare,
    edges=[Edge(prepare, check)],
    routes=[
        Route(Scan.CLEAN, to=release),
        Route(Scan.DIRTY, to=prepare, at_most=1, then_ask=Signoff),
        Route(Signoff.RELEASE, to=release),
        Route(Signoff.SHELVE, to=shelve),
    ],
    asks=[Ask(Signoff, of="officer", because="The memo still reads dirty after a second pass.")],
)
class MemoClearanceWithoutRejection(BaseModel):
    memo: Annotated[str, Target()]
    findings: str = ""
    scan: Scan | None = None
    released: bool = False


async def test_a_run_recorded_declined_replays_after_its_gate_stops_naming_a_rejection() -> None:
    """Every run from protocol 4 on writes its ending status to its memo, whatever its graph
    declares: a gate's ``rejection`` may come or go under runs in flight (only the value
    written differs, which replay does not compare)."""
    history = WorkflowHistory.from_json(
        SAVED["answers/memo_shelved"], (HISTORIES / "answers/memo_shelved.json").read_text()
    )

    result = await replayer([MemoClearanceWithoutRejection]).replay_workflow(
        history, raise_on_replay_failure=False
    )

    assert result.replay_failure is None

"""Saved histories of the example graphs replay on today's code, with no server.

The histories under ``tests/histories/`` were recorded on the dev server, one per example graph
through a representative path (plus a park-and-resume run of a test graph). Regenerate them after
a deliberate change to the interpreter or to an example graph::

    LOCKGATE_REGENERATE_HISTORIES=1 .venv/bin/pytest tests/workflows/test_replay.py

A history that no longer replays means a run already in flight would break on the new code:
give the graph a new ``version=`` instead, or keep the old behaviour.

The histories under ``unsealed/`` are never re-recorded, as a run in flight across each upgrade
must keep running. All were recorded before lockgate sealed what its workers accept and record,
and replay on a worker told so (``unsealed_runs_before``):

- ``unsealed/essay_review`` and its siblings: the same runs as the saved histories;
- ``unsealed/essay_review_before_local_tools``: an essay run from before its writer and grader
  were declared ``local=True``, when every node was a regular activity;
- ``unsealed/marked/``: the same runs, from before a run named its local tools in its start check
  and recorded its version only past version 1, when each run wrote a patch marker for its
  version and for each tool it ran local.
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import Client

from lockgate import GraphClient, Signer
from lockgate.activities._activity_inputs import RUN_PROTOCOL, SETTLING_PROTOCOL
from lockgate.contracts import RunView
from lockgate.examples.essay_review import EssayReview
from lockgate.examples.memo_clearance import MemoClearance
from lockgate.examples.publish_post import PublishPost
from lockgate.identity._bindings import answer_binding
from lockgate.identity._seals import WorkerSecret
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._failures import refusals_complete
from tests.helpers.graphs import (
    ALWAYS_FAILS,
    DIRTY_MEMO,
    EssayReviewReshaped,
    Ledger,
    eventually,
)
from tests.helpers.saved_histories import (
    BEFORE_LOCAL_TOOLS,
    HISTORIES,
    HISTORY_SECRET,
    REGENERATE,
    UNSEALED,
    replayer,
    run_id_of,
    save,
    saved_history,
)
from tests.helpers.support import gate_of

GRAPHS = [EssayReview, MemoClearance, PublishPost, Ledger]
SAVED = ["essay_review", "ledger_entry", "memo_clearance", "publish_post"]
UNSEALED_SAVED = [f"{UNSEALED}/{name}" for name in SAVED]
MARKED = [f"{UNSEALED}/marked/{name}" for name in SAVED]


# --- Recording (only with LOCKGATE_REGENERATE_HISTORIES=1; runs first, so the replays below see it)


def signal_decide(signer: Signer, run: RunView, choice: str) -> dict[str, Any]:
    return signer.sign(answer_binding(gate_of(run), choice))


@pytest.mark.skipif(not REGENERATE, reason="set LOCKGATE_REGENERATE_HISTORIES=1 to re-record")
async def test_record_the_saved_histories(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = Identities(
        {
            "ada": {},
            "agent-7": {},
            "ed": {"roles": ["editor"], "scopes": ["essay:publish", "post:publish"]},
            "eve": {"roles": ["editor"], "scopes": ["post:publish"]},
            "rod": {"roles": ["officer"], "scopes": ["memo:release"]},
            "poppy": {"scopes": ["ledger:post"]},
        }
    )
    HISTORIES.mkdir(exist_ok=True)
    as_ = {who: GraphClient(temporal_client, task_queue, signer=people.signer(who))
           for who in ("ada", "agent-7", "ed", "eve", "rod", "poppy")}  # fmt: skip
    async with lockgate_worker(graphs=GRAPHS, directory=people.directory, secret=HISTORY_SECRET):
        # Essay: always fails, the requester's own answer arrives as a signal and is refused into
        # the trail, then an editor publishes it through the update.
        essay = await as_["ada"].start(EssayReview, ALWAYS_FAILS, run_id=run_id_of("essay_review"))
        handle = temporal_client.get_workflow_handle(essay["run_id"])
        await handle.signal("decide", signal_decide(people.signer("ada"), essay, "abandon"))
        await eventually(
            lambda: as_["ada"].show(essay["run_id"]),
            lambda shown: shown["trail"][-1]["outcome"] == "refused",
            what="the refused signal in the trail",
        )
        assert (await as_["ed"].decide(essay["run_id"], "publish_as_is"))["status"] == "finished"
        await save(temporal_client, essay["run_id"], "essay_review")

        memo = await as_["agent-7"].start(
            MemoClearance, DIRTY_MEMO, run_id=run_id_of("memo_clearance")
        )
        assert (await as_["rod"].decide(memo["run_id"], "release"))["status"] == "finished"
        await save(temporal_client, memo["run_id"], "memo_clearance")

        post = await as_["ada"].start(
            PublishPost, {"topic": "Tide tables"}, run_id=run_id_of("publish_post")
        )
        assert (await as_["ed"].decide(post["run_id"], "reject"))["status"] == "waiting"
        # ed drove the redraft, so another editor approves it (four eyes).
        assert (await as_["eve"].decide(post["run_id"], "approve"))["status"] == "finished"
        await save(temporal_client, post["run_id"], "publish_post")

        ledger = await as_["ada"].start(Ledger, {"entry": "Rent"}, run_id=run_id_of("ledger_entry"))
        assert ledger["status"] == "parked"
        assert (await as_["poppy"].resume(ledger["run_id"]))["status"] == "finished"
        await save(temporal_client, ledger["run_id"], "ledger_entry")


# --- Replaying (no server) -----------------------------------------------------------------------


def test_every_example_graph_has_a_saved_history_sealed_and_one_unsealed() -> None:
    saved = sorted(path.stem for path in HISTORIES.glob("*.json"))
    unsealed = sorted(f"{UNSEALED}/{path.stem}" for path in (HISTORIES / UNSEALED).glob("*.json"))
    assert saved == sorted(SAVED)
    assert unsealed == sorted([*UNSEALED_SAVED, BEFORE_LOCAL_TOOLS])


@pytest.mark.parametrize("name", [*SAVED, *UNSEALED_SAVED, BEFORE_LOCAL_TOOLS, *MARKED])
async def test_a_saved_history_replays_on_todays_code(name: str) -> None:
    result = await replayer(GRAPHS).replay_workflow(
        saved_history(name), raise_on_replay_failure=False
    )
    assert result.replay_failure is None


@pytest.mark.parametrize("name", SAVED)
async def test_a_sealed_history_replays_on_a_worker_that_believes_no_unsealed_history(
    name: str,
) -> None:
    result = await replayer(GRAPHS, unsealed_runs_before=None).replay_workflow(
        saved_history(name), raise_on_replay_failure=False
    )
    assert result.replay_failure is None


@pytest.mark.parametrize("name", [*UNSEALED_SAVED, BEFORE_LOCAL_TOOLS, *MARKED])
async def test_an_unsealed_history_stops_a_worker_not_told_its_run_predates_seals(
    name: str,
) -> None:
    """What a worker without the worker secret writes looks exactly like a history from before
    seals: without ``unsealed_runs_before`` none of it is believed."""
    result = await replayer(GRAPHS, unsealed_runs_before=None).replay_workflow(
        saved_history(name), raise_on_replay_failure=False
    )
    assert result.replay_failure is not None
    assert "carries no seal of this deployment's workers" in str(result.replay_failure)


async def test_a_sealed_history_stops_a_worker_of_another_deployment() -> None:
    """Seals open only under the worker secret that made them."""
    result = await replayer(GRAPHS, secret=WorkerSecret.generate("other")).replay_workflow(
        saved_history("essay_review"), raise_on_replay_failure=False
    )
    assert result.replay_failure is not None
    assert "which this worker's secret does not list" in str(result.replay_failure)


async def test_a_sealed_history_replays_after_the_worker_secret_is_rotated() -> None:
    """A rotated secret keeps its old key listed: what it sealed still opens."""
    result = await replayer(GRAPHS, secret=HISTORY_SECRET.rotated()).replay_workflow(
        saved_history("essay_review"), raise_on_replay_failure=False
    )
    assert result.replay_failure is None


async def test_a_history_does_not_replay_on_a_reshaped_graph_of_the_same_name() -> None:
    result = await replayer([EssayReviewReshaped]).replay_workflow(
        saved_history("essay_review"), raise_on_replay_failure=False
    )
    assert result.replay_failure is not None


@pytest.mark.parametrize(
    ("recorded", "completes"),
    [(1, False), (SETTLING_PROTOCOL, True), (RUN_PROTOCOL, True), (RUN_PROTOCOL + 1, True)],
)
def test_a_run_keeps_the_refusal_its_recorded_protocol_chose_under_any_later_protocol(
    recorded: int, completes: bool
) -> None:
    """A run recorded with protocol 2 ends refused as a completed run however far today's
    protocol has moved on; one recorded before protocol 2 fails with its refusal, as it did."""
    assert refusals_complete(recorded, "never-asked: the protocol decides") is completes

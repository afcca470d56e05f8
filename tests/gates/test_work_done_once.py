"""What an answer costs the worker, done once: the proof's signature is checked once (by the
validator that judges it, before anything is written: the handler that takes it, and every
replay, reads the proof the validator accepted and the seal its worker recorded), and an open
gate's record is built once for its memo and every view of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from temporalio.client import Client

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.gates._gates import OpenGate
from lockgate.identity._verifier import Verifier
from lockgate.testing import WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, essay_people
from tests.helpers.support import gate_of

PEOPLE = essay_people(rita={"roles": ["editor"], "scopes": ["essay:publish"]})


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> Iterator[list[str]]:
    """Counts the calls of ``owner.name`` made meanwhile (its first argument's type named)."""
    calls: list[str] = []
    original = getattr(owner, name)

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(type(self).__name__)
        return original(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(owner, name, counting)
        yield calls


async def test_each_proof_is_verified_once_and_each_gate_opening_recorded_once(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ada, ed, rita = (
        GraphClient(temporal_client, task_queue, signer=PEOPLE.signer(who))
        for who in ("ada", "ed", "rita")
    )
    async with lockgate_worker(graphs=[EssayReview], directory=PEOPLE.directory):
        with (
            counted(monkeypatch, Verifier, "verify_proof") as verified,
            counted(monkeypatch, OpenGate, "to_dict") as recorded,
        ):
            run = await ada.start(EssayReview, ALWAYS_FAILS)
            again = await ed.decide(run["run_id"], "one_more_round", shown=run)
            done = await rita.decide(run["run_id"], "publish_as_is", shown=again)

    assert gate_of(again)["gate"] == "editor_call#2" and done["status"] == "finished"
    # The start, and each answer: one check of a signature each.
    assert verified == ["Verifier"] * 3
    # Two openings, each written to the memo and shown in the answer that found it open.
    assert recorded == ["OpenGate"] * 2

"""Hostile input against a live run: every payload refused with a code, nothing wedged or lost.

Hypothesis throws arbitrary JSON and doctored proofs at one run waiting at a gate, as updates
and as signals. Each update is refused with a typed code and a sentence; each signal is judged,
refused and recorded in the trail; no workflow task fails; afterwards a valid answer still
goes through.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.worker import Worker

from lockgate import ErrorCode, GraphClient, LockgatePlugin
from lockgate.contracts import GateView
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding
from lockgate.testing import Identities
from tests.helpers.graphs import ALWAYS_FAILS
from tests.helpers.support import gate_of, outcome

CODES = {code.value for code in ErrorCode}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


@dataclass
class Target:
    client: Client
    handle: WorkflowHandle[Any, Any]
    people: Identities
    run_id: str
    gate: str
    shown_gate: GateView
    tried: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str) -> None:
        self.tried[kind] = self.tried.get(kind, 0) + 1

    def answer(self, who: str = "ed", **overrides: Any) -> dict[str, Any]:
        authorizes = {**answer_binding(self.shown_gate, "publish_as_is"), **overrides}
        return self.people.signer(who).sign(authorizes)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def target(temporal_client: Client) -> AsyncIterator[Target]:
    people = Identities(
        {"ada": {}, "ed": {"roles": ["editor"], "scopes": ["essay:publish"]}, "eve": {}}
    )
    task_queue = "hostile-input"
    plugin = LockgatePlugin(graphs=[EssayReview], directory=people.directory, secret=people.secret)
    async with Worker(temporal_client, task_queue=task_queue, plugins=[plugin]):
        run = await GraphClient(temporal_client, task_queue, signer=people.signer("ada")).start(
            EssayReview, ALWAYS_FAILS
        )
        handle = temporal_client.get_workflow_handle(run["run_id"])
        yield Target(
            temporal_client,
            handle,
            people,
            run["run_id"],
            gate_of(run)["gate"],
            gate_of(run),
        )


async def _refused_update(target: Target, name: str, payload: Any) -> str:
    try:
        await target.handle.execute_update(name, payload, result_type=dict)
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        code = getattr(cause, "type", None)
        assert code in CODES, f"untyped refusal {code!r}: {cause}"
        assert getattr(cause, "message", ""), "a refusal says why"
        return str(code)
    raise AssertionError(f"{name} accepted hostile payload {payload!r}")


def _doctored(proof: dict[str, Any], how: str, data: st.DataObject) -> Any:
    doctored = copy.deepcopy(proof)
    if how == "truncated":
        return doctored | {"signature": doctored["signature"][: data.draw(st.integers(0, 85))]}
    if how == "flipped":
        signature = doctored["signature"]
        at = data.draw(st.integers(0, len(signature) - 1))
        flipped = "A" if signature[at] != "A" else "B"
        return doctored | {"signature": signature[:at] + flipped + signature[at + 1 :]}
    if how == "altered":
        doctored["authorizes"]["choice"] = data.draw(st.sampled_from(["abandon", "one_more_round"]))
        return doctored
    if how == "dropped":
        doctored.pop(data.draw(st.sampled_from(sorted(doctored))))
        return doctored
    if how == "as_string":
        return json.dumps(doctored)
    raise AssertionError(how)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(payload=json_values)
async def test_arbitrary_json_as_a_decide_update_is_refused_with_a_code(
    target: Target, payload: Any
) -> None:
    code = await _refused_update(target, "decide", payload)
    target.count("decide update: arbitrary JSON")

    assert code == "UNVERIFIED_APPROVER"


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(payload=json_values)
async def test_arbitrary_json_as_a_resume_update_is_refused_with_a_code(
    target: Target, payload: Any
) -> None:
    code = await _refused_update(target, "resume", payload)
    target.count("resume update: arbitrary JSON")

    assert code == "UNAUTHORIZED"


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    how=st.sampled_from(["truncated", "flipped", "altered", "dropped", "as_string"]),
    data=st.data(),
)
async def test_a_doctored_proof_is_refused_as_unverified(
    target: Target, how: str, data: st.DataObject
) -> None:
    code = await _refused_update(target, "decide", _doctored(target.answer(), how, data))
    target.count(f"decide update: {how} proof")

    assert code == "UNVERIFIED_APPROVER"


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    how=st.sampled_from(["other_run", "other_gate", "other_graph", "expired", "other_key"]),
)
async def test_a_well_signed_proof_for_something_else_is_refused(target: Target, how: str) -> None:
    if how == "other_run":
        proof = target.answer(run="essay:review-somewhere-else")
    elif how == "other_gate":
        proof = target.answer(gate="editor_call#7")
    elif how == "other_graph":
        proof = target.answer(graph="memo:clearance")
    elif how == "expired":
        proof = _signed_at(target, target.answer(), offset=-3600)
    else:
        proof = target.answer(who="eve") | {"principal": "ed"}

    code = await _refused_update(target, "decide", proof)
    target.count(f"decide update: proof for {how}")

    assert (
        code
        == {
            "other_run": "UNVERIFIED_APPROVER",
            "other_gate": "GATE_NOT_PENDING",
            "other_graph": "NOT_FOUND",
            "expired": "UNVERIFIED_APPROVER",
            "other_key": "UNVERIFIED_APPROVER",
        }[how]
    )


def _signed_at(target: Target, proof: dict[str, Any], offset: int) -> dict[str, Any]:
    from lockgate import Signer

    signer = target.people.signer("ed")
    clock_signer = Signer(
        "ed", target.people.key("ed"), channel="cli", clock=lambda: proof["issued_at"] + offset
    )
    assert signer.principal == clock_signer.principal
    return clock_signer.sign(proof["authorizes"])


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(["decide", "resume", "nonsense"]), payload=json_values)
async def test_arbitrary_json_as_a_signal_is_judged_refused_and_recorded(
    target: Target, name: str, payload: Any
) -> None:
    earlier = await target.handle.query("show")
    before = _judged(earlier)

    await target.handle.signal(name, payload)
    shown = await target.handle.query("show")
    while _judged(shown) == before:
        shown = await target.handle.query("show")
    target.count(f"signal '{name}': arbitrary JSON")

    assert _judged(shown) == before + 1
    assert shown["status"] == "waiting"
    if shown["trail_total"] > earlier["trail_total"]:
        # Kept as a row (the first refused signals are; later ones are counted).
        row = shown["trail"][-1]
        assert row["outcome"] == "refused"
        assert row["code"] in CODES and row["why"]


def _judged(shown: dict[str, Any]) -> int:
    """Signals recorded so far: trail rows plus the refused ones only counted."""
    return int(shown["trail_total"]) + int(shown.get("refused_signals_not_kept", 0))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(payload=json_values)
async def test_arbitrary_json_as_a_start_input_ends_the_run_refused_without_a_failed_task(
    target: Target, payload: Any
) -> None:
    run_id = f"essay:review-hostile-{uuid.uuid4().hex[:12]}"
    handle = await target.client.start_workflow(
        "essay:review", payload, id=run_id, task_queue="hostile-input"
    )
    result = await outcome(handle)
    history = await handle.fetch_history()
    target.count("start input: arbitrary JSON")

    assert result["status"] == "refused"
    # Malformed, or well formed but unsigned (a graph with gates starts only from a signed start).
    assert (
        result["error"]["code"] in {"VALIDATION_ERROR", "UNAUTHORIZED"}
        and result["error"]["message"]
    )
    assert not any(
        event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED for event in history.events
    )


async def test_after_the_onslaught_no_workflow_task_failed_and_the_gate_still_answers(
    target: Target,
) -> None:
    history = await target.handle.fetch_history()
    failed_tasks = [
        event
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]

    answered = await target.handle.execute_update("decide", target.answer(), result_type=dict)

    print(json.dumps({"hostile_inputs_refused": target.tried, "total": sum(target.tried.values())}))
    assert failed_tasks == []
    assert answered["status"] == "finished"
    assert answered["fields"]["url"] == "https://essays.example/tides"
    assert sum(target.tried.values()) >= 100

"""What an attacker with namespace access brings that several suites play: a look-alike
``essay:review`` on their own queue, and a workflow of their own that schedules lockgate's tool
activities with forged inputs. The attacker holds no private key and no worker secret."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any
from uuid import uuid4

from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy, SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Worker

from lockgate.activities._activity_inputs import ToolActivityInput, tool_activity_name
from lockgate.identity._bindings import gate_subject
from lockgate.workflows._search_attributes import LOCKGATE_AWAITING, LOCKGATE_GRAPH, LOCKGATE_STATE
from tests.helpers.graphs import ALWAYS_FAILS

# --- A look-alike essay:review --------------------------------------------------------------------

# essay:review's editor gate as it shows on a run of ALWAYS_FAILS: what an attacker copies.
ESSAY_CHOICES = [
    {"option": "publish_as_is", "leads_to": "publish", "operation": "essay:publish",
     "needs": ["essay:publish"]},
    {"option": "one_more_round", "leads_to": "write", "operation": "essay:write", "needs": []},
    {"option": "abandon", "leads_to": "abandon", "operation": "essay:abandon", "needs": []},
]  # fmt: skip
ESSAY_TARGET = {"title": ALWAYS_FAILS["title"]}


def look_alike_gate(run_id: str, execution: str) -> dict[str, Any]:
    """The gate a real essay:review run of ALWAYS_FAILS by ada shows, copied by the attacker."""
    return {
        "graph": "essay:review",
        "run_id": run_id,
        "gate": "editor_call#1",
        "ask": "editor_call",
        "role": "editor",
        "because": "Three drafts in a row failed the rubric.",
        "requester": "ada",
        "choices": ESSAY_CHOICES,
        "execution": execution,
        "subject": gate_subject(ESSAY_TARGET, ESSAY_CHOICES),
        "makers": ["ada"],
        "target": ESSAY_TARGET,
        "options": [choice["option"] for choice in ESSAY_CHOICES],
    }


@workflow.defn(name="essay:review", sandboxed=False)
class LookAlikeEssayReview:
    """The attacker's own workflow type named essay:review: it claims to wait at the editor gate,
    in its answers to lockgate's queries and in the memo it was started with (or, started with
    ``writes_memo``, in a memo it writes itself, naming its own execution as a real run's worker
    would), and takes any decide."""

    def __init__(self) -> None:
        self.answers: list[Any] = []

    @workflow.run
    async def run(self, claim: Any) -> dict[str, Any]:
        if isinstance(claim, dict) and claim.get("writes_memo"):
            workflow.upsert_memo({"lockgate_gate": self._gate()})
        await workflow.wait_condition(lambda: bool(self.answers))
        return {"status": "finished", "fields": {"url": "https://essays.example/tides"}}

    def _gate(self) -> dict[str, Any]:
        info = workflow.info()
        return look_alike_gate(info.workflow_id, info.first_execution_run_id)

    @workflow.query(name="awaiting")
    def awaiting(self) -> dict[str, Any]:
        info = workflow.info()
        return {
            "graph": "essay:review",
            "run_id": info.workflow_id,
            "execution": info.first_execution_run_id,
            "status": "waiting",
            "gate": self._gate(),
            "parked": None,
        }

    @workflow.query(name="show")
    def show(self, *args: Any) -> dict[str, Any]:
        info = workflow.info()
        return {
            "ok": True,
            "run_id": info.workflow_id,
            "execution": info.first_execution_run_id,
            "graph": "essay:review",
            "status": "waiting",
            "awaiting": self._gate(),
            "trail": [],
        }

    @workflow.update(name="decide")
    async def decide(self, answer: Any) -> dict[str, Any]:
        self.answers.append(answer)
        return {"ok": True, "status": "finished"}


def attackers_worker(client: Client, attacker_queue: str) -> Worker:
    """The attacker's own worker: no lockgate plugin, no secret, their own queue."""
    return Worker(client, task_queue=attacker_queue, workflows=[LookAlikeEssayReview])


async def start_look_alike(
    client: Client, attacker_queue: str, run_id: str, *, writes_memo: bool = False
) -> Any:
    """Starts the look-alike dressed as a waiting essay:review run: memo and search attributes."""
    return await client.start_workflow(
        "essay:review",
        {"inputs": ALWAYS_FAILS, "writes_memo": writes_memo},
        id=run_id,
        task_queue=attacker_queue,
        memo={"lockgate_gate": look_alike_gate(run_id, "made-up")},
        search_attributes=TypedSearchAttributes(
            [
                SearchAttributePair(LOCKGATE_GRAPH, "essay:review"),
                SearchAttributePair(LOCKGATE_STATE, "waiting"),
                SearchAttributePair(LOCKGATE_AWAITING, "editor"),
            ]
        ),
    )


# --- Forged tool calls ----------------------------------------------------------------------------


def named(principal: str) -> dict[str, Any]:
    """The actor record a verified ``principal`` has, as an attacker writes it out by hand."""
    return {
        "actor": principal,
        "verified": True,
        "channel": "cli",
        "principal": principal,
        "authorization": f"forged-{uuid4().hex}",
    }


@workflow.defn(name="attacker.schedule_tools", sandboxed=False)
class ScheduleTools:
    """Schedules tool activities on lockgate's queue with any input and any seal header, and
    reports how each one ended."""

    activity_seal: str | None = None

    @workflow.run
    async def run(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        outcomes = []
        for call in calls:
            self.activity_seal = call.get("seal")
            try:
                result = await workflow.execute_activity(
                    call["tool"],
                    call["input"],
                    task_queue=call["queue"],
                    start_to_close_timeout=timedelta(seconds=10),
                    # Room for retries: a refusal must not take them.
                    retry_policy=RetryPolicy(maximum_attempts=3),
                    result_type=dict,
                )
                outcomes.append({"ran": True, "result": result})
            except ActivityError as error:
                cause = error.cause
                assert isinstance(cause, ApplicationError)
                outcomes.append(
                    {
                        "ran": False,
                        "type": cause.type,
                        "non_retryable": cause.non_retryable,
                        "message": cause.message,
                        "retry_state": error.retry_state.name if error.retry_state else None,
                    }
                )
        return outcomes


def forged_calls(
    tool: str, principal: str, arguments: dict[str, Any], queue: str
) -> list[dict[str, Any]]:
    """The three ways to claim what only lockgate's sealed calls carry: an actor, a
    confirmation, both."""
    forms = [
        ToolActivityInput(arguments, actor=named(principal), confirmed=True),
        ToolActivityInput(arguments, actor=named(principal)),
        ToolActivityInput(arguments, confirmed=True),
    ]
    return [
        {
            "tool": tool_activity_name(tool),
            "input": dataclasses.asdict(form),
            "queue": queue,
            "seal": None,
        }
        for form in forms
    ]

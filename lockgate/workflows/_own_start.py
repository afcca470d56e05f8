"""Who started a workflow of the user's own: its ``lockgate.start`` update.

``GraphClient.start_workflow`` starts such a run held back and marked in its memo
(``lockgate_signed``), then sends the proof that names the execution the server started as this
update, which lets the run begin. lockgate's interceptor registers the update on exactly the runs
so marked, as each run is created (an update that comes with a run's first task finds no handler
registered later, and the run's own code is the user's). The validator judges the proof against
the workflow type, id and execution before anything is written; the handler records the
acceptance under the worker's seal together with what the run opens with (the tools it runs
local, its protocol), and, once the run's arguments are known, checks that the proof names
exactly them, and keeps the signer for the run's first use of lockgate (:mod:`._own_workflows`),
which then needs no start check of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadConverter

from lockgate.activities._activity_inputs import RUN_PROTOCOL
from lockgate.activities._refusal import Refusal
from lockgate.gates._authority import Authority
from lockgate.gates._judgements import Judgement, judge_start, judge_start_inputs
from lockgate.identity._actors import Actor
from lockgate.identity._proofs import Proof
from lockgate.tools._registry import ToolRegistry
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._accepted_updates import believe_start
from lockgate.workflows._activity_options import local_tool_names
from lockgate.workflows._failures import refuse_update
from lockgate.workflows._graph_inputs import one_answer

__all__ = [
    "OWN_START_UPDATE",
    "SIGNED_START_MEMO",
    "OwnStart",
    "payload_arguments",
    "start_arguments",
]

OWN_START_UPDATE = "lockgate.start"
"""The update that brings a workflow of the user's own its start proof (prefixed: it is added to
someone else's workflow, where a name of its own might be taken)."""

SIGNED_START_MEMO = "lockgate_signed"
"""The memo key marking a run whose start proof follows its start."""


class OwnStart:
    """One run's start proof: registered as the run is created, judged, kept.

    Args:
        authority: The worker's Authority, which judges the proof.
        tools: The worker's tools: those that may run local are what the run opens with.
    """

    def __init__(self, authority: Authority, tools: ToolRegistry | None = None) -> None:
        self.authority = authority
        self.tools = tools
        self.signed = False
        """The run was started as signed: it waits for its proof at its first use of lockgate."""
        self.actor: Actor | None = None
        """Who started it, once a start proof naming it and its arguments was accepted."""
        self.arguments: Sequence[Any] | None = None
        """The run's arguments, once its workflow function has them."""
        self.opened: dict[str, Any] | None = None
        """What the run opens with (``local_tools``, ``protocol``), recorded with its start's
        seal; None where its history recorded the seal alone (it opens with its own check)."""

    def register(self, info: workflow.Info) -> None:
        """Adds ``lockgate.start`` to a run its memo marks as signed, as the run is created
        (``info`` is the run's: ``workflow.info()`` is not reachable yet there). A run continued
        from another (its memo carried along) was not started by anyone's proof: lockgate does
        not carry a workflow of your own's state, so it goes on unverified."""
        if SIGNED_START_MEMO not in info.raw_memo or info.continued_run_id is not None:
            return
        self.signed = True
        if workflow.get_update_handler(OWN_START_UPDATE) is None:
            workflow.set_update_handler(OWN_START_UPDATE, self.start, validator=self.validate)

    def validate(self, *args: Any) -> None:
        """Refuses, before anything is written, a proof that does not name exactly this run's
        type, id and execution, and any once the run knows who started it."""
        info = workflow.info()
        value, problem = one_answer(args, OWN_START_UPDATE)
        if problem is not None:
            judgement = Judgement.refuse(ErrorCode(problem.code), problem.sentence)
        elif self.actor is not None:
            judgement = Judgement.refuse(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{info.workflow_id}' already knows who started it ({self.actor.actor}): "
                "a run takes its start proof once.",
            )
        else:
            judgement = judge_start(
                self.authority,
                value,
                graph=info.workflow_type,
                run=info.workflow_id,
                execution=info.first_execution_run_id,
                version=None,
                inputs=None,  # not known to a validator; the handler checks them
            )
        if not judgement.allowed:
            refuse_update(
                self.authority.audit,
                "run.start",
                judgement,
                graph=info.workflow_type,
                run=info.workflow_id,
            )

    async def start(self, *args: Any) -> dict[str, Any]:
        """Keeps the signer, once the proof is seen to name the run's arguments (a check replay
        makes again, as it reads only the proof and the arguments); and what the run opens with,
        recorded with the start under its seal."""
        opened = await believe_start(args, self._opening())
        info = workflow.info()
        proof = Proof.parse(args[0])
        await workflow.wait_condition(lambda: self.arguments is not None)
        assert self.arguments is not None
        if self.actor is not None:
            # Another start proof got in first, validated in the same task as this one.
            raise Refusal(
                ErrorCode.GATE_NOT_PENDING.value,
                f"Run '{info.workflow_id}' already knows who started it.",
            )
        arguments = start_arguments(workflow.payload_converter(), list(self.arguments))
        judgement = judge_start_inputs(
            proof, info.workflow_id, {"args": arguments}, what="arguments"
        )
        if not judgement.allowed:
            raise Refusal(judgement.code or ErrorCode.UNAUTHORIZED.value, judgement.reason or "")
        self.opened = opened
        self.actor = Actor.of_proof(proof)
        return {"ok": True, "run_id": info.workflow_id, "requester": self.actor.to_dict()}

    def _opening(self) -> dict[str, Any]:
        """What a run started today opens with: the worker's tools that may run local, and the
        protocol it follows (what ``lockgate.open_workflow_start`` returned for it before)."""
        tools = self.tools
        definitions = (
            [definition for name in tools.names() if (definition := tools.get(name)) is not None]
            if tools is not None
            else []
        )
        return {"local_tools": local_tool_names(definitions), "protocol": RUN_PROTOCOL}


def start_arguments(converter: PayloadConverter, args: list[Any]) -> list[Any]:
    """A run's arguments as a start proof names them: each as its payload converter writes it,
    read back as JSON (a payload that is not JSON as its encoding and bytes)."""
    return payload_arguments(converter.to_payloads(args))


def payload_arguments(payloads: Sequence[Payload]) -> list[Any]:
    """:func:`start_arguments` of arguments already written (decoded payloads)."""
    return [_as_json(payload) for payload in payloads]


def _as_json(payload: Payload) -> Any:
    encoding = payload.metadata.get("encoding", b"").decode("utf-8", "replace")
    if encoding == "json/plain":
        return json.loads(payload.data)
    if encoding == "binary/null":
        return None
    return {"encoding": encoding, "data": payload.data.hex()}

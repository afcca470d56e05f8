"""What lockgate keeps for one run of a workflow of the user's own that uses it: who started
it, who drives it, its trail, its open gate; what it shows (``show``, ``awaiting``) and what
it writes for ``pending`` (memo, search attributes)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate
from temporalio.exceptions import ActivityError

from lockgate.activities._activity_inputs import (
    OPEN_WORKFLOW_START,
    SETTLING_PROTOCOL,
    OpenWorkflowStartInput,
)
from lockgate.contracts import TrailRow
from lockgate.gates._gate_engine import GivenAnswer, gate_memo
from lockgate.gates._gates import OpenGate
from lockgate.gates._limits import TRAIL_PAGE
from lockgate.gates._trail import trail_row
from lockgate.identity._actors import Actor
from lockgate.tools._result import ErrorCode
from lockgate.workflows._activity_options import local, local_tool_names, recorded_local_tools
from lockgate.workflows._authority_context import (
    current_own_start,
    current_tools,
    record_once,
    run_arguments,
)
from lockgate.workflows._own_start import start_arguments
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
)
from lockgate.workflows._signed_starts import await_signed_start

__all__ = ["START_PROOF_MEMO", "OwnRunState", "workflow_type_name"]

START_PROOF_MEMO = "lockgate_start"
"""The memo key under which lockgate's clients put a start proof before proofs named their
execution: a run recorded then keeps its verdict; a new one's is refused."""


def workflow_type_name(run: Callable[..., Any]) -> str:
    """The workflow type of a ``@workflow.run`` method, as the SDK names it."""
    definition = workflow._Definition.from_run_fn(run)
    if definition is None or definition.name is None:
        raise ValueError(f"{run!r} is not the @workflow.run method of a @workflow.defn class.")
    return definition.name


def _local_tools() -> list[str]:
    """The worker's tools that may run local (never a mutating one), as this run starts."""
    tools = current_tools()
    if tools is None:
        return []
    return local_tool_names(
        definition for name in tools.names() if (definition := tools.get(name)) is not None
    )


class OwnRunState:
    """What lockgate keeps for one run of a workflow of the user's own."""

    def __init__(self) -> None:
        info = workflow.info()
        self.workflow_type = info.workflow_type
        self.run_id = info.workflow_id
        self.execution = info.first_execution_run_id
        self.requester: Actor | None = None
        self.driver = Actor.unverified("temporal")
        self.makers: list[str] = []
        self.trail: list[TrailRow] = []
        self.status = "running"
        self.gate: OpenGate | None = None
        self.subject: dict[str, Any] | None = None
        self.evidence_models: Mapping[str, Any] = {}
        self.answer: GivenAnswer | None = None
        self.spent: list[str] = []
        self.openings = 0
        self.calls = 0
        self.settles = 0
        self.deadline_passed = False
        self.local_tools: frozenset[str] | None = None
        self.protocol = 1

    async def _open(self) -> None:
        """Settles who started the run, once: the signer of its ``lockgate.start`` update
        (awaited, if the run was started as signed), else an unverified caller; and records the
        tools it runs local (the history keeps both for every replay)."""
        if self.requester is not None:
            return
        own = current_own_start()
        missing = (
            await await_signed_start(lambda: own.actor is not None, "its start proof")
            if own is not None and own.signed
            else None
        )
        arguments = start_arguments(workflow.payload_converter(), list(run_arguments()))
        try:
            opened = await local(
                OPEN_WORKFLOW_START,
                OpenWorkflowStartInput(
                    workflow_type=self.workflow_type,
                    run=self.run_id,
                    execution=self.execution,
                    arguments=arguments,
                    proof=workflow.memo_value(START_PROOF_MEMO, default=None),
                    local_tools=_local_tools(),
                ),
                result_type=dict,
            )
        except ActivityError as error:
            opened = {
                "actor": Actor.unverified("temporal").to_dict(),
                "code": ErrorCode.INTERNAL_ERROR.value,
                "reason": f"The start could not be checked: {error.cause or error}",
                "local_tools": [],
            }
        # Which tools run local is recorded here, once, rather than by a patch marker at each
        # tool's first call: a patch asked right after a local activity is not seen on replay
        # when a query split that workflow task (the run would fail replay). A run recorded
        # before this key existed keeps deciding by patch (None).
        self.local_tools = recorded_local_tools(opened)
        self.protocol = int(opened.get("protocol") or 1)
        # A run recorded before proofs named their execution has its verified starter here.
        self.requester = Actor.from_dict(opened["actor"])
        if not self.requester.verified and own is not None and own.actor is not None:
            self.requester = own.actor
        self.driver = self.requester
        reason = opened.get("reason") or (
            f"it was started as signed, and {missing}." if missing is not None else None
        )
        if reason:
            self.trail.append(
                trail_row(
                    None,
                    "start",
                    "refused",
                    self.requester,
                    why=f"The start proof was refused: {reason} The run goes on as started "
                    "by an unverified caller.",
                )
            )
        self._upsert(self.status)

    def _gate(self) -> OpenGate:
        assert self.gate is not None
        return self.gate

    def awaiting(self) -> dict[str, Any]:
        """The gate a signer binds an answer to, as this worker reports it."""
        return {
            "graph": self.workflow_type,
            "run_id": self.run_id,
            "execution": self.execution,
            "status": self.status,
            "gate": self._gate_view() if self.gate is not None and self.answer is None else None,
            "parked": None,
        }

    def show(self, *args: Any) -> dict[str, Any]:
        """The run as lockgate sees it: status, requester, open gate, the newest trail rows."""
        first = max(len(self.trail) - TRAIL_PAGE, 0)
        return {
            "ok": True,
            "run_id": self.run_id,
            "execution": self.execution,
            "graph": self.workflow_type,
            "status": self.status,
            "requester": (self.requester or Actor.unverified("temporal")).to_dict(),
            "awaiting": self._gate_view() if self.gate is not None else None,
            "parked": None,
            "trail": self.trail[first:],
            "trail_from": first,
            "trail_total": len(self.trail),
            "settles": self.settles,
        }

    def _gate_view(self) -> dict[str, Any]:
        view = self._gate().to_dict()
        view["options"] = self._gate().options
        view["target"] = self.subject
        return view

    def _gate_memo(self, *, keep_opened_at: bool = False) -> dict[str, Any]:
        written = workflow.memo_value("lockgate_gate", default=None) if keep_opened_at else None
        return gate_memo(self._gate(), {"target": self.subject}, written, workflow.now())

    def finished(self) -> None:
        """The run function returned. A run recorded before :data:`SETTLING_PROTOCOL` wrote so in
        its search attributes; today's leave them (ExecutionStatus says it has closed)."""
        self.status = "finished"
        if self.protocol < SETTLING_PROTOCOL:
            self._upsert("finished")

    def _upsert(self, status: str) -> None:
        current = workflow.info().typed_search_attributes
        wanted = {
            LOCKGATE_GRAPH: self.workflow_type,
            LOCKGATE_STATE: status,
            LOCKGATE_AWAITING: self.gate.role if self.gate is not None else None,
        }
        updates: list[SearchAttributeUpdate[Any]] = [
            key.value_set(value) if value is not None else key.value_unset()
            for key, value in wanted.items()
            if current.get(key) != value
        ]
        if updates:
            workflow.upsert_search_attributes(updates)

    def _record(self, event: str, **facts: Any) -> None:
        """An audit record of what the run itself did, as its driver (see :func:`record_once`)."""
        record_once(event, self.driver, self.workflow_type, self.run_id, **facts)

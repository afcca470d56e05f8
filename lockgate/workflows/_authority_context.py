"""How lockgate's workflow code reaches the worker's Authority, and how its handovers are sealed.

Validators are the one place workflow code judges callers live (they never run on replay), and
they must do it against the worker's Directory: the interceptor sets the worker's Authority in a
context variable for exactly the duration of a validator, an update handler or a query.

What lockgate's workflows hand over through Temporal is sealed on its way out, here: a tool
activity's input (who it runs as, whether it was confirmed; a local activity's as a regular
one's, so the tool activity checks both alike), the signals a run hands the worker
to judge, and the state a run carries to its next run at continue-as-new. The seal is an HMAC
under the worker secret over the handover and the execution it leaves from; it rides in a header,
which no workflow code reads back and which replay never compares. Seals are made only for
lockgate's own workflows.

What a run reads back from its history is believed only under a seal too (see
:mod:`._history_seals`): the interceptor tells each update handler whether this worker's own
validator accepted its update, hands the run's code the worker's :class:`HistorySeals`, and
seals what lockgate's activities return as they leave the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, NoReturn

import temporalio.worker
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.worker import (
    ActivityInboundInterceptor,
    ContinueAsNewInput,
    ExecuteWorkflowInput,
    HandleQueryInput,
    HandleUpdateInput,
    StartActivityInput,
    StartChildWorkflowInput,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from lockgate.activities._activity_inputs import (
    JudgeSignalsInput,
    ModelCallInput,
    ToolActivityInput,
    carry_binding,
    handover_binding,
)
from lockgate.activities._refusal import Refusal
from lockgate.activities._sealed_calls import (
    COMPACT_HEADER,
    HELD_HEADER,
    SEAL_HEADER,
    SealReader,
    header_text,
    tool_activity_binding,
)
from lockgate.activities._sealed_results import ResultSealer
from lockgate.gates._authority import Authority
from lockgate.identity._actors import Actor
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._issuers import ISSUER_PREFIX
from lockgate.tools._audit import AuditLogger
from lockgate.tools._registry import ToolRegistry
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._history_seals import HistorySeals, using_history_seals
from lockgate.workflows._own_start import OwnStart

__all__ = [
    "CARRY_SEAL_HEADER",
    "HANDOVER_SEAL_HEADER",
    "LOCKGATE_WORKFLOW",
    "OWN_RUN_CLOSING",
    "OWN_RUN_FINISHED",
    "AuthorityInterceptor",
    "carry_seal",
    "compact_results",
    "current_audit",
    "current_authority",
    "current_own_start",
    "current_tools",
    "handover_seal",
    "judging_authority",
    "record_once",
    "run_arguments",
    "sealing_own_call",
    "unsigned_start_allowed",
]

CARRY_SEAL_HEADER = "lockgate-carry-seal"
"""The start header that carries the seal on a continued run's carried state."""

HANDOVER_SEAL_HEADER = "lockgate-handover-seal"
"""The start header that carries the seal on what a parent run hands its sub-graph."""

LOCKGATE_WORKFLOW = "__lockgate_workflow__"
"""The class attribute marking lockgate's own workflows, whose handovers are sealed."""

OWN_RUN_FINISHED = "__lockgate_run_finished__"
"""The instance attribute a workflow of the user's own gets once it uses lockgate: called when
its run function returns, so its search attributes say it finished."""

OWN_RUN_CLOSING = "__lockgate_run_closing__"
"""The instance attribute a workflow of the user's own gets once it uses lockgate: called with
``continues=`` when its run function returns or raises, before the run's last command."""

_CURRENT: contextvars.ContextVar[Authority | None] = contextvars.ContextVar(
    "lockgate_authority", default=None
)


_AUDIT: contextvars.ContextVar[AuditLogger | None] = contextvars.ContextVar(
    "lockgate_audit", default=None
)


_TOOLS: contextvars.ContextVar[ToolRegistry | None] = contextvars.ContextVar(
    "lockgate_tools", default=None
)

_ARGUMENTS: contextvars.ContextVar[Sequence[Any]] = contextvars.ContextVar(
    "lockgate_run_arguments", default=()
)

_UNSIGNED_STARTS: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "lockgate_unsigned_starts", default=frozenset()
)

_OWN_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("lockgate_own_call", default=False)

_COMPACT_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "lockgate_compact_call", default=False
)

_OWN_START: contextvars.ContextVar[OwnStart | None] = contextvars.ContextVar(
    "lockgate_own_start", default=None
)


def current_tools() -> ToolRegistry | None:
    """The tools of the worker running this workflow (its code, the same on every replay, as a
    graph's compiled nodes are); None outside a run on a lockgate worker."""
    return _TOOLS.get()


def unsigned_start_allowed() -> bool:
    """Whether this run's workflow type (one of the user's own) may open gates although it was
    started unsigned: the worker's ``LockgatePlugin(unsigned_starts=[...])``, part of its code
    as its workflows are (so the same on every replay of a run it serves)."""
    return workflow.info().workflow_type in _UNSIGNED_STARTS.get()


def run_arguments() -> Sequence[Any]:
    """The arguments this run was started with, as its workflow function received them."""
    return _ARGUMENTS.get()


@contextlib.contextmanager
def compact_results() -> Iterator[None]:
    """Asks the tool activity scheduled inside this block for its result compact (whether it
    succeeded, its data and its error: see ``COMPACT_HEADER``), for a caller that reads nothing
    more."""
    token = _COMPACT_CALL.set(True)
    try:
        yield
    finally:
        _COMPACT_CALL.reset(token)


@contextlib.contextmanager
def sealing_own_call() -> Iterator[None]:
    """Seals the tool activity scheduled inside this block although the run is a workflow of
    the user's own: lockgate's ``call_tool`` schedules it, naming the driver lockgate verified
    for this run. Nothing else a user's workflow schedules is ever sealed."""
    token = _OWN_CALL.set(True)
    try:
        yield
    finally:
        _OWN_CALL.reset(token)


def current_own_start() -> OwnStart | None:
    """This run's ``lockgate.start`` (who signed its start, if anyone did); None outside a run
    on a lockgate worker."""
    return _OWN_START.get()


def current_audit() -> AuditLogger | None:
    """The audit log of the worker running this workflow, for what the run itself records (a
    gate opened, a node parked) and what its update handlers take (an answer, a resume); None
    outside a workflow run. Never consulted for a decision: it is where records go, not
    something a run reads."""
    return _AUDIT.get()


def record_once(event: str, actor: Actor, graph: str, run: str, **facts: Any) -> None:
    """An audit record of what a run itself did (a gate opened, a node parked) or took (an
    answer, a resume, a cancel), by ``actor``, written the first time only, never again when the
    run is replayed (its update handlers run again then too)."""
    if workflow.unsafe.is_replaying():
        return
    audit = current_audit()
    if audit is not None:
        audit.event(event, accepted=True, actor=actor.to_dict(), graph=graph, run=run, **facts)


def current_authority() -> Authority | None:
    """The Authority of the worker running this validator, update or query; None elsewhere."""
    return _CURRENT.get()


def judging_authority() -> Authority:
    """The Authority this validator judges a proof by; where the worker has none (built without
    lockgate's plugin), an ``UNAUTHORIZED`` refusal saying so, never written to history."""
    authority = current_authority()
    if authority is None:
        raise Refusal(
            ErrorCode.UNAUTHORIZED.value,
            "This worker judges no proofs: it was built without lockgate's plugin, which brings "
            "the Directory proofs are judged by. Add LockgatePlugin to the worker.",
            never_stored=True,
        )
    return authority


def carry_seal(headers: Mapping[str, Payload]) -> str | None:
    """The seal on this run's carried state, from its start headers."""
    return header_text(headers, CARRY_SEAL_HEADER, workflow.payload_converter())


def handover_seal(headers: Mapping[str, Payload]) -> str | None:
    """The seal on what this sub-graph run's parent handed it, from its start headers."""
    return header_text(headers, HANDOVER_SEAL_HEADER, workflow.payload_converter())


def _own_run_closing(*, continues: bool) -> None:
    """Tells lockgate in a workflow of the user's own (if it was used) that its run function
    has returned or raised."""
    closing = getattr(workflow.instance(), OWN_RUN_CLOSING, None)
    if closing is not None:
        closing(continues=continues)


def _is_lockgate_workflow() -> bool:
    return bool(getattr(type(workflow.instance()), LOCKGATE_WORKFLOW, False))


class _AuthorityInbound(WorkflowInboundInterceptor):
    authority: Authority
    tools: ToolRegistry | None
    unsigned_starts: frozenset[str]
    seals: HistorySeals
    outbound: type[_SealingOutbound]

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        self.next.init(self.outbound(outbound))
        # The updates this worker's own validators accepted, until their handlers start: only
        # those are sealed as accepted (see _accepted_updates).
        self._validated: set[str] = set()
        # Registered as the run is created, where a start proof that comes with its first task
        # finds it; only on a workflow of the user's own marked as started signed.
        self.own_start = OwnStart(self.authority, self.tools)
        self.own_start.register(outbound.info())

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        # The run's task and the tasks it starts see the audit log (not the Authority). The run
        # has a task, and so a context, of its own: nothing to reset (an evicted run is closed
        # from another context, where a reset would fail).
        _AUDIT.set(self.authority.audit)
        _TOOLS.set(self.tools)
        _UNSIGNED_STARTS.set(self.unsigned_starts)
        using_history_seals(self.seals)
        _ARGUMENTS.set(tuple(input.args))
        _OWN_START.set(self.own_start)
        self.own_start.arguments = tuple(input.args)
        try:
            result = await self.next.execute_workflow(input)
        except workflow.ContinueAsNewError:
            _own_run_closing(continues=True)
            raise
        except (Exception, asyncio.CancelledError):
            # Not an eviction's GeneratorExit: the run is only taken out of memory then.
            _own_run_closing(continues=False)
            raise
        _own_run_closing(continues=False)
        finished = getattr(workflow.instance(), OWN_RUN_FINISHED, None)
        if finished is not None:
            finished()
        return result

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        token = _CURRENT.set(self.authority)
        try:
            self.next.handle_update_validator(input)
        finally:
            _CURRENT.reset(token)
        self._validated.add(input.id)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        # Each update handler runs in its own task, so this holds for exactly this handler.
        accepted_here = input.id in self._validated
        self._validated.discard(input.id)
        token = _CURRENT.set(self.authority)
        # A handler's task is not the run's: it records what it takes in the same audit log.
        audit_token = _AUDIT.set(self.authority.audit)
        using_history_seals(self.seals, accepted_here=accepted_here)
        try:
            return await self.next.handle_update_handler(input)
        finally:
            _AUDIT.reset(audit_token)
            _CURRENT.reset(token)

    async def handle_query(self, input: HandleQueryInput) -> Any:
        token = _CURRENT.set(self.authority)
        try:
            return await self.next.handle_query(input)
        finally:
            _CURRENT.reset(token)


class _SealingOutbound(WorkflowOutboundInterceptor):
    authority: Authority

    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        self._seal_call(input)
        return self.next.start_activity(input)

    def start_local_activity(self, input: StartLocalActivityInput) -> workflow.ActivityHandle[Any]:
        # A local tool activity judges its caller exactly as a regular one, from the same seal.
        self._seal_call(input)
        return self.next.start_local_activity(input)

    def _seal_call(self, input: StartActivityInput | StartLocalActivityInput) -> None:
        call = input.args[0] if len(input.args) == 1 else None
        # A model request spends the deployment's models: only lockgate's own runs may.
        sealed_kinds = (ToolActivityInput, JudgeSignalsInput, ModelCallInput)
        if isinstance(call, sealed_kinds) and self._sealing():
            info = workflow.info()
            binding = tool_activity_binding(info.workflow_id, info.run_id, input.activity, call)
            seal = self.authority.sealer.seal("tool-activity", binding)
            input.headers = {**input.headers, SEAL_HEADER: self._payload(seal)}
            handover = self._handover(call)
            if handover is not None:
                held = self.authority.sealer.seal_data("held", binding, handover)
                input.headers = {**input.headers, HELD_HEADER: self._payload(held)}
        if isinstance(call, ToolActivityInput) and _COMPACT_CALL.get():
            input.headers = {**input.headers, COMPACT_HEADER: self._payload("compact")}

    def _handover(self, call: object) -> dict[str, Any] | None:
        """What the person from an identity provider a tool call runs as was judged to hold
        here, for the worker that runs it (None for anyone else, as for every other call)."""
        actor = call.actor if isinstance(call, ToolActivityInput) else None
        if actor is None or not str(actor.get("principal") or "").startswith(ISSUER_PREFIX):
            return None
        try:
            return self.authority.handover_of(Actor.from_dict(actor))
        except IdentityError:
            return None  # the activity refuses such an actor itself

    def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        # A sub-graph believes who its parent handed it only under this seal, bound to the
        # parent run the server will name to the child and to the child's workflow id.
        start = input.args[0] if len(input.args) == 1 else None
        handed = getattr(start, "handed", None)
        if handed is not None and self._sealing():
            info = workflow.info()
            binding = handover_binding(input.id, info.workflow_id, info.run_id, handed)
            seal = self.authority.sealer.seal("handover", binding)
            input.headers = {**input.headers, HANDOVER_SEAL_HEADER: self._payload(seal)}
        return self.next.start_child_workflow(input)

    def continue_as_new(self, input: ContinueAsNewInput) -> NoReturn:
        start = input.args[0] if len(input.args) == 1 else None
        carried = getattr(start, "carried", None)
        if carried is not None and self._sealing():
            info = workflow.info()
            binding = carry_binding(
                info.workflow_id, info.first_execution_run_id, info.run_id, carried
            )
            seal = self.authority.sealer.seal("carry", binding)
            input.headers = {**input.headers, CARRY_SEAL_HEADER: self._payload(seal)}
        self.next.continue_as_new(input)

    @staticmethod
    def _sealing() -> bool:
        # Sealed on replay too: a command replay matches to its recorded event is discarded,
        # header and all, but `is_replaying()` is also true in activations whose commands do
        # reach the server (after a task the server refused for signals that came meanwhile).
        return _is_lockgate_workflow() or _OWN_CALL.get()

    @staticmethod
    def _payload(seal: str) -> Payload:
        return workflow.payload_converter().to_payload(seal)


class AuthorityInterceptor(temporalio.worker.Interceptor):
    """Hands the worker's Authority to lockgate's validators, seals lockgate's handovers, opens
    the seals in its runs' histories, shows tool activities the seal they carry, and seals what
    lockgate's activities return.

    Args:
        authority: The worker's Directory, verifier, secret and audit log.
        tools: The worker's tools, as its runs see them.
        unsealed_runs_before: Believe the unsealed history of runs started before this moment
            (see :class:`~lockgate.workflows._history_seals.HistorySeals`).
        unsigned_starts: The workflow types of the user's own whose runs may open gates
            although started unsigned.
    """

    def __init__(
        self,
        authority: Authority,
        tools: ToolRegistry | None = None,
        *,
        unsealed_runs_before: datetime | None = None,
        unsigned_starts: frozenset[str] = frozenset(),
    ) -> None:
        self.authority = authority
        seals = HistorySeals(authority.secret, authority.audit, unsealed_runs_before)
        outbound = type("SealingOutbound", (_SealingOutbound,), {"authority": authority})
        self._inbound = type(
            "AuthorityInbound",
            (_AuthorityInbound,),
            {
                "authority": authority,
                "tools": tools,
                "unsigned_starts": unsigned_starts,
                "seals": seals,
                "outbound": outbound,
            },
        )

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        """A per-worker subclass bound to this worker's Authority."""
        return self._inbound

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Reads each activity's header seal (for
        :func:`lockgate.activities._sealed_calls.current_seal`), and seals the results of
        lockgate's own activities."""
        return SealReader(ResultSealer(next, self.authority.secret))

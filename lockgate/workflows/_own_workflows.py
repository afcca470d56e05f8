"""Verified gates and governed tools in a workflow of the user's own.

A workflow lockgate did not declare — hand-written, or a LangGraph graph on Temporal's plugin —
asks a gate with :func:`gate` and calls a tool with :func:`call_tool`. The first use gives the
run what a graph run has: its requester, verified from the start proof
``GraphClient.start_workflow`` put in its memo (:mod:`lockgate.activities._workflow_starts`);
the ``decide`` update, whose validator judges every answer by the gate rules before anything is
written; the ``awaiting`` and ``show`` queries clients sign against; and the search attributes
and memo through which ``pending``, the inbox, MCP and the notifier find its open gate. Who
drives the run is the requester until a gate is decided, then whoever decided it; a tool call
runs as the driver, sealed as a graph node's is, and the drivers of the calls since the last gate
are its makers, who may not answer the next one. The run's trail (``show``) records each answer
and each call.

What lockgate keeps for one run of a workflow of the user's own that uses it: who started
it, who drives it, its trail, its open gate; what it shows (``show``, ``awaiting``) and what
it writes for ``pending`` (memo, search attributes).

A gate in a workflow of the user's own: opening it, judging each answer before anything is
written (by the rules of a graph's gate), counting answers by its policy, its deadline.

A governed tool call from a workflow of the user's own, as the run's driver."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Generic, NoReturn, TypeVar

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate
from temporalio.exceptions import ActivityError, ApplicationError

from lockgate.activities._activity_inputs import (
    OPEN_WORKFLOW_START,
    SETTLING_PROTOCOL,
    OpenWorkflowStartInput,
    ToolActivityInput,
)
from lockgate.activities._refusal import Refusal
from lockgate.activities._temporal import CALLER_MISTAKES
from lockgate.contracts import TrailRow
from lockgate.gates._authority import Authority
from lockgate.gates._gate_engine import (
    DEADLINE_ACTOR,
    GivenAnswer,
    answer_counted,
    deadline_passed,
    evidence_of_decision,
    gate_memo,
    gate_to_judge,
    opened,
    uncountable_answer,
    unsigned_gate_refusal,
    waits_to_be_counted,
)
from lockgate.gates._gates import GateChoice, OpenGate, awaiting_view
from lockgate.gates._judgements import Judgement, judge_answer
from lockgate.gates._limits import TRAIL_PAGE, shorten
from lockgate.gates._trail import trail_row
from lockgate.graphs._compile_asks import compile_ask
from lockgate.graphs._compiled import CompiledAsk
from lockgate.graphs._declare import Ask, GraphDeclarationError
from lockgate.identity._actors import Actor
from lockgate.identity._proofs import Proof
from lockgate.tools._authorization import DEADLINE_CHANNEL
from lockgate.tools._configuration import refused_setting
from lockgate.tools._tool import definition_of
from lockgate.tools._tool_result import ErrorCode, ToolResult
from lockgate.workflows._accepted_updates import believe_update
from lockgate.workflows._activity_options import (
    execute_defined,
    local,
    local_tool_names,
    recorded_local_tools,
    refused_tool_call,
    runs_local,
)
from lockgate.workflows._authority_context import (
    OWN_RUN_CLOSING,
    OWN_RUN_FINISHED,
    current_audit,
    current_own_start,
    current_tools,
    judging_authority,
    record_once,
    run_arguments,
    sealing_own_call,
    unsigned_start_allowed,
)
from lockgate.workflows._failures import refuse_update
from lockgate.workflows._graph_inputs import one_answer
from lockgate.workflows._graph_visibility import quiet_answers
from lockgate.workflows._own_start import start_arguments
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
)
from lockgate.workflows._signed_starts import await_signed_start
from lockgate.workflows._trail_rows import record_row

__all__ = [
    "START_PROOF_MEMO",
    "Decision",
    "_OwnRun",
    "call_tool",
    "gate",
    "workflow_type_name",
    "workflow_type_names",
]


START_PROOF_MEMO = "lockgate_start"


"""The memo key under which lockgate's clients put a start proof before proofs named their
execution: a run recorded then keeps its verdict; a new one's is refused."""


def workflow_type_name(run: Callable[..., Any]) -> str:
    """The workflow type of a ``@workflow.run`` method, as the SDK names it."""
    definition = workflow._Definition.from_run_fn(run)
    if definition is None or definition.name is None:
        raise ValueError(f"{run!r} is not the @workflow.run method of a @workflow.defn class.")
    return definition.name


def workflow_type_names(where: str, setting: str, workflows: object) -> frozenset[str]:
    """The workflow type names of ``workflows``: ``@workflow.defn`` classes, their run methods,
    or type names.

    Raises:
        TypeError: ``workflows`` is not a list of those, naming the setting and what it got.
    """
    described = "a list of @workflow.defn classes, their run methods or workflow type names"
    if isinstance(workflows, (str, bytes)) or not isinstance(workflows, Iterable):
        raise refused_setting(where, setting, workflows, described)
    names: set[str] = set()
    for item in workflows:
        if isinstance(item, str) and item:
            names.add(item)
            continue
        definition = (
            workflow._Definition.from_class(item)
            if isinstance(item, type)
            else workflow._Definition.from_run_fn(item)
            if callable(item)
            else None
        )
        if definition is None or definition.name is None:
            raise refused_setting(where, setting, item, described)
        names.add(definition.name)
    return frozenset(names)


def _local_tools() -> list[str]:
    """The worker's tools that may run local (never a mutating one), as this run starts."""
    tools = current_tools()
    if tools is None:
        return []
    return local_tool_names(
        definition for name in tools.names() if (definition := tools.get(name)) is not None
    )


E = TypeVar("E", bound=enum.Enum)


@dataclasses.dataclass(frozen=True)
class Decision(Generic[E]):
    """How a gate was decided.

    Attributes:
        choice: The option taken.
        by: Who decided, as the trail records them (``{actor, verified, channel, principal}``):
            the last approver the policy counted, the waiver's author, or the deadline.
        evidence: The evidence of the answers that decided it (``{by, answer, evidence}`` each).
        waiver: The reason, when the gate was waived.
    """

    choice: E
    by: dict[str, Any]
    evidence: list[dict[str, Any]]
    waiver: str | None = None

    @property
    def by_deadline(self) -> bool:
        """Whether the gate's deadline took the option, not a person."""
        return self.by.get("channel") == DEADLINE_CHANNEL


def _enum_value(options: type[enum.Enum], code: str) -> Any:
    return next(case.value for case in options if str(case.value) == code)


_RUN = "__lockgate_run__"


_SIGNED_GATES_PATCH = "lockgate-own-gates-need-a-requester"
"""Marks a run of the user's own refused at a gate because nobody signed its start."""


_UPDATES = ("decide",)


_QUERIES = ("awaiting", "show")


async def gate(
    ask: Ask,
    *,
    subject: Mapping[str, Any] | None = None,
    leads_to: Mapping[Any, str | Callable[..., Any]] | None = None,
) -> Decision[Any]:
    """Opens a gate in this workflow and waits until it is decided.

    An answer counts only if a verified approver gave it for exactly this opening of this
    execution, as it shows now; the approver is neither the run's requester nor a driver of a
    tool call since the last gate, holds ``ask.of``, and holds what the tool the option leads
    to needs. ``ask.policy``, ``ask.evidence``, ``ask.waivable_by`` and ``ask.deadline`` are
    honoured as at a graph's gate (``evidence_into`` is a graph's: here the evidence comes
    back in the :class:`Decision`).

    Args:
        ask: The gate: its options enum, role, reason, policy, evidence, waiver, deadline.
        subject: What the approver is shown and approves (JSON data); a proof signed for
            another subject is refused.
        leads_to: For the options that lead to a tool, the tool (its name or ``@tool``
            function): an approver choosing that option must be allowed to run it.

    Returns:
        The decision, ``choice`` a case of ``ask.options``.
    """
    return await _own_run().ask(ask, dict(subject) if subject is not None else None, leads_to)


async def call_tool(
    tool: str | Callable[..., Any],
    arguments: Mapping[str, Any] | None = None,
    *,
    confirmed: bool = False,
) -> ToolResult:
    """Calls a lockgate tool from this workflow, as its driver, through the whole pipeline.

    The call is the tool's activity (a local one for a tool declared ``local=True``), with its
    own timeout and retries; who it runs as is sealed, as a graph node's is. A refusal (a
    validation error, a scope the driver lacks, a rate limit) or a failure after its retries
    comes back as an error result, never as an exception.

    Args:
        tool: The tool's name or its ``@tool`` function.
        arguments: Its arguments.
        confirmed: This workflow's code stands for the confirmation a ``confirm=True`` tool
            asks for (as a graph's declaration does for its nodes).

    Returns:
        The tool's result.
    """
    return await _own_run().call(tool, dict(arguments or {}), confirmed)


def _own_run() -> _OwnRun:
    instance = workflow.instance()
    run = getattr(instance, _RUN, None)
    if run is None:
        run = _OwnRun()
        setattr(instance, _RUN, run)
        setattr(instance, OWN_RUN_FINISHED, run.finished)
        setattr(instance, OWN_RUN_CLOSING, run.closing)
    return run


class _OwnRun:
    """lockgate in one run of a workflow of the user's own: its state, gates and tool calls,
    and the handlers through which it is answered and read."""

    # What lockgate keeps for one run of a workflow of the user's own.

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
        self.closed = False  # the run function has returned or raised
        self._gate_memo_stale = False  # a decided gate is still in the memo
        self._closer: asyncio.Future[None] | None = None
        self._recorded: tuple[OpenGate, dict[str, Any]] | None = None  # see _gate_record
        self._register_handlers()

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
        legacy_proof = workflow.memo_value(START_PROOF_MEMO, default=None)
        if (
            own is not None
            and own.actor is not None
            and own.opened is not None
            and not legacy_proof
        ):
            # Its start recorded, under the seal of the worker that accepted it, what the run
            # opens with: no start check of its own (a local activity) is needed.
            opened = {"actor": own.actor.to_dict(), "code": None, "reason": None, **own.opened}
        else:
            opened = await self._start_check(legacy_proof)
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
            record_row(
                self.trail,
                trail_row(
                    None,
                    "start",
                    "refused",
                    self.requester,
                    why=f"The start proof was refused: {reason} The run goes on as started "
                    "by an unverified caller.",
                ),
            )
        self._upsert(self.status)

    async def _start_check(self, legacy_proof: object) -> dict[str, Any]:
        """The start check of a run whose start recorded nothing it opens with (unsigned, with no
        start proof, recorded before starts did, or with a start proof in its memo): a local
        activity that records the tools it runs local and its protocol."""
        arguments = start_arguments(workflow.payload_converter(), list(run_arguments()))
        try:
            return await local(
                OPEN_WORKFLOW_START,
                OpenWorkflowStartInput(
                    workflow_type=self.workflow_type,
                    run=self.run_id,
                    execution=self.execution,
                    arguments=arguments,
                    proof=legacy_proof,
                    local_tools=_local_tools(),
                ),
            )
        except ActivityError as error:
            return {
                "actor": Actor.unverified("temporal").to_dict(),
                "code": ErrorCode.INTERNAL_ERROR.value,
                "reason": f"The start could not be checked: {error.cause or error}",
                "local_tools": [],
            }

    def _gate(self) -> OpenGate:
        assert self.gate is not None
        return self.gate

    def awaiting(self) -> dict[str, Any]:
        """The gate a signer binds an answer to, as this worker reports it."""
        return awaiting_view(
            graph=self.workflow_type,
            run_id=self.run_id,
            execution=self.execution,
            status=self.status,
            gate=self._gate_view() if self.gate is not None and self.answer is None else None,
        )

    def show(self, *args: Any, rows: int = TRAIL_PAGE) -> dict[str, Any]:
        """The run as lockgate sees it: status, requester, open gate, the newest trail rows
        (``rows`` of them; an update's answer carries none, see ``GraphRun._answer``)."""
        first = max(len(self.trail) - rows, 0)
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

    def _gate_record(self) -> dict[str, Any]:
        """The open gate as JSON data, built once for each state of the gate (its memo and the
        run's views show the same one). Not to be changed: copy it to add to it."""
        gate = self._gate()
        if self._recorded is None or self._recorded[0] is not gate:
            self._recorded = (gate, gate.to_dict())
        return self._recorded[1]

    def _gate_view(self) -> dict[str, Any]:
        view = dict(self._gate_record())
        view["options"] = self._gate().options
        view["target"] = self.subject
        return view

    def _gate_memo(self, *, keep_opened_at: bool = False) -> dict[str, Any]:
        written = workflow.memo_value("lockgate_gate", default=None) if keep_opened_at else None
        return gate_memo(self._gate_record(), {"target": self.subject}, written, workflow.now())

    def finished(self) -> None:
        """The run function returned. A run recorded before :data:`SETTLING_PROTOCOL` wrote so in
        its search attributes; today's leave them (ExecutionStatus says it has closed)."""
        self.status = "finished"
        if self.protocol < SETTLING_PROTOCOL:
            self._upsert("finished")

    def _close_gate_memo_when_idle(self) -> None:
        """Takes the decided gate out of the memo once the run's code has gone as far as it goes
        in this workflow task, unless by then it opened another gate (whose memo replaces it) or
        ended (its ExecutionStatus says so): then no one could have read the memo between, and
        nothing is written. A run that continues as new writes it as it goes (see
        :meth:`closing`)."""
        self._gate_memo_stale = True

        async def close() -> None:
            # A condition is checked once nothing else in the run is ready to go on.
            await workflow.wait_condition(lambda: True)
            if self._gate_memo_stale and not self.closed:
                self._gate_memo_stale = False
                workflow.upsert_memo({"lockgate_gate": None})

        self._closer = asyncio.ensure_future(close())

    def closing(self, *, continues: bool) -> None:
        """The run function has returned or raised: nothing more of it runs in this history. A
        run that continues as new takes a decided gate out of the memo its next run starts
        with; any other leaves it (its ExecutionStatus says it closed)."""
        if continues and self._gate_memo_stale:
            workflow.upsert_memo({"lockgate_gate": None})
        self._gate_memo_stale = False
        self.closed = True

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

    # Gates, and the ``decide`` update that answers them.

    async def ask(
        self,
        ask: Ask,
        subject: dict[str, Any] | None,
        leads_to: Mapping[Any, str | Callable[..., Any]] | None,
    ) -> Decision[Any]:
        await self._open()
        assert self.requester is not None
        refused = unsigned_gate_refusal(
            self.requester,
            unsigned_start_allowed=unsigned_start_allowed(),
            workflow_type=self.workflow_type,
        )
        # A run recorded before this rule opened its gate unsigned: it replays as it ran.
        if refused is not None and workflow.patched(_SIGNED_GATES_PATCH):
            self._refuse_gate(refused)
        where = f"Workflow {self.workflow_type}"
        if not (isinstance(ask.options, type) and issubclass(ask.options, enum.Enum)):
            raise GraphDeclarationError(f"{where}: Ask names {ask.options!r}, not an enum.")
        compiled = compile_ask(where, ask, {})
        choices = self._choices(where, ask.options, leads_to or {})
        self.evidence_models = compiled.evidence
        self._open_gate(compiled, choices, subject)
        given: GivenAnswer | None
        while True:
            given = await self._answered()
            if given is None:
                decided = self._deadline_passes(compiled, choices, subject)
                if decided is None:
                    continue
                actor = DEADLINE_ACTOR
                break
            actor = given.actor
            if actor.authorization:
                self.spent.append(actor.authorization)
            self.gate, row, decided = answer_counted(self._gate(), given, None)
            record_row(self.trail, row)
            if decided is not None:
                break
            workflow.upsert_memo({"lockgate_gate": self._gate_memo(keep_opened_at=True)})
            self.settles += 1
        evidence_given = evidence_of_decision(self._gate(), given, decided)
        self.gate = None
        self.deadline_passed = False
        self.driver = actor
        self.makers = []
        self.status = "running"
        if quiet_answers(self.protocol):
            # The search attributes still name the gate, and stay so: pending and list believe
            # the memo only, which says it closed by the time anyone could read it.
            self._close_gate_memo_when_idle()
        else:
            workflow.upsert_memo({"lockgate_gate": None})
            self._upsert("running")
        self.settles += 1
        return Decision(
            ask.options(_enum_value(ask.options, decided)),
            actor.to_dict(),
            evidence_given,
            given.waiver if given is not None else None,
        )

    def _refuse_gate(self, sentence: str) -> NoReturn:
        """Ends the run at a gate it may not open, saying why in its trail, its audit log and
        the failure its starter reads."""
        record_row(
            self.trail,
            trail_row(None, "gate", "refused", self.requester or self.driver, why=sentence),
        )
        audit = current_audit()
        if audit is not None and not workflow.unsafe.is_replaying():
            audit.refused(
                "gate.open",
                ErrorCode.UNAUTHORIZED,
                sentence,
                actor=self.driver.to_dict(),
                graph=self.workflow_type,
                run=self.run_id,
            )
        raise ApplicationError(sentence, type=ErrorCode.UNAUTHORIZED.value, non_retryable=True)

    def _choices(
        self,
        where: str,
        options: type[enum.Enum],
        leads_to: Mapping[Any, str | Callable[..., Any]],
    ) -> tuple[GateChoice, ...]:
        tools = current_tools()
        chosen = {}
        for option, tool in leads_to.items():
            if not isinstance(option, options):
                raise GraphDeclarationError(
                    f"{where}: leads_to names {option!r}, which is not an option of "
                    f"{options.__name__}."
                )
            name = tool if isinstance(tool, str) else definition_of(tool).name
            definition = tools.get(name) if tools is not None else None
            if definition is None:
                raise GraphDeclarationError(
                    f"{where}: option '{option.value}' leads to tool '{name}', which this "
                    "worker does not serve; give LockgatePlugin the tool."
                )
            chosen[str(option.value)] = (name, tuple(sorted(definition.scopes)))
        return tuple(
            GateChoice(
                str(case.value),
                chosen[str(case.value)][0] if str(case.value) in chosen else None,
                chosen[str(case.value)][0] if str(case.value) in chosen else None,
                chosen[str(case.value)][1] if str(case.value) in chosen else (),
            )
            for case in options
        )

    def _open_gate(
        self,
        ask: CompiledAsk,
        choices: tuple[GateChoice, ...],
        subject: dict[str, Any] | None,
        escalated_from: OpenGate | None = None,
    ) -> None:
        assert self.requester is not None
        self.openings += 1
        declared = ask.opening(
            self.openings,
            graph=self.workflow_type,
            run=self.run_id,
            execution=self.execution,
            requester=self.requester.actor,
            choices=choices,
            target=subject,
            makers=self.makers,
        )
        self.gate = opened(declared, workflow.now(), escalated_from)
        self.subject = subject
        self.status = "waiting"
        self._record("gate.open", gate=self.gate.gate, role=self.gate.role)
        self._upsert("waiting")
        workflow.upsert_memo({"lockgate_gate": self._gate_memo()})
        self._gate_memo_stale = False
        self.settles += 1

    async def _answered(self) -> GivenAnswer | None:
        """The next accepted answer, or None once the gate's deadline passes first."""
        gate = self._gate()
        if gate.due_at is not None and not self.deadline_passed:
            left = (datetime.fromisoformat(gate.due_at) - workflow.now()).total_seconds()
            try:
                await workflow.wait_condition(
                    lambda: self.answer is not None,
                    timeout=max(left, 0.001),
                    timeout_summary=f"deadline of gate {gate.gate}",
                )
            except TimeoutError:
                self.deadline_passed = True
                return None
        else:
            await workflow.wait_condition(lambda: self.answer is not None)
        answer, self.answer = self.answer, None
        return answer

    def _deadline_passes(
        self,
        ask: CompiledAsk,
        choices: tuple[GateChoice, ...],
        subject: dict[str, Any] | None,
    ) -> str | None:
        """The open gate's deadline passed undecided: the option it takes, or None once it has
        escalated (a new opening asks the escalation role alone). A trail row says which."""
        gate = self._gate()
        row, taken = deadline_passed(gate, None)
        record_row(self.trail, row)
        if taken is None:
            self._open_gate(ask, choices, subject, escalated_from=gate)
            self.deadline_passed = False
        return taken

    async def decide(self, *args: Any) -> dict[str, Any]:
        """Records an answer the validator accepted; returns the run as it then stands."""
        await believe_update(args)
        proof = Proof.parse(args[0])
        actor = Actor.of_proof(proof)
        while waits_to_be_counted(self.gate, self.answer):
            await workflow.wait_condition(lambda: self.answer is None)
        gate = self.gate
        refused = uncountable_answer(
            gate, self.answer, proof.authorizes.get("gate"), actor, self.run_id
        )
        if refused is not None:
            raise Refusal(refused[0].value, refused[1])
        assert gate is not None
        choice = str(proof.authorizes["choice"])
        record_once(
            "gate.decide",
            actor,
            self.workflow_type,
            self.run_id,
            gate=gate.gate,
            answer=choice,
            role=gate.role,
        )
        self.answer = GivenAnswer(
            choice,
            actor,
            proof.authorizes.get("evidence"),
            proof.authorizes.get("waiver"),
            proof.authorizes.get("comment"),
        )
        return self.show(rows=0)

    def validate_decide(self, *args: Any) -> None:
        """Refuses, before anything is written, every answer the gate rules refuse."""
        authority = judging_authority()
        answer, problem = one_answer(args, "decide")
        judgement = (
            Judgement.refuse(ErrorCode(problem.code), problem.sentence)
            if problem is not None
            else judge_answer(
                authority,
                answer,
                graph=self.workflow_type,
                run=self.run_id,
                gate=self._gate_to_judge(),
                spent_nonces=self.spent,
                evidence_models=self.evidence_models,
            )
        )
        if not judgement.allowed:
            self._refuse(authority, judgement)

    def _gate_to_judge(self) -> OpenGate | None:
        return gate_to_judge(self.gate, self.answer)

    def _refuse(self, authority: Authority, judgement: Judgement) -> NoReturn:
        refuse_update(
            authority.audit,
            "gate.decide",
            judgement,
            graph=self.workflow_type,
            run=self.run_id,
            gate=self.gate.gate if self.gate else None,
            answer=shorten(judgement.choice),
        )

    # Tool calls through lockgate's whole pipeline, sealed as a graph node's are.

    async def call(
        self, tool: str | Callable[..., Any], arguments: dict[str, Any], confirmed: bool
    ) -> ToolResult:
        await self._open()
        name = tool if isinstance(tool, str) else definition_of(tool).name
        tools = current_tools()
        definition = tools.get(name) if tools is not None else None
        if definition is None:
            return ToolResult.failed(
                ErrorCode.TOOL_NOT_FOUND,
                f"Tool '{name}' is not served by this worker; give LockgatePlugin the tool.",
            )
        self.calls += 1
        step = f"{self.run_id}:{name}:{self.calls}"
        call = ToolActivityInput(
            arguments=arguments,
            actor=self.driver.to_dict(),
            request_id=step,
            idempotency_key=f"{self.run_id}/{self.execution}:{name}:{self.calls}",
            confirmed=confirmed,
            node=name,
        )
        try:
            with sealing_own_call():
                result = ToolResult.from_dict(
                    await execute_defined(
                        definition,
                        call,
                        local=runs_local(definition, self.local_tools),
                        summary=f"{name} as {self.driver.actor}",
                    )
                )
        except ActivityError as error:
            result = refused_tool_call(error)
        if result.success:
            record_row(self.trail, trail_row(None, name, "ran", self.driver))
            maker = self.driver.principal
            if self.driver.verified and maker is not None and maker not in self.makers:
                self.makers.append(maker)
        else:
            record_row(
                self.trail,
                trail_row(
                    None,
                    name,
                    "refused" if result.code in CALLER_MISTAKES else "failed",
                    self.driver,
                    why=result.error.message if result.error else "",
                    code=result.code,
                ),
            )
        return result

    # lockgate in one run of a workflow of the user's own: its state, gates and tool calls,
    #     and the handlers through which it is answered and read.

    def _register_handlers(self) -> None:
        taken = [name for name in _UPDATES if workflow.get_update_handler(name) is not None] + [
            name for name in _QUERIES if workflow.get_query_handler(name) is not None
        ]
        if taken:
            raise GraphDeclarationError(
                f"Workflow '{self.workflow_type}' defines {', '.join(taken)} itself; lockgate's "
                "gates answer through handlers of those names. Rename the workflow's own."
            )
        workflow.set_update_handler("decide", self.decide, validator=self.validate_decide)
        workflow.set_query_handler("awaiting", self.awaiting)
        workflow.set_query_handler("show", self.show)

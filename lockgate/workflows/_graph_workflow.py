"""The graph interpreter: one Temporal workflow type per declared graph.

History is the run's log. Node runs are activities (each tool's own, through its pipeline, as
whoever drives the run, under the worker secret's seal; local activities for tools declared
``local=True``); answers are updates, validated before anything is written, or signals, judged
on the worker by the same rules and recorded either way.
Channels, trail, budgets and the open gate are rebuilt by replay and stored nowhere else.

Everything a caller sends is measured and refused with a code before it is stored or echoed;
nothing a stranger sends can fail the run's task, keep it from finishing or from continuing as
new (see ``SECURITY.md``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from lockgate.activities._activity_inputs import (
    OPEN_START,
    VERIFY_CARRIED,
    OpenStartInput,
    ToolActivityInput,
    VerifyCarriedInput,
)
from lockgate.activities._temporal import CALLER_MISTAKES
from lockgate.errors import LockgateError
from lockgate.gates._authority import node_refusal_sentence
from lockgate.gates._gates import ParkedNode
from lockgate.gates._limits import PayloadProblem, shorten
from lockgate.gates._trail import Outcome, trail_row
from lockgate.graphs._compiled import END_STATE, CompiledGraph, CompiledNode
from lockgate.identity._actors import Actor
from lockgate.tools._result import ErrorCode
from lockgate.workflows import _generated
from lockgate.workflows._activity_options import (
    execute_defined,
    local,
    local_tool_names,
    recorded_local_tools,
    runs_local,
)
from lockgate.workflows._authority_context import LOCKGATE_WORKFLOW, carry_seal, handover_seal
from lockgate.workflows._carry import CarriedStateError, RunState
from lockgate.workflows._failures import UnreadableStart, refusals_complete, refused_run
from lockgate.workflows._graph_agents import GraphAgents
from lockgate.workflows._graph_inputs import (
    StartGraphInput,
    channel_ok,
    parse_start,
)
from lockgate.workflows._graph_state import VERSION_MEMO, CancelAccepted, invalid
from lockgate.workflows._signed_starts import await_signed_start

__all__ = ["GraphRun", "graph_workflow"]


def _first_sentence_error(error: BaseException) -> str:
    cause: BaseException | None = error
    while isinstance(cause, ActivityError) and cause.cause is not None:
        cause = cause.cause
    return str(getattr(cause, "message", None) or cause or error)


_PARKED = object()
"""What running a node returns once it parked the run instead."""


class GraphRun(GraphAgents):
    """The interpreter every graph's workflow class inherits; see :func:`graph_workflow`."""

    def _setup(self, starts: Sequence[Any]) -> None:
        info = workflow.info()
        self._run_id = info.workflow_id
        # The first run id names this execution across continue-as-new and resets; a new
        # execution under the same workflow id gets a new one.
        self._execution = info.first_execution_run_id
        self._refusal = None
        self._inbox = []
        self._answer = None
        self._resumer = None
        self._canceller = None
        self._cancel_reason = None
        self._waiting_settles = 0
        self._deadline_timer = None
        self._deadline_passed = False
        self._child = None
        self._releasing = False
        self._carry = "none"  # "pending" until a carried state's seal is opened, then "open"
        self._carried_signals = 0
        self._unserved_version: object = None
        self._start_actor = None
        self._begun = False
        self._protocol = None
        # The tools this run runs local, as its start check recorded them (None: a run recorded
        # before runs named them, which decides by patch; see `runs_local`).
        self._local_tools: frozenset[str] | None = None
        start, problem = parse_start(starts)
        self._start = start
        versions = type(self).graphs
        version, version_problem = self._choose_version(start)
        problem = problem or version_problem
        self._graph = versions[version]
        self._fresh_state(
            Actor.unverified(start.channel if channel_ok(start.channel) else "temporal")
        )
        if problem is None and start.carried is not None:
            problem = self._take_carried(start.carried)
        elif problem is None and start.handed is not None:
            if workflow.info().parent is None:
                problem = PayloadProblem(
                    ErrorCode.UNAUTHORIZED.value,
                    "'handed' is lockgate's own, handed by a parent run to the sub-graph it "
                    "starts: leave it out.",
                )
        elif (
            problem is None
            and start.proof is None
            and not start.signed
            and self._graph.needs_signed_start
        ):
            problem = PayloadProblem(
                ErrorCode.UNAUTHORIZED.value,
                f"'{self._graph.name}' has human gates, so a run starts only from a signed "
                "start (`lockgate start ... --as YOU`): four eyes need to know who asked for "
                "the work. A graph may declare @graph(..., allow_unsigned_start=True).",
            )
        self._refusal = problem
        if problem is None and start.signed:
            self._status = "starting"

    def _choose_version(self, start: StartGraphInput) -> tuple[int, PayloadProblem | None]:
        versions = type(self).graphs
        newest = max(versions)
        name = versions[newest].name
        if start.carried is not None and start.version in versions:
            # A continued run keeps the version it started on (believed with its seal).
            return start.version, None
        pinned = _pinned_version(versions)
        if start.carried is not None:
            # Refused once its seal is judged (a forgery is refused as one, and audited).
            self._unserved_version = start.version
            return pinned, None
        if start.carried is None and start.version is not None and start.version != newest:
            return pinned, invalid(
                f"New runs of '{name}' start on its newest version ({newest}); version "
                f"{start.version} only finishes the runs that started on it."
            )
        return pinned, None

    def _take_carried(self, carried: dict[str, Any]) -> PayloadProblem | None:
        """Restores a carried state, believed only once its seal opens (see ``_interpret``)."""
        if workflow.info().continued_run_id is None:
            return invalid(
                "'carried' is lockgate's own, handed over only by the run's own continue-as-new: "
                "leave it out."
            )
        try:
            restored = RunState.from_dict(carried)
        except CarriedStateError as error:
            return PayloadProblem(
                ErrorCode.UNAUTHORIZED.value, f"The carried state was refused: {error}."
            )
        self._restore(restored)
        # Signal handlers append after these: they run once this constructor has.
        self._carried_signals = len(self._inbox)
        self._carry = "pending"
        return None

    async def _interpret(self) -> dict[str, Any]:
        if self._carry == "pending":
            await self._open_carried()
        elif self._refusal is None:
            await self._take_starter()
            if self._refusal is None:
                await self._open_start()
        self._begun = True
        if self._refusal is not None:
            self._status = "refused"
            self._settled()
            if workflow.memo_value(VERSION_MEMO, default=None) is not None:
                # A version the starter claimed is put right even on a refused run. (Runs whose
                # starter claimed none write nothing here, as they always have: replay holds.)
                self._sync_memo()
            shown = await self._finish()
            if refusals_complete(self._protocol, REFUSALS_COMPLETE):
                return shown
            raise refused_run(self._refusal.code, self._refusal.sentence, shown)
        self._sync_memo()
        self._upsert_search_attributes()
        try:
            while self._run.state != END_STATE:
                if self._canceller is not None:
                    # Accepted while a node ran: the run stops before its next step.
                    raise CancelAccepted
                await self._continue_as_new_if_due()
                if self._run.state in self._graph.asks:
                    await self._hold_gate(self._run.state)
                else:
                    await self._run_node(self._run.state)
        except CancelAccepted:
            return await self._end_cancelled()
        return await self._finish()

    async def _end_cancelled(self) -> dict[str, Any]:
        """Ends the run its requester cancelled, where it stood: a trail row says who and why,
        its gate or park is closed, and its status is ``cancelled``."""
        actor = self._canceller
        assert actor is not None
        self._stop_deadline_timer()
        row = trail_row(self._run.state, "cancel", "cancelled", actor)
        if self._cancel_reason is not None:
            row["why"] = self._cancel_reason
        self._run.trail.append(row)
        stale = {
            key: None
            for key, value in (("lockgate_gate", self._run.gate), ("lockgate_parked", self._parked))
            if value is not None
        }
        self._run.gate = None
        self._parked = None
        self._answer = None
        self._resumer = None
        self._status = "cancelled"
        self._run.state = END_STATE
        if stale:
            workflow.upsert_memo(stale)
        self._settled()
        return await self._finish()

    async def _take_starter(self) -> None:
        """Who started the run: the signer of the proof its ``start`` update brought (it names
        this execution; a client sends it right after the start), awaited for as long as
        :data:`SIGNED_START_WITHIN` from the start where the start says it is signed; else the
        unverified starter."""
        missing = (
            await await_signed_start(lambda: self._start_actor is not None, "its start proof")
            if self._start.signed
            else None
        )
        if self._start_actor is not None:
            self._run.requester = self._run.driver = self._start_actor
        elif missing is not None:
            self._refusal = PayloadProblem(
                ErrorCode.UNAUTHORIZED.value,
                f"Run '{self._run_id}' was started as signed and holds no start proof, so "
                f"nothing ran: {missing}. (`lockgate sign start {self._run_id} --as YOU` "
                "prints one for this execution.)",
            )
        self._status = "running"

    async def _open_carried(self) -> None:
        info = workflow.info()
        try:
            verdict = await local(
                VERIFY_CARRIED,
                VerifyCarriedInput(
                    carried=self._start.carried,
                    seal=carry_seal(info.headers),
                    workflow_id=info.workflow_id,
                    execution=self._execution,
                    previous_run=info.continued_run_id,
                    local_tools=local_tool_names(self._graph.tools()),
                ),
                result_type=dict,
            )
        except ActivityError as error:
            verdict = {
                "ok": False,
                "reason": f"It could not be checked: {_first_sentence_error(error)}",
            }
        if "protocol" in verdict:
            self._protocol = int(verdict["protocol"])
        if verdict["ok"] and self._unserved_version is None:
            self._carry = "open"
            self._local_tools = recorded_local_tools(verdict)
            return
        if verdict["ok"]:
            served = ", ".join(str(v) for v in sorted(type(self).graphs))
            verdict = {
                "code": ErrorCode.VALIDATION_ERROR.value,
                "reason": f"This worker serves versions {served} of '{self._graph.name}', not "
                f"{self._unserved_version}: the run it continues started on a version no longer "
                "served here.",
            }
        # Nothing of a refused carried state is believed: the run shows the refusal only. The
        # signals it carried were sent to another run: judging them here would write audit
        # records, and trail rows, of answers nobody gave this run.
        self._fresh_state(Actor.unverified("temporal"))
        del self._inbox[: self._carried_signals]
        self._carry = "refused"
        code = str(verdict.get("code") or ErrorCode.UNAUTHORIZED.value)
        self._refusal = PayloadProblem(code, str(verdict["reason"]))

    async def _open_start(self) -> None:
        """Checks the starting channels and the start proof on the worker (a local activity, so
        the model's validators and default factories run once and replay reads their result)."""
        try:
            opened = await local(
                OPEN_START,
                OpenStartInput(
                    graph=self._graph.name,
                    version=self._graph.version,
                    run=self._run_id,
                    execution=self._execution,
                    inputs=self._start.inputs,
                    proof=self._start.proof,
                    local_tools=local_tool_names(self._graph.tools()),
                    **self._handed_over(),
                ),
                result_type=dict,
            )
        except ActivityError as error:
            opened = {
                "channels": None,
                "code": ErrorCode.INTERNAL_ERROR.value,
                "reason": f"The start could not be checked: {_first_sentence_error(error)}",
            }
        if "protocol" in opened:
            self._protocol = int(opened["protocol"])
        if opened["channels"] is None:
            self._refusal = PayloadProblem(str(opened["code"]), str(opened["reason"]))
            return
        self._run.channels = opened["channels"]
        self._local_tools = recorded_local_tools(opened)
        self._run.ignored_inputs = list(opened.get("ignored_inputs") or [])
        if opened.get("actor") is not None:
            self._run.requester = Actor.from_dict(opened["actor"])
            self._run.driver = self._run.requester
        if opened.get("parent") is not None:
            self._run.parent = dict(opened["parent"])
            self._run.depth = int(opened.get("depth") or 1)

    def _handed_over(self) -> dict[str, Any]:
        """What a sub-graph run's start activity needs to open its handover: what it was handed,
        the seal on it, and its parent as the server names it (nothing for any other run)."""
        parent = workflow.info().parent
        if self._start.handed is None or parent is None:
            return {}
        return {
            "handed": self._start.handed,
            "seal": handover_seal(workflow.info().headers),
            "parent_id": parent.workflow_id,
            "parent_run": parent.run_id,
        }

    async def _run_node(self, state: str) -> None:
        node = self._graph.nodes[state]
        visit = self._run.visits.get(state, 0) + 1
        self._run.visits[state] = visit
        ran: dict[str, Any] = {}
        data: Any
        if node.subgraph is not None:
            data, problem, ran["child"] = await self._run_child(node, visit)
            if problem is not None:
                await self._park(node, "failed", problem, ())
                return
        elif node.agent is not None:
            ended = await self._run_agent(node, visit)
            if ended.problem is not None:
                await self._park(node, "failed", ended.problem, ())
                return
            if ended.output is None:
                return  # its budget is spent: the run moved on to the gate that decides
            data, ran = ended.output, ended.ran
        else:
            data = await self._run_tool(node, visit)
            if data is _PARKED:
                return
        problem = self._write(node, data)
        if problem is not None:
            await self._park(node, "failed", problem, ())
            return
        self._run.trail.append(trail_row(state, node.tool, "ran", self._run.driver, **ran))
        maker = self._run.driver.principal
        if self._run.driver.verified and maker is not None and maker not in self._run.makers:
            self._run.makers.append(maker)
        if node.route_enum is not None:
            value = data if node.decides_on == "" else (data or {}).get(node.decides_on)
            code = _case(node.route_cases, value)
            if code is None:
                await self._park(
                    node,
                    "failed",
                    f"it routes on {node.route_enum.__name__} but returned no value of it "
                    f"({shorten(repr(value))}); a node that decides has to say what it decided",
                    (),
                )
                return
            self._run.state = self._take(state, code)
        elif state in self._graph.edges:
            self._run.state = self._graph.edges[state].to
        else:
            self._run.state = END_STATE

    async def _run_tool(self, node: CompiledNode, visit: int) -> Any:
        """Runs a tool node's activity: its result's data, or ``_PARKED`` once it parked."""
        state = node.state
        step = f"{self._run_id}:{state}:{visit}"
        call = ToolActivityInput(
            arguments={name: self._run.channels.get(name) for name in node.reads},
            actor=self._run.driver.to_dict(),
            request_id=step,
            # The execution keeps a new execution under this id from passing for this one; a
            # reset keeps it, so a step re-run after a reset has the key its first run had.
            idempotency_key=f"{self._run_id}/{self._execution}:{state}:{visit}",
            confirmed=True,
            node=state,
        )
        definition = node.definition
        assert definition is not None
        try:
            result = await execute_defined(
                definition,
                call,
                local=runs_local(definition, self._local_tools),
                summary=f"{node.tool} as {self._run.driver.actor}",
            )
        except ActivityError as error:
            await self._park_after_error(node, error)
            return _PARKED
        if not result.get("success"):
            problem = (result.get("error") or {}).get("message") or "it reported a failure"
            await self._park(node, "failed", f"it ran and reported: {problem}", ())
            return _PARKED
        return result.get("data")

    def _write(self, node: CompiledNode, data: Any) -> str | None:
        graph = self._graph
        if node.writes:
            written = {name: (data or {}).get(name) for name in node.writes}
        elif isinstance(data, dict) and node.route_enum is None:
            strangers = sorted(key for key in data if key not in graph.channels)
            if strangers:
                return (
                    f"it returned {', '.join(strangers)}, which is not a channel of this graph; "
                    "nothing it returned was written"
                )
            written = dict(data)
        else:
            written = {}
        for name, value in written.items():
            self._run.channels[name] = value
            for list_channel, source in graph.appends.items():
                if source == name:
                    self._run.channels[list_channel] = [
                        *(self._run.channels.get(list_channel) or []),
                        value,
                    ]
        return None

    async def _park_after_error(self, node: CompiledNode, error: ActivityError) -> None:
        cause = error.cause
        if isinstance(cause, ApplicationError) and cause.type == ErrorCode.FORBIDDEN.value:
            details = cause.details[0] if cause.details else {}
            why = details.get("why") if isinstance(details, dict) else None
            await self._park(node, "refused", why or cause.message, node.needs)
            return
        code = cause.type if isinstance(cause, ApplicationError) else None
        message = _first_sentence_error(error)
        if code in CALLER_MISTAKES:
            await self._park(node, "failed", f"{message.rstrip('.')} ({code})", ())
        else:
            await self._park(node, "failed", f"it failed after its retries: {message}", ())

    async def _park(
        self, node: CompiledNode, outcome: Outcome, why: str, needs: Sequence[str]
    ) -> None:
        self._run.parkings += 1
        self._parked = ParkedNode(
            self._graph.name, self._run_id, node.state, node.tool, tuple(needs), self._run.parkings
        )
        row = trail_row(
            node.state,
            node.tool,
            outcome,
            self._run.driver,
            needs=list(needs),
            why=node_refusal_sentence(node.state, node.tool, why),
        )
        self._run.trail.append(row)
        self._status = "parked"
        self._record("node.park", node=node.state, operation=node.tool, parked_because=outcome)
        self._upsert_search_attributes()
        workflow.upsert_memo({"lockgate_parked": self._parked.to_dict() | {"why": row["why"]}})
        self._settled()
        while self._resumer is None:
            await self._while_waiting()
        actor, self._resumer = self._resumer, None
        self._run.trail.append(trail_row(node.state, node.tool, "resumed", actor))
        self._run.driver = actor
        self._parked = None
        self._status = "running"
        workflow.upsert_memo({"lockgate_parked": None})
        self._settle_attributes_moving_on(node.state)

    async def _finish(self) -> dict[str, Any]:
        ended_early = self._status in ("refused", "cancelled")
        if not ended_early:
            self._status = "finished"
            self._run.state = END_STATE
            self._settled()
        if ended_early or not self._quiet_attributes():
            # A refused or cancelled run says so in its search attributes: it completed.
            self._upsert_search_attributes()
        else:
            # The run's search attributes stay as it last wrote them: the server's
            # ExecutionStatus says it closed (one billed upsert fewer per run).
            self._show_details()
        while True:
            while self._inbox:
                await self._judge_inbox()
            await workflow.wait_condition(workflow.all_handlers_finished)
            if not self._inbox:
                # A signal that arrived while handlers finished is judged too: none is dropped.
                return self._view(trail_limit=None)


class UnservedVersionError(LockgateError):
    """A run started on a graph version this worker does not serve.

    Raised in workflow code, outside the workflow's failure types, so it fails the run's task,
    loudly and visibly in the Temporal UI, and the task is retried: a worker that serves the
    version (deploy the old ``@graph(..., version=N)`` class beside the new one) takes it up and
    the run carries on where it was.
    """


REFUSALS_COMPLETE = "lockgate:refusals-complete"
"""The patch marking a run refused before any start check as one that completes (with its
refusal as its result) rather than fails; a run whose start check ran records that instead."""

UNMARKED_VERSION = 1
"""The version a run records no marker for: a graph's first (``@graph``'s default)."""


def _pinned_version(versions: dict[int, CompiledGraph]) -> int:
    """The version a run follows for its whole life, even after newer ones are deployed.

    A new run takes the newest version this worker serves. Past version 1 it records the patch
    ``lockgate:<graph>@v<version>``, which a replay finds. On version 1 it records nothing, as
    most graphs never have another: a patch marker also writes a search attribute
    (``TemporalChangeVersion``), one more visibility write per run. A replay that finds no marker
    of a later version served here is on version 1; runs recorded before this rule carry a ``@v1``
    marker, which replay asks for (asking while replaying writes nothing). A run on a version not
    served here fails its task until a worker that serves it comes back (see
    :class:`UnservedVersionError`).
    """
    ordered = sorted(versions, reverse=True)
    name = versions[ordered[0]].name
    for version in ordered:
        if version != UNMARKED_VERSION:
            if workflow.patched(_version_patch(name, version)):
                return version
            continue
        if workflow.unsafe.is_replaying():
            workflow.patched(_version_patch(name, version))
        return version
    served = ", ".join(str(version) for version in sorted(versions))
    raise UnservedVersionError(
        f"Run '{workflow.info().workflow_id}' of '{name}' started on a version this worker does "
        f"not serve (it serves {served}); its version is in its memo (lockgate_version). Serve "
        "that version's @graph class beside the new one until its runs finish: this task is "
        "retried and the run carries on."
    )


def _version_patch(graph: str, version: int) -> str:
    """The patch marking a run of ``graph`` pinned to ``version``."""
    return f"lockgate:{graph}@v{version}"


def _case(cases: Mapping[Any, str], value: Any) -> str | None:
    """The case a decision names, from the table compiled off the enum's members."""
    try:
        return cases.get(value)
    except TypeError:  # unhashable: a list or a dict is no member's value
        return None


_made: dict[tuple[str, tuple[tuple[int, int], ...]], type[GraphRun]] = {}
_sequence = 0


def graph_workflow(name: str, versions: dict[int, CompiledGraph]) -> type[GraphRun]:
    """The workflow class of graph ``name`` (workflow type ``name``) serving ``versions``.

    Each distinct set of compiled versions gets its own class (two workers in one process may
    serve different versions of one graph), made once and named after the graph.
    """
    global _sequence
    key = (name, tuple(sorted((version, id(graph)) for version, graph in versions.items())))
    if key in _made:
        return _made[key]
    _sequence += 1
    class_name = "Graph_" + re.sub(r"\W", "_", name) + f"_{_sequence}"
    module = _generated.__name__

    def __init__(self: GraphRun, *starts: Any) -> None:
        self._setup(starts)

    async def run(self: GraphRun, *starts: Any) -> dict[str, Any]:
        return await self._interpret()

    for function in (__init__, run):
        function.__module__ = module
        function.__qualname__ = f"{class_name}.{function.__name__}"
    namespace = {
        "__module__": module,
        "__qualname__": class_name,
        "__doc__": f"The workflow of graph '{name}'.",
        LOCKGATE_WORKFLOW: True,
        "graphs": dict(versions),
        "__init__": workflow.init(__init__),
        "run": workflow.run(run),
    }
    # Unsandboxed: the interpreter is lockgate's own deterministic code (the saved-history
    # replay tests guard it), and the sandbox's per-payload context lookups were the largest
    # single cost of a graph run in bench/throughput.py's profile.
    defined = workflow.defn(name=name, failure_exception_types=[UnreadableStart], sandboxed=False)(
        type(class_name, (GraphRun,), namespace)
    )
    _made[key] = defined
    return defined

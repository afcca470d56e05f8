"""Clients: start and answer graph runs, list pending gates, call tools durably.

Refusals come back as ``{"ok": False, "code": ..., "error": <sentence>}``, never as a stack
trace; infrastructure failures (no server) still raise.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from typing import Any

from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from lockgate.gating import (
    Actor,
    Authority,
    Directory,
    ErrorCode,
    OpenGate,
    Signer,
    confirm_binding,
    decide_binding,
    judge_viewer,
    resume_binding,
    start_binding,
    tool_binding,
)
from lockgate.workflows._declare import graph_spec
from lockgate.workflows._graph_workflow import SettleInput, StartGraphInput
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
)
from lockgate.workflows._tool_call import (
    CallToolInput,
    ConfirmCallInput,
    DescribeWorkflow,
    WaitCallInput,
    call_workflow_id,
)

__all__ = ["DEFAULT_TASK_QUEUE", "GraphClient", "ToolClient", "describe_worker", "refusal"]

DEFAULT_TASK_QUEUE = "lockgate"


def refusal(code: str | ErrorCode, error: str, **facts: Any) -> dict[str, Any]:
    """The shape of every refusal: ``{ok: False, code, error}`` plus facts."""
    return {"ok": False, "code": str(code), "error": error, **facts}


def _update_refusal(error: WorkflowUpdateFailedError, **facts: Any) -> dict[str, Any]:
    cause = error.cause
    if isinstance(cause, ApplicationError):
        return refusal(cause.type or ErrorCode.INTERNAL_ERROR, cause.message, **facts)
    return refusal(ErrorCode.INTERNAL_ERROR, str(cause or error), **facts)


def _graph_name(graph: str | type) -> str:
    if isinstance(graph, str):
        return graph
    spec = graph_spec(graph)
    if spec is None:
        raise TypeError(f"{graph!r} is not a @graph class")
    return spec.name


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class GraphClient:
    """Starts and drives graph runs on a task queue.

    Args:
        client: A Temporal client.
        task_queue: Where the lockgate worker listens.
        signer: Signs starts, answers and resumes as its principal. Without one, starts are
            unverified (``unverified:<channel>``) and answers are refused.
        directory: Judges ``pending(viewer=...)`` (what a viewer may answer) locally.
        channel: The channel an unsigned start is recorded under.
        wait_seconds: How long :meth:`start`, :meth:`decide` and :meth:`resume` wait for the
            run to settle (a gate, a park, the end) before returning what they know.
    """

    def __init__(
        self,
        client: Client,
        task_queue: str = DEFAULT_TASK_QUEUE,
        signer: Signer | None = None,
        *,
        directory: Directory | None = None,
        channel: str = "temporal",
        wait_seconds: float = 60.0,
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.signer = signer
        self.directory = directory
        self.channel = channel
        self.wait_seconds = wait_seconds
        # Judges pending()'s viewers; made once, since it builds verifiers and a nonce ledger.
        self._viewer_judge = Authority(directory) if directory is not None else None

    # Runs --------------------------------------------------------------------------------------

    async def start(
        self,
        graph: str | type,
        inputs: Mapping[str, Any],
        *,
        run_id: str | None = None,
        version: int | None = None,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Starts a run and (by default) waits until it settles; returns what :meth:`show` does.

        The run's id is ``<graph>-<12 hex>`` unless given. Inputs that are not channels of the
        graph are dropped by the run (listed in ``ignored_inputs``).
        """
        name = _graph_name(graph)
        run_id = run_id or f"{name}-{uuid.uuid4().hex[:12]}"
        inputs = dict(inputs)
        proof = None
        if self.signer is not None:
            proof = self.signer.sign(start_binding(name, run_id, inputs))
        start = StartGraphInput(inputs=inputs, proof=proof, channel=self.channel, version=version)
        attributes = TypedSearchAttributes(
            [
                SearchAttributePair(LOCKGATE_GRAPH, name),
                SearchAttributePair(LOCKGATE_STATE, "running"),
            ]
        )
        options: dict[str, Any] = {
            "id": run_id,
            "task_queue": self.task_queue,
            "search_attributes": attributes,
            "static_summary": f"{name}: {_summary_of(inputs)}",
        }
        try:
            if not wait:
                await self.client.start_workflow(
                    name, start, id_conflict_policy=WorkflowIDConflictPolicy.FAIL, **options
                )
                return {"ok": True, "run_id": run_id, "graph": name, "status": "started"}
            operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
                name, start, id_conflict_policy=WorkflowIDConflictPolicy.FAIL, **options
            )
            update = self.client.execute_update_with_start_workflow(
                "settle", SettleInput(0), start_workflow_operation=operation, result_type=dict
            )
            return await self._settled(update, run_id, name)
        except WorkflowAlreadyStartedError:
            return refusal(
                ErrorCode.VALIDATION_ERROR,
                f"A run with id '{run_id}' already exists.",
                run_id=run_id,
            )

    async def _settled(self, pending: Any, run_id: str, graph: str) -> dict[str, Any]:
        try:
            shown: dict[str, Any] = await asyncio.wait_for(pending, self.wait_seconds)
        except asyncio.TimeoutError:
            return {
                "ok": True,
                "run_id": run_id,
                "graph": graph,
                "status": "started",
                "note": f"no worker settled the run within {self.wait_seconds:g}s; see `show`",
            }
        except WorkflowUpdateFailedError as error:
            return _update_refusal(error, run_id=run_id)
        except RPCError as error:
            if error.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION):
                # The run ended between looking it up and answering it.
                return refusal(
                    ErrorCode.GATE_NOT_PENDING,
                    f"Run '{run_id}' is not waiting: it has finished ({error.message}).",
                    run_id=run_id,
                )
            raise
        return shown

    async def decide(
        self, run_id: str, choice: str, *, gate: str | None = None, graph: str | None = None
    ) -> dict[str, Any]:
        """Answers the gate open on ``run_id`` with ``choice``, as the signer.

        Returns the run once it settles again, or the refusal (nothing written).

        Args:
            run_id: The run.
            choice: One of the gate's options.
            gate: The gate's key, as a ``pending()`` row or the last result's ``awaiting``
                names it; with ``graph``, it saves looking the run up first.
            graph: The run's graph.
        """
        if gate is None or graph is None:
            found = await self._open_gate(run_id)
            if "error" in found:
                return found
            gate, graph = found["gate"], found["graph"]
        binding = decide_binding(graph, run_id, gate, choice)
        answer = self.signer.sign(binding) if self.signer is not None else {"choice": choice}
        handle = self.client.get_workflow_handle(run_id)
        return await self._settled(
            handle.execute_update("decide", answer, result_type=dict), run_id, graph
        )

    async def resume(self, run_id: str) -> dict[str, Any]:
        """Carries on a run parked at a node, as the signer (who must be allowed to run it)."""
        found = await self._parked_node(run_id)
        if "error" in found:
            return found
        binding = resume_binding(found["graph"], run_id, found["node"])
        proof = self.signer.sign(binding) if self.signer is not None else {}
        handle = self.client.get_workflow_handle(run_id)
        return await self._settled(
            handle.execute_update("resume", proof, result_type=dict), run_id, found["graph"]
        )

    async def sign_decide(self, run_id: str, choice: str) -> dict[str, Any]:
        """The signed answer to paste into the Temporal UI's or CLI's ``decide``, or a refusal.

        It answers the gate open now (a proof names one gate opening) and is good for the
        worker's proof window, once.
        """
        found = await self._open_gate(run_id)
        if "error" in found:
            return found
        return self._signer().sign(decide_binding(found["graph"], run_id, found["gate"], choice))

    async def sign_resume(self, run_id: str) -> dict[str, Any]:
        """The signed resume to paste into the Temporal UI's or CLI's ``resume``, or a refusal."""
        found = await self._parked_node(run_id)
        if "error" in found:
            return found
        if found["node"] is None:
            return refusal(
                ErrorCode.NOTHING_TO_RESUME, f"Run '{run_id}' is not parked.", run_id=run_id
            )
        return self._signer().sign(resume_binding(found["graph"], run_id, found["node"]))

    def _signer(self) -> Signer:
        if self.signer is None:
            raise ValueError("Signing needs a GraphClient with a signer.")
        return self.signer

    async def _open_gate(self, run_id: str) -> dict[str, Any]:
        """``{graph, gate}`` of the gate open on ``run_id``, or a refusal."""
        described = await self._describe(run_id)
        if "error" in described:
            return described
        open_gate = described["memo"].get("lockgate_gate")
        if not open_gate or described["state"] != "waiting":
            return refusal(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{run_id}' is not waiting for a decision.",
                run_id=run_id,
            )
        return {"graph": described["graph"], "gate": open_gate["gate"]}

    async def _parked_node(self, run_id: str) -> dict[str, Any]:
        """``{graph, node}`` of the node ``run_id`` is parked at (node None if none), or a refusal.

        A running run that is not parked still gets a resume sent: the workflow says why not.
        """
        described = await self._describe(run_id)
        if "error" in described:
            return described
        if described["status"] != WorkflowExecutionStatus.RUNNING:
            return refusal(
                ErrorCode.NOTHING_TO_RESUME,
                f"Run '{run_id}' has finished: there is nothing to resume.",
                run_id=run_id,
            )
        parked = described["memo"].get("lockgate_parked")
        return {"graph": described["graph"], "node": parked["node"] if parked else None}

    async def show(self, run_id: str) -> dict[str, Any]:
        """The run: status, state, channels, trail, open gate, budgets (a finished run's result)."""
        handle: WorkflowHandle[Any, Any] = self.client.get_workflow_handle(run_id)
        try:
            description = await handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return refusal(ErrorCode.NOT_FOUND, f"No run '{run_id}'.", run_id=run_id)
            raise
        if description.status != WorkflowExecutionStatus.RUNNING:
            try:
                result: dict[str, Any] = await self.client.get_workflow_handle(
                    run_id, result_type=dict
                ).result()
                return result
            except Exception as error:  # the run failed or was terminated: say how
                return refusal(
                    ErrorCode.INTERNAL_ERROR,
                    f"Run '{run_id}' ended {_status_name(description.status)}: {error}",
                    run_id=run_id,
                )
        shown: dict[str, Any] = await handle.query("show", result_type=dict)
        return shown

    async def pending(
        self, of: str | None = None, viewer: str | None = None
    ) -> list[dict[str, Any]]:
        """Open gates across runs, read from search attributes and memo (no worker needed).

        Args:
            of: Only gates asking this role.
            viewer: A principal: each option says whether they ``may`` take it and ``why_not``
                (judged against the client's Directory). Defaults to the signer.

        Returns:
            One row per open gate, each option with ``leads_to`` and ``needs``.
        """
        query = f"{LOCKGATE_STATE.name} = 'waiting' AND ExecutionStatus = 'Running'"
        if of is not None:
            query += f" AND {LOCKGATE_AWAITING.name} = {_quote(of)}"
        viewer = viewer if viewer is not None else (self.signer.principal if self.signer else None)
        authority = self._viewer_judge
        rows: list[dict[str, Any]] = []
        async for execution in self.client.list_workflows(query):
            memo = await execution.memo()
            gate_memo = memo.get("lockgate_gate")
            if not isinstance(gate_memo, dict):
                continue
            gate = OpenGate.from_dict(gate_memo)
            row: dict[str, Any] = {
                "run_id": execution.id,
                "graph": gate.graph,
                "gate": gate.gate,
                "ask": gate.ask,
                "assignee": gate.role,
                "because": gate.because,
                "requester": gate.requester,
                "target": gate_memo.get("target"),
                "opened_at": gate_memo.get("opened_at"),
                "options": gate.options,
                "choices": [choice.to_dict() for choice in gate.choices],
            }
            if viewer is not None and authority is not None:
                actor = Actor(viewer, True, "cli", viewer, "viewing")
                summary, verdicts = judge_viewer(authority, actor, gate)
                row["viewer"] = {"principal": viewer, **summary}
                for shown, verdict in zip(row["choices"], verdicts, strict=True):
                    shown.update(may=verdict.may, because=verdict.because, why_not=verdict.why_not)
            rows.append(row)
        return rows

    async def list(self, graph: str | type | None = None) -> list[dict[str, Any]]:
        """Every lockgate run (of ``graph``), newest visibility first as the server returns them."""
        query = (
            f"{LOCKGATE_GRAPH.name} = {_quote(_graph_name(graph))}"
            if graph is not None
            else f"{LOCKGATE_GRAPH.name} IS NOT NULL"
        )
        rows = []
        async for execution in self.client.list_workflows(query):
            attributes = execution.typed_search_attributes
            rows.append(
                {
                    "run_id": execution.id,
                    "graph": attributes.get(LOCKGATE_GRAPH),
                    "status": attributes.get(LOCKGATE_STATE),
                    "awaiting": attributes.get(LOCKGATE_AWAITING),
                    "started_at": execution.start_time.isoformat()
                    if execution.start_time
                    else None,
                    "execution": execution.status.name.lower() if execution.status else None,
                }
            )
        return rows

    async def catalogue(self) -> dict[str, Any]:
        """The tools and graphs the worker on this task queue serves (runs a short workflow)."""
        return await describe_worker(self.client, self.task_queue)

    async def _describe(self, run_id: str) -> dict[str, Any]:
        handle: WorkflowHandle[Any, Any] = self.client.get_workflow_handle(run_id)
        try:
            description = await handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return refusal(ErrorCode.NOT_FOUND, f"No run '{run_id}'.", run_id=run_id)
            raise
        attributes = description.typed_search_attributes
        return {
            "graph": attributes.get(LOCKGATE_GRAPH) or description.workflow_type,
            "state": attributes.get(LOCKGATE_STATE),
            "memo": await description.memo(),
            "status": description.status,
        }


async def describe_worker(client: Client, task_queue: str) -> dict[str, Any]:
    """``{tools, graphs}`` the worker on ``task_queue`` serves, asked through a short workflow."""
    described: dict[str, Any] = await client.execute_workflow(
        DescribeWorkflow.run,
        id=f"lockgate-describe-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
    )
    return described


def _status_name(status: WorkflowExecutionStatus | None) -> str:
    return status.name.lower() if status is not None else "in an unknown state"


async def _settle_operation(operation: WithStartWorkflowOperation[Any, Any]) -> None:
    # The operation keeps the start's own failure in a future; retrieving it keeps asyncio from
    # logging "Future exception was never retrieved" for a refusal already answered.
    with contextlib.suppress(Exception):
        await operation.workflow_handle()


def _summary_of(inputs: Mapping[str, Any]) -> str:
    for value in inputs.values():
        if isinstance(value, str) and value:
            return value[:80]
    return "run"


class ToolClient:
    """Calls tools through Temporal, durably: one call per request id, however often asked.

    Args:
        client: A Temporal client.
        task_queue: Where the lockgate worker listens.
        signer: Signs each call (its principal's scopes then apply); unsigned calls are
            ``unverified:<channel>`` and hold nothing.
        channel: The channel of unsigned calls.
    """

    def __init__(
        self,
        client: Client,
        task_queue: str = DEFAULT_TASK_QUEUE,
        signer: Signer | None = None,
        *,
        channel: str = "temporal",
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.signer = signer
        self.channel = channel

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """Calls ``tool``; returns its result, or the request to confirm it (with the token).

        Asking again with the same ``request_id`` returns the first answer, never runs twice.
        """
        request_id = request_id or uuid.uuid4().hex
        arguments = dict(arguments or {})
        proof = None
        if self.signer is not None:
            proof = self.signer.sign(tool_binding(tool, arguments, request_id))
        call = CallToolInput(tool, arguments, proof, self.channel, request_id)
        workflow_id = call_workflow_id(request_id)
        operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            "lockgate.tool_call",
            call,
            id=workflow_id,
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            static_summary=f"{tool} ({request_id})",
        )
        try:
            result: dict[str, Any] = await self.client.execute_update_with_start_workflow(
                "outcome",
                WaitCallInput(),
                start_workflow_operation=operation,
                result_type=dict,
            )
            return result
        except WorkflowAlreadyStartedError:
            # The call already ran and closed: its first answer stands.
            await _settle_operation(operation)
            handle = self.client.get_workflow_handle(workflow_id, result_type=dict)
            finished: dict[str, Any] = await handle.result()
            return finished
        except WorkflowUpdateFailedError as error:
            return _update_refusal(error, request_id=request_id)

    async def confirm(self, request_id: str, token: str) -> dict[str, Any]:
        """Confirms a pending call with its token; returns the call's result."""
        proof = None
        if self.signer is not None:
            proof = self.signer.sign(confirm_binding(request_id, token))
        handle = self.client.get_workflow_handle(call_workflow_id(request_id))
        try:
            result: dict[str, Any] = await handle.execute_update(
                "confirm", ConfirmCallInput(token, proof), result_type=dict
            )
            return result
        except WorkflowUpdateFailedError as error:
            return _update_refusal(error, request_id=request_id)
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return refusal(ErrorCode.NOT_FOUND, f"No call '{request_id}'.")
            raise

    async def list(self) -> list[dict[str, Any]]:
        """The tools the worker on this task queue serves, in the MCP / LLM wire shape."""
        tools: list[dict[str, Any]] = (await describe_worker(self.client, self.task_queue))["tools"]
        return tools

"""Clients: start and answer graph runs, list pending gates, call tools durably.

Refusals come back as ``{"ok": False, "error": {"code": ..., "message": <sentence>}}``, never as a
stack trace; infrastructure failures (no server) still raise. :mod:`lockgate.contracts` names the
keys of everything returned.

What a client signs it takes from the server and the run's worker, never from memo or search
attributes (anyone can write those on a workflow of their own): the execution from the server's
description, the gate and what it shows from the run's ``awaiting`` query, and only for a run of
a graph type served on the client's own task queue.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Mapping
from datetime import timedelta
from typing import Any, cast

from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from lockgate.contracts import PendingGate, RunView
from lockgate.gating import (
    Actor,
    Authority,
    Directory,
    ErrorCode,
    OpenGate,
    Signer,
    answer_binding,
    judge_viewer,
    resume_binding,
    start_binding,
)
from lockgate.workflows._catalogue import describe_worker
from lockgate.workflows._client_support import (
    DEFAULT_TASK_QUEUE,
    refusal,
    update_refusal,
)
from lockgate.workflows._declare import graph_spec
from lockgate.workflows._failures import outcome_of
from lockgate.workflows._graph_inputs import StartGraphInput
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
)

__all__ = ["GraphClient"]


_QUERY_TIMEOUT = timedelta(seconds=10)
"""How long a client waits for a run's worker to say what the run waits for."""

_FIRST_PAUSE = 0.005
_LONGEST_PAUSE = 0.05
"""Seconds between two ``show`` queries while a client waits for a run to settle."""


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
    ) -> RunView:
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
            # Eager: where this client's own process runs a worker for the task queue, the
            # run's first workflow task comes back in the start's reply (where the server allows
            # it: `system.enableEagerWorkflowStart`, on by default in 1.32); elsewhere nothing
            # changes.
            await self.client.start_workflow(
                name,
                start,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                request_eager_start=True,
                **options,
            )
        except WorkflowAlreadyStartedError:
            return refusal(
                ErrorCode.VALIDATION_ERROR,
                f"A run with id '{run_id}' already exists.",
                run_id=run_id,
            )
        if not wait:
            return {"ok": True, "run_id": run_id, "graph": name, "status": "started"}
        return await self._settled(self._until_settled(run_id, after=0), run_id, name)

    async def _settled(
        self, pending: Awaitable[RunView], run_id: str, graph: str | None = None
    ) -> RunView:
        try:
            shown = await asyncio.wait_for(pending, self.wait_seconds)
        except asyncio.TimeoutError:
            return {
                "ok": True,
                "run_id": run_id,
                "graph": graph,
                "status": "started",
                "note": f"no worker settled the run within {self.wait_seconds:g}s; see `show`",
            }
        except WorkflowUpdateFailedError as error:
            return update_refusal(error, run_id=run_id)
        except WorkflowQueryFailedError as error:
            return refusal(
                ErrorCode.INTERNAL_ERROR,
                f"Run '{run_id}' did not answer `show` ({error}); is its task failing? The "
                "Temporal UI shows its history.",
                run_id=run_id,
            )
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

    async def _answered(self, update: Awaitable[RunView], run_id: str) -> RunView:
        """What an answering update returned, or, when the run answered it just before moving
        to a new history, the run once it settles there."""
        shown = await update
        if shown.get("moving_to_new_history"):
            return await self._until_settled(run_id, after=int(shown["settles"]))
        return shown

    async def _until_settled(self, run_id: str, *, after: int) -> RunView:
        """The run once it has settled (a gate, a park, the end) more than ``after`` times.

        Asks the ``show`` query, more slowly the longer it takes: a query writes nothing to the
        run's history, so waiting leaves no trace in the Temporal UI's timeline.
        """
        handle = self.client.get_workflow_handle(run_id)
        pause = _FIRST_PAUSE
        while True:
            shown: RunView = await handle.query(
                "show", result_type=dict, rpc_timeout=_QUERY_TIMEOUT
            )
            if int(shown.get("settles", 0)) > after:
                return shown
            await asyncio.sleep(pause)
            pause = min(pause * 1.5, _LONGEST_PAUSE)

    async def decide(
        self,
        run_id: str,
        choice: str,
        *,
        evidence: Mapping[str, Any] | None = None,
        waiver: str | None = None,
    ) -> RunView:
        """Answers the gate open on ``run_id`` with ``choice``, as the signer.

        The answer names the gate the run's worker reports, the execution the server reports,
        and a digest of what the gate shows (its target and options); it is refused if any of
        them has changed by the time it arrives. ``evidence`` is what the gate asks for with
        ``choice`` (see the gate's ``evidence``), signed with the answer. ``waiver`` is the
        reason when the signer waives the gate (see :meth:`waive`). Returns the run once it
        settles again, or the refusal (nothing written).
        """
        signed = (
            await self.sign_decide(run_id, choice, evidence=evidence, waiver=waiver)
            if self.signer is not None
            else None
        )
        if signed is not None and "error" in signed:
            return cast(RunView, signed)  # a refusal: nothing was signed
        answer = signed if signed is not None else {"choice": choice}
        handle = self.client.get_workflow_handle(run_id)
        return await self._settled(
            self._answered(handle.execute_update("decide", answer, result_type=dict), run_id),
            run_id,
        )

    async def resume(self, run_id: str) -> RunView:
        """Carries on a run parked at a node, as the signer (who must be allowed to run it)."""
        signed = await self.sign_resume(run_id) if self.signer is not None else {}
        if "error" in signed:
            return cast(RunView, signed)  # a refusal: nothing was signed
        handle = self.client.get_workflow_handle(run_id)
        return await self._settled(
            self._answered(handle.execute_update("resume", signed, result_type=dict), run_id),
            run_id,
        )

    async def waive(self, run_id: str, choice: str, reason: str) -> RunView:
        """Waives the gate open on ``run_id``, taking ``choice``, for ``reason``, as the signer.

        Only a gate declared ``waivable_by`` a role the signer holds may be waived; the waiver
        decides it alone, whatever its policy and evidence, and is a trail row of its own.
        """
        return await self.decide(run_id, choice, waiver=reason)

    async def sign_decide(
        self,
        run_id: str,
        choice: str,
        *,
        evidence: Mapping[str, Any] | None = None,
        waiver: str | None = None,
    ) -> dict[str, Any]:
        """The signed answer to paste into the Temporal UI's or CLI's ``decide``, or a refusal.

        It answers the gate open now, in this execution, as it shows now, and is good for the
        worker's proof window, once.
        """
        found = await self._awaiting(run_id)
        if "error" in found:
            return found
        if found["closed"]:
            return _plain_refusal(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{run_id}' is not waiting for a decision: it has {found['closed']}.",
                run_id=run_id,
            )
        gate = found["gate"]
        if gate is None:
            return _plain_refusal(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{run_id}' is not waiting for a decision.",
                run_id=run_id,
            )
        if choice not in gate.get("options", []):
            return _plain_refusal(
                ErrorCode.INVALID_DECISION,
                f"{choice!r} is not an option of gate '{gate.get('gate')}' (expected one of: "
                f"{', '.join(map(str, gate.get('options', [])))}).",
                run_id=run_id,
            )
        return self._signer().sign(
            answer_binding(
                gate, choice, execution=found["execution"], evidence=evidence, waiver=waiver
            )
        )

    async def sign_resume(self, run_id: str) -> dict[str, Any]:
        """The signed resume to paste into the Temporal UI's or CLI's ``resume``, or a refusal."""
        found = await self._awaiting(run_id)
        if "error" in found:
            return found
        parked = found["parked"]
        if parked is None:
            if found["closed"]:
                reason = f"Run '{run_id}' has finished: there is nothing to resume."
            elif found["gate"] is not None:
                reason = (
                    f"Run '{run_id}' is waiting for a decision: answer it with decide. Resuming "
                    "a run answers nothing."
                )
            else:
                reason = (
                    f"Run '{run_id}' is not parked by a refused node: resume carries on only a "
                    "run whose next node its caller was not allowed to run."
                )
            return _plain_refusal(ErrorCode.NOTHING_TO_RESUME, reason, run_id=run_id)
        return self._signer().sign(
            resume_binding(found["graph"], run_id, found["execution"], parked["node"])
        )

    def _signer(self) -> Signer:
        if self.signer is None:
            raise ValueError("Signing needs a GraphClient with a signer.")
        return self.signer

    async def _awaiting(self, run_id: str) -> dict[str, Any]:
        """``{graph, execution, gate, parked, closed}`` of a run of ours, or a refusal.

        The graph and execution are the server's (the workflow type and its first run id), the
        gate and park the worker's answer to ``awaiting``; a run on another task queue is not
        ours to answer, whatever it calls itself.
        """
        handle: WorkflowHandle[Any, Any] = self.client.get_workflow_handle(run_id)
        # Asked at once, believed only once the server's description says the run is ours.
        asking = asyncio.ensure_future(
            handle.query("awaiting", result_type=dict, rpc_timeout=_QUERY_TIMEOUT)
        )
        try:
            return await self._judge_awaiting(run_id, handle, asking)
        finally:
            if not asking.done():
                asking.cancel()
            elif not asking.cancelled():
                asking.exception()  # retrieved: a refusal above already said what went wrong

    async def _judge_awaiting(
        self,
        run_id: str,
        handle: WorkflowHandle[Any, Any],
        asking: Awaitable[dict[str, Any]],
    ) -> dict[str, Any]:
        description = await _describe(handle)
        if isinstance(description, dict):
            return cast(dict[str, Any], description)
        if description.status != WorkflowExecutionStatus.RUNNING:
            closed = _status_name(description.status)
            return {"closed": closed, "gate": None, "parked": None}
        if description.task_queue != self.task_queue:
            return _plain_refusal(
                ErrorCode.NOT_FOUND,
                f"Run '{run_id}' runs on task queue '{description.task_queue}', not on "
                f"'{self.task_queue}' where this client's lockgate workers are: it is not a run "
                "of theirs, whatever it calls itself, and nothing was signed for it.",
                run_id=run_id,
            )
        execution = description.raw_description.workflow_execution_info.first_run_id
        try:
            reported = await asking
        except (WorkflowQueryFailedError, RPCError) as error:
            return _plain_refusal(
                ErrorCode.NOT_FOUND,
                f"Run '{run_id}' did not say what it waits for ({error}); is a lockgate worker "
                f"serving '{self.task_queue}'?",
                run_id=run_id,
            )
        graph = description.workflow_type
        if reported.get("graph") != graph or reported.get("execution") != execution:
            return _plain_refusal(
                ErrorCode.NOT_FOUND,
                f"Run '{run_id}' reports a graph or execution other than the server's; nothing "
                "was signed for it.",
                run_id=run_id,
            )
        gate = reported.get("gate")
        if gate is not None and (gate.get("graph") != graph or gate.get("run_id") != run_id):
            gate = None
        return {
            "graph": graph,
            "execution": execution,
            "gate": gate,
            "parked": reported.get("parked"),
            "closed": None,
        }

    async def show(
        self, run_id: str, *, trail_from: int | None = None, trail_limit: int | None = None
    ) -> RunView:
        """The run: status, state, channels, trail, open gate, budgets (a finished run's result).

        A running run shows a page of its trail (the newest rows unless ``trail_from``;
        ``trail_total`` says how many there are); a finished run's result has all of it.
        """
        handle: WorkflowHandle[Any, Any] = self.client.get_workflow_handle(run_id)
        description = await _describe(handle)
        if isinstance(description, dict):
            return description
        if description.status != WorkflowExecutionStatus.RUNNING:
            try:
                result: RunView = await self.client.get_workflow_handle(
                    run_id, result_type=dict
                ).result()
                return result
            except WorkflowFailureError as error:
                outcome = outcome_of(error)  # a refused run: what it would have returned
                if outcome is not None:
                    return cast(RunView, outcome)
                return refusal(
                    ErrorCode.INTERNAL_ERROR,
                    f"Run '{run_id}' ended {_status_name(description.status)}: {error}",
                    run_id=run_id,
                )
            except Exception as error:  # the run failed or was terminated: say how
                return refusal(
                    ErrorCode.INTERNAL_ERROR,
                    f"Run '{run_id}' ended {_status_name(description.status)}: {error}",
                    run_id=run_id,
                )
        page: dict[str, Any] = {}
        if trail_from is not None:
            page["trail_from"] = trail_from
        if trail_limit is not None:
            page["trail_limit"] = trail_limit
        try:
            shown: RunView = await handle.query(
                "show", page or None, result_type=dict, rpc_timeout=_QUERY_TIMEOUT
            )
        except (WorkflowQueryFailedError, RPCError) as error:
            # A run whose task is failing (or with no worker) cannot answer; say so plainly.
            return refusal(
                ErrorCode.INTERNAL_ERROR,
                f"Run '{run_id}' did not answer `show` ({error}); is a lockgate worker serving "
                f"'{description.task_queue}', and is the run's task failing? The Temporal UI "
                "shows its history.",
                run_id=run_id,
            )
        return shown

    async def pending(self, of: str | None = None, viewer: str | None = None) -> list[PendingGate]:
        """Open gates across runs, read from search attributes and memo (no worker needed).

        Args:
            of: Only gates asking this role.
            viewer: A principal: each option says whether they ``may`` take it and ``why_not``
                (judged against the client's Directory). Defaults to the signer.

        Returns:
            One row per open gate, each option with ``leads_to`` and ``needs``.
        """
        # Only runs on this client's task queue: anyone may start a workflow of their own named
        # like a graph, with lockgate's memo and search attributes, but not on these workers.
        query = (
            f"{LOCKGATE_STATE.name} = 'waiting' AND ExecutionStatus = 'Running' "
            f"AND TaskQueue = {_quote(self.task_queue)}"
        )
        if of is not None:
            query += f" AND {LOCKGATE_AWAITING.name} = {_quote(of)}"
        viewer = viewer if viewer is not None else (self.signer.principal if self.signer else None)
        authority = self._viewer_judge
        rows: list[PendingGate] = []
        async for execution in self.client.list_workflows(query):
            memo = await execution.memo()
            gate_memo = memo.get("lockgate_gate")
            if not isinstance(gate_memo, dict):
                continue
            try:
                gate = OpenGate.from_dict(gate_memo)
            except (KeyError, TypeError, ValueError):
                continue
            if gate.graph != execution.workflow_type or gate.run != execution.id:
                continue
            if not await self._names_its_execution(execution.id, execution.run_id, gate):
                continue
            row = cast(PendingGate, gate.to_dict())
            row["options"] = gate.options
            row["target"] = gate_memo.get("target")
            row["opened_at"] = gate_memo.get("opened_at")
            if viewer is not None and authority is not None:
                actor = Actor(viewer, True, "cli", viewer, "viewing")
                summary, verdicts = judge_viewer(authority, actor, gate)
                row["viewer"] = {
                    "principal": viewer,
                    "is_requester": summary["is_requester"],
                    "made_the_work": summary["made_the_work"],
                    "verified": summary["verified"],
                }
                for shown, verdict in zip(row["choices"], verdicts, strict=True):
                    shown["may"] = verdict.may
                    shown["because"] = verdict.because
                    shown["why_not"] = verdict.why_not
            rows.append(row)
        return rows

    async def _names_its_execution(self, run_id: str, current_run: str, gate: OpenGate) -> bool:
        """Whether a gate memo names its run's execution: only the run's worker can write that
        (a starter's memo is written before the server picks the run id)."""
        if gate.execution == current_run:
            return True
        # A run continued as new: its execution is its chain's first run id.
        described = await self.client.get_workflow_handle(run_id, run_id=current_run).describe()
        return gate.execution == described.raw_description.workflow_execution_info.first_run_id

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
        """The tools and graphs the workers on this task queue serve (a query; no run per call)."""
        return await describe_worker(self.client, self.task_queue)


async def _describe(
    handle: WorkflowHandle[Any, Any],
) -> WorkflowExecutionDescription | RunView:
    """The server's description of a run, or the NOT_FOUND refusal if there is no such run."""
    try:
        return await handle.describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return refusal(ErrorCode.NOT_FOUND, f"No run '{handle.id}'.", run_id=handle.id)
        raise


def _plain_refusal(code: str | ErrorCode, message: str, **facts: Any) -> dict[str, Any]:
    """:func:`refusal` where a refusal stands in for data of another shape (a proof to sign)."""
    return cast(dict[str, Any], refusal(code, message, **facts))


def _status_name(status: WorkflowExecutionStatus | None) -> str:
    return status.name.lower() if status is not None else "in an unknown state"


def _summary_of(inputs: Mapping[str, Any]) -> str:
    for value in inputs.values():
        if isinstance(value, str) and value:
            return value[:80]
    return "run"

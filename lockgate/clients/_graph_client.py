"""The graph client: start, answer, resume and cancel graph runs, and read them.

One concept, one class (:class:`GraphClient`): what it does to runs and what it reads of them (a
run's view, the open gates across runs, the runs, the catalogue). Refusals come back as
``{"ok": False, "error": {"code": ..., "message": <sentence>}}``, never as a stack trace;
infrastructure failures (no server) still raise. :mod:`lockgate.contracts` names the keys of
everything returned.

What a client signs names an execution (a run's first run id): the one the server's reply to
the start or its description names, or the one in a view of the run its signer was shown; and
what is signed goes to the run pinned to that execution, so the server itself refuses it where
another execution runs under the id. A gate to answer cold is read from the server's
description, from the memo the run's worker wrote: believed only for a run of a graph type on
the client's own task queue, and only where it names that execution (a starter's memo is written
before the server picks the execution; anyone can write memo on a workflow of their own, on a
queue of their own). The run judges every proof again before anything is written, so a gate that
changed since is refused, never answered unseen. No client reads a run through a billed query
where a description does, and none reads a description again where the signer's view names an
execution the server already said runs on the client's task queue.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Concatenate, cast, overload

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import (
    QueryRejectCondition,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError
from temporalio.types import (
    MethodAsyncNoParam,
    MethodAsyncSingleParam,
    MultiParamSpec,
    ParamType,
    ReturnType,
    SelfType,
)

from lockgate._defaults import task_queue_flag
from lockgate.clients._client_support import (
    DEFAULT_POLL_SECONDS,
    DEFAULT_TASK_QUEUE,
    describe_run,
    execution_closed,
    graph_name,
    quote_literal,
    status_name,
    summary_of,
    update_refusal,
    updated,
)
from lockgate.clients._own_starts import prove_own_start
from lockgate.clients._schedules import create_schedule
from lockgate.contracts import PendingGate, RunView, refusal
from lockgate.gates._authority import Authority
from lockgate.gates._gates import OpenGate
from lockgate.gates._judgements import judge_viewer
from lockgate.gates._limits import shorten
from lockgate.graphs._declare import graph_spec
from lockgate.identity._bindings import (
    answer_binding,
    cancel_binding,
    resume_binding,
    start_binding,
)
from lockgate.identity._directory import Directory
from lockgate.identity._proofs import Signer
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._catalogue import CatalogueError, read_catalogue
from lockgate.workflows._failures import outcome_of
from lockgate.workflows._graph_inputs import StartGraphInput
from lockgate.workflows._graph_visibility import STATUS_MEMO, VERSION_MEMO
from lockgate.workflows._own_start import (
    OWN_START_UPDATE,
    SIGNED_START_MEMO,
    payload_arguments,
)
from lockgate.workflows._own_workflows import workflow_type_name
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
)
from lockgate.workflows._signed_starts import SIGNED_START_WITHIN, withdraw

__all__ = ["QUERY_TIMEOUT", "SERVED_GRAPHS_FOR", "GraphClient"]

_log = logging.getLogger("lockgate.clients")


_FIRST_PAUSE = 0.005
_LONGEST_PAUSE = 0.05
"""Seconds between two ``show`` queries while a client waits for a run to settle."""


def starting_attributes(name: str, given: Any = None) -> Any:
    """A run's search attributes as the run itself first writes them (its graph or workflow
    type, ``running``), beside any the caller gives.

    Written at the start, they spare the run an upsert (a visibility write on the server): it
    writes only what differs, so whatever a starter puts there, the run's own first task puts
    right. A caller's own value for either key is kept, and attributes in the untyped form are
    passed on as they are.
    """
    if given is not None and not isinstance(given, TypedSearchAttributes):
        return given
    pairs = list(given.search_attributes) if given is not None else []
    named = {pair.key.name for pair in pairs}
    for key, value in ((LOCKGATE_GRAPH, name), (LOCKGATE_STATE, "running")):
        if key.name not in named:
            pairs.append(SearchAttributePair(key, value))
    return TypedSearchAttributes(pairs)


_CATALOGUE_WAIT = timedelta(seconds=3)
"""How long a queue's workers have to answer lockgate's catalogue, for pending across queues."""

QUERY_TIMEOUT = timedelta(seconds=10)
"""How long a client waits for a run's worker to answer a query."""

UNANSWERED_AFTER = timedelta(seconds=1)
"""How long `show` waits for a running run's query before asking whether any worker polls for
it (no worker: said at once, not after the whole :data:`QUERY_TIMEOUT`)."""

SERVED_GRAPHS_FOR = 30.0
"""Seconds a client believes a graph it found in its task queue's catalogue is still served."""


_ON_QUEUE: weakref.WeakKeyDictionary[Client, dict[str, collections.OrderedDict[str, str]]] = (
    weakref.WeakKeyDictionary()
)
"""For each connection, by task queue: runs and their execution (first run id) that the server
said run there (its reply to a start on the queue, its description of the run, a listing of the
queue's runs). A view naming one of these executions is answered without reading the run's
description again: where another execution runs under the id by then, the server refuses what is
sent pinned to the one shown."""

_ON_QUEUE_AT_MOST = 10_000
"""How many runs per task queue a connection remembers (the oldest noted are forgotten)."""


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
        poll_seconds: How long one call to the server waits for an update's result before the
            client asks for the same update again by its id (never applying it twice).
    """

    # When the catalogue was last read, and the graph names it listed.
    _served_graphs: tuple[float, frozenset[str]] | None = None

    def __init__(
        self,
        client: Client,
        task_queue: str = DEFAULT_TASK_QUEUE,
        signer: Signer | None = None,
        *,
        directory: Directory | None = None,
        channel: str = "temporal",
        wait_seconds: float = 60.0,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.signer = signer
        self.directory = directory
        self.channel = channel
        self.wait_seconds = wait_seconds
        self.poll_seconds = poll_seconds
        # Judges pending()'s viewers; made once, since it builds a verifier.
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
        """Starts a run and (by default) waits until it settles; returns what :meth:`show` does,
        but for the trail: a start's answer carries none of its rows (``trail_total`` says how
        many there are; :meth:`show` and a finished run's result have them).

        The run's id is ``<graph>-<12 hex>`` unless given. An input that is not a field of the
        graph is refused by the run, naming the fields it takes (unless the graph's model
        declares ``extra="allow"``: then it is dropped and listed in ``ignored_inputs``).

        A graph named by a string is first looked up in the task queue's catalogue (see
        :meth:`unserved`): a name no worker serves is refused (``NOT_FOUND``, naming the graphs
        served) and nothing is started, where it would otherwise start a run no worker can take.
        A ``@graph`` class is the graph itself, so it is started without asking: a start pays no
        extra round trip.

        With a signer, the run is started first and held back; the signer then signs for the
        execution the server started (its workflow id and first run id), the graph, ``version``
        (or none: the newest its workers serve) and the inputs, and the proof goes to the run as
        its ``start`` update, which lets it begin and answers once it settles. A proof the run
        refuses is returned as the refusal, and the run, which ran nothing, is withdrawn.
        """
        name = graph_name(graph)
        spec = graph_spec(graph)
        if spec is None:
            unserved = await self.unserved(name)
            if unserved is not None:
                return unserved
        run_id = run_id or f"{name}-{uuid.uuid4().hex[:12]}"
        inputs = dict(inputs)
        signer = self.signer
        start = StartGraphInput(
            inputs=inputs, channel=self.channel, version=version, signed=signer is not None
        )
        options: dict[str, Any] = {
            "id": run_id,
            "task_queue": self.task_queue,
            "search_attributes": starting_attributes(name),
            "static_summary": f"{name}: {summary_of(inputs)}",
        }
        if spec is not None:
            # The version the run will follow, as the run itself writes it into its memo: the
            # run then finds it written and writes nothing (one event and one visibility write
            # fewer). Where the worker serves another newest version, the run puts it right.
            options["memo"] = {VERSION_MEMO: version if version is not None else spec.version}
        if signer is not None:
            # Its first task waits for the proof, which names the execution about to start.
            options["start_delay"] = SIGNED_START_WITHIN
        else:
            # Eager: where this client's own process runs a worker for the task queue, the
            # run's first workflow task comes back in the start's reply (where the server allows
            # it: `system.enableEagerWorkflowStart`, on by default in 1.32); elsewhere nothing
            # changes.
            options["request_eager_start"] = True
        try:
            handle: WorkflowHandle[Any, Any] = await self.client.start_workflow(
                name, start, id_conflict_policy=WorkflowIDConflictPolicy.FAIL, **options
            )
        except WorkflowAlreadyStartedError:
            return refusal(
                ErrorCode.VALIDATION_ERROR,
                f"A run with id '{run_id}' already exists.",
                run_id=run_id,
            )
        execution = handle.first_execution_run_id or ""
        self._note_on_queue(run_id, execution)
        handle = self.client.get_workflow_handle(run_id, run_id=execution)
        if signer is None:
            if not wait:
                return {"ok": True, "run_id": run_id, "graph": name, "status": "started"}
            return await self._settled(self._first_settle(handle), run_id, name)
        proof = signer.sign(start_binding(name, run_id, execution, inputs, version))
        return await self._prove_start(handle, proof, name, wait)

    async def schedule(
        self,
        graph: str | type,
        inputs: Mapping[str, Any],
        *,
        until: datetime,
        cron: str | None = None,
        interval: timedelta | None = None,
        schedule_id: str | None = None,
        version: int | None = None,
    ) -> dict[str, Any]:
        """Creates a Temporal Schedule whose runs start as this client's signer, until ``until``.

        The signer signs a grant naming the graph, ``version``, the digest of ``inputs``, the
        schedule's id and a window that ends at ``until``; the schedule's action starts the
        graph with the inputs and the grant, on this client's task queue. Each run it starts runs
        as the signer only where the server lists it among this schedule's actions and it
        started inside the window; any other run carrying the grant (a copy of the action, a
        start by hand, other inputs, a run after ``until``) ends refused, having run nothing.
        Pause, trigger, backfill and delete it as any schedule (``temporal schedule``, the UI).

        Example::

            created = await GraphClient(client, "lockgate", signer=ada).schedule(
                "essay:review", {"title": "Weekly digest"}, cron="0 9 * * MON",
                until=datetime(2027, 1, 1, tzinfo=timezone.utc))
            # {"ok": True, "schedule_id": "essay:review-schedule-…", "owner": "ada", ...}

        Args:
            graph: The graph (its name, or its ``@graph`` class).
            inputs: Its starting fields, the same for every run.
            until: When the grant's window ends (and the schedule's spec with it).
            cron: A cron expression the schedule ticks by, or
            interval: the time between its ticks (one of the two).
            schedule_id: The schedule's id (default ``<graph>-schedule-<8 hex>``); runs are
                named ``<schedule id>-<the moment they were scheduled for>``.
            version: The graph version every run follows (None: the newest its workers serve).

        Returns:
            ``{ok, schedule_id, graph, owner, not_before, not_after}``, or a refusal (no
            signer, neither or both of ``cron`` and ``interval``, a window already over, an id
            taken, a schedule the server refuses).
        """
        return await create_schedule(
            self.client,
            self.task_queue,
            self.signer,
            graph_name(graph),
            inputs,
            until=until,
            cron=cron,
            interval=interval,
            schedule_id=schedule_id,
            version=version,
        )

    async def _prove_start(
        self, handle: WorkflowHandle[Any, Any], proof: Mapping[str, Any], graph: str, wait: bool
    ) -> RunView:
        """Sends a run its start proof: the run once it settles (or, without ``wait``, once the
        proof is accepted), or the refusal, after which the run is withdrawn. A run that refused
        itself at its start (its input, its version) takes no proof: its own refusal is read."""
        run_id = handle.id
        # Without wait, answered as soon as the proof is recorded: the run goes on by itself.
        sent = dict(proof) if wait else {"proof": dict(proof), "settle": False}
        shown = await self._settled(self._proven(handle, sent), run_id, graph)
        if shown.get("ok") is False and shown.get("status") is None:
            if shown["error"]["code"] == ErrorCode.GATE_NOT_PENDING.value:
                # The run took no proof because it refused itself at its start: what it says.
                return await self._settled(self._first_settle(handle), run_id, graph)
            # It ran nothing, and without a proof never will: it ends refused at once, and shows
            # why its proof was refused.
            await withdraw(handle)
            ended = await self._settled(self._ended(run_id, handle, None), run_id, graph)
            if ended.get("status") == "refused":
                return cast(RunView, {**ended, "error": shown["error"]})
        return shown

    async def _proven(self, handle: WorkflowHandle[Any, Any], sent: Mapping[str, Any]) -> RunView:
        """The ``start`` update's answer: the run once it settles (or once it recorded the
        proof); or, where it closed first (one refused at its start, or ended by someone else),
        its execution's own end."""
        try:
            shown = cast(RunView, await self._update(handle, "start", dict(sent)))
        except RPCError as error:
            if not execution_closed(error):
                raise
            return await self._execution_ended(handle)
        return shown

    async def _first_settle(self, handle: WorkflowHandle[Any, Any]) -> RunView:
        """A run once it first settles: one ``settle`` update, which answers when it does; or,
        where it closed first, its execution's own end."""
        try:
            shown = cast(RunView, await self._update(handle, "settle", {"after": 0}))
        except RPCError as error:
            if not execution_closed(error):
                raise
            return await self._execution_ended(handle)
        if shown.get("moving_to_new_history"):
            return await self._until_settled(handle.id, after=0)
        return shown

    async def _execution_ended(self, handle: WorkflowHandle[Any, Any]) -> RunView:
        """How the execution ``handle`` names (never a newer one under its id) ended: its
        result, if it completed (a refused run's is its refusal); else a refusal saying so."""
        run_id = handle.id
        description = await describe_run(handle)
        if isinstance(description, dict):
            return description
        if description.status == WorkflowExecutionStatus.COMPLETED:
            return await self._ended(run_id, handle, description.status)
        return refusal(
            ErrorCode.GATE_NOT_PENDING,
            f"Run '{run_id}' has {status_name(description.status)} before it settled (someone "
            "ended the execution this client started): nothing ran for its proof.",
            run_id=run_id,
            status=status_name(description.status),
        )

    # Typed like ``Client.start_workflow``: a run method gives a handle of its workflow class
    # and result type; a type name gives an untyped handle.
    @overload
    async def start_workflow(
        self, workflow: MethodAsyncNoParam[SelfType, ReturnType], *, id: str, **options: Any
    ) -> WorkflowHandle[SelfType, ReturnType]: ...

    @overload
    async def start_workflow(
        self,
        workflow: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
        arg: ParamType,
        *,
        id: str,
        **options: Any,
    ) -> WorkflowHandle[SelfType, ReturnType]: ...

    @overload
    async def start_workflow(
        self,
        workflow: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
        *args: Any,
        id: str,
        **options: Any,
    ) -> WorkflowHandle[SelfType, ReturnType]: ...

    @overload
    async def start_workflow(
        self, workflow: str, *args: Any, id: str, **options: Any
    ) -> WorkflowHandle[Any, Any]: ...

    async def start_workflow(
        self, workflow: str | Callable[..., Any], *args: Any, id: str, **options: Any
    ) -> WorkflowHandle[Any, Any]:
        """Starts a workflow of your own that asks lockgate's gates or calls its tools, signed:
        the run's requester is the signer (:func:`lockgate.gate`,
        :func:`lockgate.call_tool`).

        The run is started held back; the signer then signs for the execution the server
        started, the workflow type, ``id`` and exactly these arguments, and the proof goes to the
        run as its ``lockgate.start`` update, which lets it begin. Without a signer the run is
        started unsigned (its requester is ``unverified:temporal``).

        Args:
            workflow: The workflow's run method (``MyWorkflow.run``) or its type name.
            args: Its arguments, as the workflow takes them (the proof names them as the
                payload converter writes them, and the run checks them the same way).
            id: The workflow id.
            options: Anything else ``Client.start_workflow`` takes; ``task_queue`` defaults
                to this client's. A signed start takes no ``start_delay`` (its proof ends one).

        Returns:
            The run's handle.

        Raises:
            ValueError: A signed start was given a ``start_delay`` or a ``cron_schedule``.
            StartRefusedError: The run refused the proof (it names the reason); the run, which
                ran none of its code, was withdrawn.
        """
        name = workflow if isinstance(workflow, str) else workflow_type_name(workflow)
        options.setdefault("task_queue", self.task_queue)
        options["search_attributes"] = starting_attributes(name, options.get("search_attributes"))
        signer = self.signer
        if signer is None:
            return await self.client.start_workflow(workflow, args=list(args), id=id, **options)
        for taken in ("start_delay", "cron_schedule"):
            if options.get(taken):
                raise ValueError(
                    f"A signed start takes no {taken}: its run waits for the proof that names "
                    "it, which the start's reply makes possible and which ends any delay."
                )
        memo = dict(options.pop("memo", None) or {})
        memo[SIGNED_START_MEMO] = True
        handle = await self.client.start_workflow(
            workflow,
            args=list(args),
            id=id,
            memo=memo,
            start_delay=SIGNED_START_WITHIN,
            **options,
        )
        execution = handle.first_execution_run_id or ""
        if options["task_queue"] == self.task_queue:
            self._note_on_queue(id, execution)
        proven = self.client.get_workflow_handle(id, run_id=execution)
        await prove_own_start(
            proven, signer, self.client.data_converter.payload_converter, name, args
        )
        return handle

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
            if execution_closed(error):
                # The run ended between looking it up and answering it.
                return refusal(
                    ErrorCode.GATE_NOT_PENDING,
                    f"Run '{run_id}' is not waiting: it has finished ({error.message}).",
                    run_id=run_id,
                )
            raise
        return shown

    async def _update(self, handle: WorkflowHandle[Any, Any], update: str, arg: Any) -> Any:
        return await updated(handle, update, arg, poll_seconds=self.poll_seconds)

    async def _answered(
        self, handle: WorkflowHandle[Any, Any], update: str, arg: Any, run_id: str
    ) -> RunView:
        """What an answering update returned, or, when the run answered it just before moving
        to a new history, the run once it settles there. An update pinned to an execution that
        no longer runs under the id is refused as such (see :meth:`_not_that_execution`)."""
        try:
            shown = cast(RunView, await self._update(handle, update, arg))
        except RPCError as error:
            pinned = handle.first_execution_run_id
            if pinned is None or not execution_closed(error):
                raise
            other = await self._not_that_execution(run_id, pinned)
            if other is None:
                raise
            return other
        if shown.get("moving_to_new_history"):
            return await self._until_settled(run_id, after=int(shown["settles"]))
        return shown

    async def _until_settled(self, run_id: str, *, after: int) -> RunView:
        """The run once it has settled (a gate, a park, the end) more than ``after`` times.

        Asks :meth:`show`, more slowly the longer it takes: a query writes nothing to the run's
        history, so waiting leaves no trace in the Temporal UI's timeline, and a run that has
        closed meanwhile is read from its result. A refusal (the run cannot be shown) is returned
        as it is.
        """
        pause = _FIRST_PAUSE
        while True:
            shown = await self.show(run_id)
            if shown.get("ok") is False or int(shown.get("settles", 0)) > after:
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
        shown: Mapping[str, Any] | None = None,
        comment: str | None = None,
    ) -> RunView:
        """Answers the gate open on ``run_id`` with ``choice``, as the signer.

        The answer names the gate open now (as the run's worker last wrote it in its memo), the
        execution the server reports, and a digest of what the gate shows (its target and
        options); it is refused if any of them has changed by the time it arrives. ``evidence``
        is what the gate asks for with ``choice`` (see the gate's ``evidence``), signed with the
        answer. ``waiver`` is the reason when the signer waives the gate (see :meth:`waive`).
        ``comment`` is what the signer says with the answer (1 to 2,000 characters), signed with
        it: the run's worker keeps it in the answer's trail row, and it decides nothing.
        Returns the run once it settles again, with the trail rows the answer added (from
        ``trail_from``: its own row and what it ran), or the refusal (nothing written).

        ``shown`` is the run as the signer saw it: what :meth:`show` returned, or an earlier
        answer. The answer then names the gate as it was shown, and goes pinned to the execution
        the view names, so the server refuses it where another execution runs under the id now,
        and the run's validator refuses it for a gate that has changed since, never answering it
        unseen. Where this connection already learned from the server that the execution runs
        on this task queue (it started the run, described it, or listed it in :meth:`pending`),
        that is one round trip, with no description read first; otherwise the description is
        read to check that the run is that execution, on this task queue. Without ``shown`` (a
        cold ``lockgate decide RUN``) the description names the execution and the gate.
        """
        signed = (
            await self.sign_decide(
                run_id, choice, evidence=evidence, waiver=waiver, shown=shown, comment=comment
            )
            if self.signer is not None
            else {"choice": choice}
        )
        return await self._send_signed(run_id, "decide", signed)

    async def resume(self, run_id: str) -> RunView:
        """Carries on a run parked at a node, as the signer (who must be allowed to run it)."""
        signed = await self.sign_resume(run_id) if self.signer is not None else {}
        return await self._send_signed(run_id, "resume", signed)

    async def cancel(self, run_id: str, *, reason: str | None = None) -> RunView:
        """Ends ``run_id`` for good, as the signer, who must be the run's requester.

        The cancel names the execution the server reports, and ``reason`` (shown in the trail).
        The run stops where it waits (a gate, a park) or once the node it runs returns, with a
        trail row saying who cancelled it, and status ``cancelled``; returns it then, or the
        refusal (nothing written). A run that waits for a sub-graph run is refused: cancel
        that run first.
        """
        signed = await self.sign_cancel(run_id, reason=reason) if self.signer is not None else {}
        return await self._send_signed(run_id, "cancel", signed)

    async def _send_signed(self, run_id: str, update: str, signed: Mapping[str, Any]) -> RunView:
        """Sends ``signed`` as the run's ``update`` and returns the run once it settles; a
        refusal to sign (``error``) is returned as it is, nothing sent.

        A proof goes pinned to the execution it names (the first run id of the chain): the server
        itself refuses it, before any worker sees it, where another execution runs under the
        run's id now (one that ended and was started again).
        """
        if "error" in signed:
            return cast(RunView, signed)  # a refusal: nothing was signed
        execution = _execution_named(signed)
        handle = self.client.get_workflow_handle(run_id, first_execution_run_id=execution)
        return await self._settled(self._answered(handle, update, signed, run_id), run_id)

    async def _not_that_execution(self, run_id: str, execution: str) -> RunView | None:
        """Why an update pinned to ``execution`` found no run to take it, where another
        execution runs under ``run_id`` now (the server refused it for the one signed for);
        None where that execution itself has ended."""
        description = await describe_run(self.client.get_workflow_handle(run_id))
        if isinstance(description, dict):
            return description
        if description.raw_description.workflow_execution_info.first_run_id == execution:
            return None
        return refusal(
            ErrorCode.GATE_NOT_PENDING,
            f"Run '{run_id}' is not the run that was shown: another execution runs under its id "
            "now, and the server refused what was signed for the one shown. Nothing was "
            "written; show it again.",
            run_id=run_id,
        )

    async def sign_cancel(self, run_id: str, *, reason: str | None = None) -> dict[str, Any]:
        """The signed cancel of ``run_id`` for its ``cancel`` update, or a refusal (the run is
        not running on this client's task queue)."""
        found = await self.cancel_binding(run_id, reason=reason)
        if "error" in found:
            return found
        return self._signer().sign(found)

    async def cancel_binding(self, run_id: str, *, reason: str | None = None) -> dict[str, Any]:
        """What a cancel of ``run_id`` authorizes, for a proof signed elsewhere (a key or passkey
        in the inbox's page), or a refusal. Signs nothing."""
        description = await self._ours(run_id, self.client.get_workflow_handle(run_id))
        if isinstance(description, dict):
            if description.get("closed"):
                return dict(
                    refusal(
                        ErrorCode.NOTHING_TO_CANCEL,
                        f"Run '{run_id}' has {description['closed']}: there is nothing to cancel.",
                        run_id=run_id,
                    )
                )
            return description
        execution = description.raw_description.workflow_execution_info.first_run_id
        return cancel_binding(description.workflow_type, run_id, execution, reason)

    async def decide_signed(self, run_id: str, proof: Mapping[str, Any]) -> RunView:
        """Relays an answer signed elsewhere (what ``lockgate sign decide`` prints).

        The run's worker verifies the proof as it does every answer; this client only checks
        that the run is one of its task queue's, and signs nothing.
        """
        return await self._relay("decide", run_id, proof)

    async def resume_signed(self, run_id: str, proof: Mapping[str, Any]) -> RunView:
        """Relays a resume signed elsewhere (what ``lockgate sign resume`` prints)."""
        return await self._relay("resume", run_id, proof)

    async def cancel_signed(self, run_id: str, proof: Mapping[str, Any]) -> RunView:
        """Relays a cancel signed elsewhere (a key or passkey in the inbox's page)."""
        return await self._relay("cancel", run_id, proof)

    async def _relay(self, update: str, run_id: str, proof: Mapping[str, Any]) -> RunView:
        handle: WorkflowHandle[Any, Any] = self.client.get_workflow_handle(run_id)
        description = await describe_run(handle)
        if isinstance(description, dict):
            return description
        if description.status != WorkflowExecutionStatus.RUNNING:
            return refusal(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{run_id}' is not waiting: it has {status_name(description.status)}.",
                run_id=run_id,
            )
        if description.task_queue != self.task_queue:
            return refusal(
                ErrorCode.NOT_FOUND,
                f"Run '{run_id}' runs on task queue '{description.task_queue}', not on "
                f"'{self.task_queue}': it is not a run of these workers, and nothing was sent.",
                run_id=run_id,
            )
        # Not pinned: a proof signed for another run or execution is the run's validator's to
        # refuse, and to audit, as such.
        return await self._settled(
            self._answered(handle, update, dict(proof), run_id),
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
        shown: Mapping[str, Any] | None = None,
        described: WorkflowExecutionDescription | None = None,
        comment: str | None = None,
    ) -> dict[str, Any]:
        """The signed answer to paste into the Temporal UI's or CLI's ``decide``, or a refusal.

        It answers the gate open now (or the one ``shown``, see :meth:`decide`), in this
        execution, as it shows, and is good for the worker's proof window, once.
        ``described`` is the server's description of the run where the caller has just read
        it: it is not read again, and is believed no more than one read here. ``comment`` is
        signed with the answer (see :meth:`decide`).
        """
        binding = await self.decide_binding(
            run_id,
            choice,
            evidence=evidence,
            waiver=waiver,
            shown=shown,
            described=described,
            comment=comment,
        )
        if "error" in binding:
            return binding
        return self._signer().sign(binding)

    async def decide_binding(
        self,
        run_id: str,
        choice: str,
        *,
        evidence: Mapping[str, Any] | None = None,
        waiver: str | None = None,
        shown: Mapping[str, Any] | None = None,
        gate_shown: str | None = None,
        described: WorkflowExecutionDescription | None = None,
        comment: str | None = None,
    ) -> dict[str, Any]:
        """What an answer of ``choice`` to the gate open on ``run_id`` authorizes, for a proof
        signed elsewhere (a passkey in the inbox), or a refusal. Signs nothing.

        ``shown`` is the run as the signer saw it (see :meth:`decide`); ``gate_shown`` the key of
        the gate a page showed them (``editor_call#2``), refused if another is open now;
        ``described`` the server's description of it, where the caller has just read one;
        ``comment`` what the signer says with the answer (the run's worker judges and keeps it).
        """
        found = (
            await self._shown(run_id, shown)
            if shown is not None
            else await self._awaiting(run_id, described)
        )
        if "error" in found:
            return found
        if found["closed"]:
            return dict(
                refusal(
                    ErrorCode.GATE_NOT_PENDING,
                    f"Run '{run_id}' is not waiting for a decision: it has {found['closed']}.",
                    run_id=run_id,
                )
            )
        gate = found["gate"]
        if gate is None:
            return dict(
                refusal(
                    ErrorCode.GATE_NOT_PENDING,
                    f"Run '{run_id}' is not waiting for a decision.",
                    run_id=run_id,
                )
            )
        if gate_shown is not None and gate.get("gate") != gate_shown:
            return dict(
                refusal(
                    ErrorCode.GATE_NOT_PENDING,
                    f"Run '{run_id}' now waits at gate '{gate.get('gate')}', not at '{gate_shown}' "
                    "as it was shown: look at it again before answering.",
                    run_id=run_id,
                )
            )
        if choice not in gate.get("options", []):
            return dict(
                refusal(
                    ErrorCode.INVALID_DECISION,
                    f"{choice!r} is not an option of gate '{gate.get('gate')}' (expected one of: "
                    f"{', '.join(map(str, gate.get('options', [])))}).",
                    run_id=run_id,
                )
            )
        return answer_binding(
            gate,
            choice,
            execution=found["execution"],
            evidence=evidence,
            waiver=waiver,
            comment=comment,
        )

    async def sign_start(self, run_id: str) -> dict[str, Any]:
        """The signed start of a run someone started with the `temporal` CLI or UI as signed
        (``"signed": true`` in a graph run's input; memo ``lockgate_signed`` on a workflow of
        your own), for its ``start`` (or ``lockgate.start``) update; or a refusal.

        It names the execution the server started, its graph or type, and the inputs the run
        was started with as its first event holds them (shown under ``shown``): the signer
        approves what the run really starts with, never what anyone says it does.
        """
        found = await self.start_to_sign(run_id)
        if "error" in found:
            return found
        return self._signer().sign(found["binding"])

    async def start_to_sign(self, run_id: str) -> dict[str, Any]:
        """``{binding, update, shown}``: what :meth:`sign_start` signs for ``run_id``, the update
        that takes it, and the inputs it names; or a refusal. Signs nothing."""
        handle: WorkflowHandle[Any, Any] = self.client.get_workflow_handle(run_id)
        description = await self._ours(run_id, handle)
        if isinstance(description, dict):
            if description.get("closed"):
                return dict(
                    refusal(
                        ErrorCode.GATE_NOT_PENDING,
                        f"Run '{run_id}' is not waiting for its start proof: it has "
                        f"{description['closed']}.",
                        run_id=run_id,
                    )
                )
            return description
        execution = description.raw_description.workflow_execution_info.first_run_id
        first = self.client.get_workflow_handle(run_id, run_id=execution)
        started = None
        async for event in first.fetch_history_events(page_size=1):
            started = event.workflow_execution_started_event_attributes
            break
        if started is None:
            return dict(
                refusal(ErrorCode.NOT_FOUND, f"Run '{run_id}' has no start event.", run_id=run_id)
            )
        payloads = list(started.input.payloads)
        codec = self.client.data_converter.payload_codec
        if codec is not None:  # encrypted: read as the run's worker reads it
            payloads = await codec.decode(payloads)
        graph = description.workflow_type
        if SIGNED_START_MEMO in await description.memo():
            arguments = payload_arguments(payloads)
            return {
                "binding": start_binding(graph, run_id, execution, {"args": arguments}),
                "update": OWN_START_UPDATE,
                "shown": {"args": arguments},
            }
        values = self.client.data_converter.payload_converter.from_payloads(payloads)
        start = values[0] if len(values) == 1 and isinstance(values[0], dict) else {}
        given = start.get("inputs")
        inputs: dict[str, Any] = given if isinstance(given, dict) else {}
        version = start.get("version") if isinstance(start.get("version"), int) else None
        return {
            "binding": start_binding(graph, run_id, execution, inputs, version),
            "update": "start",
            "shown": {"inputs": inputs, "version": version},
        }

    async def sign_resume(self, run_id: str) -> dict[str, Any]:
        """The signed resume to paste into the Temporal UI's or CLI's ``resume``, or a refusal."""
        found = await self.resume_binding(run_id)
        if "error" in found:
            return found
        return self._signer().sign(found)

    async def resume_binding(self, run_id: str) -> dict[str, Any]:
        """What a resume of ``run_id`` authorizes, for a proof signed elsewhere (a key or passkey
        in the inbox's page), or a refusal (the run is not parked). Signs nothing."""
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
            return dict(refusal(ErrorCode.NOTHING_TO_RESUME, reason, run_id=run_id))
        return resume_binding(found["graph"], run_id, found["execution"], parked["node"])

    def _signer(self) -> Signer:
        if self.signer is None:
            raise ValueError("Signing needs a GraphClient with a signer.")
        return self.signer

    async def _awaiting(
        self, run_id: str, described: WorkflowExecutionDescription | None = None
    ) -> dict[str, Any]:
        """``{graph, execution, gate, parked, closed}`` of a run of ours, or a refusal.

        One description from the server, no worker asked (a query that reaches a worker is a
        billed action): the graph and execution are the server's (the workflow type and its
        first run id); the gate and the park are what the run's worker last wrote in its memo,
        believed only where they name this run of this graph and, a gate, this execution (a
        starter's memo is written before the server picks the execution). A run on another task
        queue is not ours to answer, whatever it calls itself. What is signed is judged again by
        the run itself, before anything is written: a gate that changed since is refused.
        ``described`` is that description where the caller has just read it.
        """
        description = await self._ours(run_id, self.client.get_workflow_handle(run_id), described)
        if isinstance(description, dict):
            return description
        execution = description.raw_description.workflow_execution_info.first_run_id
        graph = description.workflow_type
        memo = await description.memo()
        gate, parked = memo.get("lockgate_gate"), memo.get("lockgate_parked")
        if not (
            isinstance(gate, dict)
            and gate.get("graph") == graph
            and gate.get("run_id") == run_id
            and gate.get("execution") == execution
        ):
            gate = None
        if not (
            isinstance(parked, dict)
            and parked.get("graph") == graph
            and parked.get("run_id") == run_id
        ):
            parked = None
        if gate is not None:
            gate = {**gate, "options": [choice.get("option") for choice in gate.get("choices", [])]}
        return {
            "graph": graph,
            "execution": execution,
            "gate": gate,
            "parked": parked,
            "closed": None,
        }

    async def _ours(
        self,
        run_id: str,
        handle: WorkflowHandle[Any, Any],
        described: WorkflowExecutionDescription | None = None,
    ) -> WorkflowExecutionDescription | dict[str, Any]:
        """The server's description of a running run of this client's task queue (``described``
        where the caller has just read it, else read now); else what stands instead: a refusal,
        or ``{closed, gate: None, parked: None}``."""
        description = described if described is not None else await describe_run(handle)
        if isinstance(description, dict):
            return cast(dict[str, Any], description)
        if description.status != WorkflowExecutionStatus.RUNNING:
            return _closed(description.status)
        if description.task_queue != self.task_queue:
            return dict(
                refusal(
                    ErrorCode.NOT_FOUND,
                    f"Run '{run_id}' runs on task queue '{description.task_queue}', not on "
                    f"'{self.task_queue}' where this client's lockgate workers are: it is not a "
                    "run of theirs, whatever it calls itself, and nothing was signed for it.",
                    run_id=run_id,
                )
            )
        execution = description.raw_description.workflow_execution_info.first_run_id
        self._note_on_queue(run_id, execution)
        return description

    async def _shown(self, run_id: str, shown: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`_awaiting`'s answer, from the run as it was shown: the gate shown, in the
        execution the view names (the view and its gate must name the same run and execution).

        Where the server has already told this connection that the execution runs on this
        client's task queue, no one is asked again: what is signed is sent pinned to that
        execution, so the server refuses it for any other, and the run's validator judges the
        gate, the choice and the signer. Otherwise the server's description is read first, and
        the view is believed only while it says the run is ours and still that execution.
        """
        gate = shown.get("awaiting")
        if not isinstance(gate, Mapping):
            return dict(
                refusal(
                    ErrorCode.GATE_NOT_PENDING,
                    f"Run '{run_id}' was not waiting for a decision when it was shown: show it "
                    "again.",
                    run_id=run_id,
                )
            )
        execution = gate.get("execution")
        graph = gate.get("graph")
        found = {
            "graph": graph,
            "execution": execution,
            "gate": dict(gate),
            "parked": None,
            "closed": None,
        }
        if (
            isinstance(execution, str)
            and execution
            and isinstance(graph, str)
            and gate.get("run_id") == run_id
            and shown.get("run_id", run_id) == run_id
            and shown.get("execution", execution) == execution
            and shown.get("graph", graph) == graph
        ):
            if self._known_on_queue(run_id, execution):
                return found
            description = await self._ours(run_id, self.client.get_workflow_handle(run_id))
            if isinstance(description, dict):
                return description
            if (
                graph == description.workflow_type
                and execution == description.raw_description.workflow_execution_info.first_run_id
            ):
                return found
        return dict(
            refusal(
                ErrorCode.GATE_NOT_PENDING,
                f"Run '{run_id}' is not the run that was shown (another graph or execution runs "
                "under its id now): show it again; nothing was signed.",
                run_id=run_id,
            )
        )

    def _note_on_queue(self, run_id: str, execution: str) -> None:
        """Remembers that the server said ``execution`` of ``run_id`` runs on this client's
        task queue (see :data:`_ON_QUEUE`)."""
        if not execution:
            return
        runs = _ON_QUEUE.setdefault(self.client, {}).setdefault(
            self.task_queue, collections.OrderedDict()
        )
        runs[run_id] = execution
        runs.move_to_end(run_id)
        while len(runs) > _ON_QUEUE_AT_MOST:
            runs.popitem(last=False)

    def _known_on_queue(self, run_id: str, execution: str) -> bool:
        runs = _ON_QUEUE.get(self.client, {}).get(self.task_queue)
        return runs is not None and runs.get(run_id) == execution

    # Reading runs: a run's view, the open gates across runs, the runs, the catalogue. Reads
    # write nothing to any run's history: ``show`` is a query, ``pending`` and ``list`` are
    # visibility queries (memo and search attributes), and ``pending`` believes a gate only
    # where the run's own worker wrote it for its execution on this client's task queue.

    async def show(
        self, run_id: str, *, trail_from: int | None = None, trail_limit: int | None = None
    ) -> RunView:
        """The run: status, state, fields, trail, open gate, budgets (a finished run's result).

        A running run shows a page of its trail (the newest rows unless ``trail_from``;
        ``trail_total`` says how many there are); a finished run's result has all of it.
        """
        handle: WorkflowHandle[Any, Any] = self.client.get_workflow_handle(run_id)
        page: dict[str, Any] = {}
        if trail_from is not None:
            page["trail_from"] = trail_from
        if trail_limit is not None:
            page["trail_limit"] = trail_limit
        # The server turns the query away, without a worker, once the run has closed: a running
        # run is shown in one round trip, a closed one read from its result (never replayed for
        # a query).
        query = asyncio.ensure_future(
            handle.query(
                "show",
                page or None,
                result_type=dict,
                rpc_timeout=QUERY_TIMEOUT,
                reject_condition=QueryRejectCondition.NOT_OPEN,
            )
        )
        try:
            unserved = await self._unserved_while(query, handle)
            if unserved is not None:
                return unserved
            shown: RunView = await query
        except WorkflowQueryRejectedError as rejected:
            return await self._ended(run_id, handle, rejected.status)
        except (WorkflowQueryFailedError, RPCError) as error:
            description = await describe_run(handle)
            if isinstance(description, dict):
                return description
            if description.status != WorkflowExecutionStatus.RUNNING:
                return await self._ended(run_id, handle, description.status)
            return await self._unanswered(run_id, description, error)
        finally:
            query.cancel()  # nothing once it has answered; else nobody waits for it any more
        return shown

    async def _unserved_while(
        self, query: asyncio.Future[Any], handle: WorkflowHandle[Any, Any]
    ) -> RunView | None:
        """The refusal for a running run no worker polls for, said as soon as that is known
        rather than after the query's whole timeout; None once the query has answered, or while
        a worker polls its task queue."""
        done, _ = await asyncio.wait({query}, timeout=UNANSWERED_AFTER.total_seconds())
        if done:
            return None
        description = await describe_run(handle)
        if isinstance(description, dict) or description.status != WorkflowExecutionStatus.RUNNING:
            return None  # the query says how it ended, or that there is no such run
        if query.done() or await self._polled(description.task_queue):
            return None
        return await self._unanswered(run_id=handle.id, description=description, error=None)

    async def _unanswered(
        self, run_id: str, description: WorkflowExecutionDescription, error: Exception | None
    ) -> RunView:
        """The refusal of ``show`` for a running run that did not answer: no worker polls its
        task queue (said so, with the command that starts one), or its worker did not answer
        in time (its task may be failing)."""
        queue = description.task_queue
        start = f"`lockgate worker{task_queue_flag(queue)} --graphs MODULE`"
        facts = {
            "run_id": run_id,
            "graph": description.workflow_type,
            "status": "running",
            "task_queue": queue,
        }
        if error is None or not await self._polled(queue):
            return refusal(
                ErrorCode.UNAVAILABLE,
                f"Run '{run_id}' is running, and no worker polls its task queue '{queue}' to "
                f"show it: start one with {start} (the modules that serve "
                f"{description.workflow_type}).",
                **facts,
            )
        return refusal(
            ErrorCode.UNAVAILABLE,
            f"Run '{run_id}' is running, and did not answer `show` ({error}): a worker that "
            f"has stopped may still be listed on its task queue '{queue}' for a while (start "
            f"one with {start}), or the run's task is failing (the Temporal UI shows its "
            "history).",
            **facts,
        )

    async def _polled(self, queue: str) -> bool:
        """Whether the server lists a worker polling ``queue`` for workflow tasks (one that
        stopped stays listed for a few minutes)."""
        described = await self.client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=self.client.namespace,
                task_queue=TaskQueue(name=queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        return bool(described.pollers)

    async def _ended(
        self,
        run_id: str,
        handle: WorkflowHandle[Any, Any],
        status: WorkflowExecutionStatus | None,
    ) -> RunView:
        """A closed run, as its result shows it (or as its worker does, or why neither can)."""
        try:
            # No result type: a workflow of the user's own may return anything at all.
            result = await handle.result()
            if isinstance(result, dict) and result.get("run_id") == run_id:
                return cast(RunView, result)
            # A workflow of the user's own returns what it likes: its worker still shows
            # lockgate's view of it.
            return cast(
                RunView,
                await handle.query("show", result_type=dict, rpc_timeout=QUERY_TIMEOUT),
            )
        except WorkflowFailureError as error:
            outcome = outcome_of(error)  # a refused run: what it would have returned
            if outcome is not None:
                return cast(RunView, outcome)
            return refusal(
                ErrorCode.INTERNAL_ERROR,
                f"Run '{run_id}' ended {status_name(status)}: {error}",
                run_id=run_id,
            )
        except Exception as error:  # the run failed or was terminated: say how
            return refusal(
                ErrorCode.INTERNAL_ERROR,
                f"Run '{run_id}' ended {status_name(status)}: {error}",
                run_id=run_id,
            )

    async def pending(
        self, of: str | None = None, viewer: str | None = None, *, all_queues: bool = False
    ) -> list[PendingGate]:
        """Open gates across runs, read from search attributes and memo (no worker needed).

        Args:
            of: Only gates asking this role.
            viewer: A principal: each option says whether they ``may`` take it and ``why_not``
                (judged against the client's Directory). A name the Directory holds no key or
                passkey for is not verified, and may take nothing. Defaults to the signer.
            all_queues: Not only this client's task queue: every queue with an open gate
                whose workers serve lockgate (see :meth:`served_queues`); each row then says
                its ``task_queue``.

        Returns:
            One row per open gate, each option with ``leads_to`` and ``needs``.
        """
        if all_queues:
            rows: list[PendingGate] = []
            for queue in await self.served_queues(of):
                runs = GraphClient(self.client, queue, self.signer, directory=self.directory)
                for row in await runs.pending(of, viewer):
                    row["task_queue"] = queue
                    rows.append(row)
            return rows
        # Only runs on this client's task queue: anyone may start a workflow of their own named
        # like a graph, with lockgate's memo and search attributes, but not on these workers.
        query = (
            f"{LOCKGATE_STATE.name} = 'waiting' AND ExecutionStatus = 'Running' "
            f"AND TaskQueue = {quote_literal(self.task_queue)}"
        )
        if of is not None:
            query += f" AND {LOCKGATE_AWAITING.name} = {quote_literal(of)}"
        viewer = viewer if viewer is not None else (self.signer.principal if self.signer else None)
        authority = self._viewer_judge
        rows = []
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
            self._note_on_queue(execution.id, gate.execution)
            row = cast(PendingGate, gate.to_dict())
            row["options"] = gate.options
            row["target"] = gate_memo.get("target")
            row["opened_at"] = gate_memo.get("opened_at")
            if viewer is not None and authority is not None:
                summary, verdicts = judge_viewer(authority, viewer, gate)
                row["viewer"] = {
                    "principal": viewer,
                    "is_requester": summary["is_requester"],
                    "made_the_work": summary["made_the_work"],
                    "verified": summary["verified"],
                }
                for shown, verdict in zip(row["choices"], verdicts, strict=True):
                    shown["may"] = verdict.allowed
                    shown["because"] = verdict.code
                    shown["why_not"] = verdict.reason
            rows.append(row)
        return rows

    async def served_queues(self, of: str | None = None) -> list[str]:
        """The task queues where runs wait at a gate (asking ``of``, if given) and whose workers
        serve lockgate, sorted: found through visibility, each kept once a worker of it answers
        lockgate's catalogue (a worker that is not lockgate's never does, so a stranger's queue
        of look-alike runs is left out). This client's own queue is kept without asking."""
        query = f"{LOCKGATE_STATE.name} = 'waiting' AND ExecutionStatus = 'Running'"
        if of is not None:
            query += f" AND {LOCKGATE_AWAITING.name} = {quote_literal(of)}"
        queues = {execution.task_queue async for execution in self.client.list_workflows(query)}
        others = sorted(queues - {self.task_queue})
        # Asked all at once: a queue whose workers have gone takes the whole wait to say so.
        answers = await asyncio.gather(*(self._answers_as_lockgate(queue) for queue in others))
        served = [
            queue
            for queue, answers_as_lockgate in zip(others, answers, strict=True)
            if answers_as_lockgate
        ]
        return sorted(served + ([self.task_queue] if self.task_queue in queues else []))

    async def _answers_as_lockgate(self, queue: str) -> bool:
        """Whether a worker of ``queue`` answers lockgate's catalogue. A queue nobody polls is
        not asked at all, so nothing is started on it (its catalogue run would wait for ever)."""
        if not await self._polled(queue):
            return False
        try:
            await read_catalogue(self.client, queue, wait=_CATALOGUE_WAIT)
        except (CatalogueError, RPCError, WorkflowQueryFailedError) as error:
            _log.info("lockgate: task queue '%s' does not answer as lockgate's: %s", queue, error)
            return False
        return True

    async def _names_its_execution(self, run_id: str, current_run: str, gate: OpenGate) -> bool:
        """Whether a gate memo names its run's execution: only the run's worker can write that
        (a starter's memo is written before the server picks the run id)."""
        if gate.execution == current_run:
            return True
        # A run continued as new: its execution is its chain's first run id.
        described = await self.client.get_workflow_handle(run_id, run_id=current_run).describe()
        return gate.execution == described.raw_description.workflow_execution_info.first_run_id

    async def list(self, graph: str | type | None = None) -> list[dict[str, Any]]:
        """Every lockgate run (of ``graph``) on this client's task queue, the newest start first
        (the server lists running runs before closed ones, and closed ones by when they closed).

        A run's ``status`` is the word :meth:`show` uses for it: a closed run's is how it closed
        (``finished`` for one that ran to its end, ``declined`` for one that ran to its end
        after its last gate took the option that gate names as its rejection, ``refused`` for a
        run refused, ``cancelled`` for one its requester cancelled; else the server's word,
        ``terminated``, ``failed``, ``timed_out``...), and ``execution`` is the server's word
        for every run; a running run's is what its memo says it waits for (``waiting`` at a
        gate, ``parked`` at a node, else ``running``): a run writes its search attributes only
        when it settles, so they may still name a gate it has since been answered at.
        """
        query = (
            f"{LOCKGATE_GRAPH.name} = {quote_literal(graph_name(graph))}"
            if graph is not None
            else f"{LOCKGATE_GRAPH.name} IS NOT NULL"
        ) + f" AND TaskQueue = {quote_literal(self.task_queue)}"
        rows = []
        async for execution in self.client.list_workflows(query):
            attributes = execution.typed_search_attributes
            # A refused or cancelled run wrote so as it completed, and a declined one to its
            # memo; any other closed run is as the server says it closed (a terminated run
            # wrote nothing as it ended).
            written = attributes.get(LOCKGATE_STATE)
            refused = written == "refused"
            status = "refused" if refused else status_name(execution.status)
            if not refused and execution.status == WorkflowExecutionStatus.COMPLETED:
                status = "cancelled" if written == "cancelled" else await _ended_as(execution)
            awaiting = None
            if execution.status == WorkflowExecutionStatus.RUNNING and not refused:
                try:
                    memo = await execution.memo()
                except Exception:  # a memo this client cannot read (keys it lacks)
                    status = str(attributes.get(LOCKGATE_STATE) or "running")
                else:
                    gate = memo.get("lockgate_gate")
                    parked = memo.get("lockgate_parked")
                    status = "waiting" if gate else "parked" if parked else "running"
                    awaiting = gate.get("role") if isinstance(gate, dict) else None
            rows.append(
                {
                    "run_id": execution.id,
                    "graph": attributes.get(LOCKGATE_GRAPH),
                    "status": status,
                    "awaiting": awaiting,
                    "started_at": execution.start_time.isoformat()
                    if execution.start_time
                    else None,
                    "execution": execution.status.name.lower() if execution.status else None,
                }
            )
        # Every start_time is UTC, so its ISO text sorts as the moment does.
        rows.sort(key=lambda row: row["started_at"] or "", reverse=True)
        return rows

    async def catalogue(self) -> dict[str, Any]:
        """The tools and graphs the workers on this task queue serve (a query; no run per call).

        Raises:
            CatalogueError: No worker of the queue answered, or its catalogue id was taken.
        """
        catalogue = await read_catalogue(self.client, self.task_queue)
        names = {entry.get("name") for entry in catalogue.get("graphs") or []}
        self._served_graphs = (time.monotonic(), frozenset(str(name) for name in names))
        return catalogue

    async def serves(self, run_id: str) -> bool:
        """Whether ``run_id`` is a run this client's workers serve: on its task queue, and of a
        graph they serve or a workflow of your own that lockgate marks with its type.

        Only these workers run what is on their queue, and whatever else a stranger starts
        there never runs: a surface shows it as no run at all. The graphs served are those the
        catalogue listed within :data:`SERVED_GRAPHS_FOR` (asking is a query, a billed action);
        while no worker answers, those it listed last.
        """
        description = await describe_run(self.client.get_workflow_handle(run_id))
        if isinstance(description, dict) or description.task_queue != self.task_queue:
            return False
        kind = description.workflow_type
        if description.typed_search_attributes.get(LOCKGATE_GRAPH) == kind:
            return True
        return kind in await self._graphs_served()

    async def _graphs_served(self) -> frozenset[str]:
        cached = self._served_graphs
        if cached is not None and time.monotonic() - cached[0] < SERVED_GRAPHS_FOR:
            return cached[1]
        try:
            await self.catalogue()
        except Exception:  # no worker answered: the graphs listed last still stand
            _log.warning(
                "lockgate: the catalogue of task queue '%s' did not answer", self.task_queue
            )
            return cached[1] if cached is not None else frozenset()
        assert self._served_graphs is not None
        return self._served_graphs[1]

    async def unserved(self, graph: str) -> RunView | None:
        """A refusal when no worker of this task queue serves ``graph`` (nothing is started for
        it), else None.

        A name found in the catalogue read within :data:`SERVED_GRAPHS_FOR` is believed without
        asking again; a name not found there is always asked about afresh, so a graph deployed
        a moment ago is never refused from an old answer.
        """
        cached = self._served_graphs
        if (
            cached is not None
            and graph in cached[1]
            and time.monotonic() - cached[0] < SERVED_GRAPHS_FOR
        ):
            return None
        try:
            await self.catalogue()
        except CatalogueError as error:
            return refusal(
                ErrorCode.NOT_FOUND,
                f"Nothing was started: the graphs served on task queue '{self.task_queue}' "
                f"cannot be read. {error}",
                graph=shorten(graph),
            )
        assert self._served_graphs is not None
        served = sorted(self._served_graphs[1])
        if graph in served:
            return None
        return refusal(
            ErrorCode.NOT_FOUND,
            f"No graph named '{shorten(graph)}' on task queue '{self.task_queue}'; served: "
            f"{', '.join(served) or 'none'}. Nothing was started (`lockgate graphs` lists them "
            "with their inputs).",
            graph=shorten(graph),
        )


def _execution_named(signed: Mapping[str, Any]) -> str | None:
    """The execution a proof names (its chain's first run id), or None (an unsigned answer)."""
    authorizes = signed.get("authorizes")
    execution = authorizes.get("execution") if isinstance(authorizes, Mapping) else None
    return execution if isinstance(execution, str) and execution else None


def _closed(status: WorkflowExecutionStatus | None) -> dict[str, Any]:
    """What a client reads of a run that is no longer running: how it ended, no gate or park."""
    return {"closed": status_name(status), "gate": None, "parked": None}


async def _ended_as(execution: WorkflowExecution) -> str:
    """How a run that completed ended, as its memo says (``declined``), else ``finished``: runs
    recorded before they wrote it, and a memo this client cannot read (keys it lacks), read so."""
    try:
        memo = await execution.memo()
    except Exception:
        return "finished"
    return "declined" if memo.get(STATUS_MEMO) == "declined" else "finished"

"""What a graph client reads: a run's view, the open gates across runs, the runs, the catalogue.

Reads write nothing to any run's history: ``show`` is a query, ``pending`` and ``list`` are
visibility queries (memo and search attributes), and ``pending`` believes a gate only where the
run's own worker wrote it for its execution on this client's task queue.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, cast

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
)
from temporalio.common import QueryRejectCondition
from temporalio.service import RPCError

from lockgate.clients._client_support import (
    describe_run,
    graph_name,
    quote_literal,
    refusal,
    status_name,
)
from lockgate.contracts import PendingGate, RunView
from lockgate.gates._authority import Authority
from lockgate.gates._gates import OpenGate
from lockgate.gates._judgements import judge_viewer
from lockgate.gates._limits import shorten
from lockgate.identity._proofs import Signer
from lockgate.tools._result import ErrorCode
from lockgate.workflows._catalogue import CatalogueError, read_catalogue
from lockgate.workflows._failures import outcome_of
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
)

__all__ = ["QUERY_TIMEOUT", "SERVED_GRAPHS_FOR", "RunViews"]

QUERY_TIMEOUT = timedelta(seconds=10)
"""How long a client waits for a run's worker to answer a query."""

SERVED_GRAPHS_FOR = 30.0
"""Seconds a client believes a graph it found in its task queue's catalogue is still served."""


class RunViews:
    """The reading half of :class:`~lockgate.GraphClient`."""

    client: Client
    task_queue: str
    signer: Signer | None
    _viewer_judge: Authority | None
    # When the catalogue was last read, and the graph names it listed.
    _served_graphs: tuple[float, frozenset[str]] | None = None

    async def show(
        self, run_id: str, *, trail_from: int | None = None, trail_limit: int | None = None
    ) -> RunView:
        """The run: status, state, channels, trail, open gate, budgets (a finished run's result).

        A running run shows a page of its trail (the newest rows unless ``trail_from``;
        ``trail_total`` says how many there are); a finished run's result has all of it.
        """
        handle: WorkflowHandle[Any, Any] = self.client.get_workflow_handle(run_id)
        page: dict[str, Any] = {}
        if trail_from is not None:
            page["trail_from"] = trail_from
        if trail_limit is not None:
            page["trail_limit"] = trail_limit
        try:
            # The server turns the query away, without a worker, once the run has closed: a
            # running run is shown in one round trip, a closed one read from its result (never
            # replayed for a query).
            shown: RunView = await handle.query(
                "show",
                page or None,
                result_type=dict,
                rpc_timeout=QUERY_TIMEOUT,
                reject_condition=QueryRejectCondition.NOT_OPEN,
            )
        except WorkflowQueryRejectedError as rejected:
            return await self._ended(run_id, handle, rejected.status)
        except (WorkflowQueryFailedError, RPCError) as error:
            description = await describe_run(handle)
            if isinstance(description, dict):
                return description
            if description.status != WorkflowExecutionStatus.RUNNING:
                return await self._ended(run_id, handle, description.status)
            # A run whose task is failing (or with no worker) cannot answer; say so plainly.
            return refusal(
                ErrorCode.INTERNAL_ERROR,
                f"Run '{run_id}' did not answer `show` ({error}); is a lockgate worker serving "
                f"'{description.task_queue}', and is the run's task failing? The Temporal UI "
                "shows its history.",
                run_id=run_id,
            )
        return shown

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

    async def pending(self, of: str | None = None, viewer: str | None = None) -> list[PendingGate]:
        """Open gates across runs, read from search attributes and memo (no worker needed).

        Args:
            of: Only gates asking this role.
            viewer: A principal: each option says whether they ``may`` take it and ``why_not``
                (judged against the client's Directory). A name the Directory holds no key or
                passkey for is not verified, and may take nothing. Defaults to the signer.

        Returns:
            One row per open gate, each option with ``leads_to`` and ``needs``.
        """
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

    async def _names_its_execution(self, run_id: str, current_run: str, gate: OpenGate) -> bool:
        """Whether a gate memo names its run's execution: only the run's worker can write that
        (a starter's memo is written before the server picks the run id)."""
        if gate.execution == current_run:
            return True
        # A run continued as new: its execution is its chain's first run id.
        described = await self.client.get_workflow_handle(run_id, run_id=current_run).describe()
        return gate.execution == described.raw_description.workflow_execution_info.first_run_id

    async def list(self, graph: str | type | None = None) -> list[dict[str, Any]]:
        """Every lockgate run (of ``graph``) on this client's task queue, newest visibility first
        as the server returns them.

        A closed run's ``status`` is how it closed (``completed``, ``terminated``...; ``refused``
        for a run refused, ``cancelled`` for one its requester cancelled); a running run's is
        what its memo says it waits for (``waiting`` at a gate, ``parked`` at a node, else
        ``running``): a run writes its search attributes only when it settles, so they may still
        name a gate it has since been answered at.
        """
        query = (
            f"{LOCKGATE_GRAPH.name} = {quote_literal(graph_name(graph))}"
            if graph is not None
            else f"{LOCKGATE_GRAPH.name} IS NOT NULL"
        ) + f" AND TaskQueue = {quote_literal(self.task_queue)}"
        rows = []
        async for execution in self.client.list_workflows(query):
            attributes = execution.typed_search_attributes
            # A refused or cancelled run wrote so as it completed; any other closed run is as
            # the server says it closed (a terminated run wrote nothing as it ended).
            written = attributes.get(LOCKGATE_STATE)
            refused = written == "refused"
            status = "refused" if refused else status_name(execution.status)
            if written == "cancelled" and execution.status == WorkflowExecutionStatus.COMPLETED:
                status = "cancelled"
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

"""What the workers of a task queue serve, read by a query: listing tools starts no run.

Each task queue has one catalogue run, ``lockgate-catalogue:<task queue>`` of type
``lockgate.catalogue``: made the first time anyone lists the queue (and again once retention has
removed it), it finishes at once. A query on it is answered by a worker of the queue from what
that worker serves now, so the list is always the live one, and listing a thousand times leaves
one run in the namespace, not a thousand.

The run's id is a name anyone with namespace access could take first; before the query,
:func:`read_catalogue` checks with the server that the run is of lockgate's type on the asked
queue, so an answer comes from a worker polling that queue, as an activity's would.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeGuard

from temporalio import workflow
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from lockgate._errors import SetupError
from lockgate.workflows._generated import GeneratedClass

__all__ = [
    "CATALOGUE_QUERY",
    "CATALOGUE_WORKFLOW",
    "CatalogueError",
    "catalogue_id",
    "catalogue_workflow",
    "read_catalogue",
]

CATALOGUE_WORKFLOW = "lockgate.catalogue"
"""The workflow type of every task queue's catalogue run."""

CATALOGUE_QUERY = "describe"
"""The name of the catalogue run's query on the server: ``{tools, graphs}``. (Not Temporal's
describe of an execution: a name kept from before, which workers and clients agree on.)"""


class CatalogueError(SetupError):
    """The catalogue of a task queue cannot be read; the message says why."""


def catalogue_id(task_queue: str) -> str:
    """The workflow id of ``task_queue``'s catalogue run."""
    return f"lockgate-catalogue:{task_queue}"


def catalogue_workflow(tools_and_graphs: Callable[[], dict[str, Any]]) -> type:
    """The catalogue workflow of one worker: its query answers ``tools_and_graphs()``.

    ``tools_and_graphs`` reads only what the worker holds in memory; a query writes nothing to
    history, so what it answers may change as the worker does. The query is named
    :data:`CATALOGUE_QUERY` on the server, as it always was: clients of every release send it.
    """
    made = GeneratedClass("Catalogue", module=__name__)

    @workflow.run
    @made.method
    async def run(self: Any) -> None:
        return None

    @workflow.query(name=CATALOGUE_QUERY)
    @made.method
    def served(self: Any) -> dict[str, Any]:
        return tools_and_graphs()

    doc = "What the workers of this task queue serve, answered by a query."
    namespace = {"__doc__": doc, "run": run, "served": served}
    defined: type = workflow.defn(name=CATALOGUE_WORKFLOW, sandboxed=False)(
        made.make((), namespace)
    )
    return defined


async def read_catalogue(
    client: Client, task_queue: str, *, wait: timedelta = timedelta(seconds=10)
) -> dict[str, Any]:
    """``{tools, graphs}`` the workers on ``task_queue`` serve, read from its catalogue run.

    Args:
        client: A client of the namespace.
        task_queue: The queue whose workers are asked.
        wait: How long a worker of the queue has to answer.

    Raises:
        CatalogueError: No worker answered within ``wait``, or the catalogue id is held by a
            running workflow that is not lockgate's catalogue on ``task_queue``.
    """
    described = await _described(client, task_queue)
    if not _is_catalogue(described, task_queue):
        # None yet, or a closed stranger's run (a new run takes the id over): make it.
        if described is None or described.status != WorkflowExecutionStatus.RUNNING:
            await client.start_workflow(
                CATALOGUE_WORKFLOW,
                id=catalogue_id(task_queue),
                task_queue=task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            )
            described = await _described(client, task_queue)
        if described is None or not _is_catalogue(described, task_queue):
            what = (
                f"a '{described.workflow_type}' on task queue '{described.task_queue}'"
                if described is not None
                else "gone"
            )
            raise CatalogueError(
                f"The workflow '{catalogue_id(task_queue)}' is {what}, not lockgate's "
                f"catalogue of '{task_queue}': someone took its id, so this queue's tools "
                "cannot be listed until it ends (`temporal workflow terminate --workflow-id "
                f"{catalogue_id(task_queue)}`)."
            )
    handle = client.get_workflow_handle(catalogue_id(task_queue), run_id=described.run_id)
    try:
        catalogue: dict[str, Any] = await handle.query(
            CATALOGUE_QUERY, result_type=dict, rpc_timeout=wait
        )
    except RPCError as error:
        # The client's own deadline ends the call as CANCELLED, the server's as DEADLINE_EXCEEDED.
        if error.status not in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
            raise
        raise CatalogueError(
            f"No worker of task queue '{task_queue}' answered within {wait.total_seconds():g} s: "
            "is one running with lockgate's plugin (`lockgate worker ...`) on this queue?"
        ) from None
    return catalogue


async def _described(client: Client, task_queue: str) -> WorkflowExecutionDescription | None:
    try:
        return await client.get_workflow_handle(catalogue_id(task_queue)).describe()
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise
        return None


def _is_catalogue(
    described: WorkflowExecutionDescription | None, task_queue: str
) -> TypeGuard[WorkflowExecutionDescription]:
    return (
        described is not None
        and described.workflow_type == CATALOGUE_WORKFLOW
        and described.task_queue == task_queue
    )

"""An update a run accepted is believed only under the seal of the worker whose validator
accepted it.

An update's validator judges it before anything is written, and never runs again: replay only
runs its handler. So the handler of every update that carries authority (a start, an answer, a
resume, a cancel, a durable call and its confirmation) first has the run's history record a
seal over exactly that update, made by this worker when its own validator accepted it (a local
activity's result, in the same workflow task as the acceptance), and opens that seal on every
replay. An update some other worker accepted has no such seal, and stops the run
(:class:`~lockgate.workflows._history_seals.UnsealedHistoryError`) before its handler reads or
changes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import workflow

from lockgate.activities._activity_inputs import RECORD_ACCEPTANCE
from lockgate.activities._sealed_results import ACCEPTED, accepted_binding
from lockgate.workflows._activity_options import LOCAL_RETRY, LOCAL_TIMEOUT
from lockgate.workflows._history_seals import accepted_here, history_seals

__all__ = ["believe_update"]


async def believe_update(arguments: Sequence[Any]) -> None:
    """Returns once the update whose handler calls this is believed: its history records the
    seal of the worker that accepted it (this one, the first time; any of the deployment's, on
    replay). Call it first in the handler, before anything else is read or changed.

    Args:
        arguments: The update's arguments, as the handler received them.

    Raises:
        UnsealedHistoryError: The update was accepted by a worker without the worker secret.
    """
    seals = history_seals()
    if seals.believes_unsealed():
        return
    info = workflow.info()
    update = workflow.current_update_info()
    assert update is not None, "believe_update is called in an update handler"
    binding = accepted_binding(
        info.workflow_id,
        info.first_execution_run_id,
        info.original_execution_run_id,
        update.id,
        update.name,
        arguments,
    )
    # Made before anything is awaited: whether this worker's validator accepted the update is
    # known for the activation that runs it only.
    made = seals.seal(ACCEPTED, binding) if accepted_here() else None
    recorded = await workflow.execute_local_activity(
        RECORD_ACCEPTANCE,
        made,
        start_to_close_timeout=LOCAL_TIMEOUT,
        retry_policy=LOCAL_RETRY,
        summary=f"accepted {update.name}",
    )
    if not seals.opens(recorded, ACCEPTED, binding):
        seals.refuse(f"the `{update.name}` update {update.id!r}", recorded)

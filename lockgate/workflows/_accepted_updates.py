"""An update a run accepted is believed only under the seal of the worker whose validator
accepted it.

An update's validator judges it before anything is written, and never runs again: replay only
runs its handler. So the handler of every update that carries authority (a start, an answer, a
resume, a cancel, a durable call and its confirmation) first takes its :class:`Acceptance`: the
seal this worker makes when its own validator accepted the update, over exactly that update. The
run's history records that seal in the same workflow task as the acceptance, as a local
activity's result, and the run opens it before it acts on the update, the first time and on
every replay. An update some other worker accepted has no such seal, and stops the run
(:class:`~lockgate.workflows._history_seals.UnsealedHistoryError`).

Where the update is followed in the same workflow task by one of lockgate's own local checks (a
graph run's start check, a durable call's), that check records the seal with its own sealed
result (:attr:`Acceptance.made` in, echoed out); every other update records it with
``lockgate.record_acceptance`` (:func:`believe_update`). A workflow of your own's start records,
in that same activity and under that same seal, what the run opens with (:func:`believe_start`),
so that it needs no start check of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

from lockgate.activities._activity_inputs import RECORD_ACCEPTANCE
from lockgate.activities._sealed_results import ACCEPTED, accepted_binding
from lockgate.workflows._activity_options import LOCAL_RETRY, LOCAL_TIMEOUT
from lockgate.workflows._history_seals import accepted_here, history_seals

__all__ = ["Acceptance", "acceptance", "believe_start", "believe_update"]


@dataclass(frozen=True)
class Acceptance:
    """An update's claim to have been accepted by a worker of this deployment.

    Attributes:
        update: The update, as a refusal names it (``the `start` update 'u-1'``).
        binding: What its seal vouches for (see :func:`accepted_binding`).
        made: The seal, where this worker's own validator accepted it (in this activation);
            None where it is replayed or was accepted elsewhere.
    """

    update: str
    binding: dict[str, Any]
    made: str | None

    def confirm(self, recorded: object) -> None:
        """Returns if ``recorded`` (what the history recorded of :attr:`made`) is the seal of a
        worker of this deployment over exactly this update.

        Raises:
            UnsealedHistoryError: It is not.
        """
        seals = history_seals()
        if not seals.opens(recorded, ACCEPTED, self.binding):
            seals.refuse(self.update, recorded)


def acceptance(arguments: Sequence[Any]) -> Acceptance | None:
    """The :class:`Acceptance` of the update whose handler calls this, with ``arguments`` (as
    the handler received them); None for a run that believes unsealed history. Call it first
    in the handler: whether this worker's validator accepted the update is known in the
    activation that runs it only."""
    seals = history_seals()
    if seals.believes_unsealed():
        return None
    claim, binding = _this_update(arguments)
    made = seals.seal(ACCEPTED, binding) if accepted_here() else None
    return Acceptance(claim, binding, made)


def _this_update(arguments: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """The update whose handler calls this, as a refusal names it, and what its seal binds."""
    info = workflow.info()
    update = workflow.current_update_info()
    assert update is not None, "an accepted update is read in its handler"
    binding = accepted_binding(
        info.workflow_id,
        info.first_execution_run_id,
        info.original_execution_run_id,
        update.id,
        update.name,
        arguments,
    )
    return f"the `{update.name}` update {update.id!r}", binding


async def believe_update(arguments: Sequence[Any]) -> None:
    """Returns once the update whose handler calls this is believed: its history records the
    seal of the worker that accepted it (this one, the first time; any of the deployment's, on
    replay), through ``lockgate.record_acceptance``. Call it first in the handler, before
    anything else is read or changed.

    Raises:
        UnsealedHistoryError: The update was accepted by a worker without the worker secret.
    """
    accepted = acceptance(arguments)
    if accepted is None:
        return
    update = workflow.current_update_info()
    recorded = await workflow.execute_local_activity(
        RECORD_ACCEPTANCE,
        accepted.made,
        start_to_close_timeout=LOCAL_TIMEOUT,
        retry_policy=LOCAL_RETRY,
        summary=f"accepted {update.name if update else 'update'}",
    )
    accepted.confirm(recorded)


async def believe_start(
    arguments: Sequence[Any], opening: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Like :func:`believe_update`, for the start proof of a workflow of your own, which
    records beside its seal, under the same seal, what the run opens with: ``opening`` (the
    tools it runs local, the protocol it follows) the first time, and on every replay what the
    history recorded. The run then needs no start check of its own (a second local activity).

    Returns:
        What the run opens with, as its history recorded it; None where the history recorded
        the seal alone (as lockgate did before) or the run believes unsealed history: it then
        opens with its own check, as it did.

    Raises:
        UnsealedHistoryError: The start, or what it opens with, was recorded by a worker
            without the worker secret.
    """
    seals = history_seals()
    if seals.believes_unsealed():
        return None
    claim, binding = _this_update(arguments)
    made: dict[str, Any] | None = None
    if accepted_here():
        opened = dict(opening)
        made = {"seal": seals.seal(ACCEPTED, {**binding, "opened": opened}), "opened": opened}
    recorded = await workflow.execute_local_activity(
        RECORD_ACCEPTANCE,
        made,
        start_to_close_timeout=LOCAL_TIMEOUT,
        retry_policy=LOCAL_RETRY,
        summary="accepted lockgate.start",
    )
    if isinstance(recorded, Mapping) and isinstance(recorded.get("opened"), Mapping):
        opened = dict(recorded["opened"])
        if not seals.opens(recorded.get("seal"), ACCEPTED, {**binding, "opened": opened}):
            seals.refuse(claim, recorded.get("seal"))
        return opened
    if not seals.opens(recorded, ACCEPTED, binding):
        seals.refuse(claim, recorded)
    return None

"""Scheduled starts: a run a Temporal Schedule started runs as the schedule's owner only when
the server says that schedule started it, inside the window its owner signed.

A schedule's action is a start payload anyone with namespace access can read and copy, so the
grant it carries (:func:`~lockgate.identity._bindings.schedule_binding`) proves nothing by being
there. What a copy cannot forge is the server's own list of what the schedule started: describing
the schedule the grant names lists each run it started (``running_actions`` while it runs,
``recent_actions`` once it ended) by workflow id and first run id. The search attributes
``TemporalScheduledById`` and ``TemporalScheduledStartTime`` prove nothing: a client may set
both on a start of its own. This check runs in the run's start check (a local activity), so its
verdict is recorded once, under the worker secret's seal, and every replay reads it back.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import activity
from temporalio.client import ScheduleActionExecutionStartWorkflow
from temporalio.service import RPCError, RPCStatusCode

from lockgate.activities._activity_inputs import OpenStartInput
from lockgate.activities._handover import start_refused
from lockgate.gates._authority import Authority
from lockgate.gates._judgements import judge_scheduled_start, schedule_of_grant
from lockgate.tools._tool_result import ErrorCode

__all__ = ["SCHEDULE_LISTS_WITHIN", "open_scheduled_start"]

SCHEDULE_LISTS_WITHIN = 5.0
"""Seconds a scheduled run's start check waits for its schedule to list it: the scheduler
records a start after the server accepted it, so a run's first task can come first."""


async def open_scheduled_start(
    authority: Authority, start: OpenStartInput, opened: dict[str, Any]
) -> dict[str, Any]:
    """``opened`` with the schedule's owner as the run's requester, or the refused start.

    Args:
        authority: The worker's Directory and verifier, and its audit log.
        start: The run's start, carrying the grant in ``scheduled``.
        opened: Its fields, already checked.
    """
    schedule = schedule_of_grant(start.scheduled)
    listed = schedule is not None and await _lists(schedule, start.run, start.execution)
    judgement = judge_scheduled_start(
        authority,
        start.scheduled,
        graph=start.graph,
        run=start.run,
        version=start.version,
        inputs=start.inputs,
        started_by_schedule=listed,
        started_at=start.started_at or 0.0,
    )
    if not judgement.allowed or judgement.actor is None:
        code = ErrorCode(judgement.code or ErrorCode.UNAUTHORIZED.value)
        reason = judgement.reason or "The schedule grant was refused."
        authority.audit.refused(
            "run.scheduled", code, reason, graph=start.graph, run=start.run, schedule=schedule
        )
        return start_refused(code, reason)
    actor = judgement.actor.to_dict()
    authority.audit.event(
        "run.scheduled",
        accepted=True,
        actor=actor,
        graph=start.graph,
        run=start.run,
        schedule=schedule,
    )
    return opened | {"actor": actor}


async def _lists(schedule: str, run: str, execution: str) -> bool:
    """Whether the server lists execution ``execution`` of ``run`` among the actions of
    ``schedule``, waiting up to :data:`SCHEDULE_LISTS_WITHIN` for it to be recorded."""
    handle = activity.client().get_schedule_handle(schedule)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SCHEDULE_LISTS_WITHIN
    pause = 0.05
    while True:
        try:
            described = await handle.describe()
        except RPCError as error:
            if error.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.INVALID_ARGUMENT):
                return False
            raise
        info = described.info
        started = [*info.running_actions, *(result.action for result in info.recent_actions)]
        if any(
            isinstance(action, ScheduleActionExecutionStartWorkflow)
            and (action.workflow_id, action.first_execution_run_id) == (run, execution)
            for action in started
        ):
            return True
        if loop.time() + pause > deadline:
            return False
        await asyncio.sleep(pause)
        pause = min(pause * 2, 1.0)

"""Schedules: a Temporal Schedule whose runs start as its owner, by a grant the owner signed.

:meth:`GraphClient.schedule <lockgate.GraphClient.schedule>` signs a *schedule grant*
(:func:`~lockgate.identity._bindings.schedule_binding`: the graph, its version, the digest of
the inputs, the schedule's id and a window) and creates a Temporal Schedule whose action starts
the graph with those inputs and the grant. Each run the schedule starts is judged by its own
start check (:mod:`lockgate.activities._scheduled_starts`): it runs as the owner only when the
server lists it among that schedule's actions, inside the window. Pausing, triggering,
backfilling and deleting the schedule are Temporal's own (``temporal schedule``, the UI).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleSpec,
)
from temporalio.service import RPCError

from lockgate.contracts import refusal
from lockgate.identity._bindings import schedule_binding
from lockgate.identity._proofs import Signer
from lockgate.identity._verifier import utc_moment
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._graph_inputs import StartGraphInput

__all__ = ["GRANT_SKEW", "create_schedule", "interval_of", "moment_of"]

GRANT_SKEW = timedelta(minutes=1)
"""How long before it was signed a grant's window opens: room for the server's clock to be
behind the signer's."""


async def create_schedule(
    client: Client,
    task_queue: str,
    signer: Signer | None,
    graph: str,
    inputs: Mapping[str, Any],
    *,
    until: datetime,
    cron: str | None = None,
    interval: timedelta | None = None,
    schedule_id: str | None = None,
    version: int | None = None,
) -> dict[str, Any]:
    """Signs the grant and creates the schedule; see :meth:`GraphClient.schedule`."""
    if signer is None:
        return dict(
            refusal(
                ErrorCode.UNAUTHORIZED,
                "A schedule's runs start as its owner, who signs its grant: schedule with a "
                "signer (`--as YOU`).",
            )
        )
    if (cron is None) == (interval is None):
        return _invalid("A schedule ticks by a cron expression or by an interval: give one.")
    if interval is not None and interval < timedelta(seconds=1):
        return _invalid("A schedule's interval is at least one second.")
    if until.tzinfo is None:
        return _invalid("'until' is a moment with its time zone (UTC, say), not a local time.")
    now = time.time()
    if until.timestamp() <= now:
        return _invalid(f"'until' ({until.isoformat()}) has passed: a grant's window ends later.")
    schedule_id = schedule_id or f"{graph}-schedule-{uuid.uuid4().hex[:8]}"
    not_before = int(now - GRANT_SKEW.total_seconds())
    not_after = int(until.timestamp())
    try:
        grant = signer.sign(
            schedule_binding(graph, schedule_id, inputs, not_before, not_after, version)
        )
    except (TypeError, ValueError):
        return _invalid(
            "The inputs are not JSON data a grant can name (NaN, infinity or an unpaired "
            "surrogate); send plain JSON."
        )
    start = StartGraphInput(inputs=dict(inputs), version=version, scheduled=grant)
    spec = ScheduleSpec(
        cron_expressions=[cron] if cron is not None else [],
        intervals=[ScheduleIntervalSpec(every=interval)] if interval is not None else [],
        end_at=until,
    )
    action = ScheduleActionStartWorkflow(
        graph,
        start,
        # The server names each run `<schedule id>-<the moment it was scheduled for>`.
        id=schedule_id,
        task_queue=task_queue,
        static_summary=f"{graph}: scheduled by {signer.principal}",
    )
    try:
        await client.create_schedule(schedule_id, Schedule(action=action, spec=spec))
    except ScheduleAlreadyRunningError:
        return _invalid(f"A schedule with id '{schedule_id}' already exists.")
    except RPCError as error:
        return _invalid(f"The server refused the schedule: {error.message}")
    return {
        "ok": True,
        "schedule_id": schedule_id,
        "graph": graph,
        "owner": signer.principal,
        "not_before": utc_moment(not_before),
        "not_after": utc_moment(not_after),
    }


def _invalid(sentence: str) -> dict[str, Any]:
    return dict(refusal(ErrorCode.VALIDATION_ERROR, sentence))


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def interval_of(text: str) -> timedelta | None:
    """``30s``, ``15m``, ``2h``, ``1d`` (or a number of seconds) as a timedelta; None for
    anything else."""
    match = re.fullmatch(r"\s*(\d{1,9})\s*([smhd]?)\s*", text)
    if match is None:
        return None
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2) or "s"])


def moment_of(text: str) -> datetime | None:
    """An ISO 8601 date (``2027-01-01``: its midnight, UTC) or moment (``2027-01-01T09:00Z``; UTC
    where it names no offset) as an aware datetime; None for anything else."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)

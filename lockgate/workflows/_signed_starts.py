"""Signed starts: a run does nothing as anyone until it holds a proof that names it.

A proof cannot name an execution that does not exist yet, so a client starts a signed run (a
graph run, a durable tool call, a workflow of your own) first, unsigned, holding its first
workflow task back by :data:`SIGNED_START_WITHIN` (a start delay); signs a proof for the execution
the server's reply names; and sends it as an update, which ends the delay: the run's first task
brings the proof, judged by the update's validator before anything is written. A client whose
proof is refused withdraws the run (a cancellation request), which then ends refused at once; a
run started as signed that gets no proof at all (its starter died) waits
:data:`SIGNED_START_WITHIN` from its start and ends refused. Either has run nothing.

No proof is spent anywhere but in the run it names, so there is nothing to delete or to pile up
in a namespace: a copy read from history names an execution that already has its starter.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from lockgate._errors import RefusedError

__all__ = ["SIGNED_START_WITHIN", "StartRefusedError", "await_signed_start", "withdraw"]

SIGNED_START_WITHIN = timedelta(minutes=5)
"""How long a run started as signed waits for its proof (as long as a proof is good), and how long
a client holds back its first workflow task for the proof to arrive with it."""


class StartRefusedError(RefusedError):
    """A run refused the proof of its signed start, and was withdrawn, having run nothing.

    Raised by ``GraphClient.start_workflow``, which returns a handle rather than a refusal.

    Attributes:
        code: The refusal's code (``UNAUTHORIZED``...).
        message: Its sentence.
        run_id: The run's workflow id.
    """

    def __init__(self, code: str, message: str, run_id: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.run_id = run_id


async def await_signed_start(arrived: Callable[[], bool], what: str) -> str | None:
    """Waits, in workflow code, until ``arrived()`` or :data:`SIGNED_START_WITHIN` has passed
    since the run started; starts no timer when the proof is already here (the usual case: it
    came with the run's first task).

    Returns:
        None once it arrived; else why not, as the end of a sentence: its starter withdrew the
        run (a cancellation request), or none came in time.
    """
    if arrived():
        return None
    minutes = int(SIGNED_START_WITHIN.total_seconds() // 60)
    late = f"none reached it within {minutes} minutes of its start"
    left = (workflow.info().start_time + SIGNED_START_WITHIN - workflow.now()).total_seconds()
    if left <= 0:
        return late
    try:
        await workflow.wait_condition(arrived, timeout=left, timeout_summary=what)
    except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
        return late
    except asyncio.CancelledError:
        # Nothing ran, so there is nothing to clean up: the run ends refused, saying why.
        return "its starter withdrew it before one was accepted"
    return None


async def withdraw(handle: WorkflowHandle[Any, Any]) -> None:
    """Asks a run whose start proof was refused to end: it has run nothing, and now ends refused
    at once instead of after :data:`SIGNED_START_WITHIN`."""
    with contextlib.suppress(RPCError):
        await handle.cancel()

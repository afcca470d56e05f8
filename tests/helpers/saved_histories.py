"""Saved histories under ``tests/histories/``: where they are, reading one, replaying it, and
recording one again (only with ``LOCKGATE_REGENERATE_HISTORIES=1``).

Histories recorded today carry the seals of the worker secret :data:`HISTORY_SECRET`, so that
they open on replay. Those under ``unsealed/`` were recorded before lockgate sealed its history,
and are never recorded again: a worker told that runs started before :data:`SEALED_SINCE` are
unsealed (``unsealed_runs_before``) must keep replaying them, as it would a run in flight across
that upgrade.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from lockgate import LockgatePlugin
from lockgate.identity._seals import WorkerSecret

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
UNSEALED = "unsealed"
BEFORE_LOCAL_TOOLS = f"{UNSEALED}/essay_review_before_local_tools"
REGENERATE = os.environ.get("LOCKGATE_REGENERATE_HISTORIES") == "1"

HISTORY_SECRET = WorkerSecret.parse(
    "lockgate-worker-secret:histories:NdpX9m7jdkQCzzzMfyB03sb6KUL0Q8fovtxxnI6E5xE"
)
"""The worker secret the saved histories are recorded with: a key for these tests only,
committed so that the seals in them open when they are replayed."""

SEALED_SINCE = datetime(2026, 12, 4, tzinfo=timezone.utc)
"""Every history under ``unsealed/`` is of a run started before this moment; every other one
after it."""


def run_id_of(name: str) -> str:
    """The workflow id a saved history was recorded under (the file name says which)."""
    return f"replay-{name}"


def saved_history(name: str, run_id: str | None = None) -> WorkflowHistory:
    # The history from before local tools was recorded as essay_review's, under its id; one in a
    # folder under its graph's.
    if run_id is None:
        run_id = run_id_of("essay_review" if name == BEFORE_LOCAL_TOOLS else name.split("/")[-1])
    return WorkflowHistory.from_json(run_id, (HISTORIES / f"{name}.json").read_text())


def replayer(graphs: Iterable[type], **options: Any) -> Replayer:
    """A replayer of the saved histories: lockgate's plugin with ``graphs``, the histories'
    secret, lockgate's metrics counted (a metric is no command), and the unsealed histories
    believed; ``options`` override the plugin's."""
    settings: dict[str, Any] = {
        "secret": HISTORY_SECRET,
        "metrics": True,
        "unsealed_runs_before": SEALED_SINCE,
        **options,
    }
    return Replayer(workflows=[], plugins=[LockgatePlugin(graphs=list(graphs), **settings)])


async def save(client: Client, run_id: str, name: str) -> None:
    handle = client.get_workflow_handle(run_id)
    await handle.result()
    history = await handle.fetch_history()
    (HISTORIES / f"{name}.json").write_text(without_stack_traces(history.to_json()) + "\n")


def without_stack_traces(text: str) -> str:
    """The history with failures' stack traces emptied: they name files on the recording machine,
    and replay never reads them."""

    def scrub(value: object) -> object:
        if isinstance(value, dict):
            return {k: "" if k == "stackTrace" else scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(item) for item in value]
        return value

    return json.dumps(scrub(json.loads(text)), indent=2)

"""Saved histories under ``tests/histories/``: where they are, reading one, and recording one
again (only with ``LOCKGATE_REGENERATE_HISTORIES=1``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from temporalio.client import Client, WorkflowHistory

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
BEFORE_LOCAL_TOOLS = "essay_review_before_local_tools"
REGENERATE = os.environ.get("LOCKGATE_REGENERATE_HISTORIES") == "1"


def run_id_of(name: str) -> str:
    """The workflow id a saved history was recorded under (the file name says which)."""
    return f"replay-{name}"


def saved_history(name: str, run_id: str | None = None) -> WorkflowHistory:
    # The history from before local tools was recorded as essay_review's, under its id; a marked
    # history under its graph's.
    if run_id is None:
        run_id = run_id_of("essay_review" if name == BEFORE_LOCAL_TOOLS else name.split("/")[-1])
    return WorkflowHistory.from_json(run_id, (HISTORIES / f"{name}.json").read_text())


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

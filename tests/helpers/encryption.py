"""What the payload-encryption tests share: inputs carrying a marker to look for, and a run's
history as the server stores it."""

from __future__ import annotations

import uuid
from typing import Any

from temporalio.client import Client

from tests.helpers.graphs import ALWAYS_FAILS


def marked_inputs() -> tuple[str, dict[str, Any]]:
    """Essay inputs whose title is a marker found nowhere else: every draft carries it."""
    marker = f"Secret-{uuid.uuid4().hex}"
    return marker, {**ALWAYS_FAILS, "title": marker}


async def raw_history_bytes(client: Client, run_id: str) -> bytes:
    """The run's history as the server stores it, read without any codec, and its description
    (memo, search attributes)."""
    handle = client.get_workflow_handle(run_id)
    history = await handle.fetch_history()
    described = await handle.describe()
    return b"".join(event.SerializeToString() for event in history.events) + (
        described.raw_description.SerializeToString()
    )

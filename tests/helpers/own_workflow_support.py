"""The people and the waiting that tests of workflows of the user's own share (kept apart from
the workflows' module, which a workflow sandbox imports)."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from lockgate import GraphClient
from lockgate.testing import Identities
from tests.helpers.graphs import eventually


def support_people() -> Identities:
    """ada asks for refunds (and is a lead herself); lee and mo lead and may refund; clerk
    leads but may not refund; nobody holds nothing."""
    return Identities(
        {
            "ada": {"roles": ["support-lead"], "scopes": ["tickets:read", "refunds:issue"]},
            "lee": {"roles": ["support-lead"], "scopes": ["refunds:issue"]},
            "mo": {"roles": ["support-lead"], "scopes": ["refunds:issue"]},
            "clerk": {"roles": ["support-lead"]},
            "nobody": {},
        }
    )


async def open_gate_of(client: Client, task_queue: str, run_id: str, gate: str) -> dict[str, Any]:
    async def shown() -> dict[str, Any]:
        return dict(await GraphClient(client, task_queue).show(run_id))

    view = await eventually(
        shown,
        lambda run: (run.get("awaiting") or {}).get("gate") == gate,
        what=f"gate {gate} open",
    )
    return dict(view["awaiting"])

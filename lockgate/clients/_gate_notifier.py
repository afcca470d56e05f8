"""The gate notifier: a worker watches its queue's gates and announces each opening and closing.

Each change is delivered to the webhooks of the gate's role, each delivery a ``lockgate.notify``
run of its own (:mod:`lockgate.workflows._notify`), started once whichever workers see it. Gates
that close while no worker watches are not announced.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Literal

from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from lockgate._polling import keep_looking
from lockgate.activities._notify import notification_binding
from lockgate.clients._graph_client import GraphClient
from lockgate.gates._notifications import GateEvent, Notifications
from lockgate.identity._seals import WorkerSecret
from lockgate.workflows._notify import NOTIFY_WORKFLOW, notify_workflow_id

__all__ = ["GateNotifier"]

logger = logging.getLogger("lockgate.notify")


class GateNotifier:
    """Watches a task queue's open gates and starts a delivery for each change.

    Args:
        client: A Temporal client.
        task_queue: Whose gates to watch (the deliveries run there too).
        notifications: The webhooks, by role.
        secret: Seals each delivery, so the activity knows a worker saw the event.
    """

    def __init__(
        self,
        client: Client,
        task_queue: str,
        notifications: Notifications,
        secret: WorkerSecret,
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.notifications = notifications
        self.secret = secret
        self.runs = GraphClient(client, task_queue)
        self._seen: dict[tuple[str, str], dict[str, Any]] = {}

    async def watch(self) -> None:
        """Looks every ``poll_seconds`` until cancelled."""
        await keep_looking(
            self.look,
            self.notifications.poll_seconds,
            logger,
            "lockgate: could not look for gates to announce",
        )

    async def look(self) -> None:
        """Announces the gates that opened and closed since the last look."""
        rows = {(row["run_id"], row["gate"]): dict(row) for row in await self.runs.pending()}
        for key, row in rows.items():
            if key not in self._seen:
                await self.announce(_event("gate.opened", row))
        for key, row in self._seen.items():
            if key not in rows:
                await self.announce(await self._closed(row))
        self._seen = rows

    async def _closed(self, row: dict[str, Any]) -> GateEvent:
        shown: dict[str, Any] = dict(await self.runs.show(row["run_id"]))
        node = str(row["gate"]).split("#")[0]
        answered = [
            each
            for each in shown.get("trail") or []
            if each.get("node") == node and each.get("outcome") == "answered"
        ]
        last = answered[-1] if answered else {}
        return _event(
            "gate.closed",
            row,
            answered_by=(last.get("by") or {}).get("actor"),
            answer=last.get("answer"),
            outcome=str(shown.get("status") or "") or None,
        )

    async def announce(self, event: GateEvent) -> None:
        """Starts the delivery of ``event`` to each webhook of its role, once."""
        for hook in self.notifications.for_role(event.role):
            workflow_id = notify_workflow_id(hook.name, event)
            data = event.to_dict()
            seal = self.secret.token("notify", notification_binding(hook.name, data, workflow_id))
            # Another worker (or an earlier look) may have announced it: it is started once.
            with contextlib.suppress(WorkflowAlreadyStartedError):
                await self.client.start_workflow(
                    NOTIFY_WORKFLOW,
                    {
                        "hook": hook.name,
                        "event": data,
                        "seal": seal,
                        "attempts": self.notifications.attempts,
                    },
                    id=workflow_id,
                    task_queue=self.task_queue,
                    id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                    id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                    static_summary=f"{event.event} {event.run_id} → {hook.name}",
                )


def _event(
    kind: Literal["gate.opened", "gate.closed"], row: dict[str, Any], **outcome: Any
) -> GateEvent:
    """The event of a gate as ``pending`` shows it (and, once it closed, how)."""
    return GateEvent(
        kind,
        row["run_id"],
        row["graph"],
        row["gate"],
        row["role"],
        because=row.get("because") or "",
        requester=str(row.get("requester") or ""),
        choices=tuple(choice["option"] for choice in row.get("choices") or []),
        **outcome,
    )

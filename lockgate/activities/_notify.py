"""Delivering notifications: one webhook told of one gate event, as an activity with retries.

The input is sealed by the worker that saw the event (:func:`notification_binding`), so a
``lockgate.notify`` run started by anyone else posts nothing: namespace access alone cannot make
lockgate tell a team that a gate opened.
"""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from lockgate.gates._authority import Authority
from lockgate.gates._notifications import GateEvent, Notifications, webhook_request
from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "DELIVER_NOTIFICATION",
    "DeliverNotificationInput",
    "NotificationActivities",
    "notification_binding",
]

DELIVER_NOTIFICATION = "lockgate.deliver_notification"

_TIMEOUT_SECONDS = 10.0


@dataclass
class DeliverNotificationInput:
    """One webhook (by name), the event, and the seal of the worker that saw it."""

    hook: str
    event: dict[str, Any]
    seal: str = ""


def notification_binding(hook: str, event: dict[str, Any], workflow_id: str) -> dict[str, Any]:
    """What a delivery's seal covers: the webhook, the event, and the run that delivers it."""
    return {"hook": hook, "event": event, "workflow_id": workflow_id}


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


class NotificationActivities:
    """The delivery activity; a worker without :class:`Notifications` refuses every delivery."""

    def __init__(self, notifications: Notifications | None, authority: Authority) -> None:
        self.notifications = notifications
        self.authority = authority

    @activity.defn(name=DELIVER_NOTIFICATION)
    async def deliver(self, delivery: DeliverNotificationInput) -> dict[str, Any]:
        """Posts the event to the webhook; a failure is retried, then audited by the workflow."""
        info = activity.info()
        hook = self.notifications.named(delivery.hook) if self.notifications else None
        binding = notification_binding(delivery.hook, delivery.event, info.workflow_id or "")
        if hook is None or not self.authority.sealer.token_matches(
            delivery.seal, "notify", binding
        ):
            self.authority.audit.refused(
                "notify.delivery",
                ErrorCode.UNAUTHORIZED,
                "not sealed by a lockgate worker",
                hook=delivery.hook,
            )
            raise ApplicationError(
                "This notification was not sealed by a lockgate worker (or names no configured "
                "webhook): nothing was posted.",
                type="UNAUTHORIZED",
                non_retryable=True,
            )
        event = GateEvent.from_dict(delivery.event)
        inbox_url = self.notifications.inbox_url if self.notifications else None
        body, headers = webhook_request(hook, event, inbox_url, int(time.time()))
        try:
            status = await asyncio.to_thread(_post, hook.url, body, headers)
        except OSError as error:
            status, problem = 0, str(error)
        else:
            problem = f"it answered {status}"
        facts: dict[str, Any] = {
            "hook": hook.name,
            "run": event.run_id,
            "gate": event.gate,
            "what": event.event,
        }
        if not 200 <= status < 300:
            self.authority.audit.refused(
                "notify.delivery", "UNAVAILABLE", f"attempt {info.attempt}: {problem}", **facts
            )
            raise ApplicationError(f"Webhook '{hook.name}' was not reached: {problem}.")
        self.authority.audit.event("notify.delivery", accepted=True, actor=None, **facts)
        return {"hook": hook.name, "status": status}

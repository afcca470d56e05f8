"""Telling people: one gate event delivered to one webhook, a ``lockgate.notify`` run of its own.

A delivery is its own run, so a webhook that is down is retried there (and given up, audited,
after the configured attempts) and never touches the graph run. Its workflow id names the run,
gate, event and webhook, so workers that see the same gate start it once. Which deliveries start
is the notifier's to decide (:mod:`lockgate.clients._gate_notifier`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from lockgate.activities._notify import DELIVER_NOTIFICATION, DeliverNotificationInput
from lockgate.gates._notifications import GateEvent

__all__ = ["NOTIFY_WORKFLOW", "NotifyWorkflow", "notify_workflow_id"]

NOTIFY_WORKFLOW = "lockgate.notify"

_MOST_ATTEMPTS = 10


def notify_workflow_id(hook: str, event: GateEvent) -> str:
    """The one delivery of ``event`` to ``hook``."""
    return f"lockgate-notify:{event.run_id}:{event.gate}:{event.event}:{hook}"


@workflow.defn(name=NOTIFY_WORKFLOW, sandboxed=False)
class NotifyWorkflow:
    """Delivers one gate event to one webhook, retrying; a delivery that fails stays here."""

    @workflow.run
    async def run(self, *deliveries: Any) -> dict[str, Any]:
        """``{delivered, ...}``: what became of the delivery (it never fails the run)."""
        if len(deliveries) != 1 or not isinstance(deliveries[0], dict):
            return {"delivered": False, "why": "A delivery is one {hook, event, seal, attempts}."}
        raw = deliveries[0]
        attempts = raw.get("attempts")
        attempts = attempts if isinstance(attempts, int) else 5
        try:
            delivery = DeliverNotificationInput(
                hook=str(raw.get("hook")),
                event=dict(raw.get("event") or {}),
                seal=str(raw.get("seal")),
            )
        except (TypeError, ValueError):
            return {"delivered": False, "why": "The delivery's event is not an object."}
        try:
            result: dict[str, Any] = await workflow.execute_activity(
                DELIVER_NOTIFICATION,
                delivery,
                result_type=dict,
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(
                    initial_interval=timedelta(seconds=1),
                    backoff_coefficient=2.0,
                    maximum_interval=timedelta(seconds=60),
                    maximum_attempts=max(1, min(attempts, _MOST_ATTEMPTS)),
                    non_retryable_error_types=["UNAUTHORIZED"],
                ),
                summary=f"tell {delivery.hook}",
            )
        except ActivityError as error:
            return {"delivered": False, "why": str(error.cause or error)}
        return {"delivered": True, **result}

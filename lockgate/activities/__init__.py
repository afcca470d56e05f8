"""Temporal activities: one per tool, the model call, the webhook delivery, the start check.

With their inputs and names, the seal a tool activity checks, the handover between runs, and a
refusal as a Temporal failure. The package is internal: :class:`~lockgate.LockgatePlugin`
registers its activities.

The names it exported before, declaring tools and the in-process pipeline among them, still
resolve here, each with a ``DeprecationWarning`` that says where to import it from now
(:mod:`lockgate` or :mod:`lockgate.errors`), or that it is lockgate's own plumbing and goes in a
later release. Nothing in lockgate imports through here.
"""

from __future__ import annotations

from lockgate._lazy import moved_names

__all__: list[str] = []

_MOVED: dict[str, tuple[str, str | None]] = {
    "ArgumentsInvalid": ("lockgate.tools._tool", "lockgate.errors"),
    "BudgetReport": ("lockgate.tools._budget", None),
    "CALLER_MISTAKES": ("lockgate.activities._temporal", None),
    "DELIVER_NOTIFICATION": ("lockgate.activities._notify", None),
    "DeliverNotificationInput": ("lockgate.activities._notify", None),
    "ExecutedEvent": ("lockgate.tools._events", "lockgate"),
    "ExecutingEvent": ("lockgate.tools._events", "lockgate"),
    "FailedEvent": ("lockgate.tools._events", "lockgate"),
    "HumanVerifier": ("lockgate.tools._verification", None),
    "NotificationActivities": ("lockgate.activities._notify", None),
    "PIPELINE_STAGES": ("lockgate.tools._registry", None),
    "Param": ("lockgate.tools._tool", "lockgate"),
    "Refusal": ("lockgate.activities._refusal", "lockgate.errors"),
    "Retry": ("lockgate.tools._tool", "lockgate"),
    "SEAL_HEADER": ("lockgate.activities._sealed_calls", None),
    "SealReader": ("lockgate.activities._sealed_calls", None),
    "TOOL_ACTIVITY_PREFIX": ("lockgate.activities._activity_inputs", None),
    "ToolActivities": ("lockgate.activities._temporal", None),
    "ToolActivityInput": ("lockgate.activities._activity_inputs", None),
    "ToolDeclarationError": ("lockgate.tools._tool", "lockgate.errors"),
    "ToolDefinition": ("lockgate.tools._tool", "lockgate"),
    "ToolFailure": ("lockgate.tools._events", "lockgate.errors"),
    "ToolRegistry": ("lockgate.tools._registry", "lockgate"),
    "VerificationError": ("lockgate.tools._verification", "lockgate.errors"),
    "VerificationRequest": ("lockgate.tools._verification", None),
    "WorkflowStartActivities": ("lockgate.activities._workflow_starts", None),
    "context_tokens": ("lockgate.tools._budget", None),
    "current_seal": ("lockgate.activities._sealed_calls", None),
    "definition_of": ("lockgate.tools._tool", None),
    "estimate_tokens": ("lockgate.tools._budget", None),
    "is_tool": ("lockgate.tools._tool", None),
    "notification_binding": ("lockgate.activities._notify", None),
    "register_verification": ("lockgate.tools._verification", "lockgate"),
    "tool": ("lockgate.tools._tool", "lockgate"),
    "tool_activity_binding": ("lockgate.activities._sealed_calls", None),
    "tool_activity_name": ("lockgate.activities._activity_inputs", None),
    "tool_methods": ("lockgate.tools._tool", None),
}
"""Each old name: the module that defines it, and its public home (None: internal)."""

__getattr__ = moved_names(globals(), _MOVED)

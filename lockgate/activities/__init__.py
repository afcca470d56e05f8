"""Temporal activities: one per tool, the model call, the webhook delivery, the start check.

With their inputs and names, the seal a tool activity checks, the handover between runs, and a
refusal as a Temporal failure.

Kept for compatibility: declaring tools and the in-process pipeline (``@tool``, ``Param``,
``ToolRegistry``, its events, the budget, the verification tools) now live in
:mod:`lockgate.tools`, and this package re-exports their names as before. lockgate's own modules
import each name from the module that defines it, never from here.
"""

from lockgate.activities._activity_inputs import (
    TOOL_ACTIVITY_PREFIX,
    ToolActivityInput,
    tool_activity_name,
)
from lockgate.activities._notify import (
    DELIVER_NOTIFICATION,
    DeliverNotificationInput,
    NotificationActivities,
    notification_binding,
)
from lockgate.activities._refusal import Refusal
from lockgate.activities._sealed_calls import (
    SEAL_HEADER,
    SealReader,
    current_seal,
    tool_activity_binding,
)
from lockgate.activities._temporal import CALLER_MISTAKES, ToolActivities
from lockgate.activities._workflow_starts import WorkflowStartActivities
from lockgate.tools._budget import BudgetReport, context_tokens, estimate_tokens
from lockgate.tools._events import ExecutedEvent, ExecutingEvent, FailedEvent, ToolFailure
from lockgate.tools._registry import PIPELINE_STAGES, ToolRegistry
from lockgate.tools._tool import (
    ArgumentsInvalid,
    Param,
    Retry,
    ToolDeclarationError,
    ToolDefinition,
    definition_of,
    is_tool,
    tool,
    tool_methods,
)
from lockgate.tools._verification import (
    HumanVerifier,
    VerificationError,
    VerificationRequest,
    register_verification,
)

__all__ = [
    "CALLER_MISTAKES",
    "DELIVER_NOTIFICATION",
    "PIPELINE_STAGES",
    "SEAL_HEADER",
    "TOOL_ACTIVITY_PREFIX",
    "ArgumentsInvalid",
    "BudgetReport",
    "DeliverNotificationInput",
    "ExecutedEvent",
    "ExecutingEvent",
    "FailedEvent",
    "HumanVerifier",
    "NotificationActivities",
    "Param",
    "Refusal",
    "Retry",
    "SealReader",
    "ToolActivities",
    "ToolActivityInput",
    "ToolDeclarationError",
    "ToolDefinition",
    "ToolFailure",
    "ToolRegistry",
    "VerificationError",
    "VerificationRequest",
    "WorkflowStartActivities",
    "context_tokens",
    "current_seal",
    "definition_of",
    "estimate_tokens",
    "is_tool",
    "notification_binding",
    "register_verification",
    "tool",
    "tool_activity_binding",
    "tool_activity_name",
    "tool_methods",
]

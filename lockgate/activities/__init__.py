"""Tools: `@tool`, `Param`, the registry that runs the pipeline, and their activities."""

from lockgate.activities._budget import BudgetReport, context_tokens, estimate_tokens
from lockgate.activities._registry import (
    PIPELINE_STAGES,
    ExecutedEvent,
    ExecutingEvent,
    FailedEvent,
    ToolFailure,
    ToolRegistry,
)
from lockgate.activities._temporal import CALLER_MISTAKES, ToolActivities, ToolActivityInput
from lockgate.activities._tool import (
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
from lockgate.activities._verification import (
    HumanVerifier,
    VerificationError,
    VerificationRequest,
    register_verification,
)

__all__ = [
    "CALLER_MISTAKES",
    "PIPELINE_STAGES",
    "ArgumentsInvalid",
    "BudgetReport",
    "ExecutedEvent",
    "ExecutingEvent",
    "FailedEvent",
    "HumanVerifier",
    "Param",
    "Retry",
    "ToolActivities",
    "ToolActivityInput",
    "ToolDeclarationError",
    "ToolDefinition",
    "ToolFailure",
    "ToolRegistry",
    "VerificationError",
    "VerificationRequest",
    "context_tokens",
    "definition_of",
    "estimate_tokens",
    "is_tool",
    "register_verification",
    "tool",
    "tool_methods",
]

"""lockgate: governed AI-agent tools and declared agent graphs, with human gates, on Temporal.

A function declared with :func:`tool` is a governed tool: every call passes one pipeline
(resolve, validate, clamp, authorize, rate-limit, plan, confirm, execute, audit) in process
through a :class:`ToolRegistry`, or as a Temporal activity.
"""

from lockgate.activities import Param, Retry, ToolDefinition, ToolRegistry, tool
from lockgate.gating import (
    AuditLogger,
    ChannelPolicy,
    ErrorCode,
    InMemoryRateLimiter,
    PolicyGate,
    ToolContext,
    ToolError,
    ToolResult,
)

__all__ = [
    "AuditLogger",
    "ChannelPolicy",
    "ErrorCode",
    "InMemoryRateLimiter",
    "Param",
    "PolicyGate",
    "Retry",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "tool",
]

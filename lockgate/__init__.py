"""lockgate: governed AI-agent tools and declared agent graphs, with human gates, on Temporal.

A function declared with :func:`tool` is a governed tool: every call passes one pipeline
(resolve, validate, clamp, authorize, rate-limit, plan, confirm, execute, audit) in process
through a :class:`ToolRegistry`, or as a Temporal activity. A class declared with :func:`graph`
is a graph of tools that runs as its own Temporal workflow type, with human gates answered only
by verified approvers. :class:`LockgatePlugin` adds both to a Temporal worker.
"""

from lockgate.activities import Param, Retry, ToolDefinition, ToolRegistry, tool
from lockgate.gating import (
    Actor,
    AuditLogger,
    Authority,
    ChannelPolicy,
    Directory,
    ErrorCode,
    InMemoryRateLimiter,
    PolicyGate,
    Signer,
    ToolContext,
    ToolError,
    ToolResult,
    WorkerSecret,
)
from lockgate.worker import LockgatePlugin
from lockgate.workflows import (
    AgentStep,
    Appends,
    ApprovalPolicy,
    Ask,
    Because,
    Deadline,
    Dual,
    Edge,
    GraphClient,
    GraphDeclarationError,
    ModelBudget,
    Quorum,
    Route,
    Subgraph,
    Target,
    ToolClient,
    compile_graph,
    graph,
)

__all__ = [
    "Actor",
    "AgentStep",
    "Appends",
    "ApprovalPolicy",
    "Ask",
    "AuditLogger",
    "Authority",
    "Because",
    "ChannelPolicy",
    "Deadline",
    "Directory",
    "Dual",
    "Edge",
    "ErrorCode",
    "GraphClient",
    "GraphDeclarationError",
    "InMemoryRateLimiter",
    "LockgatePlugin",
    "ModelBudget",
    "Param",
    "PolicyGate",
    "Quorum",
    "Retry",
    "Route",
    "Signer",
    "Subgraph",
    "Target",
    "ToolClient",
    "ToolContext",
    "ToolDefinition",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "WorkerSecret",
    "compile_graph",
    "graph",
    "tool",
]

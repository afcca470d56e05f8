"""lockgate: governed AI-agent tools and declared agent graphs, with human gates, on Temporal.

A function declared with :func:`tool` is a governed tool: every call passes one pipeline
(resolve, validate, clamp, authorize, rate-limit, plan, confirm, execute, audit) in process
through a :class:`ToolRegistry`, or as a Temporal activity. A class declared with :func:`graph`
is a graph of tools that runs as its own Temporal workflow type, with human gates answered only
by verified approvers. :class:`LockgatePlugin` adds both to a Temporal worker.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lockgate._lazy import lazy_names

# The public names resolve on first use (PEP 562, `__getattr__` below): `lockgate --help`, or any
# light submodule, then runs without importing temporalio and every layer with it.
if TYPE_CHECKING:
    from lockgate.clients._client import GraphClient
    from lockgate.clients._tool_client import ToolClient
    from lockgate.errors import LockgateError
    from lockgate.gates._authority import Authority
    from lockgate.graphs._compile import compile_graph
    from lockgate.graphs._declare import (
        Appends,
        ApprovalPolicy,
        Ask,
        Because,
        Deadline,
        Dual,
        Edge,
        GraphDeclarationError,
        Quorum,
        Route,
        Subgraph,
        Target,
        graph,
    )
    from lockgate.graphs._declare_agents import AgentStep, ModelBudget
    from lockgate.identity._actors import Actor
    from lockgate.identity._directory import Directory
    from lockgate.identity._proofs import Signer
    from lockgate.identity._seals import WorkerSecret
    from lockgate.redis_ratelimit import RedisRateLimiter
    from lockgate.tools._audit import AuditLogger
    from lockgate.tools._context import ToolContext
    from lockgate.tools._policy import ChannelPolicy, PolicyGate
    from lockgate.tools._ratelimit import InMemoryRateLimiter
    from lockgate.tools._registry import ToolRegistry
    from lockgate.tools._result import ErrorCode, ToolError, ToolResult
    from lockgate.tools._tool import Param, Retry, ToolDefinition, tool
    from lockgate.worker import LockgatePlugin
    from lockgate.workflows._own_workflows import Decision, call_tool, gate

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
    "Decision",
    "Directory",
    "Dual",
    "Edge",
    "ErrorCode",
    "GraphClient",
    "GraphDeclarationError",
    "InMemoryRateLimiter",
    "LockgateError",
    "LockgatePlugin",
    "ModelBudget",
    "Param",
    "PolicyGate",
    "Quorum",
    "RedisRateLimiter",
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
    "call_tool",
    "compile_graph",
    "gate",
    "graph",
    "tool",
]

_HOMES = {
    "Actor": "lockgate.identity._actors",
    "AgentStep": "lockgate.graphs._declare_agents",
    "Appends": "lockgate.graphs._declare",
    "ApprovalPolicy": "lockgate.graphs._declare",
    "Ask": "lockgate.graphs._declare",
    "AuditLogger": "lockgate.tools._audit",
    "Authority": "lockgate.gates._authority",
    "Because": "lockgate.graphs._declare",
    "ChannelPolicy": "lockgate.tools._policy",
    "Deadline": "lockgate.graphs._declare",
    "Decision": "lockgate.workflows._own_workflows",
    "Directory": "lockgate.identity._directory",
    "Dual": "lockgate.graphs._declare",
    "Edge": "lockgate.graphs._declare",
    "ErrorCode": "lockgate.tools._result",
    "GraphClient": "lockgate.clients._client",
    "GraphDeclarationError": "lockgate.graphs._declare",
    "InMemoryRateLimiter": "lockgate.tools._ratelimit",
    "LockgateError": "lockgate.errors",
    "LockgatePlugin": "lockgate.worker",
    "ModelBudget": "lockgate.graphs._declare_agents",
    "Param": "lockgate.tools._tool",
    "PolicyGate": "lockgate.tools._policy",
    "Quorum": "lockgate.graphs._declare",
    "RedisRateLimiter": "lockgate.redis_ratelimit",
    "Retry": "lockgate.tools._tool",
    "Route": "lockgate.graphs._declare",
    "Signer": "lockgate.identity._proofs",
    "Subgraph": "lockgate.graphs._declare",
    "Target": "lockgate.graphs._declare",
    "ToolClient": "lockgate.clients._tool_client",
    "ToolContext": "lockgate.tools._context",
    "ToolDefinition": "lockgate.tools._tool",
    "ToolError": "lockgate.tools._result",
    "ToolRegistry": "lockgate.tools._registry",
    "ToolResult": "lockgate.tools._result",
    "WorkerSecret": "lockgate.identity._seals",
    "call_tool": "lockgate.workflows._own_workflows",
    "compile_graph": "lockgate.graphs._compile",
    "gate": "lockgate.workflows._own_workflows",
    "graph": "lockgate.graphs._declare",
    "tool": "lockgate.tools._tool",
}
"""Where each public name is defined: the module it is imported from on first use."""

# A library leaves logging to its application: without a handler of its own, Python's
# last-resort handler would print lockgate's warnings (the audit record of every refused call
# among them) to the stderr of a program that configured no logging.
logging.getLogger(__name__).addHandler(logging.NullHandler())


__getattr__, __dir__ = lazy_names(globals(), _HOMES)

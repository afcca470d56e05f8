"""lockgate: governed AI-agent tools and declared agent graphs, with human gates, on Temporal.

A function declared with :func:`tool` is a governed tool: every call passes one pipeline
(resolve, validate, clamp, authorize, rate-limit, plan, confirm, execute, audit) in process
through a :class:`ToolRegistry`, or as a Temporal activity. A class declared with :func:`graph`
is a graph of tools that runs as its own Temporal workflow type, with human gates answered only
by verified approvers. :class:`LockgatePlugin` adds both to a Temporal worker.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

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
    "Actor": "lockgate.gating",
    "AgentStep": "lockgate.workflows",
    "Appends": "lockgate.workflows",
    "ApprovalPolicy": "lockgate.workflows",
    "Ask": "lockgate.workflows",
    "AuditLogger": "lockgate.gating",
    "Authority": "lockgate.gating",
    "Because": "lockgate.workflows",
    "ChannelPolicy": "lockgate.gating",
    "Deadline": "lockgate.workflows",
    "Decision": "lockgate.workflows",
    "Directory": "lockgate.gating",
    "Dual": "lockgate.workflows",
    "Edge": "lockgate.workflows",
    "ErrorCode": "lockgate.gating",
    "GraphClient": "lockgate.workflows",
    "GraphDeclarationError": "lockgate.workflows",
    "InMemoryRateLimiter": "lockgate.gating",
    "LockgateError": "lockgate.errors",
    "LockgatePlugin": "lockgate.worker",
    "ModelBudget": "lockgate.workflows",
    "Param": "lockgate.activities",
    "PolicyGate": "lockgate.gating",
    "Quorum": "lockgate.workflows",
    "RedisRateLimiter": "lockgate.redis_ratelimit",
    "Retry": "lockgate.activities",
    "Route": "lockgate.workflows",
    "Signer": "lockgate.gating",
    "Subgraph": "lockgate.workflows",
    "Target": "lockgate.workflows",
    "ToolClient": "lockgate.workflows",
    "ToolContext": "lockgate.gating",
    "ToolDefinition": "lockgate.activities",
    "ToolError": "lockgate.gating",
    "ToolRegistry": "lockgate.activities",
    "ToolResult": "lockgate.gating",
    "WorkerSecret": "lockgate.gating",
    "call_tool": "lockgate.workflows",
    "compile_graph": "lockgate.workflows",
    "gate": "lockgate.workflows",
    "graph": "lockgate.workflows",
    "tool": "lockgate.activities",
}
"""Where each public name is defined: the module it is imported from on first use."""

# A library leaves logging to its application: without a handler of its own, Python's
# last-resort handler would print lockgate's warnings (the audit record of every refused call
# among them) to the stderr of a program that configured no logging.
logging.getLogger(__name__).addHandler(logging.NullHandler())


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'lockgate' has no attribute {name!r}")
    # `__import__` rather than importlib: inside Temporal's workflow sandbox it is the sandbox's
    # importer, which hands back lockgate's own (passed-through) modules.
    value = getattr(__import__(home, fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

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
from lockgate._version import __version__ as __version__

# The public names resolve on first use (PEP 562, `__getattr__` below): `lockgate --help`, or any
# light submodule, then runs without importing temporalio and every layer with it.
if TYPE_CHECKING:
    from lockgate.clients._client import GraphClient
    from lockgate.clients._tool_client import ToolClient
    from lockgate.errors import LockgateError
    from lockgate.gates._authority import Authority
    from lockgate.gates._notifications import Notifications, Webhook
    from lockgate.graphs._compile import compile_graph
    from lockgate.graphs._declare import (
        DUAL,
        END,
        SINGLE,
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
    from lockgate.identity._directory import Directory, DirectoryEntry
    from lockgate.identity._passkeys import RelyingParty
    from lockgate.identity._proofs import Signer
    from lockgate.identity._seals import WorkerSecret
    from lockgate.redis_ratelimit import RedisRateLimiter
    from lockgate.tools._audit import AuditLogger
    from lockgate.tools._audit_sinks import AuditSink, JsonLinesAuditSink
    from lockgate.tools._confirm import ConfirmationStore
    from lockgate.tools._context import ToolContext
    from lockgate.tools._events import ExecutedEvent, ExecutingEvent, FailedEvent
    from lockgate.tools._policy import (
        Authorizer,
        ChannelPolicy,
        ConsentGrant,
        PolicyDecision,
        PolicyRule,
        PolicyRuleProvider,
    )
    from lockgate.tools._ratelimit import InMemoryRateLimiter, RateDecision, RateLimiter
    from lockgate.tools._registry import ToolRegistry
    from lockgate.tools._render import (
        ChannelRenderer,
        CliRenderer,
        DefaultRenderer,
        RendererRegistry,
    )
    from lockgate.tools._result import ErrorCode, ToolError, ToolResult
    from lockgate.tools._tool import Param, Retry, ToolDefinition, tool
    from lockgate.tools._verification import register_verification
    from lockgate.worker import LockgatePlugin
    from lockgate.workflows._own_workflows import Decision, call_tool, gate

__all__ = [
    "DUAL",
    "END",
    "SINGLE",
    "Actor",
    "AgentStep",
    "Appends",
    "ApprovalPolicy",
    "Ask",
    "AuditLogger",
    "AuditSink",
    "Authority",
    "Authorizer",
    "Because",
    "ChannelPolicy",
    "ChannelRenderer",
    "CliRenderer",
    "ConfirmationStore",
    "ConsentGrant",
    "Deadline",
    "Decision",
    "DefaultRenderer",
    "Directory",
    "DirectoryEntry",
    "Dual",
    "Edge",
    "ErrorCode",
    "ExecutedEvent",
    "ExecutingEvent",
    "FailedEvent",
    "GraphClient",
    "GraphDeclarationError",
    "InMemoryRateLimiter",
    "JsonLinesAuditSink",
    "LockgateError",
    "LockgatePlugin",
    "ModelBudget",
    "Notifications",
    "Param",
    "PolicyDecision",
    "PolicyRule",
    "PolicyRuleProvider",
    "Quorum",
    "RateDecision",
    "RateLimiter",
    "RedisRateLimiter",
    "RelyingParty",
    "RendererRegistry",
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
    "Webhook",
    "WorkerSecret",
    "call_tool",
    "compile_graph",
    "gate",
    "graph",
    "register_verification",
    "tool",
]

_HOMES = {
    "Actor": "lockgate.identity._actors",
    "AgentStep": "lockgate.graphs._declare_agents",
    "Appends": "lockgate.graphs._declare",
    "ApprovalPolicy": "lockgate.graphs._declare",
    "Ask": "lockgate.graphs._declare",
    "AuditLogger": "lockgate.tools._audit",
    "AuditSink": "lockgate.tools._audit_sinks",
    "Authority": "lockgate.gates._authority",
    "Authorizer": "lockgate.tools._policy",
    "Because": "lockgate.graphs._declare",
    "ChannelPolicy": "lockgate.tools._policy",
    "ChannelRenderer": "lockgate.tools._render",
    "CliRenderer": "lockgate.tools._render",
    "ConfirmationStore": "lockgate.tools._confirm",
    "ConsentGrant": "lockgate.tools._policy",
    "DUAL": "lockgate.graphs._declare",
    "Deadline": "lockgate.graphs._declare",
    "Decision": "lockgate.workflows._own_workflows",
    "DefaultRenderer": "lockgate.tools._render",
    "Directory": "lockgate.identity._directory",
    "DirectoryEntry": "lockgate.identity._directory",
    "Dual": "lockgate.graphs._declare",
    "END": "lockgate.graphs._declare",
    "Edge": "lockgate.graphs._declare",
    "ErrorCode": "lockgate.tools._result",
    "ExecutedEvent": "lockgate.tools._events",
    "ExecutingEvent": "lockgate.tools._events",
    "FailedEvent": "lockgate.tools._events",
    "GraphClient": "lockgate.clients._client",
    "GraphDeclarationError": "lockgate.graphs._declare",
    "InMemoryRateLimiter": "lockgate.tools._ratelimit",
    "JsonLinesAuditSink": "lockgate.tools._audit_sinks",
    "LockgateError": "lockgate.errors",
    "LockgatePlugin": "lockgate.worker",
    "ModelBudget": "lockgate.graphs._declare_agents",
    "Notifications": "lockgate.gates._notifications",
    "Param": "lockgate.tools._tool",
    "PolicyDecision": "lockgate.tools._policy",
    "PolicyRule": "lockgate.tools._policy",
    "PolicyRuleProvider": "lockgate.tools._policy",
    "Quorum": "lockgate.graphs._declare",
    "RateDecision": "lockgate.tools._ratelimit",
    "RateLimiter": "lockgate.tools._ratelimit",
    "RedisRateLimiter": "lockgate.redis_ratelimit",
    "RelyingParty": "lockgate.identity._passkeys",
    "RendererRegistry": "lockgate.tools._render",
    "Retry": "lockgate.tools._tool",
    "Route": "lockgate.graphs._declare",
    "SINGLE": "lockgate.graphs._declare",
    "Signer": "lockgate.identity._proofs",
    "Subgraph": "lockgate.graphs._declare",
    "Target": "lockgate.graphs._declare",
    "ToolClient": "lockgate.clients._tool_client",
    "ToolContext": "lockgate.tools._context",
    "ToolDefinition": "lockgate.tools._tool",
    "ToolError": "lockgate.tools._result",
    "ToolRegistry": "lockgate.tools._registry",
    "ToolResult": "lockgate.tools._result",
    "Webhook": "lockgate.gates._notifications",
    "WorkerSecret": "lockgate.identity._seals",
    "call_tool": "lockgate.workflows._own_workflows",
    "compile_graph": "lockgate.graphs._compile",
    "gate": "lockgate.workflows._own_workflows",
    "graph": "lockgate.graphs._declare",
    "register_verification": "lockgate.tools._verification",
    "tool": "lockgate.tools._tool",
}
"""Where each public name is defined: the module it is imported from on first use."""

_RENAMED = {
    "PolicyGate": "Authorizer",
}
"""Old public names, each still answered (with a ``DeprecationWarning``) for one release."""

if TYPE_CHECKING:
    # Typed for code that still spells them so, until it moves to the new names.
    from lockgate.tools._policy import PolicyGate as PolicyGate

# A library leaves logging to its application: without a handler of its own, Python's
# last-resort handler would print lockgate's warnings (the audit record of every refused call
# among them) to the stderr of a program that configured no logging.
logging.getLogger(__name__).addHandler(logging.NullHandler())


__getattr__, __dir__ = lazy_names(globals(), _HOMES, _RENAMED)

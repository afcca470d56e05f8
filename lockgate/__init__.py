"""lockgate: governed AI-agent tools and declared agent graphs, with human gates, on Temporal.

A function declared with :func:`tool` is a governed tool: every call passes one pipeline
(resolve, validate, clamp, authorize, rate-limit, plan, confirm, execute, audit) in process
through a :class:`ToolRegistry`, or as a Temporal activity. A class declared with :func:`graph`
is a graph of tools that runs as its own Temporal workflow type, with human gates answered only
by verified approvers. :class:`LockgatePlugin` adds both to a Temporal worker.

What a program needs most is here; the rest lives in the public modules beside it:
:mod:`lockgate.errors`, :mod:`lockgate.contracts`, :mod:`lockgate.authorization`,
:mod:`lockgate.tool_runtime`, :mod:`lockgate.worker`, :mod:`lockgate.testing`, and those of
each surface and extra.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lockgate._lazy import lazy_exports
from lockgate._version import __version__ as __version__

# The public names, each listed once: imported here for type checkers, and served on first use
# (PEP 562, `__getattr__` below), so that `lockgate --help` or any light module runs without
# importing temporalio and every layer with it.
if TYPE_CHECKING:
    from lockgate._errors import LockgateError as LockgateError
    from lockgate.clients._client_plugin import LockgateClientPlugin as LockgateClientPlugin
    from lockgate.clients._graph_client import GraphClient as GraphClient
    from lockgate.clients._tool_client import ToolClient as ToolClient
    from lockgate.gates._notifications import Notifications as Notifications
    from lockgate.gates._notifications import Webhook as Webhook
    from lockgate.graphs._declare import DUAL as DUAL
    from lockgate.graphs._declare import END as END
    from lockgate.graphs._declare import Appends as Appends
    from lockgate.graphs._declare import Ask as Ask
    from lockgate.graphs._declare import Because as Because
    from lockgate.graphs._declare import Deadline as Deadline
    from lockgate.graphs._declare import Dual as Dual
    from lockgate.graphs._declare import Edge as Edge
    from lockgate.graphs._declare import Quorum as Quorum
    from lockgate.graphs._declare import Route as Route
    from lockgate.graphs._declare import Subgraph as Subgraph
    from lockgate.graphs._declare import Target as Target
    from lockgate.graphs._declare import graph as graph
    from lockgate.graphs._declare_agents import AgentStep as AgentStep
    from lockgate.graphs._declare_agents import ModelBudget as ModelBudget
    from lockgate.identity._directory import Directory as Directory
    from lockgate.identity._directory import DirectoryEntry as DirectoryEntry
    from lockgate.identity._passkeys import RelyingParty as RelyingParty
    from lockgate.identity._proofs import Signer as Signer
    from lockgate.identity._seals import WorkerSecret as WorkerSecret
    from lockgate.tools._audit import AuditLogger as AuditLogger
    from lockgate.tools._audit_sinks import JsonLinesAuditSink as JsonLinesAuditSink
    from lockgate.tools._context import ToolContext as ToolContext
    from lockgate.tools._ratelimit import InMemoryRateLimiter as InMemoryRateLimiter
    from lockgate.tools._registry import ToolRegistry as ToolRegistry
    from lockgate.tools._tool import Param as Param
    from lockgate.tools._tool import Retry as Retry
    from lockgate.tools._tool import tool as tool
    from lockgate.tools._tool_result import ErrorCode as ErrorCode
    from lockgate.tools._tool_result import ToolResult as ToolResult
    from lockgate.worker import LockgatePlugin as LockgatePlugin
    from lockgate.workflows._own_workflows import Decision as Decision
    from lockgate.workflows._own_workflows import call_tool as call_tool
    from lockgate.workflows._own_workflows import gate as gate

__getattr__, __dir__, __all__ = lazy_exports(globals())

# A library leaves logging to its application: without a handler of its own, Python's
# last-resort handler would print lockgate's warnings (the audit record of every refused call
# among them) to the stderr of a program that configured no logging.
logging.getLogger(__name__).addHandler(logging.NullHandler())

"""Temporal workflows: the graph interpreter, the durable tool call, gates in workflows of your own.

With their inputs, the state a graph run carries across continue-as-new, the task queue's
catalogue, the notify workflow, and how they schedule activities, fail and version.

Kept for compatibility: the graph language and its compiler now live in :mod:`lockgate.graphs`
and the clients in :mod:`lockgate.clients`; this package re-exports their names as before (the
clients' on first use). lockgate's own modules import each name from the module that defines it,
never from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockgate._lazy import lazy_names
from lockgate.graphs._compile import compile_graph
from lockgate.graphs._compiled import CompiledAsk, CompiledGraph, CompiledNode, Transition
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
from lockgate.graphs._graph_registry import GraphRegistry
from lockgate.workflows._carry import CarriedState
from lockgate.workflows._catalogue import CatalogueError
from lockgate.workflows._failures import UnreadableStart
from lockgate.workflows._graph_inputs import SettleInput, ShowInput, StartGraphInput
from lockgate.workflows._graph_workflow import GraphRun
from lockgate.workflows._own_workflows import Decision, call_tool, gate
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_SEARCH_ATTRIBUTES,
    LOCKGATE_STATE,
)
from lockgate.workflows._signed_starts import SIGNED_START_WITHIN, StartRefusedError
from lockgate.workflows._tool_call import (
    CallToolInput,
    ConfirmCallInput,
    ToolCallWorkflow,
    WaitCallInput,
)

# The clients sit above the workflows and import their modules, which runs this package first:
# their names resolve on first use (PEP 562, `__getattr__` below), or a client imported before
# this package would be met here half made.
if TYPE_CHECKING:
    from lockgate.clients._client import GraphClient
    from lockgate.clients._tool_client import ToolClient

_CLIENTS = {
    "GraphClient": "lockgate.clients._client",
    "ToolClient": "lockgate.clients._tool_client",
}

__all__ = [
    "DUAL",
    "END",
    "LOCKGATE_AWAITING",
    "LOCKGATE_GRAPH",
    "LOCKGATE_SEARCH_ATTRIBUTES",
    "LOCKGATE_STATE",
    "SIGNED_START_WITHIN",
    "SINGLE",
    "AgentStep",
    "Appends",
    "ApprovalPolicy",
    "Ask",
    "Because",
    "CallToolInput",
    "CarriedState",
    "CatalogueError",
    "CompiledAsk",
    "CompiledGraph",
    "CompiledNode",
    "ConfirmCallInput",
    "Deadline",
    "Decision",
    "Dual",
    "Edge",
    "GraphClient",
    "GraphDeclarationError",
    "GraphRegistry",
    "GraphRun",
    "ModelBudget",
    "Quorum",
    "Route",
    "SettleInput",
    "ShowInput",
    "StartGraphInput",
    "StartRefusedError",
    "Subgraph",
    "Target",
    "ToolCallWorkflow",
    "ToolClient",
    "Transition",
    "UnreadableStart",
    "WaitCallInput",
    "call_tool",
    "compile_graph",
    "gate",
    "graph",
]


__getattr__, __dir__ = lazy_names(globals(), _CLIENTS)

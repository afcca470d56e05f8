"""Temporal workflows: the graph interpreter, the durable tool call, gates in workflows of your own.

With their inputs, the state a graph run carries across continue-as-new, the task queue's
catalogue, the notify workflow, and how they schedule activities, fail and version. The package
is internal: :class:`~lockgate.LockgatePlugin` registers its workflows, and :mod:`lockgate`
exports what a workflow of your own calls (``gate``, ``call_tool``, ``Decision``).

The names it exported before, the graph language and the clients among them, still resolve here,
each with a ``DeprecationWarning`` that says where to import it from now (:mod:`lockgate`,
:mod:`lockgate.errors` or :mod:`lockgate.namespace`), or that it is lockgate's own plumbing and
goes in a later release. Nothing in lockgate imports through here.
"""

from __future__ import annotations

from lockgate._lazy import moved_names

__all__: list[str] = []

_MOVED: dict[str, tuple[str, str | None]] = {
    "AgentStep": ("lockgate.graphs._declare_agents", "lockgate"),
    "Appends": ("lockgate.graphs._declare", "lockgate"),
    "ApprovalPolicy": ("lockgate.graphs._declare", "lockgate"),
    "Ask": ("lockgate.graphs._declare", "lockgate"),
    "Because": ("lockgate.graphs._declare", "lockgate"),
    "CallToolInput": ("lockgate.workflows._tool_call", None),
    "CarriedState": ("lockgate.workflows._carry", None),
    "CatalogueError": ("lockgate.workflows._catalogue", "lockgate.errors"),
    "CompiledAsk": ("lockgate.graphs._compiled", None),
    "CompiledGraph": ("lockgate.graphs._compiled", None),
    "CompiledNode": ("lockgate.graphs._compiled", None),
    "ConfirmCallInput": ("lockgate.workflows._tool_call", None),
    "DUAL": ("lockgate.graphs._declare", "lockgate"),
    "Deadline": ("lockgate.graphs._declare", "lockgate"),
    "Decision": ("lockgate.workflows._own_workflows", "lockgate"),
    "Dual": ("lockgate.graphs._declare", "lockgate"),
    "END": ("lockgate.graphs._declare", "lockgate"),
    "Edge": ("lockgate.graphs._declare", "lockgate"),
    "GraphClient": ("lockgate.clients._client", "lockgate"),
    "GraphDeclarationError": ("lockgate.graphs._declare", "lockgate"),
    "GraphRegistry": ("lockgate.graphs._graph_registry", None),
    "GraphRun": ("lockgate.workflows._graph_workflow", None),
    "LOCKGATE_AWAITING": ("lockgate.workflows._search_attributes", "lockgate.namespace"),
    "LOCKGATE_GRAPH": ("lockgate.workflows._search_attributes", "lockgate.namespace"),
    "LOCKGATE_SEARCH_ATTRIBUTES": ("lockgate.workflows._search_attributes", "lockgate.namespace"),
    "LOCKGATE_STATE": ("lockgate.workflows._search_attributes", "lockgate.namespace"),
    "ModelBudget": ("lockgate.graphs._declare_agents", "lockgate"),
    "Quorum": ("lockgate.graphs._declare", "lockgate"),
    "Route": ("lockgate.graphs._declare", "lockgate"),
    "SIGNED_START_WITHIN": ("lockgate.workflows._signed_starts", None),
    "SINGLE": ("lockgate.graphs._declare", "lockgate"),
    "SettleInput": ("lockgate.workflows._graph_inputs", None),
    "ShowInput": ("lockgate.workflows._graph_inputs", None),
    "StartGraphInput": ("lockgate.workflows._graph_inputs", None),
    "StartRefusedError": ("lockgate.workflows._signed_starts", "lockgate.errors"),
    "Subgraph": ("lockgate.graphs._declare", "lockgate"),
    "Target": ("lockgate.graphs._declare", "lockgate"),
    "ToolCallWorkflow": ("lockgate.workflows._tool_call", None),
    "ToolClient": ("lockgate.clients._tool_client", "lockgate"),
    "Transition": ("lockgate.graphs._compiled", None),
    "UnreadableStart": ("lockgate.workflows._failures", "lockgate.errors"),
    "WaitCallInput": ("lockgate.workflows._tool_call", None),
    "call_tool": ("lockgate.workflows._own_workflows", "lockgate"),
    "compile_graph": ("lockgate.graphs._compile", "lockgate"),
    "gate": ("lockgate.workflows._own_workflows", "lockgate"),
    "graph": ("lockgate.graphs._declare", "lockgate"),
}
"""Each old name: the module that defines it, and its public home (None: internal)."""

__getattr__ = moved_names(globals(), _MOVED)

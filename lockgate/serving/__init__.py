"""lockgate's surfaces for agents and scripts: an MCP server and a JSON HTTP API.

Needs the ``mcp`` extra (``pip install 'lockgate[mcp]'``), the official MCP SDK.
"""

from __future__ import annotations

try:
    import mcp  # noqa: F401 - only to say which extra is missing
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError("lockgate.serving needs the MCP SDK: pip install 'lockgate[mcp]'") from error

from lockgate.serving._api_contract import openapi_document
from lockgate.serving._gate_watch import GATE_URI_TEMPLATE, GATES_URI, GateWatch, gate_uri
from lockgate.serving._http import DEFAULT_MAX_BODY_BYTES, STATUS_OF_CODE, BearerToken, http_app
from lockgate.serving._mcp import (
    GRAPH_OPERATIONS,
    PLAN_META_KEY,
    REQUEST_ID_META_KEY,
    LockgateMCPServer,
    build_mcp_server,
)
from lockgate.serving._names import ToolNameError, ToolNames, mcp_name
from lockgate.serving._operations import Operations, refusal_of

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "GATES_URI",
    "GATE_URI_TEMPLATE",
    "GRAPH_OPERATIONS",
    "PLAN_META_KEY",
    "REQUEST_ID_META_KEY",
    "STATUS_OF_CODE",
    "BearerToken",
    "GateWatch",
    "LockgateMCPServer",
    "Operations",
    "ToolNameError",
    "ToolNames",
    "build_mcp_server",
    "gate_uri",
    "http_app",
    "mcp_name",
    "openapi_document",
    "refusal_of",
]

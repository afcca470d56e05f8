"""lockgate's surfaces for agents and scripts: an MCP server and a JSON HTTP API.

Needs the ``mcp`` extra (``pip install 'lockgate[mcp]'``), the official MCP SDK.
"""

from __future__ import annotations

try:
    import mcp  # noqa: F401 - only to say which extra is missing
except ImportError as error:  # pragma: no cover - depends on the installation
    raise ImportError("lockgate.serving needs the MCP SDK: pip install 'lockgate[mcp]'") from error

from lockgate.serving._http import BearerToken, http_app
from lockgate.serving._mcp import build_mcp_server
from lockgate.serving._names import ToolNameError

__all__ = [
    "BearerToken",
    "ToolNameError",
    "build_mcp_server",
    "http_app",
]

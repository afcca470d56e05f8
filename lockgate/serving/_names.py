"""Tool names as MCP hosts accept them, and back.

Hosts refuse a server whose tool names leave ``[A-Za-z0-9_-]{1,64}`` (Claude Desktop rejects the
whole server). lockgate's names have colons and dots (``essay:review``, ``config.set``), so each
is mapped: ``:`` to ``__``, any other character outside the set to ``_``. The map is kept both
ways, and two names that would meet are refused by name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lockgate._errors import ConfigurationError
from lockgate.tools._tool_names import model_tool_name

__all__ = ["ToolNameError", "ToolNames", "mcp_name"]

_ALLOWED = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ToolNameError(ConfigurationError):
    """Two names map to one MCP name, or a name cannot be made a valid one."""


def mcp_name(name: str) -> str:
    """``essay:review`` → ``essay__review``; a valid name stays as it is."""
    return model_tool_name(name)


class ToolNames:
    """The MCP name of each lockgate name, and the lockgate name of each MCP name.

    Raises:
        ToolNameError: two names meet, or one is longer than 64 characters once mapped.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self._to_mcp: dict[str, str] = {}
        self._from_mcp: dict[str, str] = {}
        for name in names:
            mapped = mcp_name(name)
            if not _ALLOWED.fullmatch(mapped):
                raise ToolNameError(
                    f"The tool '{name}' is '{mapped}' as an MCP name, longer than the 64 "
                    "characters MCP hosts accept: give it a shorter name."
                )
            other = self._from_mcp.get(mapped)
            if other is not None and other != name:
                raise ToolNameError(
                    f"The tools '{other}' and '{name}' would both be '{mapped}' over MCP, where "
                    "names keep only letters, digits, '_' and '-': rename one of them."
                )
            self._to_mcp[name] = mapped
            self._from_mcp[mapped] = name

    def to_mcp(self, name: str) -> str:
        """The MCP name of lockgate's ``name``."""
        return self._to_mcp[name]

    def lockgate_name(self, mapped: str) -> str | None:
        """The lockgate name an MCP name stands for, or None."""
        return self._from_mcp.get(mapped)

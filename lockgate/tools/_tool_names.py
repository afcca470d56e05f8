"""Tool names as model hosts and agent frameworks accept them.

MCP hosts and model providers take tool names in ``[A-Za-z0-9_-]{1,64}``; lockgate's have colons
and dots (``essay:review``, ``config.set``). Each maps one way: ``:`` to ``__``, any other
character outside the set to ``_``.
"""

from __future__ import annotations

import re

__all__ = ["model_tool_name"]


def model_tool_name(name: str) -> str:
    """``essay:review`` → ``essay__review``; a valid name stays as it is."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name.replace(":", "__"))

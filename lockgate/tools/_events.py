"""The pipeline's hook events and the failure it raises when asked not to contain one.

:class:`ExecutingEvent`, :class:`ExecutedEvent` and :class:`FailedEvent` are what a
:class:`~lockgate.ToolRegistry` hands its hooks; :class:`ToolFailure` is what it
raises instead of containing a tool's exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate._errors import LockgateError
from lockgate.tools._context import ToolContext
from lockgate.tools._tool_result import ToolResult

__all__ = [
    "ExecutedEvent",
    "ExecutingEvent",
    "FailedEvent",
    "ToolFailure",
]


@dataclass(slots=True)
class ExecutingEvent:
    """Handed to ``executing`` hooks, after every check said yes and before the tool runs.

    A hook may answer on the tool's behalf (:meth:`short_circuit`, e.g. a cache) or stop the
    call (:meth:`veto`). A call that any check refused never reaches a hook.
    """

    name: str
    ctx: ToolContext
    arguments: Mapping[str, Any]
    _result: ToolResult | None = field(default=None, repr=False)
    _veto: str | None = field(default=None, repr=False)

    def short_circuit(self, result: ToolResult) -> None:
        """Answers with ``result``; the tool does not run (``executed`` still fires)."""
        self._result = result

    def veto(self, reason: str = "Tool execution vetoed by a hook.") -> None:
        """Stops the call; it returns a blocked result."""
        self._veto = reason


@dataclass(frozen=True, slots=True)
class _CallEnded:
    """What every hook told of a call's end knows: the tool, the caller and the arguments."""

    name: str
    ctx: ToolContext
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ExecutedEvent(_CallEnded):
    """Handed to ``executed`` hooks after a call ran, or was answered by a hook."""

    result: ToolResult
    cache_served: bool


@dataclass(frozen=True, slots=True)
class FailedEvent(_CallEnded):
    """Handed to ``failed`` hooks when the tool's own code raised."""

    exception: BaseException
    took_ms: float


class ToolFailure(LockgateError):
    """Raised instead of containing a tool's exception, when the caller asked for that.

    On Temporal the activity lets the tool's failure reach the retry policy. ``result`` is what
    the pipeline would have returned in process.
    """

    def __init__(self, result: ToolResult, cause: BaseException) -> None:
        super().__init__(result.error.message if result.error else str(cause))
        self.result = result
        self.cause = cause

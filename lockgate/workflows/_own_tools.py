"""A governed tool call from a workflow of the user's own, as the run's driver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.exceptions import ActivityError

from lockgate.activities._activity_inputs import ToolActivityInput
from lockgate.activities._temporal import CALLER_MISTAKES
from lockgate.gates._trail import trail_row
from lockgate.tools._result import ErrorCode, ToolResult
from lockgate.tools._tool import definition_of
from lockgate.workflows._activity_options import execute_defined, refused_tool_call, runs_local
from lockgate.workflows._authority_context import (
    current_tools,
    sealing_own_call,
)
from lockgate.workflows._own_state import OwnRunState

__all__ = ["OwnTools"]


class OwnTools(OwnRunState):
    """Tool calls through lockgate's whole pipeline, sealed as a graph node's are."""

    async def call(
        self, tool: str | Callable[..., Any], arguments: dict[str, Any], confirmed: bool
    ) -> ToolResult:
        await self._open()
        name = tool if isinstance(tool, str) else definition_of(tool).name
        tools = current_tools()
        definition = tools.get(name) if tools is not None else None
        if definition is None:
            return ToolResult.failed(
                ErrorCode.TOOL_NOT_FOUND,
                f"Tool '{name}' is not served by this worker; give LockgatePlugin the tool.",
            )
        self.calls += 1
        step = f"{self.run_id}:{name}:{self.calls}"
        call = ToolActivityInput(
            arguments=arguments,
            actor=self.driver.to_dict(),
            request_id=step,
            idempotency_key=f"{self.run_id}/{self.execution}:{name}:{self.calls}",
            confirmed=confirmed,
            node=name,
        )
        try:
            with sealing_own_call():
                result = ToolResult.from_dict(
                    await execute_defined(
                        definition,
                        call,
                        local=runs_local(definition, self.local_tools),
                        summary=f"{name} as {self.driver.actor}",
                    )
                )
        except ActivityError as error:
            result = refused_tool_call(error)
        if result.success:
            self.trail.append(trail_row(None, name, "ran", self.driver))
            maker = self.driver.principal
            if self.driver.verified and maker is not None and maker not in self.makers:
                self.makers.append(maker)
        else:
            self.trail.append(
                trail_row(
                    None,
                    name,
                    "refused" if result.code in CALLER_MISTAKES else "failed",
                    self.driver,
                    why=result.error.message if result.error else "",
                    code=result.code,
                )
            )
        return result

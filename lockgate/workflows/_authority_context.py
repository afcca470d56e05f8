"""How workflow validators reach the worker's Authority: an interceptor sets it around them.

Validators are the one place workflow code judges callers live (they never run on replay), and
they must do it against the worker's Directory. The interceptor, made by the worker with its
Authority, sets it in a context variable for exactly the duration of a validator.
"""

from __future__ import annotations

import contextvars
from typing import Any

import temporalio.worker
from temporalio.worker import (
    HandleQueryInput,
    HandleUpdateInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from lockgate.gating import Authority

__all__ = ["AuthorityInterceptor", "current_authority"]

_CURRENT: contextvars.ContextVar[Authority | None] = contextvars.ContextVar(
    "lockgate_authority", default=None
)


def current_authority() -> Authority | None:
    """The Authority of the worker running this validator, update or query; None elsewhere."""
    return _CURRENT.get()


class _AuthorityInbound(WorkflowInboundInterceptor):
    authority: Authority

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        token = _CURRENT.set(self.authority)
        try:
            self.next.handle_update_validator(input)
        finally:
            _CURRENT.reset(token)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        # Each update handler runs in its own task, so this holds for exactly this handler.
        token = _CURRENT.set(self.authority)
        try:
            return await self.next.handle_update_handler(input)
        finally:
            _CURRENT.reset(token)

    async def handle_query(self, input: HandleQueryInput) -> Any:
        token = _CURRENT.set(self.authority)
        try:
            return await self.next.handle_query(input)
        finally:
            _CURRENT.reset(token)


class AuthorityInterceptor(temporalio.worker.Interceptor):
    """Hands the worker's Authority to lockgate's validators (and queries) on this worker."""

    def __init__(self, authority: Authority) -> None:
        self.authority = authority

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        """A per-worker subclass bound to this worker's Authority."""
        return type("AuthorityInbound", (_AuthorityInbound,), {"authority": self.authority})

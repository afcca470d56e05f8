"""lockgate's workflow types on a worker that uses Temporal's Worker Versioning: each carries the
versioning behaviour auto-upgrade there, and none anywhere else.

A graph run parks at a gate for days; with auto-upgrade its next task goes to the deployment's
current version, which finishes it on the graph version its history names (lockgate serves
several versions of one graph side by side). Pinned would keep every old build polling until its
last parked run ended, and a query of a parked run would hang once they stopped.

The behaviour cannot simply be written on the classes: a server refuses every workflow task a
worker without versioning completes with one ("versioning behavior cannot be specified without
deployment options being set with versioned mode"), so the run would never move again. The
plugin swaps these variants in only for a worker whose deployment options turn versioning on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow
from temporalio.common import VersioningBehavior

from lockgate.workflows._generated import GeneratedClass

__all__ = ["LOCKGATE_VERSIONING_BEHAVIOR", "with_versioning_behavior"]

LOCKGATE_VERSIONING_BEHAVIOR = VersioningBehavior.AUTO_UPGRADE
"""The versioning behaviour of lockgate's workflow types on a versioned worker."""

_made: dict[type, type] = {}


def with_versioning_behavior(cls: type) -> type:
    """``cls`` as a workflow type of the same name carrying :data:`LOCKGATE_VERSIONING_BEHAVIOR`.

    A subclass, made once per class, whose ``run`` hands on to ``cls``'s: its signals, queries,
    updates and ``__init__`` are ``cls``'s own.
    """
    found = _made.get(cls)
    if found is not None:
        return found
    # The SDK keeps a class's workflow name and options only on its private definition.
    definition = workflow._Definition.must_from_class(cls)
    inner: Callable[..., Awaitable[Any]] = definition.run_fn
    made = GeneratedClass(f"{cls.__name__}_AutoUpgrade", module=cls.__module__)

    @made.method
    async def run(self: Any, *arguments: Any) -> Any:
        return await inner(self, *arguments)

    # The SDK reads a run method's parameters and types through `__wrapped__`.
    run.__wrapped__ = inner  # type: ignore[attr-defined]
    run.__doc__ = inner.__doc__
    variant = made.make((cls,), {"run": workflow.run(run)})
    defined: type = workflow.defn(
        name=definition.name,
        sandboxed=definition.sandboxed,
        failure_exception_types=definition.failure_exception_types,
        versioning_behavior=LOCKGATE_VERSIONING_BEHAVIOR,
    )(variant)
    _made[cls] = defined
    return defined

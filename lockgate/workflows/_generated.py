"""Workflow classes made at run time: how lockgate makes one, and the module each graph's
workflow class says it belongs to.

temporalio accepts a class's ``@workflow.run`` only when the method and the class belong to one
importable module, and refuses one whose name says it was defined inside a function: a
:class:`GeneratedClass` names each of its methods as its own before the SDK's decorators see
them. :func:`lockgate.workflows._graph_workflow.graph_workflow` makes its classes in this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["GeneratedClass"]

_Function = TypeVar("_Function", bound=Callable[..., Any])


class GeneratedClass:
    """A class to be made at run time, named ``name`` in ``module`` (this one by default).

    Example::

        made = GeneratedClass("Catalogue", module=__name__)

        @workflow.run
        @made.method
        async def run(self) -> None: ...

        Catalogue = made.make((), {"run": run})
    """

    def __init__(self, name: str, *, module: str = __name__) -> None:
        self.name = name
        self.module = module

    def method(self, function: _Function) -> _Function:
        """Names ``function`` as this class's method (decorate with it first)."""
        function.__module__ = self.module
        function.__qualname__ = f"{self.name}.{function.__name__}"
        return function

    def make(self, bases: tuple[type, ...], members: Mapping[str, Any]) -> type:
        """The class, with ``members`` (its methods named by :meth:`method`)."""
        return type(
            self.name, bases, {"__module__": self.module, "__qualname__": self.name, **members}
        )

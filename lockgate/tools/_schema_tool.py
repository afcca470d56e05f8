"""Tools described by a raw JSON Schema instead of a Python signature."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import jsonschema

from lockgate.tools._context import ToolContext
from lockgate.tools._tool import (
    ArgumentsInvalid,
    ToolDeclarationError,
    ToolDefinition,
    local_refusal,
)

__all__ = ["schema_definition"]


def schema_definition(
    name: str,
    description: str,
    schema: Mapping[str, Any],
    handler: Callable[[dict[str, Any], ToolContext], Any],
    *,
    scopes: Iterable[str] = (),
    mutating: bool = False,
    confirm: bool = False,
    timeout: float = 30.0,
    sensitive: Iterable[str] = (),
    open_world: bool = False,
    local: bool = False,
) -> ToolDefinition:
    """A :class:`ToolDefinition` whose arguments are checked against ``schema`` (2020-12).

    ``local=True`` runs it as a Temporal local activity in graphs and durable calls, as for
    ``@tool(..., local=True)``, and is refused with ``mutating`` or ``confirm``.
    """
    problem = local_refusal(name, local=local, mutating=mutating, confirm=confirm, heartbeat=None)
    if problem is not None:
        raise ToolDeclarationError(problem)
    schema = dict(schema)
    if schema.get("type", "object") != "object":
        raise ToolDeclarationError(
            f"Tool '{name}': its schema must describe an object of named arguments."
        )
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise ToolDeclarationError(
            f"Tool '{name}': its schema is invalid ({error.message})."
        ) from None
    validator = jsonschema.Draft202012Validator(schema)

    def validate(arguments: Mapping[str, Any]) -> dict[str, Any]:
        problems = [
            (
                f"'{'.'.join(str(part) for part in problem.absolute_path)}': {problem.message}"
                if problem.absolute_path
                else problem.message
            )
            for problem in validator.iter_errors(dict(arguments))
        ]
        if problems:
            raise ArgumentsInvalid(f"Invalid arguments for '{name}': {'; '.join(problems)}.")
        return dict(arguments)

    return ToolDefinition(
        name=name,
        description=description,
        handler=handler,
        input_schema=schema,
        scopes=frozenset(scopes),
        mutating=mutating,
        confirm=confirm,
        timeout=float(timeout),
        sensitive=frozenset(sensitive),
        open_world=open_world,
        local=local,
        parameters=tuple(schema["properties"]),
        is_async=inspect.iscoroutinefunction(handler),
        raw_schema=True,
        _validator=validate,
    )

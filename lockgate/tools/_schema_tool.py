"""Tools described by a raw JSON Schema instead of a Python signature: what the schema must be,
and how arguments are checked against it (:meth:`ToolRegistry.register_schema` registers one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

from lockgate.tools._tool import (
    ArgumentsInvalid,
    ToolDeclarationError,
    invalid_arguments_sentence,
    schema_problems,
)

__all__ = ["arguments_schema", "schema_validator"]


def arguments_schema(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as the input schema of tool ``name``: an object of named arguments, in valid
    JSON Schema 2020-12.

    Raises:
        ToolDeclarationError: It describes something else than an object, or is invalid.
    """
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
    return schema


def schema_validator(
    name: str, schema: Mapping[str, Any]
) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """Checks the arguments of tool ``name`` against its :func:`arguments_schema`; raises
    :class:`ArgumentsInvalid` naming every problem."""
    validator = jsonschema.Draft202012Validator(schema)

    def validate(arguments: Mapping[str, Any]) -> dict[str, Any]:
        problems = schema_problems(validator, dict(arguments))
        if problems:
            raise ArgumentsInvalid(invalid_arguments_sentence(name, problems))
        return dict(arguments)

    return validate

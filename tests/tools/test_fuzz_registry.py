"""Fuzzing the registry: whatever a caller sends, ``call()`` answers with a result, never raises."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate import ErrorCode, Param, ToolContext, ToolRegistry, ToolResult, tool
from tests.helpers.support import definition_of

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@tool("fz.search", "Search, with a clamped page", scopes=["notes:read"])
def fz_search(
    query: str,
    page: Annotated[int, Param("Page", clamp=(1, 100))] = 1,
    sort: Literal["newest", "oldest"] = "newest",
) -> dict[str, Any]:
    return {"query": query, "page": page, "sort": sort}


@tool("fz.people", "Find people by an object filter")
def fz_people(
    filter: Annotated[
        dict[str, Any],
        Param(
            "Who",
            type="object",
            properties={"name": {"type": "string"}, "age": {"type": "integer"}},
            required=["name"],
        ),
    ],
) -> dict[str, Any]:
    return filter


@tool("fz.delete", "Delete a note, once confirmed", mutating=True, confirm=True)
def fz_delete(note_id: int) -> int:
    return note_id


@tool("fz.explode", "Always raises")
def fz_explode(times: int = 1) -> None:
    raise RuntimeError("The disk is on fire.")


@tool("fz.echo", "Echoes text", scopes=["echo"])
def fz_echo(text: str, ctx: ToolContext, loud: bool = False) -> str:
    return text.upper() if loud else text


@tool("fz.tag", "Tags a note", mutating=True)
def fz_tag(note: str, tags: list[str], color: str | None = None) -> dict[str, Any]:
    return {"note": note, "tags": tags, "color": color}


def raw_handler(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return arguments


RAW_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string", "maxLength": 10}, "draft": {"type": "boolean"}},
    "required": ["title"],
    "additionalProperties": False,
}


def make_registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(fz_search, fz_people, fz_delete, fz_explode, fz_echo, fz_tag)
    registry.register_schema("fz.raw", "A raw-schema tool", RAW_SCHEMA, raw_handler)
    return registry


REGISTRY = make_registry()
NAMES = REGISTRY.names()
# Tools whose parameters pydantic checks exactly as their JSON Schema says (strings, literals,
# lists of strings, JSON-Schema objects), so "valid" has one meaning for both.
EXACT_TOOLS = ["fz.people", "fz.tag", "fz.raw"]
CHANNELS = ["cli", "tui", "mcp", "telegram", "web", "temporal", "carrier-pigeon", "", "CLI"]


@pytest.fixture(autouse=True)
def quiet_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    # Every refusal is audited at WARNING; keeping thousands of records would slow the run.
    caplog.set_level(logging.CRITICAL)
    yield


# Values a lenient validator might coerce into another type.
coercion_bait = st.sampled_from([True, False, 0, 1, 1.0, 2.5, "1", "5", "1e3", "true", "yes", ""])
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | coercion_bait
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)

tool_names = st.one_of(
    st.sampled_from(NAMES),
    json_values,
    st.sampled_from(NAMES).map(lambda name: name[:-1]),
    st.text(max_size=20),
)

contexts = st.builds(
    ToolContext,
    principal=st.one_of(st.none(), st.just(""), st.just("0"), st.text(max_size=10)),
    channel=st.sampled_from(CHANNELS),
    scopes=st.frozensets(
        st.sampled_from(["*", "echo", "notes:read", "notes:*", "read", "write"])
        | st.text(max_size=6),
        max_size=3,
    ),
    mode=st.sampled_from(["execute", "plan"]),
    extra=st.one_of(st.none(), st.just({"signer": "BE75D34"})),
)


def fitting(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of the JSON type a property's schema names (not always within its bounds)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([fitting(option) for option in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "string":
        return st.text(max_size=12)
    if kind == "integer":
        return st.integers()
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(fitting(schema.get("items", {})), max_size=3)
    if kind == "object" and "properties" in schema:
        properties = {
            key: fitting(value) | json_values for key, value in schema["properties"].items()
        }
        return st.fixed_dictionaries({}, optional=properties)
    return json_values


@st.composite
def shaped_arguments(draw: st.DrawFn, names: list[str] = NAMES) -> tuple[str, dict[str, Any]]:
    """A registered tool and a dict of its own argument names, with arbitrary values.

    Required arguments are usually present and optional ones sometimes; each value is of the
    type its schema names, a value a lenient validator might coerce, or any JSON value at all.
    """
    name = draw(st.sampled_from(names))
    schema = definition_of(REGISTRY, name).input_schema
    required = set(schema.get("required", ()))
    arguments: dict[str, Any] = {}
    for key, property_schema in schema["properties"].items():
        if draw(st.integers(0, 9)) < (9 if key in required else 5):
            arguments[key] = draw(fitting(property_schema) | coercion_bait | json_values)
    return name, arguments


_LOOP = asyncio.new_event_loop()


@pytest.fixture(scope="module", autouse=True)
def close_loop() -> Iterator[None]:
    yield
    _LOOP.close()


def call(name: object, arguments: object, ctx: ToolContext | None) -> ToolResult:
    # One loop for every example: asyncio.run would build and tear down a loop per call.
    return _LOOP.run_until_complete(REGISTRY.run_pipeline(name, arguments, ctx))


def assert_well_formed(result: object) -> None:
    assert isinstance(result, ToolResult)
    if result.success:
        assert result.error is None
        return
    assert result.error is not None
    assert result.code in {code.value for code in ErrorCode}
    message = result.error.message
    assert isinstance(message, str)
    assert message.strip()
    # "Did you mean 'x'?" closes a not-found sentence with a question.
    assert message.endswith((".", "?")), message


def schema_accepts(name: str, arguments: object) -> bool:
    if not isinstance(arguments, dict):
        return arguments is None and not definition_of(REGISTRY, name).input_schema.get("required")
    plain = {key: value for key, value in arguments.items() if key != "confirm_token"}
    return jsonschema.Draft202012Validator(definition_of(REGISTRY, name).input_schema).is_valid(
        plain
    )


def gate_admits(name: str, ctx: ToolContext) -> bool:
    """The parts of authorization that hold on every channel: authentication and scopes."""
    definition = definition_of(REGISTRY, name)
    needs_auth = ctx.channel not in ("cli", "tui", "telegram", "temporal")
    if needs_auth and (not ctx.principal or ctx.principal.startswith("unverified:")):
        return False
    return not definition.scopes or ctx.has_any_scope(definition.scopes)


# Properties ---------------------------------------------------------------------------------------


@FUZZ
@given(name=tool_names, arguments=json_values, ctx=st.none() | contexts)
def test_any_name_and_any_arguments_get_a_well_formed_result(
    name: object, arguments: object, ctx: ToolContext | None
) -> None:
    assert_well_formed(call(name, arguments, ctx))


@FUZZ
@given(shaped=shaped_arguments(), ctx=st.none() | contexts)
def test_a_tools_own_argument_names_with_any_values_get_a_well_formed_result(
    shaped: tuple[str, dict[str, Any]], ctx: ToolContext | None
) -> None:
    name, arguments = shaped

    assert_well_formed(call(name, arguments, ctx))


@FUZZ
@given(shaped=shaped_arguments(EXACT_TOOLS), ctx=st.none() | contexts)
def test_a_call_succeeds_only_with_arguments_its_schema_accepts(
    shaped: tuple[str, dict[str, Any]], ctx: ToolContext | None
) -> None:
    name, arguments = shaped

    result = call(name, arguments, ctx)

    if result.success:
        assert schema_accepts(name, arguments)


@FUZZ
@given(shaped=shaped_arguments(EXACT_TOOLS))
def test_a_call_its_schema_accepts_succeeds_for_a_caller_holding_everything(
    shaped: tuple[str, dict[str, Any]],
) -> None:
    name, arguments = shaped
    ctx = ToolContext.cli().with_extra(signer="BE75D34")

    result = call(name, arguments, ctx)

    assert result.success == schema_accepts(name, arguments), result.error


@settings(FUZZ, derandomize=True, database=None)
@given(shaped=shaped_arguments())
def test_a_call_to_any_tool_succeeds_only_with_arguments_its_schema_accepts(
    shaped: tuple[str, dict[str, Any]],
) -> None:
    name, arguments = shaped
    ctx = ToolContext.cli().with_extra(signer="BE75D34")

    result = call(name, arguments, ctx)

    if result.success:
        assert schema_accepts(name, arguments)


@FUZZ
@given(shaped=shaped_arguments(), ctx=contexts)
def test_a_call_succeeds_only_for_a_caller_the_gate_admits(
    shaped: tuple[str, dict[str, Any]], ctx: ToolContext
) -> None:
    name, arguments = shaped

    result = call(name, arguments, ctx)

    if result.success:
        assert gate_admits(name, ctx)

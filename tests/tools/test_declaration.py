"""Declaring tools: schemas from signatures, Param, raw schemas, definitions, token budgets."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest

from lockgate import ErrorCode, Param, ToolContext, ToolRegistry, ToolResult, tool
from lockgate.errors import ToolDeclarationError
from lockgate.tools._budget import context_tokens, estimate_tokens
from lockgate.tools._tool import definition_of, is_tool


@tool("notes.search", "Search notes", scopes=["notes:read"])
def search(
    query: Annotated[str, Param("Words to look for")],
    page: Annotated[int, Param("Page number", clamp=(1, 1000))] = 1,
    sort: Literal["newest", "oldest"] = "newest",
    tag: str | None = None,
) -> dict[str, Any]:
    return {"query": query, "page": page, "sort": sort, "tag": tag}


@tool("notes.title", "Set a title")
def set_title(title: Annotated[str, Param("The title", max_length=20)]) -> str:
    return title


@tool("people.find", "Find people")
def find_people(
    filter: Annotated[
        dict[str, Any],
        Param(
            "Who to find",
            type="object",
            properties={"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
            required=["name"],
        ),
    ],
) -> dict[str, Any]:
    return filter


@tool("clock.now", "What time it is")
def now() -> str:
    return "12:00"


def registry_of(*tools: Any) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(*tools)
    return registry


# Schemas from signatures --------------------------------------------------------------------------


def test_the_schema_lists_each_parameter_with_its_json_type() -> None:
    schema = definition_of(search).input_schema

    assert {name: p.get("type") for name, p in schema["properties"].items()} == {
        "query": "string",
        "page": "integer",
        "sort": "string",
        "tag": None,
    }


def test_the_schema_requires_exactly_the_parameters_without_defaults() -> None:
    assert definition_of(search).input_schema["required"] == ["query"]


def test_the_schema_advertises_defaults() -> None:
    properties = definition_of(search).input_schema["properties"]

    assert (properties["page"]["default"], properties["sort"]["default"]) == (1, "newest")


def test_a_literal_parameter_becomes_an_enum() -> None:
    assert definition_of(search).input_schema["properties"]["sort"]["enum"] == ["newest", "oldest"]


def test_an_optional_parameter_accepts_null() -> None:
    types = [
        option["type"]
        for option in definition_of(search).input_schema["properties"]["tag"]["anyOf"]
    ]

    assert types == ["string", "null"]


def test_param_descriptions_reach_the_schema() -> None:
    assert definition_of(search).input_schema["properties"]["query"]["description"] == (
        "Words to look for"
    )


def test_a_clamped_parameter_says_its_range_in_its_description() -> None:
    description = definition_of(search).input_schema["properties"]["page"]["description"]

    assert description == "Page number (clamped to 1–1000)"


def test_the_schema_has_no_titles_anywhere() -> None:
    assert '"title"' not in json.dumps(definition_of(search).input_schema)


def test_the_schema_refuses_additional_properties() -> None:
    assert definition_of(search).input_schema["additionalProperties"] is False


def test_the_definition_carries_the_declared_options() -> None:
    @tool("x.y", "d", scopes=["a", "b"], mutating=True, confirm=True, timeout=5, sensitive=["pin"])
    def declared() -> None: ...

    d = definition_of(declared)
    assert (d.scopes, d.mutating, d.confirm, d.timeout, d.sensitive) == (
        frozenset({"a", "b"}),
        True,
        True,
        5.0,
        frozenset({"pin"}),
    )


def test_a_decorated_function_stays_callable_directly() -> None:
    assert search("x") == {"query": "x", "page": 1, "sort": "newest", "tag": None}


def test_is_tool_tells_declared_functions_apart() -> None:
    def plain() -> None: ...

    assert (is_tool(search), is_tool(plain)) == (True, False)


# Validation ---------------------------------------------------------------------------------------


async def test_a_missing_argument_is_named() -> None:
    result = await registry_of(search).call("notes.search", {})

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "'query' is required and missing" in result.error.message


async def test_an_argument_of_the_wrong_type_is_named_with_what_was_given() -> None:
    result = await registry_of(search).call("notes.search", {"query": "x", "page": "many"})

    assert result.error is not None
    assert "'page'" in result.error.message
    assert "(got 'many')" in result.error.message


async def test_an_unknown_argument_is_named_with_the_arguments_the_tool_takes() -> None:
    result = await registry_of(search).call("notes.search", {"query": "x", "limit": 5})

    assert result.error is not None
    assert "'limit' is not an argument of 'notes.search' (it takes: query, page, sort, tag)" in (
        result.error.message
    )


async def test_every_bad_argument_is_named_in_one_sentence() -> None:
    result = await registry_of(search).call("notes.search", {"page": "x", "sort": "random"})

    assert result.error is not None
    message = result.error.message
    assert all(f"'{name}'" in message for name in ("query", "page", "sort"))
    assert message.startswith("Invalid arguments for 'notes.search': ")
    assert message.endswith(".")


async def test_an_argument_to_a_tool_that_takes_none_says_so() -> None:
    result = await registry_of(now).call("clock.now", {"tz": "UTC"})

    assert result.error is not None
    assert "(it takes: no arguments)" in result.error.message


@pytest.mark.parametrize(
    ("arguments", "what"),
    [([1, 2], "a list"), ("page=2", "a string"), (42, "a number"), (True, "a boolean")],
)
async def test_arguments_that_are_not_an_object_are_refused_saying_what_they_were(
    arguments: object, what: str
) -> None:
    # Not a mapping, on purpose: what a caller ignoring the signature gets is what is pinned.
    result = await registry_of(now).call("clock.now", arguments)  # type: ignore[arg-type]

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert result.error.message == (
        f"Arguments for 'clock.now' must be a JSON object of named arguments, not {what}."
    )


async def test_no_arguments_at_all_count_as_an_empty_object() -> None:
    result = await registry_of(now).call("clock.now", None)

    assert result.data == "12:00"


async def test_an_unknown_tool_is_named_and_a_close_name_suggested() -> None:
    result = await registry_of(search).call("notes.serch", {})

    assert result.code == ErrorCode.TOOL_NOT_FOUND
    assert result.error is not None
    assert result.error.message == "Tool not found: 'notes.serch'. Did you mean 'notes.search'?"


async def test_an_unknown_tool_with_no_close_name_suggests_nothing() -> None:
    result = await registry_of(search).call("zzz", {})

    assert result.error is not None
    assert result.error.message == "Tool not found: 'zzz'."


async def test_a_tool_name_that_is_not_a_string_says_what_it_was() -> None:
    result = await registry_of(search).call(["notes.search"], {})  # type: ignore[arg-type]

    assert result.error is not None
    assert result.error.message == "Tool not found: a tool is named by a string, not a list."


@pytest.mark.parametrize("page", [True, "5"])
async def test_an_argument_its_schema_refuses_is_refused(page: object) -> None:
    result = await registry_of(search).call("notes.search", {"query": "x", "page": page})

    assert result.code == ErrorCode.VALIDATION_ERROR


# Clamps -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("given", "received"), [(5000, 1000), (0, 1), (-3, 1), (7, 7)])
async def test_a_clamped_number_is_brought_into_range_instead_of_refused(
    given: int, received: int
) -> None:
    result = await registry_of(search).call("notes.search", {"query": "x", "page": given})

    assert result.data["page"] == received


async def test_a_clamped_argument_is_clamped_before_authorization_sees_it() -> None:
    registry = registry_of(search)
    seen: list[dict[str, Any]] = []
    registry.on_executing(lambda event: seen.append(dict(event.arguments)))

    await registry.call("notes.search", {"query": "x", "page": 5000})

    assert seen == [{"query": "x", "page": 1000}]


async def test_a_string_longer_than_its_max_length_is_truncated() -> None:
    result = await registry_of(set_title).call(
        "notes.title", {"title": "This is a very long title"}
    )

    assert result.data == "This is a very long "


async def test_a_clamp_still_refuses_a_value_of_the_wrong_type() -> None:
    result = await registry_of(search).call("notes.search", {"query": "x", "page": "lots"})

    assert result.code == ErrorCode.VALIDATION_ERROR


# Object parameters --------------------------------------------------------------------------------


def test_an_object_parameter_advertises_its_properties() -> None:
    schema = definition_of(find_people).input_schema["properties"]["filter"]

    assert (schema["type"], schema["properties"]["age"], schema["required"]) == (
        "object",
        {"type": "integer", "minimum": 0},
        ["name"],
    )


async def test_an_object_parameter_accepts_a_json_object() -> None:
    result = await registry_of(find_people).call("people.find", {"filter": {"name": "Ada"}})

    assert result.data == {"name": "Ada"}


async def test_an_object_parameters_properties_are_validated() -> None:
    result = await registry_of(find_people).call("people.find", {"filter": {"name": 5}})

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "'filter.name'" in result.error.message


async def test_an_object_parameters_required_properties_are_enforced() -> None:
    result = await registry_of(find_people).call("people.find", {"filter": {"age": 3}})

    assert result.error is not None
    assert (
        result.error.message
        == "Invalid arguments for 'people.find': 'filter': 'name' is a required property."
    )


async def test_an_object_parameter_refuses_a_value_that_is_not_an_object() -> None:
    result = await registry_of(find_people).call("people.find", {"filter": "Ada"})

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert "'filter'" in result.error.message


# Raw-schema tools ---------------------------------------------------------------------------------

RAW_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 1}, "count": {"type": "integer"}},
    "required": ["title"],
    "additionalProperties": False,
}


def raw_registry() -> tuple[ToolRegistry, list[tuple[dict[str, Any], ToolContext]]]:
    received: list[tuple[dict[str, Any], ToolContext]] = []

    def handler(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        received.append((arguments, ctx))
        return ToolResult.ok(arguments)

    registry = ToolRegistry()
    registry.register_schema("posts.create", "Create a post", RAW_SCHEMA, handler)
    return registry, received


async def test_a_raw_schema_tool_receives_its_arguments_and_the_context() -> None:
    registry, received = raw_registry()
    ctx = ToolContext.web("ada", [])

    await registry.call("posts.create", {"title": "Hi", "count": 2}, ctx)

    assert received == [({"title": "Hi", "count": 2}, ctx)]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "'title' is a required property"),
        ({"title": ""}, "'title': '' should be non-empty"),
        ({"title": "x", "count": "2"}, "'count': '2' is not of type 'integer'"),
        ({"title": "x", "extra": 1}, "Additional properties are not allowed"),
    ],
)
async def test_a_raw_schema_tool_validates_with_jsonschema(
    arguments: dict[str, Any], problem: str
) -> None:
    registry, received = raw_registry()

    result = await registry.call("posts.create", arguments)

    assert result.code == ErrorCode.VALIDATION_ERROR
    assert result.error is not None
    assert problem in result.error.message
    assert received == []


def test_a_raw_schema_that_is_not_an_object_is_a_declaration_error() -> None:
    with pytest.raises(ToolDeclarationError, match="object of named arguments"):
        ToolRegistry().register_schema("x", "d", {"type": "array"}, lambda a, c: None)


def test_an_invalid_raw_schema_is_a_declaration_error() -> None:
    with pytest.raises(ToolDeclarationError, match="schema is invalid"):
        ToolRegistry().register_schema(
            "x", "d", {"type": "object", "required": 5}, lambda a, c: None
        )


@pytest.mark.parametrize(
    ("name", "options", "why"),
    [
        pytest.param("x", {"scopes": "posts:write"}, "not the string", id="scopes as a string"),
        pytest.param("x", {"timeout": 0}, "timeout must be positive", id="timeout"),
        pytest.param("no spaces", {}, "is not usable", id="name"),
    ],
)
def test_a_raw_schema_tool_is_held_to_the_options_of_tool(
    name: str, options: dict[str, Any], why: str
) -> None:
    with pytest.raises(ToolDeclarationError, match=why):
        ToolRegistry().register_schema(name, "d", {"type": "object"}, lambda a, c: None, **options)


def test_a_misspelt_option_is_named_with_the_one_meant() -> None:
    with pytest.raises(ToolDeclarationError) as refused:
        tool("posts.create", scope=["posts:write"])  # type: ignore[call-arg]

    assert str(refused.value).startswith(
        "@tool('posts.create') takes no option 'scope': did you mean 'scopes'? Its options are "
    )


# Definitions --------------------------------------------------------------------------------------


def test_definitions_are_in_the_mcp_wire_shape() -> None:
    (definition,) = registry_of(now).definitions()

    assert definition == {
        "name": "clock.now",
        "description": "What time it is",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    }


def test_empty_properties_serialise_as_an_empty_json_object() -> None:
    text = json.dumps(registry_of(now).definitions())

    assert '"properties": {}' in text


def test_a_mutating_tool_is_advertised_as_destructive() -> None:
    @tool("x.delete", "Delete", mutating=True, open_world=True)
    def delete() -> None: ...

    (definition,) = registry_of(delete).definitions()
    assert definition["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "openWorldHint": True,
    }


def test_definitions_follow_registration_order() -> None:
    assert [d["name"] for d in registry_of(now, search, set_title).definitions()] == [
        "clock.now",
        "notes.search",
        "notes.title",
    ]


# Token budget -------------------------------------------------------------------------------------


def sized_tool(name: str, description_chars: int) -> Any:
    @tool(name, "x" * description_chars)
    def sized() -> None: ...

    return sized


@pytest.mark.parametrize(
    ("model", "tokens"),
    [
        ("gpt-4o", 128000),
        ("gpt-4o-2024-05-13", 128000),
        ("gpt-4-32k-0613", 32768),
        ("gpt-4-0613", 8192),
        ("claude-3.5-sonnet-20241022", 200000),
        ("llama-70b", 8192),
    ],
)
def test_a_models_context_is_found_by_its_longest_known_prefix(model: str, tokens: int) -> None:
    assert context_tokens(model) == tokens


def test_a_token_is_about_four_bytes() -> None:
    assert [estimate_tokens(t) for t in ("", "abcd", "abcde", "é" * 2)] == [0, 1, 2, 1]


def test_the_budget_is_thirty_percent_of_the_context() -> None:
    assert registry_of(now).definitions_within_budget("gpt-3.5-turbo").budget == 1228


def test_the_budget_skips_a_tool_that_does_not_fit_and_keeps_trying_the_rest() -> None:
    registry = registry_of(
        sized_tool("small.a", 100), sized_tool("huge", 6000), sized_tool("small.b", 100)
    )

    report = registry.definitions_within_budget("gpt-3.5-turbo")

    assert ([t["name"] for t in report.tools], report.excluded) == (
        ["small.a", "small.b"],
        ["huge"],
    )


def test_the_budget_reports_the_tokens_it_used() -> None:
    registry = registry_of(now)

    report = registry.definitions_within_budget("gpt-4o")

    assert report.tokens_used == estimate_tokens(
        json.dumps(registry.definitions()[0], ensure_ascii=False)
    )


def test_priority_tools_go_first_in_registration_order() -> None:
    registry = registry_of(sized_tool("a", 10), sized_tool("b", 10), sized_tool("c", 10))

    report = registry.definitions_within_budget("gpt-4o", priority=["c", "a"])

    assert [t["name"] for t in report.tools] == ["a", "c", "b"]


def test_priority_decides_who_fits_when_not_all_do() -> None:
    registry = registry_of(sized_tool("first", 3000), sized_tool("second", 3000))

    report = registry.definitions_within_budget("gpt-3.5-turbo", priority=["second"])

    assert ([t["name"] for t in report.tools], report.excluded) == (["second"], ["first"])


# Declaration errors -------------------------------------------------------------------------------


def test_a_tool_taking_star_args_is_a_declaration_error() -> None:
    @tool("bad.args", "d")
    def bad(*values: int) -> None: ...

    with pytest.raises(ToolDeclarationError, match=r"\*values cannot be described by a schema"):
        definition_of(bad)


def test_a_tool_taking_star_star_kwargs_is_a_declaration_error() -> None:
    @tool("bad.kwargs", "d")
    def bad(**values: int) -> None: ...

    with pytest.raises(ToolDeclarationError, match="declare each argument by name"):
        definition_of(bad)


def test_a_positional_only_parameter_is_a_declaration_error() -> None:
    @tool("bad.positional", "d")
    def bad(value: int, /) -> None: ...

    with pytest.raises(ToolDeclarationError, match="positional-only"):
        definition_of(bad)


@pytest.mark.parametrize("name", ["", "has space", "x" * 129, "semi;colon"])
def test_an_unusable_tool_name_is_a_declaration_error(name: str) -> None:
    with pytest.raises(ToolDeclarationError, match="is not usable"):
        tool(name, "d")


def test_scopes_given_as_one_string_are_a_declaration_error() -> None:
    with pytest.raises(ToolDeclarationError, match="not the string"):
        tool("x", "d", scopes="notes:read")


def test_a_timeout_that_is_not_positive_is_a_declaration_error() -> None:
    with pytest.raises(ToolDeclarationError, match="timeout must be positive"):
        tool("x", "d", timeout=0)


def test_two_tools_with_one_name_are_a_declaration_error_naming_both() -> None:
    @tool("twin", "first")
    def first() -> None: ...

    @tool("twin", "second")
    def second() -> None: ...

    registry = registry_of(first)
    with pytest.raises(
        ToolDeclarationError, match="Two tools both call themselves 'twin'"
    ) as raised:
        registry.register(second)

    assert "first" in str(raised.value)
    assert "second" in str(raised.value)


def test_registering_the_same_tool_twice_is_harmless() -> None:
    registry = registry_of(now, now)

    assert registry.names() == ["clock.now"]


def test_an_undecorated_function_is_not_a_tool() -> None:
    def plain() -> None: ...

    with pytest.raises(ToolDeclarationError, match="decorate it with @tool"):
        ToolRegistry().register(plain)


def test_an_annotation_that_cannot_be_resolved_is_a_declaration_error() -> None:
    @tool("bad.hint", "d")
    def bad(value: NoSuchType) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(ToolDeclarationError, match="annotations cannot be resolved"):
        definition_of(bad)

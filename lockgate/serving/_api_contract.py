"""The JSON API's contract: its endpoints, the pydantic models of their bodies, and the OpenAPI
3.1 document made from both (``GET /api/openapi.json``).

One source for each shape: the request models check what a caller sent (a wrong body is a 422
naming the field and showing the body expected) and are the document's request schemas; the
answer models are its response schemas. :data:`ENDPOINTS` lists every route under ``/api``; the
app serves exactly these, so none goes undocumented.

Every answer is a JSON object with ``ok``; a refusal is ``{ok: false, error: {code, message}}``
with facts beside it, whatever the endpoint.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.json_schema import models_json_schema

from lockgate.contracts import refusal
from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "ENDPOINTS",
    "OPENAPI_PATH",
    "ConfirmBody",
    "DecideBody",
    "Endpoint",
    "Refusal",
    "ResumeBody",
    "StartBody",
    "ToolCallBody",
    "body_refusal",
    "checked_body",
    "expected_body",
    "openapi_document",
    "plain_json",
]

OPENAPI_PATH = "/openapi.json"
"""Where, under ``/api``, the server serves its OpenAPI document."""

_MAX_QUOTED = 80
"""How much of a caller's wrong value a 422 quotes back."""


def plain_json(text: str | bytes) -> Any:
    """The JSON value ``text`` holds.

    Raises:
        ValueError: It is not JSON, or not plain JSON: Python reads NaN, Infinity and unpaired
            surrogates, which no proof can name (signing a start or a call with one fails).
        RecursionError: It nests deeper than Python can read.
    """
    value = json.loads(text)
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
    return value


def _object_or_its_text(value: Any) -> Any:
    # MCP's tools take a JSON object or its text alike; the API keeps taking both.
    if isinstance(value, str):
        with contextlib.suppress(ValueError, RecursionError):  # refused below, as not an object
            return plain_json(value)
    return value


JsonObject = Annotated[dict[str, Any], BeforeValidator(_object_or_its_text)]
"""A JSON object, sent as one or as its text."""


# Request bodies ----------------------------------------------------------------------------------


class _Body(BaseModel):
    # A misspelt field is refused by name rather than silently dropped.
    model_config = ConfigDict(extra="forbid")


class StartBody(_Body):
    """Starts a run of a graph."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"graph": "essay:review", "inputs": {"title": "Tides", "rubric": "moon, salt"}}
            ]
        }
    )

    graph: str = Field(min_length=1, description="The graph's name, as GET /api/graphs lists it.")
    inputs: JsonObject = Field(
        default_factory=dict,
        description="The starting fields: a JSON object (or its text). A key the graph does not "
        "declare is refused, naming the fields it takes; a graph whose model declares "
        'extra="allow" drops such keys and lists them in the answer\'s `ignored_inputs`.',
    )


_PROOF_DESCRIPTION = (
    "A proof its principal signed outside this server: the JSON object that `lockgate sign "
    "{verb} RUN ... --as YOU` prints (or its text)."
)


class DecideBody(_Body):
    """Relays a signed answer to the gate a run waits at."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "choice": "publish_as_is",
                    "proof": {"principal": "ed", "authorizes": {"choice": "publish_as_is"}},
                }
            ]
        }
    )

    proof: JsonObject | None = Field(
        None,
        description=_PROOF_DESCRIPTION.format(verb="decide")
        + " Without one the answer is refused (403) with the command that makes one.",
    )
    choice: str | None = Field(
        None, min_length=1, description="The option; checked against the one the proof answers."
    )


class ResumeBody(_Body):
    """Carries on a run parked at a node its driver was not allowed to run."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}]})

    proof: JsonObject | None = Field(
        None,
        description=_PROOF_DESCRIPTION.format(verb="resume")
        + " Without one the run is resumed as the server's own principal.",
    )


class ToolCallBody(_Body):
    """One durable tool call."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "arguments": {"rubric": "moon, salt", "draft": "The moon pulls the salt sea."},
                    "request_id": "grade-0001",
                    "plan": False,
                }
            ]
        }
    )

    arguments: JsonObject = Field(
        default_factory=dict, description="The tool's arguments, as its `inputSchema` says."
    )
    request_id: str | None = Field(
        None,
        description="Your id for this call: asked again with it, the call answers its first "
        "result and never runs twice. A new one is made when it is left out.",
    )
    plan: bool = Field(
        False, description="Only plan the call: check everything, run nothing (`data.plan`)."
    )


class ConfirmBody(_Body):
    """Confirms a tool call that asked for confirmation."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"request_id": "launch-0001", "token": "…"}]}
    )

    request_id: str = Field(min_length=1, description="The request id of the call that asked.")
    token: str = Field(
        min_length=1, description="The `confirm_token` the call answered with; one use."
    )


# Answers -----------------------------------------------------------------------------------------


class _Answer(BaseModel):
    # An answer may say more than its model names; the models document, they do not trim.
    model_config = ConfigDict(extra="allow")


class ErrorDetail(BaseModel):
    """What went wrong."""

    code: str = Field(description="An ErrorCode value, e.g. VALIDATION_ERROR, FORBIDDEN.")
    message: str = Field(description="The sentence for a person: what is wrong, what to do.")


class FieldProblem(BaseModel):
    """One thing wrong with a request body."""

    field: str = Field(description="The field, dotted for a nested one; `(body)` for the whole.")
    problem: str


class Refusal(_Answer):
    """A refusal, whatever was asked: the status says its kind (401, 403, 404, 409, 413, 422,
    429) and ``error.code`` exactly which; 500 is lockgate's own failure, never with a trace."""

    ok: Literal[False]
    error: ErrorDetail
    fields: list[FieldProblem] | None = Field(
        None, description="For a body that is not the one expected: what is wrong with it."
    )
    expected: dict[str, Any] | None = Field(
        None, description="For a body that is not the one expected: an example of one."
    )


class GraphList(_Answer):
    """The graphs the workers serve."""

    ok: Literal[True]
    count: int
    graphs: list[dict[str, Any]] = Field(
        description="Each graph: name, version, fields, nodes, gates."
    )


class ToolDefinition(_Answer):
    """A tool the workers serve, as MCP lists it."""

    name: str
    description: str | None = None
    inputSchema: dict[str, Any] = Field(description="Its arguments, as a JSON Schema.")


class ToolList(_Answer):
    """The tools the workers serve."""

    ok: Literal[True]
    count: int
    tools: list[ToolDefinition]


class PendingList(_Answer):
    """The open gates."""

    ok: Literal[True]
    count: int
    pending: list[dict[str, Any]] = Field(
        description="Each open gate: its run, graph, role, what it asks, where each option "
        "leads and, for a server with a principal, whether that principal may take it."
    )


class Actor(_Answer):
    """Who did something, as the trail records it."""

    actor: str = Field(description="The principal, or `unverified:<channel>` for no proof.")
    verified: bool
    channel: str


class Run(_Answer):
    """A run as it stands, once it settled (a gate, a park, the end) or the wait ran out; or,
    with ``ok: false`` and ``error``, the refusal of what was asked of it."""

    ok: bool
    run_id: str | None = None
    graph: str | None = None
    status: str | None = Field(
        None,
        description=(
            "e.g. waiting (at a gate), parked, finished, declined (its last gate took its "
            "rejection), refused, cancelled, started."
        ),
    )
    requester: Actor | None = Field(None, description="Who started the run.")
    awaiting: dict[str, Any] | None = Field(None, description="The gate it waits at.")
    parked: dict[str, Any] | None = Field(None, description="The node it is parked at.")
    fields: dict[str, Any] | None = None
    trail: list[dict[str, Any]] | None = Field(None, description="Who drove each step.")
    error: ErrorDetail | None = None


class ToolCallAnswer(_Answer):
    """A tool call's result: the seeds' ``{success, data, message, error, meta}``, with ``ok``
    (the same as ``success``) as every answer has."""

    ok: bool
    success: bool
    data: Any = None
    message: str | None = None
    error: ErrorDetail | None = None
    meta: dict[str, Any] = Field(
        default_factory=dict,
        description="More: the request id, whether the call waits for a confirmation.",
    )


# Endpoints ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """A route under ``/api``: what it takes and what it answers."""

    method: Literal["GET", "POST"]
    path: str
    """Below ``/api``, with its path parameters in braces (``/runs/{run}``)."""
    operation: str
    """Its OpenAPI ``operationId``, and the name of its handler."""
    summary: str
    answer: type[BaseModel]
    body: type[BaseModel] | None = None
    query: Mapping[str, str] = field(default_factory=dict)
    """Query parameters, each with its description."""

    @property
    def route(self) -> str:
        """The path as Starlette matches it: a run id or a tool name may hold ``/``."""
        return re.sub(r"\{(\w+)\}", r"{\1:path}", self.path)


_PATH_PARAMETERS = {
    "run": "The run's id (its workflow id), as a start or GET /api/pending gives it.",
    "name": "The tool's name, as GET /api/tools lists it (e.g. `essay:grade`).",
}

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/graphs", "list_graphs", "The graphs the workers serve.", GraphList),
    Endpoint("POST", "/runs", "start", "Start a run; answers once it settles.", Run, StartBody),
    Endpoint(
        "POST",
        "/runs/{run}/decide",
        "decide",
        "Relay a signed answer to the gate the run waits at; answers once the run settles.",
        Run,
        DecideBody,
    ),
    Endpoint(
        "POST",
        "/runs/{run}/resume",
        "resume",
        "Carry on a parked run; answers once it settles.",
        Run,
        ResumeBody,
    ),
    Endpoint("GET", "/runs/{run}", "show", "A run: status, fields, trail, its gate.", Run),
    Endpoint(
        "GET",
        "/pending",
        "pending",
        "The open gates.",
        PendingList,
        query={"role": "Only the gates asking this role."},
    ),
    Endpoint("GET", "/tools", "list_tools", "The tools the workers serve.", ToolList),
    Endpoint(
        "POST",
        "/tools/{name}",
        "call_tool",
        "One durable tool call: the first answer for its request id, however often asked.",
        ToolCallAnswer,
        ToolCallBody,
    ),
    Endpoint(
        "POST",
        "/confirm",
        "confirm_tool",
        "Confirm a tool call that asked for confirmation.",
        ToolCallAnswer,
        ConfirmBody,
    ),
)
"""Every route of the JSON API but its OpenAPI document, in the order they are matched."""


# Refusals of a body ------------------------------------------------------------------------------


def _type_of(schema: Mapping[str, Any]) -> str:
    kinds = [schema] if "type" in schema else list(schema.get("anyOf") or [])
    named = [str(kind["type"]) for kind in kinds if kind.get("type") not in (None, "null")]
    return "|".join(named) or "any"


def expected_body(model: type[BaseModel]) -> str:
    """The body ``model`` takes, in one line: ``{graph: string, inputs?: object}``."""
    schema = model.model_json_schema()
    required = set(schema.get("required") or [])
    fields = [
        f"{name}{'' if name in required else '?'}: {_type_of(prop)}"
        for name, prop in (schema.get("properties") or {}).items()
    ]
    return "{" + ", ".join(fields) + "}"


def _example(model: type[BaseModel]) -> dict[str, Any]:
    examples = model.model_json_schema().get("examples") or [{}]
    return dict(examples[0])


def _quoted(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= _MAX_QUOTED else text[:_MAX_QUOTED] + "…"


_MUST = {
    "dict_type": "must be a JSON object",
    "string_type": "must be a string",
    "string_too_short": "must not be empty",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
}
"""What a field must be, by pydantic's error type, where its own message is unclear."""


def _problem(detail: Mapping[str, Any]) -> tuple[str, str]:
    name = ".".join(str(part) for part in detail["loc"]) or "(body)"
    kind = detail["type"]
    if kind == "missing":
        return name, "is required"
    if kind == "extra_forbidden":
        return name, "is not a field of this body"
    must = _MUST.get(kind) or str(detail["msg"]).lower()
    return name, f"{must}, and it is {_quoted(detail.get('input'))}"


def body_refusal(endpoint: Endpoint, problems: list[tuple[str, str]]) -> dict[str, Any]:
    """The 422 refusal of a body that is not the one ``endpoint`` takes: it names each field
    that is wrong and shows the body expected."""
    assert endpoint.body is not None
    named = "; ".join(f"`{name}` {problem}" for name, problem in problems)
    refused = refusal(
        ErrorCode.VALIDATION_ERROR,
        f"{endpoint.method} /api{endpoint.path}: {named}. It takes {expected_body(endpoint.body)} "
        f"(`expected` shows one; GET /api{OPENAPI_PATH} describes every body).",
        fields=[{"field": name, "problem": problem} for name, problem in problems],
        expected=_example(endpoint.body),
    )
    return dict(refused)


def checked_body(endpoint: Endpoint, body: Mapping[str, Any]) -> BaseModel | dict[str, Any]:
    """``body`` as ``endpoint``'s model, or the 422 refusal naming what is wrong with it."""
    assert endpoint.body is not None
    try:
        return endpoint.body.model_validate(body)
    except ValidationError as error:
        return body_refusal(endpoint, [_problem(each) for each in error.errors()[:10]])


# The document ------------------------------------------------------------------------------------

_REF = "#/components/schemas/{model}"


def _ref(model: type[BaseModel]) -> str:
    return _REF.format(model=model.__name__)


def _refused(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": _ref(Refusal)}}},
    }


def _operation(endpoint: Endpoint) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "description": _PATH_PARAMETERS[name],
            "schema": {"type": "string"},
        }
        for name in re.findall(r"\{(\w+)\}", endpoint.path)
    ]
    parameters += [
        {
            "name": name,
            "in": "query",
            "required": False,
            "description": text,
            "schema": {"type": "string"},
        }
        for name, text in endpoint.query.items()
    ]
    responses: dict[str, Any] = {
        "200": {
            "description": endpoint.answer.__doc__ or endpoint.summary,
            "content": {
                "application/json": {
                    "schema": {"$ref": _REF.format(model=endpoint.answer.__name__)}
                }
            },
        },
        "401": {"$ref": "#/components/responses/Unauthorized"},
        "4XX": {"$ref": "#/components/responses/Refused"},
        "500": {"$ref": "#/components/responses/Failed"},
    }
    operation: dict[str, Any] = {
        "operationId": endpoint.operation,
        "summary": endpoint.summary,
        "parameters": parameters,
        "responses": responses,
    }
    if endpoint.body is not None:
        operation["requestBody"] = {
            "required": True,
            "description": endpoint.body.__doc__,
            "content": {
                "application/json": {"schema": {"$ref": _REF.format(model=endpoint.body.__name__)}}
            },
        }
        responses["413"] = {"$ref": "#/components/responses/TooLarge"}
        responses["422"] = {"$ref": "#/components/responses/WrongBody"}
    if not parameters:
        del operation["parameters"]
    return operation


_MCP_OPERATION = {
    "summary": "MCP over streamable HTTP (JSON-RPC 2.0; https://modelcontextprotocol.io): "
    "POST sends a message, GET opens the stream of notifications, DELETE ends a session.",
    "responses": {
        "200": {"description": "A JSON-RPC answer, as JSON or an event stream."},
        "401": {"description": "No bearer token, or not the one configured."},
    },
}


def openapi_document(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``lockgate mcp --http``: every ``/api`` endpoint, and
    ``/mcp``.

    Args:
        version: The API's version, lockgate's own.
    """
    models: list[type[BaseModel]] = [Refusal, *{e.answer: None for e in ENDPOINTS}]
    models += [e.body for e in ENDPOINTS if e.body is not None]
    _, schemas = models_json_schema([(m, "validation") for m in models], ref_template=_REF)
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in ENDPOINTS:
        paths.setdefault("/api" + endpoint.path, {})[endpoint.method.lower()] = _operation(endpoint)
    paths["/api" + OPENAPI_PATH] = {
        "get": {
            "operationId": "openapi",
            "summary": "This document.",
            "responses": {
                "200": {"description": "The OpenAPI 3.1 document of this API."},
                "401": {"$ref": "#/components/responses/Unauthorized"},
            },
        }
    }
    paths["/mcp"] = {
        method: {"operationId": f"mcp_{method}", **_MCP_OPERATION}
        for method in ("get", "post", "delete")
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "lockgate",
            "version": version,
            "description": "Governed tools and graph runs with human gates, served by "
            "`lockgate mcp --http`. Every request carries `Authorization: Bearer <token>`. "
            "Every answer is a JSON object with `ok`; a refusal is `{ok: false, error: {code, "
            "message}}`, and a body that is not the one expected is a 422 naming the field.",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas["$defs"],
            "responses": {
                "Unauthorized": _refused("No bearer token, or not the one configured."),
                "Refused": _refused(
                    "Refused: 403 not allowed, 404 not found, 409 not now (no gate open, "
                    "nothing to resume, a confirmation needed), 429 rate-limited; "
                    "error.code says which."
                ),
                "TooLarge": _refused("The body is larger than the server reads; not read."),
                "WrongBody": _refused(
                    "The body is not JSON, nests too deep, or is not the body expected: "
                    "`fields` names what is wrong, `expected` shows one that is right."
                ),
                "Failed": _refused(
                    "lockgate's own failure (no trace); the server's log says more."
                ),
            },
        },
    }

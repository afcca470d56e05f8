"""``lockgate mcp``: governed tools and graph operations for agents, on the official MCP SDK.

The server reaches lockgate's workers through the door, :class:`~lockgate.operations.Operations`:
each tool call is a durable call on Temporal (one request id per call, so asking again returns
the first answer), each graph operation one of the door's. A refusal is a tool result with
``isError`` and ``{code, message}``, never a protocol error and never a stack trace.

A tool that asks for confirmation asks the person at the host through MCP elicitation where the
client offers it, and otherwise answers with the step to call (``tools__confirm``). A call whose
``_meta`` carries ``"lockgate/plan": true`` is only planned: checked in full, run not at all. An
elicitation answer is a "yes" from the caller's side, never an identity: gates are answered only
by a signed proof (``graph__decide``'s ``proof``).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from lockgate.contracts import refusal
from lockgate.identity._quoting import a_role
from lockgate.operations._operations import Operations
from lockgate.operations._surface_answers import could_not_complete
from lockgate.serving._gate_watch import (
    GATE_URI_TEMPLATE,
    GATES_URI,
    GateWatch,
    gate_uri,
    run_of_uri,
)
from lockgate.serving._names import ToolNames
from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "GRAPH_OPERATIONS",
    "PLAN_META_KEY",
    "REQUEST_ID_META_KEY",
    "LockgateMCPServer",
    "build_mcp_server",
]

logger = logging.getLogger("lockgate.mcp")

PLAN_META_KEY = "lockgate/plan"
"""A tool call whose ``_meta`` sets this to true is planned: checked in full, run not at all."""

REQUEST_ID_META_KEY = "lockgate/request_id"
"""A tool call's request id, in its ``_meta``: asked again with it, a call answers its first
result and never runs twice. Each result carries its id under the same key."""

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{8,128}")

_RESOURCE_NOT_FOUND = -32002
"""The MCP specification's code for a resource that does not exist."""

_CONFIRM_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Run it?"}},
    "required": ["approve"],
}

_RUN = {"type": "string", "description": "The run's id, as start or pending gives it."}
_PROOF = {
    "type": "object",
    "description": "A proof signed by its principal outside this server: the JSON that "
    "`lockgate sign decide RUN CHOICE --as YOU` (or `sign resume`) prints.",
}


def _schema(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


GRAPH_OPERATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "graph:list": ("The graphs the workers serve: fields, nodes, gates.", _schema({})),
    "graph:start": (
        "Starts a run of a graph with its starting fields; returns the run once it settles "
        "(at a gate, parked, finished, or declined by its last gate).",
        _schema(
            {
                "graph": {"type": "string", "description": "The graph's name (graph__list)."},
                "inputs": {
                    "type": "object",
                    "description": "The starting fields, a JSON object.",
                },
            },
            "graph",
        ),
    ),
    "graph:pending": (
        "The open gates across runs: what each asks, its subject, who opened it, where each "
        "option leads.",
        _schema({"role": {"type": "string", "description": "Only gates asking this role."}}),
    ),
    "graph:show": (
        "A run: status, fields, the trail (who drove each step), the gate it waits at.",
        _schema({"run": _RUN}, "run"),
    ),
    "graph:decide": (
        "Answers the gate a run waits at with a proof its approver signed (this server never "
        "answers a gate itself). Without a proof it is refused and says how to make one.",
        _schema(
            {
                "run": _RUN,
                "choice": {
                    "type": "string",
                    "description": "The option; checked against the proof.",
                },
                "proof": _PROOF,
            },
            "run",
        ),
    ),
    "graph:resume": (
        "Carries on a run parked at a node its driver was not allowed to run, as this server's "
        "principal or with a signed proof.",
        _schema({"run": _RUN, "proof": _PROOF}, "run"),
    ),
    "tools:confirm": (
        "Confirms a tool call that asked for confirmation, with its request id and token.",
        _schema(
            {"request_id": {"type": "string"}, "token": {"type": "string"}},
            "request_id",
            "token",
        ),
    ),
}
"""The operations served beside the workers' tools, by lockgate name: description, schema."""


def _version() -> str:
    try:
        return version("lockgate")
    except PackageNotFoundError:  # a checkout that was never installed
        return "0"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _refused(refused: Mapping[str, Any], **meta: Any) -> types.CallToolResult:
    """A refusal (:func:`~lockgate.contracts.refusal`) as MCP says it: a tool result with
    ``isError`` and its ``{code, message}``."""
    payload = dict(refused["error"])
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=_dumps(payload))],
        structured_content=payload,
        is_error=True,
        _meta={"lockgate/error": payload, **meta},
    )


def _answered(data: Any, **meta: Any) -> types.CallToolResult:
    structured = data if isinstance(data, dict) else {"result": data}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=_dumps(data))],
        structured_content=structured,
        _meta=meta or None,
    )


def _of_operation(result: Mapping[str, Any]) -> types.CallToolResult:
    error = result.get("error")
    if result.get("ok") is False and isinstance(error, dict):
        return _refused(result)
    return _answered(dict(result))


class LockgateMCPServer(Server[Any]):
    """The low-level MCP server, advertising that its tools and resources change.

    ``streamable_http_app()`` and the in-memory transport ask for the initialization options
    with no arguments, which would advertise ``listChanged: false``.
    """

    watch: GateWatch
    """The open gates' watcher, which notifies subscribed clients."""
    handlers: _Handlers
    """The request handlers; ``handlers.tools()`` lists what the server offers."""

    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(resources_changed=True, tools_changed=True),
            *args,
            **kwargs,
        )


class _Handlers:
    """The server's request handlers over one :class:`Operations`."""

    def __init__(self, operations: Operations, watch: GateWatch) -> None:
        self.operations = operations
        self.watch = watch
        self.schemas: dict[str, Mapping[str, Any]] = {}
        self.names = ToolNames(GRAPH_OPERATIONS)
        self._seal_key = secrets.token_bytes(32)
        # What each graph operation's arguments are, as the door takes them.
        self._operations: dict[str, Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]] = {
            "graph:list": lambda sent: operations.list_graphs(),
            "graph:start": lambda sent: operations.start(sent.get("graph"), sent.get("inputs")),
            "graph:pending": lambda sent: operations.pending(sent.get("role")),
            "graph:show": lambda sent: operations.show(sent.get("run")),
            "graph:decide": lambda sent: operations.decide_signed(
                sent.get("run"), sent.get("proof"), choice=sent.get("choice")
            ),
            "graph:resume": lambda sent: operations.resume(
                sent.get("run"), proof=sent.get("proof")
            ),
        }

    # Tools -------------------------------------------------------------------------------------

    async def tools(self) -> list[types.Tool]:
        """Every tool: the graph operations and the workers' tools, with MCP-valid names.

        Raises:
            ToolNameError: two names meet once mapped (checked when the server starts).
        """
        served = await self.operations.list_tools()
        definitions = served.get("tools") or []
        if served.get("ok") is False:
            logger.warning("lockgate mcp: %s", served["error"]["message"])
        usable = []
        for definition in definitions:
            schema = definition.get("inputSchema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                # One such schema would fail the whole tools/list on the client.
                logger.warning("lockgate mcp: '%s' has no object schema; left out", definition)
                continue
            usable.append(definition)
        names = ToolNames([*GRAPH_OPERATIONS, *(d["name"] for d in usable)])
        listed = [
            types.Tool(name=names.to_mcp(name), description=description, input_schema=schema)
            for name, (description, schema) in GRAPH_OPERATIONS.items()
        ]
        for definition in usable:
            listed.append(
                types.Tool(
                    name=names.to_mcp(definition["name"]),
                    description=f"{definition.get('description') or ''} "
                    f"(lockgate tool {definition['name']})".strip(),
                    input_schema=definition["inputSchema"],
                )
            )
        self.names = names
        self.schemas = {tool.name: tool.input_schema for tool in listed}
        return listed

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await self.tools())

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        try:
            return await self._call(ctx, params)
        except Exception:
            # Never a protocol error: the handshake era would send str(exc) to the client.
            logger.exception("lockgate mcp: %s failed", params.name)
            return _refused(could_not_complete(f"'{params.name}'"))

    async def _call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = self.names.lockgate_name(params.name)
        if name is None:
            await self.tools()  # a tool the workers serve since the last listing
            name = self.names.lockgate_name(params.name)
        arguments = params.arguments or {}
        if name == "tools:confirm":
            confirmed = await self.operations.confirm_tool(
                arguments.get("request_id"), arguments.get("token")
            )
            return self._of_call(confirmed)
        operation = self._operations.get(name or "")
        if operation is not None:
            return _of_operation(await operation(arguments))
        if name is None:
            return _refused(
                refusal(
                    ErrorCode.TOOL_NOT_FOUND,
                    f"No tool '{params.name}' is served here; tools/list names those that are.",
                )
            )
        request_id = self._request_id(ctx, params, name)
        plan = (params.meta or {}).get(PLAN_META_KEY) is True
        result = await self.operations.call_tool(name, arguments, request_id=request_id, plan=plan)
        data = result.get("data")
        if result.get("success") and isinstance(data, dict) and data.get("requires_confirmation"):
            return await self._confirm(ctx, params, name, data)
        return self._of_call(result)

    def _of_call(self, result: Mapping[str, Any]) -> types.CallToolResult:
        meta = result.get("meta") or {}
        request_id = meta.get("request_id")
        extra = {REQUEST_ID_META_KEY: request_id} if request_id else {}
        if result.get("success"):
            return _answered(result.get("data"), **extra)
        error = result.get("error")
        error = error if isinstance(error, dict) else {}
        refused = refusal(
            str(error.get("code") or ErrorCode.INTERNAL_ERROR),
            str(error.get("message") or "The call did not succeed."),
        )
        return _refused(refused, **extra)

    # Confirmations -----------------------------------------------------------------------------

    def _seal(self, request_id: str, name: str, arguments: Mapping[str, Any]) -> str:
        digest = hashlib.sha256(_dumps([request_id, name, arguments]).encode()).digest()
        return hmac.new(self._seal_key, digest, hashlib.sha256).hexdigest()

    def _request_id(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, name: str
    ) -> str:
        """The call's request id: the client's own (``_meta`` ``lockgate/request_id``, so its
        retry returns the first answer), else a new one; in the 2026 era's retry after a
        confirmation, the first one.

        The retry's ``request_state`` crosses the client unsealed, so it carries the id with a
        seal of this server's over id, tool and arguments: a client cannot make it confirm
        another call.
        """
        chosen = (params.meta or {}).get(REQUEST_ID_META_KEY)
        if isinstance(chosen, str) and _REQUEST_ID.fullmatch(chosen):
            return chosen
        state = getattr(params, "request_state", None)
        if isinstance(state, str) and "." in state:
            request_id, seal = state.rsplit(".", 1)
            if hmac.compare_digest(seal, self._seal(request_id, name, params.arguments or {})):
                return request_id
        return secrets.token_hex(16)

    async def _confirm(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        name: str,
        request: dict[str, Any],
    ) -> types.CallToolResult | types.InputRequiredResult:
        request_id = str(request["request_id"])
        question = f"Run {request.get('action_summary') or name}?"
        capabilities = ctx.session.client_capabilities
        elicitation = capabilities.elicitation if capabilities else None
        if elicitation is not None and not (elicitation.form is None and elicitation.url):
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                responses = getattr(params, "input_responses", None) or {}
                answer = responses.get("confirm")
                if answer is None:
                    return types.InputRequiredResult(
                        input_requests={
                            "confirm": types.ElicitRequest(
                                params=types.ElicitRequestFormParams(
                                    message=question, requested_schema=_CONFIRM_FORM
                                )
                            )
                        },
                        request_state=f"{request_id}."
                        + self._seal(request_id, name, params.arguments or {}),
                    )
                return await self._after_answer(request, answer)
            if ctx.session.can_send_request:
                answer = await ctx.session.elicit_form(
                    question, _CONFIRM_FORM, related_request_id=ctx.request_id
                )
                return await self._after_answer(request, answer)
        return _answered(
            {
                **request,
                "next": f"Nothing ran yet. To run it, call {self.names.to_mcp('tools:confirm')} "
                f"with request_id and token (token: confirm_token) before {request['expires_at']}.",
            },
            **{REQUEST_ID_META_KEY: request_id},
        )

    async def _after_answer(self, request: dict[str, Any], answer: Any) -> types.CallToolResult:
        content = getattr(answer, "content", None) or {}
        if getattr(answer, "action", None) == "accept" and content.get("approve") is True:
            return self._of_call(
                await self.operations.confirm_tool(
                    str(request["request_id"]), str(request["confirm_token"])
                )
            )
        declined = refusal(
            ErrorCode.CONFIRMATION_DECLINED,
            f"{request.get('action_summary') or 'The call'} was not confirmed, so it did not "
            f"run; its request expires at {request.get('expires_at')}.",
        )
        return _refused(declined, **{REQUEST_ID_META_KEY: request["request_id"]})

    # Resources ---------------------------------------------------------------------------------

    def _remember(self, ctx: ServerRequestContext[Any]) -> None:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # 2.3 has no public handle on a request's connection.
            self.watch.remember(ctx.session._connection)

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self._remember(ctx)
        rows = await _open_gates(self.operations)
        resources = [
            types.Resource(
                uri=GATES_URI,
                name="open gates",
                description="Every open gate on this task queue (graph__pending's rows).",
                mime_type="application/json",
            )
        ]
        for row in rows:
            resources.append(
                types.Resource(
                    uri=gate_uri(row["run_id"]),
                    name=f"gate {row['gate']} of {row['run_id']}",
                    description=f"{row['graph']}: for {a_role(row['role'])}: {row['because']}",
                    mime_type="application/json",
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """The URI patterns of the resources: a client makes a gate's URI from a run id."""
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=GATE_URI_TEMPLATE,
                    name="gate of a run",
                    description="The gate a run waits at (a graph__pending row), by the run's id; "
                    "reading it answers 'resource not found' once the gate has closed.",
                    mime_type="application/json",
                )
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        rows = await _open_gates(self.operations)
        if uri == GATES_URI:
            body: Any = {"count": len(rows), "pending": rows}
        else:
            run = run_of_uri(uri)
            found = [row for row in rows if row["run_id"] == run]
            if run is None or not found:
                raise MCPError(_RESOURCE_NOT_FOUND, f"No open gate at {uri}.")
            body = found[0]
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=uri, mime_type="application/json", text=_dumps(body))
            ]
        )

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self.watch.subscribe(ctx.session._connection, str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.watch.unsubscribe(ctx.session._connection, str(params.uri))
        return types.EmptyResult()


def build_mcp_server(operations: Operations, *, poll_seconds: float = 1.0) -> LockgateMCPServer:
    """The MCP server over ``operations``; it watches the open gates while clients are in.

    Args:
        operations: The graph operations and tool calls, as the server's caller.
        poll_seconds: How often the open gates are asked for, to notify subscribers.
    """
    watch = GateWatch(lambda: _open_gates(operations), poll_seconds)
    handlers = _Handlers(operations, watch)

    @contextlib.asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        async with watch.running():
            yield {"watch": watch}

    server = LockgateMCPServer(
        "lockgate",
        version=_version(),
        instructions=(
            "lockgate's governed tools and graphs. Tool calls are checked, rate-limited and "
            "audited by lockgate's workers; a refusal says what is wrong. Graph runs may stop at "
            "a gate for a person: graph__pending lists them, and only a proof signed by an "
            f"approver answers one. Calls here run as {operations.principal}."
        ),
        lifespan=lifespan,
        get_tool_input_schema=lambda name: handlers.schemas.get(name),
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_resource_templates,
        on_read_resource=handlers.read_resource,
        on_subscribe_resource=handlers.subscribe,
        on_unsubscribe_resource=handlers.unsubscribe,
        on_subscriptions_listen=ListenHandler(watch.bus),
    )
    server.watch = watch
    server.handlers = handlers
    return server


async def _open_gates(operations: Operations) -> list[dict[str, Any]]:
    """Every open gate on the task queue, as ``graph__pending`` lists them."""
    return list((await operations.pending())["pending"])

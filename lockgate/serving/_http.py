"""``lockgate mcp --http``: MCP over streamable HTTP and a small JSON API, behind a bearer token.

One Starlette app serves ``/mcp`` (the MCP SDK's streamable HTTP transport, stateful, so hosts of
the handshake era get elicitation and notifications) and ``/api/...``, the routes of
:data:`~lockgate.serving._api_contract.ENDPOINTS`, which ``GET /api/openapi.json`` documents
(OpenAPI 3.1):

=================================  ======================================================
``GET /api/graphs``                the graphs served
``POST /api/runs``                 ``{graph, inputs?}``: start a run
``GET /api/runs/{run}``            show a run
``GET /api/pending``               the open gates (``?role=``)
``POST /api/runs/{run}/decide``    ``{proof?, choice?}``: relay a signed answer
``POST /api/runs/{run}/resume``    ``{proof?}``: resume a parked run
``GET /api/tools``                 the tools served
``POST /api/tools/{name}``         ``{arguments?, request_id?, plan?}``: one durable tool call
``POST /api/confirm``              ``{request_id, token}``: confirm a call that asked
``GET /api/openapi.json``          the OpenAPI document of all of these
=================================  ======================================================

Every request carries ``Authorization: Bearer <token>``, the token the operator configured;
without it the answer is 401. Every answer is a JSON object with ``ok``. A refusal is answered
with a status below 500 and ``{ok: false, error: {code, message}}``; only lockgate's own failure
is a 500, without a trace. A body is read only up to :data:`DEFAULT_MAX_BODY_BYTES`
(``http_app(max_body_bytes=...)``): a larger one is refused with 413 before it is parsed; one
that is not JSON, nests too deep to parse, or is not the body the endpoint takes (a field
missing, misspelt or of the wrong type) with 422, naming the field and showing the body expected.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from lockgate._bodies import read_bounded
from lockgate.contracts import refusal
from lockgate.gates._limits import MAX_DEPTH, MAX_START_BYTES
from lockgate.operations._operations import Operations
from lockgate.operations._surface_answers import body_too_large, could_not_complete, http_status
from lockgate.serving._api_contract import (
    ENDPOINTS,
    OPENAPI_PATH,
    ConfirmBody,
    DecideBody,
    Endpoint,
    ResumeBody,
    StartBody,
    ToolCallBody,
    body_refusal,
    checked_body,
    openapi_document,
    plain_json,
)
from lockgate.serving._mcp import LockgateMCPServer
from lockgate.tools._tool_result import ErrorCode

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BearerToken", "http_app"]

logger = logging.getLogger("lockgate.mcp")

DEFAULT_MAX_BODY_BYTES = 2 * MAX_START_BYTES
"""The largest request body the JSON API reads: twice the largest start input a run takes
(:data:`~lockgate.gates._limits.MAX_START_BYTES`, 256 kB), so every body a run could accept fits."""


class BearerToken:
    """The MCP SDK's token verifier for the one token the operator configured."""

    def __init__(self, token: str) -> None:
        if len(token) < 16:
            raise ValueError("The bearer token must be at least 16 characters.")
        self._token = token

    def matches(self, presented: str) -> bool:
        """Whether ``presented`` is the token, compared in constant time."""
        return secrets.compare_digest(presented.encode(), self._token.encode())

    async def verify_token(self, token: str) -> AccessToken | None:
        if self.matches(token):
            return AccessToken(token=token, client_id="lockgate", scopes=[])
        return None


def _answer(result: Mapping[str, Any]) -> JSONResponse:
    return JSONResponse(dict(result), status_code=http_status(result))


async def _body(request: Request, endpoint: Endpoint, max_bytes: int) -> Any:
    """The request's JSON, read up to ``max_bytes``; else the refusal to answer."""
    raw = await read_bounded(request, max_bytes)
    if raw is None:
        return JSONResponse(body_too_large(max_bytes), status_code=413)
    if not raw.strip():
        return {}
    try:
        return plain_json(raw)
    except RecursionError:
        return _wrong_body(
            endpoint,
            f"nests too deep to read; lockgate takes JSON nested at most {MAX_DEPTH} levels",
        )
    except ValueError:
        return _wrong_body(
            endpoint, "is not plain JSON (UTF-8, without NaN, Infinity or unpaired surrogates)"
        )


def _wrong_body(endpoint: Endpoint, problem: str) -> JSONResponse:
    return JSONResponse(body_refusal(endpoint, [("(body)", problem)]), status_code=422)


Handler = Callable[[Request], Awaitable[Response]]


def _guarded(token: BearerToken, handler: Handler) -> Handler:
    async def guarded(request: Request) -> Response:
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.matches(presented.strip()):
            return JSONResponse(
                refusal(
                    ErrorCode.UNAUTHORIZED,
                    "This API needs `Authorization: Bearer <token>`, with the token its "
                    "operator configured.",
                ),
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        try:
            return await handler(request)
        except Exception:
            logger.exception("lockgate api: %s %s failed", request.method, request.url.path)
            return JSONResponse(could_not_complete("this request"), status_code=500)

    return guarded


def _api_routes(
    operations: Operations, token: BearerToken, max_body_bytes: int, version: str
) -> list[Route]:
    async def list_graphs(request: Request, body: None) -> Response:
        return _answer(await operations.list_graphs())

    async def start(request: Request, body: StartBody) -> Response:
        return _answer(await operations.start(body.graph, body.inputs))

    async def show(request: Request, body: None) -> Response:
        return _answer(await operations.show(request.path_params["run"]))

    async def pending(request: Request, body: None) -> Response:
        return _answer(await operations.pending(request.query_params.get("role")))

    async def decide(request: Request, body: DecideBody) -> Response:
        run = request.path_params["run"]
        return _answer(await operations.decide_signed(run, body.proof, choice=body.choice))

    async def resume(request: Request, body: ResumeBody) -> Response:
        return _answer(await operations.resume(request.path_params["run"], proof=body.proof))

    async def list_tools(request: Request, body: None) -> Response:
        return _answer(await operations.list_tools())

    async def call_tool(request: Request, body: ToolCallBody) -> Response:
        result = await operations.call_tool(
            request.path_params["name"],
            body.arguments,
            request_id=body.request_id or None,
            plan=body.plan,
        )
        return _answer({"ok": bool(result.get("success")), **result})

    async def confirm_tool(request: Request, body: ConfirmBody) -> Response:
        result = dict(await operations.confirm_tool(body.request_id, body.token))
        # A tool's result says `success`; a refusal before the call, `ok`.
        return _answer({"ok": result.get("success", result.get("ok")) is True, **result})

    handlers: dict[str, Callable[[Request, Any], Awaitable[Response]]] = {
        "list_graphs": list_graphs,
        "start": start,
        "decide": decide,
        "resume": resume,
        "show": show,
        "pending": pending,
        "list_tools": list_tools,
        "call_tool": call_tool,
        "confirm_tool": confirm_tool,
    }
    document = openapi_document(version)

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    routes = [
        Route(
            endpoint.route,
            _guarded(token, _with_body(endpoint, handlers[endpoint.operation], max_body_bytes)),
            methods=[endpoint.method],
        )
        for endpoint in ENDPOINTS
    ]
    return [Route(OPENAPI_PATH, _guarded(token, openapi), methods=["GET"]), *routes]


def _with_body(
    endpoint: Endpoint,
    handler: Callable[[Request, Any], Awaitable[Response]],
    max_body_bytes: int,
) -> Handler:
    """``handler``, handed the request's body checked against ``endpoint``'s model (None for an
    endpoint that takes none); a body that is not the one expected is answered with 422."""

    async def checked(request: Request) -> Response:
        if endpoint.body is None:
            return await handler(request, None)
        body = await _body(request, endpoint, max_body_bytes)
        if isinstance(body, Response):
            return body
        if not isinstance(body, dict):
            return _wrong_body(endpoint, "must be a JSON object")
        model = checked_body(endpoint, body)
        if isinstance(model, dict):
            return JSONResponse(model, status_code=422)
        return await handler(request, model)

    return checked


def http_app(
    server: LockgateMCPServer,
    operations: Operations,
    token: BearerToken,
    *,
    allowed_hosts: list[str] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Starlette:
    """The app serving ``/mcp`` and ``/api``, both behind ``token``.

    Args:
        server: The MCP server (:func:`~lockgate.serving.build_mcp_server`).
        operations: What the JSON API calls (usually the server's own).
        token: The bearer token every request must carry.
        allowed_hosts: ``Host`` values MCP accepts besides localhost (DNS-rebinding protection),
            for a server behind a proxy or a real name.
        max_body_bytes: The largest JSON API request body read; a larger one is refused with
            413 before it is parsed.
    """
    security = None
    if allowed_hosts:
        from mcp.server.transport_security import TransportSecuritySettings

        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", *allowed_hosts],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*"],
        )
    mcp_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        # The SDK's bearer check; no OAuth metadata is advertised for a static token (a host
        # offered OAuth may ignore the configured header).
        auth=AuthSettings(issuer_url=AnyHttpUrl("http://127.0.0.1/"), resource_server_url=None),
        token_verifier=token,
        transport_security=security,
    )

    version = server.version or "0"

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # A mounted app's lifespan is not run: its session manager runs here (and enters the
        # server's own lifespan, which watches the open gates).
        async with server.session_manager.run():
            yield

    return Starlette(
        routes=[
            Mount("/api", routes=_api_routes(operations, token, max_body_bytes, version)),
            Mount("/", app=mcp_app),
        ],
        lifespan=lifespan,
    )

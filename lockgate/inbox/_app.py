"""``lockgate inbox``: the open gates and their runs in a browser, answered with a passkey or key.

Server-rendered pages (Starlette, Jinja2 with autoescaping) and one script, ``inbox.js``. The
browser makes every proof: it builds the unsigned proof around what this server says the answer
authorizes, shows it, and signs it with the person's passkey (WebAuthn, the challenge being the
proof's digest) or with their Ed25519 key imported into the browser (WebCrypto, not
extractable). This server only relays the proof; the run's worker verifies it as every answer is
verified, so the inbox is never trusted for who answers.

Who is looking is the identity the browser holds (a passkey it registered, or a key it
imported); it only changes what the pages show (which options that person may take, and why
not). An anonymous visitor sees the gates and is told why they may take none.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from temporalio.client import Client

from lockgate.gating import (
    Directory,
    ErrorCode,
    IdentityError,
    RelyingParty,
    check_principal_name,
    encode_base64url,
    toml_key,
)
from lockgate.workflows import GraphClient

__all__ = ["inbox_app"]

logger = logging.getLogger("lockgate.inbox")

_REGISTRATION_SECONDS = 300
"""How long a passkey registration's challenge is good."""

_HERE = Path(__file__).parent


def _refusal(code: str | ErrorCode, message: str, status: int = 400) -> JSONResponse:
    return JSONResponse(
        {"ok": False, "error": {"code": str(code), "message": message}}, status_code=status
    )


class _Registrations:
    """Challenges handed out for passkey registrations, each good once, for a few minutes."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[bytes, str, float]] = {}

    def open(self, principal: str) -> tuple[str, bytes]:
        now = time.monotonic()
        self._open = {k: v for k, v in self._open.items() if v[2] > now}
        token, challenge = secrets.token_urlsafe(16), secrets.token_bytes(32)
        self._open[token] = (challenge, principal, now + _REGISTRATION_SECONDS)
        return token, challenge

    def take(self, token: str) -> tuple[bytes, str] | None:
        found = self._open.pop(token, None)
        if found is None or found[2] < time.monotonic():
            return None
        return found[0], found[1]


def inbox_app(
    client: Client,
    task_queue: str,
    relying_party: RelyingParty,
    *,
    directory: Directory | None = None,
    poll_seconds: float = 2.0,
) -> Starlette:
    """The inbox for the runs of ``task_queue``.

    Args:
        client: A Temporal client.
        task_queue: Where the lockgate workers listen.
        relying_party: The inbox's site and origins (the workers must be given the same).
        directory: A copy of the workers' Directory, to tell a viewer which options they may
            take (the worker judges again when they answer); without one, pages do not say.
        poll_seconds: How often an open page asks whether the gates changed.
    """
    runs = GraphClient(client, task_queue, directory=directory, channel="web")
    registrations = _Registrations()
    pages = Environment(
        loader=PackageLoader("lockgate.inbox", "templates"),
        autoescape=select_autoescape(["html"]),
    )

    def render(name: str, request: Request, **values: Any) -> HTMLResponse:
        page = pages.get_template(name).render(
            request=request,
            viewer=_viewer(request),
            rp_id=relying_party.id,
            poll_ms=int(poll_seconds * 1000),
            **values,
        )
        return HTMLResponse(page)

    async def gates(request: Request) -> Response:
        rows = await _open_gates(runs, request)
        graphs = sorted({row["graph"] for row in rows})
        return render(
            "gates.html",
            request,
            rows=rows,
            graphs=graphs,
            graph=request.query_params.get("graph") or "",
            role=request.query_params.get("role") or "",
            fingerprint=_fingerprint(rows),
        )

    async def gates_json(request: Request) -> Response:
        rows = await _open_gates(runs, request)
        return JSONResponse({"fingerprint": _fingerprint(rows), "count": len(rows)})

    async def run_page(request: Request) -> Response:
        run_id = request.path_params["run"]
        shown = dict(await runs.show(run_id))
        if shown.get("ok") is False:
            return render("refused.html", request, error=shown["error"], run_id=run_id)
        verdicts: dict[str, dict[str, Any]] = {}
        if shown.get("status") == "waiting":
            for row in await _open_gates(runs, request):
                if row["run_id"] == run_id:
                    verdicts = {choice["option"]: choice for choice in row["choices"]}
        return render(
            "run.html",
            request,
            run=shown,
            verdicts=verdicts,
        )

    async def binding(request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        choice = body.get("choice")
        if not isinstance(choice, str) or not choice:
            return _refusal(ErrorCode.VALIDATION_ERROR, "Say which option: `choice`.", 422)
        evidence = body.get("evidence")
        if evidence is not None and not isinstance(evidence, dict):
            return _refusal(ErrorCode.VALIDATION_ERROR, "Evidence is a JSON object.", 422)
        gate = body.get("gate")
        if gate is not None and not isinstance(gate, str):
            return _refusal(ErrorCode.VALIDATION_ERROR, "`gate` is the key of the gate shown.", 422)
        found = await runs.decide_binding(
            request.path_params["run"], choice, evidence=evidence or None, gate_shown=gate
        )
        if "error" in found:
            return JSONResponse(found, status_code=409)
        return JSONResponse({"ok": True, "authorizes": found})

    async def decide(request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        proof = body.get("proof")
        if not isinstance(proof, dict):
            return _refusal(
                ErrorCode.UNVERIFIED_APPROVER,
                "A gate is answered by a verified actor: sign the answer with your passkey or "
                "key in this page.",
                403,
            )
        result = dict(await runs.decide_signed(request.path_params["run"], proof))
        return JSONResponse(result, status_code=200 if result.get("ok", True) else 409)

    async def passkey_options(request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        principal = body.get("principal")
        if not isinstance(principal, str) or not principal.strip():
            return _refusal(ErrorCode.VALIDATION_ERROR, "Say whose passkey this is.", 422)
        try:
            check_principal_name(principal.strip())
        except IdentityError as error:
            return _refusal(ErrorCode.VALIDATION_ERROR, str(error), 422)
        import webauthn
        from webauthn.helpers.structs import (
            AuthenticatorSelectionCriteria,
            ResidentKeyRequirement,
            UserVerificationRequirement,
        )

        token, challenge = registrations.open(principal.strip())
        options = webauthn.generate_registration_options(
            rp_id=relying_party.id,
            rp_name="lockgate inbox",
            user_name=principal.strip(),
            challenge=challenge,
            authenticator_selection=AuthenticatorSelectionCriteria(
                resident_key=ResidentKeyRequirement.PREFERRED,
                user_verification=UserVerificationRequirement.REQUIRED,
            ),
        )
        return JSONResponse(
            {"token": token, "options": webauthn.helpers.options_to_json_dict(options)}
        )

    async def passkey_register(request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        opened = registrations.take(str(body.get("token")))
        if opened is None:
            return _refusal(
                ErrorCode.VALIDATION_ERROR,
                "This registration expired or was used: start it again.",
                409,
            )
        challenge, principal = opened
        credential = body.get("credential")
        if not isinstance(credential, dict):
            return _refusal(ErrorCode.VALIDATION_ERROR, "Send the new passkey's credential.", 422)
        import webauthn

        try:
            verified = webauthn.verify_registration_response(
                credential=credential,
                expected_challenge=challenge,
                expected_rp_id=relying_party.id,
                expected_origin=list(relying_party.origins),
                require_user_verification=True,
            )
        except Exception as error:
            return _refusal(
                ErrorCode.VALIDATION_ERROR,
                f"The passkey could not be registered: {error}".split(" See __cause__")[0],
                422,
            )
        credential_id = encode_base64url(verified.credential_id)
        entry = (
            f"[[principals.{toml_key(principal)}.passkeys]]\n"
            f'credential_id = "{credential_id}"\n'
            f'public_key = "cose:{encode_base64url(verified.credential_public_key)}"\n'
        )
        return JSONResponse(
            {"ok": True, "principal": principal, "credential_id": credential_id, "entry": entry}
        )

    async def identity_page(request: Request) -> Response:
        return render("identity.html", request)

    routes = [
        Route("/", gates),
        Route("/gates.json", gates_json),
        Route("/identity", identity_page),
        Route("/runs/{run:path}/binding", binding, methods=["POST"]),
        Route("/runs/{run:path}/decide", decide, methods=["POST"]),
        Route("/runs/{run:path}", run_page),
        Route("/passkeys/options", passkey_options, methods=["POST"]),
        Route("/passkeys/register", passkey_register, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    hosts = sorted({_host_of(origin) for origin in relying_party.origins} | {"127.0.0.1"})
    return Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts)],
        exception_handlers={Exception: _no_trace},
    )


def _host_of(origin: str) -> str:
    return urlsplit(origin).hostname or origin


def _viewer(request: Request) -> str | None:
    viewer = request.query_params.get("as")
    return viewer.strip() if viewer and viewer.strip() else None


def _fingerprint(rows: list[dict[str, Any]]) -> str:
    return ",".join(sorted(f"{row['run_id']}#{row['gate']}" for row in rows))


async def _open_gates(runs: GraphClient, request: Request) -> list[dict[str, Any]]:
    role = request.query_params.get("role") or None
    graph = request.query_params.get("graph") or None
    rows = [dict(row) for row in await runs.pending(of=role, viewer=_viewer(request))]
    if graph:
        rows = [row for row in rows if row["graph"] == graph]
    return rows


async def _json_body(request: Request) -> Mapping[str, Any] | Response:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        return _refusal(ErrorCode.VALIDATION_ERROR, "The request body is not JSON.")
    if not isinstance(body, dict):
        return _refusal(ErrorCode.VALIDATION_ERROR, "The request body must be a JSON object.")
    return body


async def _no_trace(request: Request, error: Exception) -> Response:
    logger.exception("lockgate inbox: %s %s failed", request.method, request.url.path)
    return _refusal(
        ErrorCode.INTERNAL_ERROR,
        "The inbox could not do this (is Temporal reachable, and a lockgate worker serving "
        "this task queue?); its log says more.",
        500,
    )

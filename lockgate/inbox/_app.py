"""``lockgate inbox``: the open gates and their runs in a browser, answered with a passkey or key.

Server-rendered pages (Starlette, Jinja2 with autoescaping) and one script, ``inbox.js``. The
browser makes every proof: it builds the unsigned proof around what this server says the answer
authorizes, checks that it names exactly the run, execution, gate and choice the page showed,
shows it, and signs it with the person's passkey (WebAuthn, the challenge being the proof's
digest) or with their Ed25519 key imported into the browser (WebCrypto, not extractable). This
server only relays the proof; the run's worker verifies it as every answer is verified, so the
inbox is never trusted for who answers.

The front page shows what needs the person signed in (the gates they may answer), with every
open gate and the paused (parked) runs a click away and counted in the header; a paused run
offers Resume to who may run its node and Cancel to who started it, signed in the browser as an
answer is (the run's worker judges either as it judges the CLI's).

Nobody reads a run without saying who they are. A person signs in by signing a one-time
challenge with their key or passkey, checked against the Directory; the inbox then holds a
short-lived session (an HttpOnly, same-site cookie) and shows them the gates of the roles they
hold and the runs they started, drove or may answer. Anyone else sees the sign-in page. Only
``open_to_anyone`` (what ``lockgate dev`` runs, for the tour) lets a visitor read every run.
Every request that changes something is same-origin JSON: a foreign page cannot post to it.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from temporalio.client import Client

from lockgate._bodies import read_bounded
from lockgate.contracts import refusal
from lockgate.gates._evidence import MAX_COMMENT_CHARS
from lockgate.identity._bindings import sign_in_binding
from lockgate.identity._directory import Directory
from lockgate.identity._enrolment import EnrolmentRefused, EnrolmentSecret
from lockgate.identity._identity_errors import IdentityError, ProofRefused
from lockgate.identity._keys import encode_base64url
from lockgate.identity._names import check_principal_name, toml_key
from lockgate.identity._passkeys import RelyingParty
from lockgate.identity._verifier import Verifier
from lockgate.inbox._words import FILTERS, WORDS, excerpt
from lockgate.operations._operations import Operations
from lockgate.operations._surface_answers import (
    body_too_large,
    could_not_complete,
    http_status,
)
from lockgate.tools._tool_result import ErrorCode

__all__ = ["inbox_app"]

logger = logging.getLogger("lockgate.inbox")

_CHALLENGE_SECONDS = 300
"""How long a sign-in or passkey registration challenge is good."""

_SESSION_COOKIE = "lockgate_session"

_MAX_BODY_BYTES = 64 * 1024
"""The largest request body the inbox reads: a proof with its evidence fits many times over."""

_MOST_PAUSED_SHOWN = 50
"""The most parked runs a page lists (each is read from its run)."""

_HERE = Path(__file__).parent

_T = TypeVar("_T")


def _refusal(code: str | ErrorCode, message: str, status: int = 400) -> JSONResponse:
    return JSONResponse(refusal(code, message), status_code=status)


class _Expiring(Generic[_T]):
    """Values under random tokens, each good for ``seconds``: challenges, registrations,
    sessions. Kept in this process only: a restarted inbox asks people to sign in again."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._held: dict[str, tuple[_T, float]] = {}

    def put(self, value: _T) -> str:
        now = time.monotonic()
        self._held = {k: v for k, v in self._held.items() if v[1] > now}
        token = secrets.token_urlsafe(24)
        self._held[token] = (value, now + self.seconds)
        return token

    def get(self, token: object) -> _T | None:
        found = self._held.get(token) if isinstance(token, str) else None
        if found is None or found[1] < time.monotonic():
            return None
        return found[0]

    def take(self, token: object) -> _T | None:
        found = self.get(token)
        if found is not None:
            self._held.pop(str(token), None)
        return found


def inbox_app(
    client: Client,
    task_queue: str,
    relying_party: RelyingParty,
    *,
    directory: Directory,
    enrolment: EnrolmentSecret | None = None,
    open_to_anyone: bool = False,
    session_seconds: float = 3600.0,
    poll_seconds: float = 2.0,
) -> Starlette:
    """The inbox for the runs of ``task_queue``.

    Args:
        client: A Temporal client.
        task_queue: Where the lockgate workers listen; the inbox shows no run of another queue.
        relying_party: The inbox's site and origins (the workers must be given the same). A
            request that changes something must come from one of these origins.
        directory: A copy of the workers' Directory: who may sign in (their keys and passkeys),
            and which gates and options each person may see and take (the worker judges again
            when they answer).
        enrolment: The enrolment secret ``lockgate keys enrol`` issues codes with; without it,
            the inbox registers no passkey.
        open_to_anyone: Lets visitors who have not signed in read every run of the task queue
            (a local ``lockgate dev``, for the tour). Answering still takes a proof.
        session_seconds: How long a sign-in lasts.
        poll_seconds: How often an open page asks whether the gates changed.

    Raises:
        TypeError: ``directory`` is not a :class:`~lockgate.Directory`.
    """
    if not isinstance(directory, Directory):
        raise TypeError(
            "inbox_app(directory=...) takes the workers' Directory (people sign in against it), "
            f"not {type(directory).__name__}."
        )
    door = Operations(client, task_queue, directory=directory, channel="web")
    verifier = Verifier(directory, relying_party=relying_party)
    challenges: _Expiring[bool] = _Expiring(_CHALLENGE_SECONDS)
    registrations: _Expiring[tuple[bytes, str]] = _Expiring(_CHALLENGE_SECONDS)
    sessions: _Expiring[str] = _Expiring(session_seconds)
    secure = all(origin.startswith("https://") for origin in relying_party.origins)
    pages = Environment(
        loader=PackageLoader("lockgate.inbox", "templates"),
        autoescape=select_autoescape(["html"]),
    )
    pages.filters["url_id"] = url_id
    pages.filters.update(FILTERS)
    excerpts = _Excerpts(door)
    parks = _Parks(door)

    def viewer_of(request: Request) -> str | None:
        return sessions.get(request.cookies.get(_SESSION_COOKIE))

    def render(name: str, request: Request, status: int = 200, **values: Any) -> HTMLResponse:
        page = pages.get_template(name).render(
            request=request,
            viewer=viewer_of(request),
            words=WORDS,
            comment_chars=MAX_COMMENT_CHARS,
            open_to_anyone=open_to_anyone,
            task_queue=task_queue,
            rp_id=relying_party.id,
            poll_ms=int(poll_seconds * 1000),
            **values,
        )
        return HTMLResponse(page, status_code=status)

    def may_resume(viewer: str | None, run: Mapping[str, Any]) -> bool:
        """Whether ``viewer`` holds what the node ``run`` is parked at needs (any one of its
        scopes; a node that needs none, anyone verified): only to show them the Resume button.
        Their resume is judged again, on its proof, by the run's worker."""
        parked = run.get("parked")
        if viewer is None or not isinstance(parked, Mapping) or directory.entry(viewer) is None:
            return False
        needs = set(parked.get("needs") or ())
        held = directory.scopes_of(viewer)
        return not needs or "*" in held or bool(needs & held)

    def may_see(viewer: str | None, row: Mapping[str, Any]) -> bool:
        """Whether ``viewer`` may see a run (as ``show`` has it) or an open gate (as ``pending``
        has it): one they started or drove, or whose open gate they may answer or waive."""
        if open_to_anyone:
            return True
        if viewer is None:
            return False
        people = {_actor_of(row.get("requester"))} | {
            _actor_of(each.get("by")) for each in row.get("trail") or () if isinstance(each, dict)
        }
        if viewer in people or may_resume(viewer, row):
            return True
        gate = row.get("awaiting", row)
        if not isinstance(gate, Mapping):
            return False
        panel = (gate.get("policy") or {}).get("panel") or ()
        if viewer in panel or viewer in (gate.get("makers") or ()):
            return True
        return bool({gate.get("role"), gate.get("waivable_by")} & directory.roles_of(viewer))

    async def visible_gates(request: Request) -> list[dict[str, Any]]:
        viewer = viewer_of(request)
        role = request.query_params.get("role") or None
        graph = request.query_params.get("graph") or None
        rows: list[dict[str, Any]] = (await door.pending(role, viewer=viewer))["pending"]
        return [
            row for row in rows if may_see(viewer, row) and (graph is None or row["graph"] == graph)
        ]

    async def paused_runs(request: Request) -> list[dict[str, Any]]:
        """The parked runs the viewer may see, newest first, each saying whether the viewer may
        resume it (holds what its node needs) or cancel it (started it)."""
        viewer = viewer_of(request)
        listed = await door.list_runs()
        found: list[dict[str, Any]] = []
        for row in listed.get("runs") or ():
            if row.get("status") != "parked" or len(found) >= _MOST_PAUSED_SHOWN:
                continue
            shown = dict(await parks.of(row["run_id"]))
            if shown.get("ok") is False or not shown.get("parked") or not may_see(viewer, shown):
                continue
            shown["may_resume"] = may_resume(viewer, shown)
            shown["may_cancel"] = viewer is not None and viewer == _actor_of(shown.get("requester"))
            shown["started_at"] = row.get("started_at")
            found.append(shown)
        return found

    async def header_counts(request: Request) -> dict[str, int] | None:
        """The counts the header shows (gates that need the viewer, all open, paused runs)."""
        if viewer_of(request) is None and not open_to_anyone:
            return None
        rows = await visible_gates(request)
        paused = await paused_runs(request)
        mine = sum(1 for row in rows if _needs_viewer(row))
        return {"mine": mine, "all": len(rows), "paused": len(paused)}

    async def gates(request: Request) -> Response:
        viewer = viewer_of(request)
        if viewer is None and not open_to_anyone:
            return render("sign_in.html", request, status=401)
        rows = await visible_gates(request)
        for row in rows:
            row["excerpt"] = await excerpts.of(row)
        paused = await paused_runs(request)
        mine = [row for row in rows if _needs_viewer(row)]
        view = request.query_params.get("view") or ("mine" if viewer else "all")
        view = view if view in ("mine", "all", "paused") else "mine"
        graphs = sorted({row["graph"] for row in rows})
        return render(
            "gates.html",
            request,
            rows=mine if view == "mine" else rows if view == "all" else [],
            paused=paused if view == "paused" else [],
            counts={"mine": len(mine), "all": len(rows), "paused": len(paused)},
            view=view,
            graphs=graphs,
            graph=request.query_params.get("graph") or "",
            role=request.query_params.get("role") or "",
            fingerprint=_fingerprint(rows, paused),
        )

    async def gates_json(request: Request) -> Response:
        if viewer_of(request) is None and not open_to_anyone:
            return _refusal(ErrorCode.UNAUTHORIZED, "Sign in first.", 401)
        rows = await visible_gates(request)
        paused = await paused_runs(request)
        return JSONResponse(
            {
                "fingerprint": _fingerprint(rows, paused),
                "count": len(rows),
                "needs_you": sum(1 for row in rows if _needs_viewer(row)),
                "paused": len(paused),
            }
        )

    async def shown_run(request: Request, run_id: str) -> dict[str, Any] | None:
        """The run as the viewer may see it; None where it is not a run of ours they may see
        (which is said as "not found": whether a run exists is not told to whoever asks)."""
        if not await door.serves(run_id):
            return None
        shown = dict(await door.show(run_id))
        if shown.get("ok") is False or not may_see(viewer_of(request), shown):
            return None
        return shown

    async def run_page(request: Request) -> Response:
        if viewer_of(request) is None and not open_to_anyone:
            return render("sign_in.html", request, status=401)
        run_id = request.path_params["run"]
        shown = await shown_run(request, run_id)
        if shown is None:
            return render("not_found.html", request, status=404, run_id=run_id)
        gate = shown.get("awaiting")
        if shown.get("status") == "waiting" and isinstance(gate, dict):
            verdicts: dict[str, Any] = {}
            for row in (await door.pending(viewer=viewer_of(request)))["pending"]:
                if row["run_id"] == run_id:
                    verdicts = {choice["option"]: choice for choice in row["choices"]}
                    gate["opened_at"] = row.get("opened_at")
            gate["choices"] = [
                {**choice, **verdicts.get(choice["option"], {})} for choice in gate["choices"]
            ]
        shown["started_at"] = await door.started_at(run_id)
        viewer = viewer_of(request)
        shown["may_resume"] = may_resume(viewer, shown)
        shown["may_cancel"] = (
            viewer is not None
            and viewer == _actor_of(shown.get("requester"))
            and shown.get("status") in ("waiting", "parked", "running")
        )
        return render("run.html", request, run=shown, counts=await header_counts(request))

    async def run_request(request: Request) -> tuple[Mapping[str, Any], str, str] | Response:
        """The JSON body of a request that changes something about the run in its path, who sent
        it (signed in) and that run (one they may see); or the refusal to send instead (a
        foreign origin, a body too large, a session ended, a run not theirs to see)."""
        body = await _json_body(request, relying_party)
        if isinstance(body, Response):
            return body
        viewer = viewer_of(request)
        if viewer is None:
            return _refusal(ErrorCode.UNAUTHORIZED, "Sign in first: your session ended.", 401)
        run_id = request.path_params["run"]
        if await shown_run(request, run_id) is None:
            return _refusal(ErrorCode.NOT_FOUND, f"No run {run_id!r} you may see here.", 404)
        return body, viewer, run_id

    def bound(found: Mapping[str, Any]) -> Response:
        """What an act authorizes, for the page to check and sign; or the door's refusal."""
        if found.get("ok") is False or "error" in found:
            return JSONResponse(dict(found), status_code=http_status(found))
        return JSONResponse({"ok": True, "authorizes": dict(found)})

    def relayed(result: Mapping[str, Any]) -> Response:
        return JSONResponse(dict(result), status_code=http_status(result))

    async def binding(request: Request) -> Response:
        """What an answer to the run's gate authorizes, for the page to check and sign."""
        asked = await run_request(request)
        if isinstance(asked, Response):
            return asked
        body, _, run_id = asked
        return bound(
            await door.decide_binding(
                run_id,
                body.get("choice"),
                evidence=body.get("evidence"),
                gate=body.get("gate"),
                comment=body.get("comment"),
            )
        )

    async def decide(request: Request) -> Response:
        """Relays an answer the page signed; the run's worker judges it."""
        asked = await run_request(request)
        if isinstance(asked, Response):
            return asked
        body, viewer, run_id = asked
        # The page sends a proof as a JSON object; anything else is no proof (the door says so).
        proof = body.get("proof")
        proof = proof if isinstance(proof, dict) else None
        if proof is not None and proof.get("principal") != viewer:
            return _refusal(
                ErrorCode.UNVERIFIED_APPROVER,
                f"You are signed in as {viewer}, but the answer is signed as "
                f"{proof.get('principal')!r}: sign in as the person who answers.",
                403,
            )
        return relayed(await door.decide_signed(run_id, proof))

    async def act_binding(request: Request) -> Response:
        """What a resume or a cancel of the run authorizes, for the page to check and sign."""
        asked = await run_request(request)
        if isinstance(asked, Response):
            return asked
        body, _, run_id = asked
        if _act_of(request) == "resume":
            return bound(await door.resume_binding(run_id))
        return bound(await door.cancel_binding(run_id, reason=body.get("reason")))

    async def act(request: Request) -> Response:
        """Relays a resume or a cancel the page signed; the run's worker judges it."""
        asked = await run_request(request)
        if isinstance(asked, Response):
            return asked
        body, viewer, run_id = asked
        proof = body.get("proof")
        if not isinstance(proof, dict):
            return _refusal(ErrorCode.UNAUTHORIZED, "Send the signed proof.", 401)
        if proof.get("principal") != viewer:
            return _refusal(
                ErrorCode.UNAUTHORIZED,
                f"You are signed in as {viewer}, but this is signed as "
                f"{proof.get('principal')!r}: sign in as the person who acts.",
                403,
            )
        if _act_of(request) == "resume":
            return relayed(await door.resume(run_id, proof=proof))
        return relayed(await door.cancel(run_id, proof=proof))

    async def sign_in_challenge(request: Request) -> Response:
        body = await _json_body(request, relying_party)
        if isinstance(body, Response):
            return body
        return JSONResponse({"ok": True, "challenge": challenges.put(True)})

    async def sign_in(request: Request) -> Response:
        body = await _json_body(request, relying_party)
        if isinstance(body, Response):
            return body
        proof = body.get("proof")
        authorizes = proof.get("authorizes") if isinstance(proof, dict) else None
        challenge = authorizes.get("challenge") if isinstance(authorizes, dict) else None
        if challenges.take(challenge) is None:
            return _refusal(
                ErrorCode.UNAUTHORIZED,
                "This sign-in expired or was used: sign in again.",
                401,
            )
        try:
            actor = verifier.verify(
                proof, sign_in_binding(request.headers["origin"], str(challenge))
            )
        except ProofRefused as refused:
            return _refusal(ErrorCode.UNAUTHORIZED, _sign_in_refusal(refused, proof), 401)
        response = JSONResponse({"ok": True, "principal": actor.actor})
        response.set_cookie(
            _SESSION_COOKIE,
            sessions.put(actor.actor),
            max_age=int(session_seconds),
            httponly=True,
            samesite="strict",
            secure=secure,
        )
        return response

    async def sign_out(request: Request) -> Response:
        body = await _json_body(request, relying_party)
        if isinstance(body, Response):
            return body
        sessions.take(request.cookies.get(_SESSION_COOKIE))
        response = JSONResponse({"ok": True})
        response.delete_cookie(_SESSION_COOKIE, httponly=True, samesite="strict", secure=secure)
        return response

    async def passkey_options(request: Request) -> Response:
        body = await _json_body(request, relying_party)
        if isinstance(body, Response):
            return body
        principal = body.get("principal")
        if not isinstance(principal, str) or not principal.strip():
            return _refusal(ErrorCode.VALIDATION_ERROR, "Say whose passkey this is.", 422)
        principal = principal.strip()
        try:
            check_principal_name(principal)
        except IdentityError as error:
            return _refusal(ErrorCode.VALIDATION_ERROR, str(error), 422)
        if enrolment is None:
            return _refusal(
                ErrorCode.UNAUTHORIZED,
                "This inbox registers no passkeys: it was started without the enrolment secret "
                "`lockgate keys enrol` issues codes with.",
                403,
            )
        try:
            enrolment.check(body.get("code"), principal, time.time())
        except EnrolmentRefused as refused:
            return _refusal(ErrorCode.UNAUTHORIZED, str(refused), 403)
        import webauthn
        from webauthn.helpers.structs import (
            AuthenticatorSelectionCriteria,
            ResidentKeyRequirement,
            UserVerificationRequirement,
        )

        challenge = secrets.token_bytes(32)
        token = registrations.put((challenge, principal))
        options = webauthn.generate_registration_options(
            rp_id=relying_party.id,
            rp_name="lockgate inbox",
            user_name=principal,
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
        body = await _json_body(request, relying_party)
        if isinstance(body, Response):
            return body
        opened = registrations.take(body.get("token"))
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
        return render("identity.html", request, counts=await header_counts(request))

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/", gates),
        Route("/gates.json", gates_json),
        Route("/identity", identity_page),
        Route("/favicon.ico", no_icon),
        Route("/session/challenge", sign_in_challenge, methods=["POST"]),
        Route("/session", sign_in, methods=["POST"]),
        Route("/session/end", sign_out, methods=["POST"]),
        *(
            route
            for each in ("resume", "cancel")
            for route in (
                Route(f"/runs/{{run:path}}/{each}/binding", act_binding, methods=["POST"]),
                Route(f"/runs/{{run:path}}/{each}", act, methods=["POST"]),
            )
        ),
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


def url_id(run_id: object) -> str:
    """A run id as one path segment of a URL: every ``/`` of it encoded, so no id can walk the
    path to another run's page once a browser normalises it."""
    return quote(str(run_id), safe=":")


def _actor_of(who: object) -> str | None:
    """The principal of a requester or a trail row's ``by``, as a run shows either."""
    if isinstance(who, Mapping):
        actor = who.get("actor")
        return actor if isinstance(actor, str) else None
    return who if isinstance(who, str) else None


class _Excerpts:
    """A short excerpt of the work each open gate judges, read once per gate opening: a gate does
    not change while it is open, and reading a run is a query (a billed action)."""

    _KEPT = 500

    def __init__(self, door: Operations) -> None:
        self._door = door
        self._known: dict[tuple[str, str], str] = {}

    async def of(self, row: Mapping[str, Any]) -> str:
        key = (str(row["run_id"]), str(row["gate"]))
        if key not in self._known:
            shown = await self._door.show(key[0], trail_limit=1)
            if len(self._known) >= self._KEPT:
                self._known.pop(next(iter(self._known)))
            self._known[key] = excerpt(shown.get("fields"), row.get("target"))
        return self._known[key]


class _Parks:
    """A parked run as ``show`` has it (its newest trail row only), read at most once every
    :attr:`_FRESH_SECONDS` per run: every open page asks for the paused runs as it polls, and
    reading a run is a query (a billed action). What a page signs is checked again when the
    browser asks for it, so a run seen a few seconds late signs nothing it does not show."""

    _FRESH_SECONDS = 10.0
    _KEPT = 500

    def __init__(self, door: Operations) -> None:
        self._door = door
        self._known: dict[str, tuple[Mapping[str, Any], float]] = {}

    async def of(self, run_id: str) -> Mapping[str, Any]:
        now = time.monotonic()
        found = self._known.get(run_id)
        if found is not None and now - found[1] < self._FRESH_SECONDS:
            return found[0]
        shown = await self._door.show(run_id, trail_limit=1)
        if len(self._known) >= self._KEPT:
            self._known.pop(next(iter(self._known)))
        self._known[run_id] = (shown, now)
        return shown


def _sign_in_refusal(refused: ProofRefused, proof: object) -> str:
    principal = proof.get("principal") if isinstance(proof, dict) else None
    if refused.reason == "forged" and isinstance(proof, dict) and "signature" in proof:
        return (
            f"This is not the key the Directory lists for {principal}: sign in with "
            f"{principal}'s own key, or ask your administrator to list this one."
        )
    return refused.sentence


def _host_of(origin: str) -> str:
    return urlsplit(origin).hostname or origin


def _fingerprint(rows: list[dict[str, Any]], paused: list[dict[str, Any]]) -> str:
    gates = [f"{row['run_id']}#{row['gate']}" for row in rows]
    parks = [f"{run['run_id']}@{(run.get('parked') or {}).get('parking')}" for run in paused]
    return ",".join(sorted(gates + parks))


def _act_of(request: Request) -> str:
    """``resume`` or ``cancel``: what a request to ``/runs/<run>/<act>[/binding]`` does."""
    return "resume" if request.url.path.removesuffix("/binding").endswith("/resume") else "cancel"


def _needs_viewer(row: Mapping[str, Any]) -> bool:
    """Whether an open gate needs the viewer: they may take at least one of its options."""
    return any(choice.get("may") is True for choice in row.get("choices") or ())


async def _json_body(request: Request, relying_party: RelyingParty) -> Mapping[str, Any] | Response:
    """The JSON object a state-changing request carries, from a page of the inbox itself; else
    the refusal. An ``Origin`` of the inbox and a JSON body are what a foreign page cannot
    send without the browser asking the inbox first (which it never allows)."""
    origin = request.headers.get("origin")
    if origin not in relying_party.origins:
        return _refusal(
            ErrorCode.UNAUTHORIZED,
            f"This request comes from {origin or 'no page'}, not from the inbox "
            f"({', '.join(relying_party.origins)}): open the inbox at that address.",
            403,
        )
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return _refusal(
            ErrorCode.VALIDATION_ERROR,
            "The inbox takes JSON (Content-Type: application/json).",
            415,
        )
    raw = await read_bounded(request, _MAX_BODY_BYTES)
    if raw is None:
        return JSONResponse(body_too_large(_MAX_BODY_BYTES), status_code=413)
    try:
        body = json.loads(raw or b"{}")
    except RecursionError:
        return _refusal(ErrorCode.VALIDATION_ERROR, "The request body nests too deep to read.", 422)
    except ValueError:
        return _refusal(ErrorCode.VALIDATION_ERROR, "The request body is not JSON.", 422)
    if not isinstance(body, dict):
        return _refusal(ErrorCode.VALIDATION_ERROR, "The request body must be a JSON object.", 422)
    return body


async def _no_trace(request: Request, error: Exception) -> Response:
    logger.exception("lockgate inbox: %s %s failed", request.method, request.url.path)
    return JSONResponse(could_not_complete("this request"), status_code=500)

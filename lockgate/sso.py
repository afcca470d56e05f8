"""Signing a person in at the company's identity provider, from a program on their machine.

:func:`browser_sign_in` makes the ``get_token`` that
:meth:`Signer.from_identity_provider <lockgate.Signer.from_identity_provider>` takes: each call
signs the person in through their browser and returns the ID token whose ``nonce`` is the one it
was given, the digest of the act the proof signs. It is OAuth 2.0's authorization code with PKCE
(S256) on a loopback redirect, as native apps do it (RFC 8252; ``gcloud`` and ``az`` do the
same): a one-request HTTP server on ``http://127.0.0.1:PORT/callback``, the browser sent to the
provider's authorization endpoint, the ``state`` it comes back with checked, and the code
exchanged at the token endpoint the discovery document names. Where the person's session at the
provider lives, the browser comes straight back.

The ID token comes straight from the token endpoint, so this client reads its claims without
checking its signature (OpenID Connect allows that) to check its issuer, audience and nonce; the
worker verifies it in full, as it does every proof. What can go wrong is a :class:`SignInError`.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import http.server
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import webbrowser
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lockgate._errors import RefusedError
from lockgate.clients._issuer_keys import discovery_document, read_json
from lockgate.identity._issuers import unverified_claims

__all__ = ["SignInError", "browser_sign_in"]

_CALLBACK_PATH = "/callback"
_PAGE = (
    "<!doctype html><meta charset=utf-8><title>lockgate</title>"
    "<body style='font-family:sans-serif;margin:3em'><p>{}</p>"
)


class SignInError(RefusedError):
    """A sign-in at the identity provider did not complete; the message says why, and nothing
    was signed."""


def _a_browser_can_open() -> bool:
    """Whether :func:`webbrowser.open` can reach a browser the person sees: on Linux and the
    BSDs only with a display (or ``BROWSER`` set). Without one (a remote shell) it would start a
    text browser in the terminal the command needs; the link is shown instead."""
    if sys.platform in ("darwin", "win32") or os.environ.get("BROWSER"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _show_on_stderr(url: str, *, opening: bool) -> None:
    how = "in the browser that opens now (or open this link)" if opening else "open this link"
    print(f"Sign in at your identity provider: {how}:\n  {url}", file=sys.stderr, flush=True)


def browser_sign_in(
    issuer: str,
    client_id: str,
    *,
    scopes: Sequence[str] = ("openid", "email", "profile"),
    max_age_seconds: float | None = 300,
    open_browser: bool = True,
    show: Callable[[str], None] | None = None,
    timeout_seconds: float = 300,
) -> Callable[[str], str]:
    """A ``get_token`` for :meth:`Signer.from_identity_provider`: signs the person in through
    their browser, once per call, and returns an ID token carrying the nonce it is given.

    Example:
        >>> get_token = browser_sign_in("https://login.example.com", "lockgate")  # doctest: +SKIP
        >>> Signer.from_identity_provider("sso:corp:ed@example.com", get_token)  # doctest: +SKIP

    Args:
        issuer: The provider's issuer URL, exactly as its tokens' ``iss`` says.
        client_id: lockgate's client id there, registered as a native (public) application
            with the loopback redirect ``http://127.0.0.1/callback`` (any port).
        scopes: The scopes asked for: ``openid``, and whatever releases the claim that names
            the person and the groups claim at this provider.
        max_age_seconds: Asks the provider for a sign-in no older than this (``max_age``),
            so that the worker's window for the issuer holds; None leaves it to the provider.
        open_browser: Opens the authorization URL with :func:`webbrowser.open` (where a
            browser can open: not on a remote shell without a display); either way ``show`` is
            given it, so a person can open it themselves.
        show: Shows the person the authorization URL (default: two lines on stderr, the URL
            on the second, indented).
        timeout_seconds: How long to wait for the browser to come back.

    Raises:
        SignInError: (when the function returned is called) the provider cannot be reached,
            the browser came back with an error or a ``state`` this sign-in did not send, or
            not at all in time, or the code was not exchanged for an ID token for this
            client and nonce.
    """
    if show is None:
        show = functools.partial(_show_on_stderr, opening=open_browser and _a_browser_can_open())
    return _BrowserSignIn(
        issuer, client_id, tuple(scopes), max_age_seconds, open_browser, show, timeout_seconds
    )


@dataclass(frozen=True)
class _BrowserSignIn:
    issuer: str
    client_id: str
    scopes: tuple[str, ...]
    max_age_seconds: float | None
    open_browser: bool
    show: Callable[[str], None]
    timeout_seconds: float

    def __call__(self, nonce: str) -> str:
        try:
            discovery = discovery_document(self.issuer, min(self.timeout_seconds, 30))
        except (OSError, ValueError) as error:
            raise SignInError(
                f"Cannot read the discovery document of {self.issuer}: {error}."
            ) from None
        endpoints = [discovery.get(name) for name in ("authorization_endpoint", "token_endpoint")]
        if not all(isinstance(each, str) and each.startswith("http") for each in endpoints):
            raise SignInError(
                f"The discovery document of {self.issuer} names no authorization and token "
                "endpoints."
            )
        verifier = secrets.token_urlsafe(48)
        state = secrets.token_urlsafe(24)
        with _Callback(state) as callback:
            url = self._authorization_url(
                str(endpoints[0]), callback.redirect_uri, state, nonce, verifier
            )
            self.show(url)
            if self.open_browser and _a_browser_can_open():
                with contextlib.suppress(webbrowser.Error):  # the link was shown: they open it
                    webbrowser.open(url)
            code = callback.code(time.monotonic() + self.timeout_seconds)
        token = self._exchange(str(endpoints[1]), code, callback.redirect_uri, verifier)
        self._check(token, nonce)
        return token

    def _authorization_url(
        self, endpoint: str, redirect_uri: str, state: str, nonce: str, verifier: str
    ) -> str:
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        query: dict[str, str] = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(self.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge.rstrip(b"=").decode("ascii"),
            "code_challenge_method": "S256",
        }
        if self.max_age_seconds is not None:
            query["max_age"] = str(int(self.max_age_seconds))
        return endpoint + ("&" if "?" in endpoint else "?") + urllib.parse.urlencode(query)

    def _exchange(self, endpoint: str, code: str, redirect_uri: str, verifier: str) -> str:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "client_id": self.client_id,
        }
        request = urllib.request.Request(endpoint, urllib.parse.urlencode(form).encode())
        try:
            answer = read_json(request, min(self.timeout_seconds, 30))
        except urllib.error.HTTPError as error:
            raise SignInError(
                f"The token endpoint of {self.issuer} refused the code ({error.code}: "
                f"{_provider_error(error)})."
            ) from None
        except (OSError, ValueError) as error:
            raise SignInError(f"Cannot exchange the code at {endpoint}: {error}.") from None
        token = answer.get("id_token")
        if not isinstance(token, str):
            raise SignInError(
                f"The token endpoint of {self.issuer} answered no ID token: ask for the "
                "'openid' scope."
            )
        return token

    def _check(self, token: str, nonce: str) -> None:
        claims = unverified_claims(token) or {}
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if claims.get("iss") != self.issuer or self.client_id not in audiences:
            raise SignInError(
                f"The ID token the token endpoint answered is not from {self.issuer} for the "
                f"client {self.client_id!r}."
            )
        if claims.get("nonce") != nonce:
            raise SignInError("The ID token the token endpoint answered is for another nonce.")


def _provider_error(error: urllib.error.HTTPError) -> str:
    """What a provider's error answer says (``error: error_description``)."""
    try:
        said = json.loads(error.read(4096))
    except ValueError:
        said = None
    if not isinstance(said, dict) or "error" not in said:
        return "its answer names no error"
    return ": ".join(str(said[key]) for key in ("error", "error_description") if key in said)


def _same_state(given: str, sent: str) -> bool:
    return secrets.compare_digest(given.encode(), sent.encode())


class _Callback:
    """The loopback redirect's server: one callback (other paths get 404), its ``state``
    checked before anything else is read."""

    def __init__(self, state: str) -> None:
        self._state = state
        self._query: dict[str, str] | None = None
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = 10  # seconds: a connection that sends nothing does not hold the sign-in

            def do_GET(self) -> None:
                split = urllib.parse.urlsplit(self.path)
                if split.path != _CALLBACK_PATH or outer._query is not None:
                    self._answer(404, "Nothing here.")
                    return
                pairs = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
                outer._query = dict(pairs)
                if not _same_state(outer._query.get("state", ""), outer._state):
                    self._answer(
                        400, "Refused: this sign-in did not start here. Nothing was signed."
                    )
                elif "code" in outer._query:
                    self._answer(
                        200, "Signed in. You can close this tab and return to the terminal."
                    )
                else:
                    self._answer(400, "The sign-in did not complete. Nothing was signed.")

            def _answer(self, status: int, sentence: str) -> None:
                body = _PAGE.format(sentence).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the terminal shows what the command says, not the server's log

        self._server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.redirect_uri = f"http://127.0.0.1:{self._server.server_port}{_CALLBACK_PATH}"

    def __enter__(self) -> _Callback:
        return self

    def __exit__(self, *_: object) -> None:
        self._server.server_close()

    def code(self, deadline: float) -> str:
        """The authorization code the browser brings back by ``deadline`` (monotonic seconds).

        Raises:
            SignInError: It came back with another ``state``, an error or no code, or not at all.
        """
        while self._query is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SignInError(
                    "The browser did not come back from the identity provider in time; "
                    "nothing was signed."
                )
            self._server.timeout = left
            self._server.handle_request()
        query = self._query
        if not _same_state(query.get("state", ""), self._state):
            raise SignInError(
                "The sign-in came back with a state this sign-in did not send: it was not "
                "started here (a forged or stale redirect), so it is refused and nothing was "
                "signed."
            )
        if "code" not in query:
            said = ": ".join(query[key] for key in ("error", "error_description") if key in query)
            raise SignInError(
                f"The identity provider did not sign you in ({said or 'no code'}); nothing was "
                "signed."
            )
        return query["code"]

"""A real identity provider for the tests: panva's ``oidc-provider`` (certified) on Node.

``tests/idp`` holds it (``package.json``, ``package-lock.json`` and ``provider.mjs``); ``make
idp`` (which ``make test`` runs) installs it with ``npm ci``. Each :class:`IdentityProvider` runs
it on a free port of 127.0.0.1 with signing keys and people of its own, and obtains real ID
tokens from it the way a browser would: its authorization endpoint (a scripted sign-in of the
person named by ``login_hint``), then its token endpoint with the code and PKCE verifier. The
test sets each token's nonce. A :class:`Browser` in which a person signed in follows an
authorization URL another program made (``lockgate login``) back to that program's redirect.
Where Node or the installed provider is missing the tests are skipped, saying how to install
them; with ``CI`` set they fail instead.
"""

from __future__ import annotations

import base64
import hashlib
import http.cookiejar
import json
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa

from lockgate.devserver import free_port
from tests.helpers.support import require_installed

IDP_FOLDER = Path(__file__).resolve().parents[1] / "idp"
NODE = shutil.which("node")
REDIRECT_URI = "http://127.0.0.1/callback"
CLIENT_ID = "lockgate"
COMMAND_LINE_CLIENT_ID = "lockgate-cli"
"""The provider's native public client, for ``lockgate login`` (a loopback redirect, any port)."""

require_installed(
    NODE is None or not (IDP_FOLDER / "node_modules" / "oidc-provider").is_dir(),
    "Node or the test identity provider (oidc-provider)",
    "`make idp` (Node and npm, then `npm ci` in tests/idp)",
)


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def rsa_jwk(kid: str) -> dict[str, Any]:
    """A new RSA signing key as a private JWK (what the provider signs with)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = key.private_numbers(), key.public_key().public_numbers()
    return {
        "kty": "RSA",
        "kid": kid,
        "use": "sig",
        "alg": "RS256",
        "n": _b64(public.n),
        "e": _b64(public.e),
        "d": _b64(private.d),
        "p": _b64(private.p),
        "q": _b64(private.q),
        "dp": _b64(private.dmp1),
        "dq": _b64(private.dmq1),
        "qi": _b64(private.iqmp),
    }


def public_jwks(keys: list[dict[str, Any]]) -> dict[str, Any]:
    """The public half of private JWKs, as a JWKS."""
    return {
        "keys": [
            {name: key[name] for name in ("kty", "kid", "use", "alg", "n", "e")} for key in keys
        ]
    }


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Browser:
    """A person's browser at the provider: a cookie jar, and redirects seen one at a time."""

    def __init__(self, provider: IdentityProvider) -> None:
        self.provider = provider
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _NoRedirects()
        )

    def follow(self, url: str) -> str:
        """Opens ``url`` (an authorization request) and follows the provider's redirects;
        returns where it sends the browser back to (the client's redirect URI, with the code
        and state)."""
        return self.provider._follow(self.opener, url)


class IdentityProvider:
    """One ``oidc-provider`` process, its keys and its people.

    Args:
        folder: Where its settings, keys and people files go.
        people: ``{id: {"email": ..., "groups": [...]}}``.
    """

    def __init__(self, folder: Path, people: dict[str, dict[str, Any]]) -> None:
        self.folder = folder
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.keys = [rsa_jwk("key-1")]
        self.people_file = folder / "people.json"
        self.set_people(people)
        self.process: subprocess.Popen[bytes] | None = None

    def set_people(self, people: dict[str, dict[str, Any]]) -> None:
        """Rewrites the people (read again at every sign-in)."""
        self.people = people
        self.people_file.write_text(json.dumps(people))

    def start(self) -> IdentityProvider:
        """Starts the provider and waits until its discovery document answers."""
        assert NODE is not None
        keys_file = self.folder / "keys.json"
        keys_file.write_text(json.dumps({"keys": self.keys}))
        settings = self.folder / "settings.json"
        settings.write_text(
            json.dumps(
                {
                    "port": self.port,
                    "issuer": self.issuer,
                    "keys": str(keys_file),
                    "people": str(self.people_file),
                }
            )
        )
        log = (self.folder / "idp.log").open("ab")
        self.process = subprocess.Popen(
            [NODE, str(IDP_FOLDER / "provider.mjs"), str(settings)],
            cwd=IDP_FOLDER,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while not self.answers():
            assert self.process.poll() is None, (self.folder / "idp.log").read_text()
            assert time.monotonic() < deadline, "the identity provider never answered"
            time.sleep(0.05)
        return self

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(
                self.issuer + "/.well-known/openid-configuration", timeout=1
            ) as response:
                return bool(json.loads(response.read()).get("jwks_uri"))
        except (OSError, ValueError):
            return False

    def stop(self) -> None:
        """Stops the provider (it cannot be reached until started again)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None

    def rotate(self) -> dict[str, Any]:
        """Restarts the provider signing with a new key (the old one still published after it),
        as a provider rotating its keys does; returns the new key."""
        new = rsa_jwk(f"key-{len(self.keys) + 1}")
        self.keys = [new, *self.keys]
        self.stop()
        self.start()
        return new

    def public_jwks(self) -> dict[str, Any]:
        return public_jwks(self.keys)

    def id_token(
        self,
        person: str,
        nonce: str,
        *,
        client: str = CLIENT_ID,
        scope: str = "openid email groups",
        opener: urllib.request.OpenerDirector | None = None,
    ) -> str:
        """A real ID token for ``person``, issued to ``client``, carrying ``nonce`` (signed in
        in a fresh browser, or in ``opener``'s)."""
        opener = opener or Browser(self).opener
        verifier = secrets.token_urlsafe(48)
        challenge = (
            base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            .rstrip(b"=")
            .decode()
        )
        url = (
            self.issuer
            + "/auth?"
            + urllib.parse.urlencode(
                {
                    "client_id": client,
                    "response_type": "code",
                    "scope": scope,
                    "redirect_uri": REDIRECT_URI,
                    "nonce": nonce,
                    "state": secrets.token_hex(8),
                    "login_hint": person,
                    "max_age": "300",
                    "claims": json.dumps({"id_token": {"amr": None, "acr": None}}),
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                }
            )
        )
        location = self._follow(opener, url)
        assert location.startswith(REDIRECT_URI), location
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
        assert "code" in query, query
        return self._exchange(query["code"][0], verifier, client)

    def browser(self, person: str) -> Browser:
        """A browser in which ``person`` is signed in at the provider (its session cookie)."""
        browser = Browser(self)
        self.id_token(person, "a-first-sign-in", opener=browser.opener)
        return browser

    def _follow(self, opener: urllib.request.OpenerDirector, url: str) -> str:
        """Follows the provider's redirects from ``url`` (its sign-in and consent, scripted) to
        the one that leaves it, back to the client; returns that location."""
        for _ in range(10):
            try:
                response = opener.open(url, timeout=10)
                raise AssertionError(f"the provider answered {response.status} at {url}")
            except urllib.error.HTTPError as redirect:
                if redirect.code not in (302, 303):
                    raise AssertionError(
                        f"the provider answered {redirect.code}: {redirect.read()[:500]!r}"
                    ) from None
                location = urllib.parse.urljoin(url, str(redirect.headers["Location"]))
            if not location.startswith(self.issuer + "/"):
                return location
            url = location
        raise AssertionError("the sign-in never came back to the client")

    def _exchange(self, code: str, verifier: str, client: str) -> str:
        basic = base64.b64encode(f"{client}:{client}-test-secret".encode()).decode()
        request = urllib.request.Request(
            self.issuer + "/token",
            data=urllib.parse.urlencode(
                {
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": REDIRECT_URI,
                    "code_verifier": verifier,
                }
            ).encode(),
            headers={"Authorization": f"Basic {basic}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return str(json.loads(response.read())["id_token"])

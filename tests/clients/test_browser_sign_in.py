"""A person's sign-in through their browser (``lockgate.sso.browser_sign_in``), against the real
test identity provider: authorization code with PKCE on a loopback redirect, the test playing the
browser in which the person is signed in at the provider."""

from __future__ import annotations

import concurrent.futures
import queue
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lockgate.identity._issuers import unverified_claims
from lockgate.sso import SignInError, browser_sign_in
from tests.helpers.idp import COMMAND_LINE_CLIENT_ID, IdentityProvider

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def idp(tmp_path: Path) -> Iterator[IdentityProvider]:
    provider = IdentityProvider(
        tmp_path, {"olu": {"email": "olu@example.com", "groups": ["payments-officers"]}}
    ).start()
    try:
        yield provider
    finally:
        provider.stop()


def signing_in(idp: IdentityProvider, nonce: str) -> tuple[concurrent.futures.Future[str], str]:
    """Starts a sign-in for ``nonce`` (in a thread, as a command waits for the browser); returns
    what it will return and the authorization URL it shows the person."""
    shown: queue.Queue[str] = queue.Queue()
    get_token = browser_sign_in(
        idp.issuer,
        COMMAND_LINE_CLIENT_ID,
        scopes=("openid", "email", "groups"),
        open_browser=False,
        show=shown.put,
        timeout_seconds=60,
    )
    pool = concurrent.futures.ThreadPoolExecutor(1)
    token = pool.submit(get_token, nonce)
    pool.shutdown(wait=False)
    return token, shown.get(timeout=30)


def query_of(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def with_query(url: str, **changed: str) -> str:
    split = urllib.parse.urlsplit(url)
    query = {**query_of(url), **changed}
    return split._replace(query=urllib.parse.urlencode(query)).geturl()


def visit(url: str) -> tuple[int, str]:
    """The browser arriving at the loopback redirect: its status and page."""
    try:
        with urllib.request.urlopen(url, timeout=10) as page:
            return page.status, page.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def test_a_browser_sign_in_returns_the_providers_id_token_for_the_nonce_asked(
    idp: IdentityProvider,
) -> None:
    token, url = signing_in(idp, "the-digest-of-one-act")
    asked = query_of(url)
    back = idp.browser("olu").follow(url)
    status, page = visit(back)
    claims: dict[str, Any] = unverified_claims(token.result(timeout=30)) or {}

    redirect = urllib.parse.urlsplit(asked["redirect_uri"])
    assert (redirect.scheme, redirect.hostname, redirect.path) == ("http", "127.0.0.1", "/callback")
    assert back.startswith(asked["redirect_uri"] + "?")
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
    assert asked["nonce"] == "the-digest-of-one-act" and asked["max_age"] == "300"
    assert (status, "Signed in" in page) == (200, True)
    assert claims["nonce"] == "the-digest-of-one-act"
    assert (claims["iss"], claims["aud"], claims["email"]) == (
        idp.issuer,
        COMMAND_LINE_CLIENT_ID,
        "olu@example.com",
    )


def test_a_redirect_with_a_state_this_sign_in_did_not_send_is_refused(
    idp: IdentityProvider,
) -> None:
    token, url = signing_in(idp, "n")
    back = idp.browser("olu").follow(url)

    status, page = visit(with_query(back, state="a-state-of-the-attackers"))

    assert status == 400 and "Nothing was signed" in page
    with pytest.raises(SignInError, match="a state this sign-in did not send"):
        token.result(timeout=30)


def test_a_code_from_another_sign_in_is_refused_at_the_token_endpoint(
    idp: IdentityProvider,
) -> None:
    """PKCE: a code injected into this sign-in's redirect (with its own state) was issued for
    another verifier, so the provider will not exchange it."""
    browser = idp.browser("olu")
    theirs, their_url = signing_in(idp, "their-act")
    their_back = browser.follow(their_url)
    ours, our_url = signing_in(idp, "our-act")
    our_back = browser.follow(our_url)

    injected = with_query(our_back, code=query_of(their_back)["code"])
    visit(injected)

    with pytest.raises(
        SignInError, match=r"The token endpoint of .* refused the code \(400: invalid_grant"
    ):
        ours.result(timeout=30)
    visit(their_back)  # the honest sign-in still completes, with its own code
    assert (unverified_claims(theirs.result(timeout=30)) or {})["nonce"] == "their-act"

"""``lockgate login``: signs the person in at the company's identity provider, once, and
remembers the issuer and who they are, so that the commands that sign can sign as them."""

from __future__ import annotations

import argparse
import secrets

from lockgate.cli._output import CommandError, print_json
from lockgate.cli._settings import (
    Login,
    directory_path,
    local_directory,
    login_path,
    remembered_login,
)
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._issuers import TrustedIssuer, issuer_principal, unverified_claims
from lockgate.sso import SignInError, browser_sign_in

__all__ = ["log_in"]

_SCOPE_OF_CLAIM = {"email": "email", "preferred_username": "profile", "sub": None}
"""The standard scope that releases each claim a person may be named by."""


def log_in(arguments: argparse.Namespace) -> int:
    """``lockgate login [--issuer NAME]``: a sign-in through the browser, whose ID token says
    who the person is; remembered in :func:`login_path`."""
    issuer, scopes = _issuer(arguments)
    get_token = browser_sign_in(
        issuer.issuer,
        issuer.audience,
        scopes=scopes,
        max_age_seconds=issuer.max_age_seconds,
        open_browser=not arguments.no_browser,
    )
    try:
        # A sign-in that signs no act: its nonce is only this sign-in's.
        claims = unverified_claims(get_token(secrets.token_urlsafe(16))) or {}
    except SignInError as error:
        raise CommandError(str(error)) from None
    named = claims.get(issuer.principal_claim)
    if not isinstance(named, str):
        raise CommandError(
            f"The ID token of your sign-in at {issuer.name} has no {issuer.principal_claim!r} "
            "claim to name you: ask for the scope that releases it (--scopes), or name people by "
            "another claim (--principal-claim, as the Directory's issuer does)."
        )
    try:
        principal = issuer_principal(issuer.name, named)
    except IdentityError as error:
        raise CommandError(str(error)) from None
    path = login_path()
    Login(issuer, scopes, principal).write(path)
    if arguments.json:
        print_json({"issuer": issuer.name, "principal": principal, "login_file": str(path)})
        return 0
    print(
        f"Signed in at {issuer.name} as {principal} (remembered in {path}).\n"
        "decide, resume, cancel and sign now sign as you where no --as is given, with a fresh "
        f"sign-in at {issuer.name} for each act; --sso does so for start and tools call too."
    )
    return 0


def _issuer(arguments: argparse.Namespace) -> tuple[TrustedIssuer, tuple[str, ...]]:
    """The issuer to sign in at, and the scopes to ask for: the flags, else the Directory's
    ``[issuers.NAME]``, else the last login's.

    Raises:
        CommandError: no issuer is named, or what is known of it is not enough or not valid.
    """
    directory = local_directory(arguments)
    listed = directory.issuers() if directory is not None else ()
    last = remembered_login()
    name = arguments.issuer
    if name is None and len(listed) == 1:
        name = listed[0].name
    if name is None and last is not None:
        name = last.issuer.name
    if name is None:
        raise CommandError(
            "login needs --issuer NAME: the Directory's name for your identity provider "
            f"([issuers.NAME]; {directory_path(arguments)} names "
            f"{', '.join(each.name for each in listed) or 'none'})."
        )
    known = next((each for each in listed if each.name == name), None)
    if known is None and last is not None and last.issuer.name == name:
        known = last.issuer
    issuer_url = arguments.issuer_url or (known.issuer if known else None)
    client_id = arguments.client_id or (known.audience if known else None)
    if not issuer_url or not client_id:
        raise CommandError(
            f"The Directory ({directory_path(arguments)}) names no issuer {name!r}: give "
            "--issuer-url and --client-id (lockgate's client id at your identity provider), or "
            "--directory the Directory file that names it."
        )
    claim = arguments.principal_claim or (known.principal_claim if known else "email")
    try:
        issuer = TrustedIssuer(
            name,
            issuer_url,
            client_id,
            claim,
            max_age_seconds=known.max_age_seconds if known else 300,
        )
    except IdentityError as error:
        raise CommandError(str(error)) from None
    if arguments.scopes is not None:
        scopes = tuple(arguments.scopes.split())
    elif last is not None and last.issuer.name == name:
        scopes = last.scopes
    else:
        scopes = tuple(
            scope for scope in ("openid", _SCOPE_OF_CLAIM[issuer.principal_claim]) if scope
        )
    if "openid" not in scopes:
        raise CommandError(
            f"--scopes {' '.join(scopes)!r} leaves out 'openid', without which no ID token is "
            "issued."
        )
    return issuer, scopes

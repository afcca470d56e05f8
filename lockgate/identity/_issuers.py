"""People from the company's identity provider: trusted issuers, their keys, and ID tokens.

A Directory may name *trusted issuers* (``[issuers.NAME]``): an OpenID Connect provider's issuer
URL, the audience its ID tokens must name (lockgate's client id), the claim that names a person,
and rules mapping a groups (or roles) claim to lockgate roles and scopes. A person from an issuer
needs no Directory entry: they are the principal ``sso:NAME:VALUE`` (``sso:corp:ed@example.com``),
a name no Directory entry may take, so an issuer's people never collide with the Directory's.

A proof may be signed by an ID token in place of a key (``id_token``): the token's ``nonce`` is
the base64url SHA-256 of the proof's canonical JSON without it, the same digest a passkey signs
(:func:`~lockgate.identity._passkeys.passkey_challenge`), so the IdP vouches for exactly that
act. What the person holds is read from the token's groups claim each time it is judged and
kept nowhere: a person who left a group is refused at their next decision.

The issuers' keys (their JWKS) are held by an :class:`IssuerKeyring` the worker fills (it
fetches the discovery document and the JWKS, outside any workflow) or that is given a pinned
JWKS. Verification only reads memory: an update validator may not do I/O, so a token signed
with a key the keyring does not hold is refused (fails closed) and asks the keyring's owner to
fetch the keys again, which it does outside the validator; the next answer verifies.

RS256, PS256 and ES256 signatures are checked with ``cryptography`` alone (the other
algorithms, and ``none``, are refused). Pure: no I/O, no temporalio.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.identity._identity_errors import IdentityError, ProofRefused, RefusalReason
from lockgate.identity._keys import decode_base64url
from lockgate.identity._quoting import quoted

__all__ = [
    "ISSUER_PREFIX",
    "GroupGrant",
    "Holdings",
    "IssuerKeyring",
    "TrustedIssuer",
    "issuer_principal",
    "token_nonce",
    "unverified_claims",
    "verify_id_token",
]

ISSUER_PREFIX = "sso:"
"""Starts the name of every principal an issuer vouches for; no Directory entry may."""

_ALGORITHMS = ("RS256", "PS256", "ES256")
_ISSUER_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_PRINCIPAL_CLAIMS = ("email", "preferred_username", "sub")
_MAX_TOKEN_LENGTH = 16_384
_VALUE = re.compile(r"[A-Za-z0-9._@:-]+")


@dataclass(frozen=True)
class Holdings:
    """What a person from an issuer holds at one judgement: roles and scopes from their groups."""

    roles: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    authenticated_at: float | None = None
    """When the person signed in (the token's ``auth_time``, else ``iat``)."""
    methods: frozenset[str] = frozenset()
    """How they signed in: the token's ``amr`` values and its ``acr``."""


@dataclass(frozen=True)
class GroupGrant:
    """What membership of one IdP group (or role) grants in lockgate."""

    roles: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TrustedIssuer:
    """One OpenID Connect provider whose ID tokens vouch for people.

    Attributes:
        name: The issuer's short name in the Directory (``corp``): its people are ``sso:corp:...``.
        issuer: The provider's issuer URL, exactly as its tokens' ``iss`` says.
        audience: lockgate's client id at the provider (the tokens' ``aud``).
        principal_claim: The claim that names the person: ``email``, ``preferred_username`` or
            ``sub``.
        groups_claim: The claim listing the person's groups or roles (``groups``, ``roles``).
        groups: What each group grants, by the group's name as the claim lists it.
        max_age_seconds: How long after the person authenticated (``auth_time``, else ``iat``)
            a token may still sign an act.
        jwks: A pinned JWKS (``{"keys": [...]}``): the worker then never fetches the keys.
    """

    name: str
    issuer: str
    audience: str
    principal_claim: str = "email"
    groups_claim: str = "groups"
    groups: Mapping[str, GroupGrant] = field(default_factory=dict)
    max_age_seconds: float = 300
    jwks: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        where = f"issuer {quoted(self.name)}"
        if not isinstance(self.name, str) or not _ISSUER_NAME.fullmatch(self.name):
            raise IdentityError(
                f"{quoted(self.name)} is not an issuer name: use up to 32 lowercase letters, "
                "digits and '-'."
            )
        if not isinstance(self.issuer, str) or not re.match(r"https?://[^/\s]+", self.issuer):
            raise IdentityError(f"The {where} needs its issuer URL (https://...).")
        if not isinstance(self.audience, str) or not self.audience:
            raise IdentityError(f"The {where} needs its audience: lockgate's client id there.")
        if self.principal_claim not in _PRINCIPAL_CLAIMS:
            raise IdentityError(
                f"The {where} names people by {quoted(self.principal_claim)}; use one of "
                f"{', '.join(_PRINCIPAL_CLAIMS)}."
            )
        if not isinstance(self.groups_claim, str) or not self.groups_claim:
            raise IdentityError(f"The {where} needs the claim that lists groups (groups_claim).")
        seconds = self.max_age_seconds
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not (math.isfinite(seconds) and seconds > 0)
        ):
            raise IdentityError(f"The {where}'s max_age_seconds must be a positive number.")
        for group, grant in self.groups.items():
            if not isinstance(group, str) or not isinstance(grant, GroupGrant):
                raise IdentityError(f"The {where} maps each group name to a GroupGrant.")
        object.__setattr__(self, "groups", dict(self.groups))
        if self.jwks is not None:
            keys_of(self.jwks, where)

    def holdings(self, claims: Mapping[str, Any]) -> Holdings:
        """The roles and scopes the groups ``claims`` list grant (a group not mapped grants
        nothing; a claim that is not a list of strings, nothing)."""
        methods = {each for each in claims.get("amr") or () if isinstance(each, str)}
        if isinstance(claims.get("acr"), str):
            methods.add(claims["acr"])
        signed_in = _time(claims.get("auth_time", claims.get("iat")))
        listed = claims.get(self.groups_claim)
        if isinstance(listed, str):
            listed = [listed]
        if not isinstance(listed, list):
            return Holdings(authenticated_at=signed_in, methods=frozenset(methods))
        roles: set[str] = set()
        scopes: set[str] = set()
        for group in listed:
            grant = self.groups.get(group) if isinstance(group, str) else None
            if grant is not None:
                roles |= grant.roles
                scopes |= grant.scopes
        return Holdings(frozenset(roles), frozenset(scopes), signed_in, frozenset(methods))


def issuer_principal(issuer: str, value: str) -> str:
    """The principal an issuer's person is: ``sso:ISSUER:VALUE``.

    Raises:
        IdentityError: ``value`` holds characters a principal name cannot.
    """
    if not isinstance(value, str) or not _VALUE.fullmatch(value):
        raise IdentityError(
            f"{quoted(value)} cannot name a person: a principal uses letters, digits and "
            ". _ @ : - only (name people by email or preferred_username)."
        )
    return f"{ISSUER_PREFIX}{issuer}:{value}"


def token_nonce(challenge: bytes) -> str:
    """The ``nonce`` an ID token carries to sign ``challenge``: base64url without padding."""
    return base64.urlsafe_b64encode(challenge).rstrip(b"=").decode("ascii")


def unverified_claims(token: str) -> dict[str, Any] | None:
    """The claims of an ID token, read without checking its signature; None if it is not a JWT.

    Only for a client reading the token it was just handed by the provider's token endpoint (an
    answer the provider gave it directly, as OpenID Connect allows a client to trust): to see
    whom the provider signed in and that the token is for its own nonce. A worker judging a
    proof uses :func:`verify_id_token`.
    """
    parts = token.split(".") if isinstance(token, str) else []
    raw = decode_base64url(parts[1]) if len(parts) == 3 else None
    try:
        claims = json.loads(raw) if raw is not None else None
    except (ValueError, UnicodeDecodeError):
        return None
    return claims if isinstance(claims, dict) else None


def keys_of(jwks: Mapping[str, Any], where: str) -> dict[str, tuple[str, Any]]:
    """The usable signing keys of a JWKS, by ``kid``: ``(kty, public key)``.

    Keys of other types, for encryption, or without a ``kid`` are left out.

    Raises:
        IdentityError: ``jwks`` is not a JWKS, or a key in it cannot be read.
    """
    listed = jwks.get("keys") if isinstance(jwks, Mapping) else None
    if not isinstance(listed, list):
        raise IdentityError(f"The JWKS of {where} is not a JSON object with a 'keys' list.")
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    found: dict[str, tuple[str, Any]] = {}
    for key in listed:
        if not isinstance(key, Mapping) or key.get("use", "sig") != "sig":
            continue
        kid, kty = key.get("kid"), key.get("kty")
        if not isinstance(kid, str) or not kid:
            continue
        try:
            if kty == "RSA":
                public: Any = rsa.RSAPublicNumbers(
                    _integer(key["e"]), _integer(key["n"])
                ).public_key()
            elif kty == "EC" and key.get("crv") == "P-256":
                public = ec.EllipticCurvePublicNumbers(
                    _integer(key["x"]), _integer(key["y"]), ec.SECP256R1()
                ).public_key()
            else:
                continue
        except (KeyError, TypeError, ValueError) as error:
            raise IdentityError(
                f"The JWKS of {where} holds the key {quoted(kid)}, which cannot be read "
                f"({type(error).__name__})."
            ) from None
        found[kid] = (str(kty), public)
    return found


def _integer(text: object) -> int:
    raw = decode_base64url(text) if isinstance(text, str) else None
    if not raw:
        raise ValueError("not base64url")
    return int.from_bytes(raw, "big")


@dataclass
class _Cached:
    keys: dict[str, tuple[str, Any]]
    expires_at: float


class IssuerKeyring:
    """The signing keys of the trusted issuers, as their owner last fetched them.

    Lookups only read memory, so an update validator may judge with it. The worker fills it
    (:meth:`install`) from each issuer's JWKS, and refreshes it when asked (:meth:`want`): a
    token whose ``kid`` is not held, or whose issuer's keys expired, asks once and is refused;
    ``on_want`` is told (it must not block: it wakes the fetcher). Keys installed stay good
    until ``expires_at``: while the issuer cannot be reached, the keys fetched last verify until
    then, and then nothing from that issuer does.

    Args:
        clock: Unix seconds.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._cached: dict[str, _Cached] = {}
        self._wanted: set[str] = set()
        self._lock = threading.Lock()
        self.on_want: Callable[[str], None] | None = None

    def install(self, issuer: str, jwks: Mapping[str, Any], expires_at: float) -> None:
        """Holds ``issuer``'s keys from ``jwks`` until ``expires_at`` (unix seconds).

        Raises:
            IdentityError: ``jwks`` is not a JWKS.
        """
        keys = keys_of(jwks, quoted(issuer))
        with self._lock:
            self._cached = {**self._cached, issuer: _Cached(keys, expires_at)}
            self._wanted.discard(issuer)

    def key(self, issuer: TrustedIssuer, kid: str) -> tuple[str, Any] | None:
        """``issuer``'s key ``kid`` (its pinned JWKS first), or None, having asked for a fetch."""
        if issuer.jwks is not None:
            return keys_of(issuer.jwks, quoted(issuer.name)).get(kid)
        cached = self._cached.get(issuer.issuer)
        if cached is not None and self._clock() < cached.expires_at and kid in cached.keys:
            return cached.keys[kid]
        self.want(issuer.issuer)
        return None

    def holds(self, issuer: str) -> bool:
        """Whether keys of ``issuer`` are held and not expired."""
        cached = self._cached.get(issuer)
        return cached is not None and self._clock() < cached.expires_at

    def kids(self, issuer: str) -> frozenset[str]:
        """The key ids held for ``issuer`` (expired or not)."""
        cached = self._cached.get(issuer)
        return frozenset(cached.keys) if cached is not None else frozenset()

    def want(self, issuer: str) -> None:
        """Asks the owner to fetch ``issuer``'s keys again (told once until they are)."""
        with self._lock:
            if issuer in self._wanted:
                return
            self._wanted.add(issuer)
        if self.on_want is not None:
            self.on_want(issuer)

    def wanted(self) -> frozenset[str]:
        """The issuers whose keys were asked for and not installed since."""
        return frozenset(self._wanted)


def _refused(sentence: str, reason: RefusalReason = "forged") -> ProofRefused:
    return ProofRefused(reason, sentence)


def _segment(text: str, what: str) -> bytes:
    raw = decode_base64url(text)
    if raw is None:
        raise _refused(f"The ID token's {what} is not base64url.", "malformed")
    return raw


def verify_id_token(
    token: object,
    issuer: TrustedIssuer,
    keyring: IssuerKeyring,
    *,
    nonce: str,
    now: float,
    skew_seconds: float = 60,
    max_age_seconds: float | None = None,
) -> dict[str, Any]:
    """Checks an ID token from ``issuer`` that signs ``nonce``, and returns its claims.

    Checked: the compact form, the algorithm (RS256, PS256 or ES256), the key (by ``kid``, from
    the keyring), the signature, ``iss``, ``aud`` (and ``azp`` when there are several), ``exp``,
    ``iat``, that the person authenticated (``auth_time``, else ``iat``) within
    ``max_age_seconds`` (the issuer's, or less), and ``nonce``.

    Raises:
        ProofRefused: The token does not check out; the sentence says which part.
    """
    if not isinstance(token, str) or len(token) > _MAX_TOKEN_LENGTH or token.count(".") != 2:
        raise _refused("The ID token is not a signed JWT (three base64url parts).", "malformed")
    header_text, payload_text, signature_text = token.split(".")
    try:
        header = json.loads(_segment(header_text, "header"))
        claims = json.loads(_segment(payload_text, "payload"))
    except (ValueError, UnicodeDecodeError):
        raise _refused("The ID token's header or claims are not JSON.", "malformed") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise _refused("The ID token's header and claims must be JSON objects.", "malformed")
    algorithm, kid = header.get("alg"), header.get("kid")
    if algorithm not in _ALGORITHMS:
        raise _refused(
            f"The ID token is signed with {quoted(algorithm)}; lockgate accepts "
            f"{', '.join(_ALGORITHMS)} only."
        )
    if claims.get("iss") != issuer.issuer:
        raise _refused(
            f"The ID token was issued by {quoted(claims.get('iss'))}, not by the issuer "
            f"{quoted(issuer.name)} ({issuer.issuer})."
        )
    if not isinstance(kid, str):
        raise _refused("The ID token names no signing key (kid).")
    held = keyring.key(issuer, kid)
    if held is None:
        raise _refused(
            f"The ID token is signed with the key {quoted(kid)}, which this worker does not hold "
            f"for {issuer.issuer}: the keys are being fetched again (a rotation), or the issuer "
            "could not be reached and the keys held expired. Ask for a fresh token in a moment.",
            "no_public_key",
        )
    _check_signature(
        algorithm, held, (header_text + "." + payload_text).encode("ascii"), signature_text
    )
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if issuer.audience not in audiences or (
        len(audiences) > 1 and claims.get("azp") != issuer.audience
    ):
        raise _refused(
            f"The ID token is for the audience {quoted(audience)}, not lockgate's client id "
            f"{quoted(issuer.audience)} at {issuer.name}."
        )
    expires, issued = _time(claims.get("exp")), _time(claims.get("iat"))
    if expires is None or issued is None:
        raise _refused("The ID token needs numeric 'exp' and 'iat' claims.", "malformed")
    if now > expires + skew_seconds:
        raise _refused(
            "The ID token has expired: ask the identity provider for a fresh one.", "expired"
        )
    if issued > now + skew_seconds:
        raise _refused(
            "The ID token says it was issued in the future: check the clocks.", "not_yet_valid"
        )
    authenticated = _time(claims.get("auth_time", issued))
    if authenticated is None:
        raise _refused("The ID token's 'auth_time' is not a number of seconds.", "malformed")
    window = issuer.max_age_seconds
    if max_age_seconds is not None:
        window = min(window, max_age_seconds)
    if now - min(authenticated, issued) > window:
        raise _refused(
            f"The person authenticated more than {window:g} seconds ago (the window for "
            f"{issuer.name}): sign in again and answer with a fresh token.",
            "expired",
        )
    if claims.get("nonce") != nonce:
        raise _refused(
            "The ID token's nonce is not the digest of this proof: it was issued for another "
            "act (a sign-in, or another decision), and a token signs only the act it names.",
            "wrong_binding",
        )
    return claims


def _time(value: object) -> float | None:
    """``value`` as unix seconds, or None if it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _check_signature(algorithm: str, held: tuple[str, Any], signed: bytes, signature: str) -> None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding, utils

    kty, public = held
    raw = _segment(signature, "signature")
    try:
        if algorithm == "ES256":
            if kty != "EC" or len(raw) != 64:
                raise InvalidSignature
            der = utils.encode_dss_signature(
                int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
            )
            public.verify(der, signed, ec.ECDSA(hashes.SHA256()))
        elif kty != "RSA":
            raise InvalidSignature
        elif algorithm == "RS256":
            public.verify(raw, signed, padding.PKCS1v15(), hashes.SHA256())
        else:
            public.verify(
                raw,
                signed,
                padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=32),
                hashes.SHA256(),
            )
    except (InvalidSignature, binascii.Error, ValueError):
        raise _refused(
            "The ID token's signature does not match the issuer's key: it was not issued by "
            "that identity provider, or it was altered."
        ) from None


def parse_issuers(tables: object, source: str) -> list[TrustedIssuer]:
    """The ``[issuers.NAME]`` tables of a Directory file.

    Raises:
        IdentityError: A table is not a valid issuer; the sentence names it.
    """
    if not isinstance(tables, dict):
        raise IdentityError(f"{source}: 'issuers' must be tables, one [issuers.NAME] per issuer.")
    issuers = []
    fields = (
        "issuer",
        "audience",
        "principal_claim",
        "groups_claim",
        "groups",
        "max_age_seconds",
        "jwks",
    )
    for name, table in tables.items():
        where = f"{source}: issuer {quoted(name)}"
        if not isinstance(table, dict):
            raise IdentityError(f"{where} must be a table, [issuers.{name}].")
        unknown = sorted(set(table) - set(fields))
        if unknown:
            raise IdentityError(
                f"{where} has the unknown field {quoted(unknown[0])} (it takes "
                f"{', '.join(fields)})."
            )
        groups = table.get("groups", {})
        if not isinstance(groups, dict):
            raise IdentityError(f"{where}: 'groups' maps each group to {{roles, scopes}}.")
        grants: dict[str, GroupGrant] = {}
        for group, grant in groups.items():
            if not isinstance(grant, dict) or set(grant) - {"roles", "scopes"}:
                raise IdentityError(
                    f"{where}: group {quoted(group)} grants roles = [...] and scopes = [...] only."
                )
            listed = {key: grant.get(key, []) for key in ("roles", "scopes")}
            for key, names in listed.items():
                if not isinstance(names, list) or not all(
                    isinstance(each, str) and each for each in names
                ):
                    raise IdentityError(
                        f"{where}: the {key} of group {quoted(group)} must be non-empty strings."
                    )
            grants[group] = GroupGrant(frozenset(listed["roles"]), frozenset(listed["scopes"]))
        jwks = table.get("jwks")
        if isinstance(jwks, str):
            try:
                jwks = json.loads(jwks)
            except ValueError:
                raise IdentityError(f"{where}: 'jwks' is not a JWKS in JSON.") from None
        try:
            issuers.append(
                TrustedIssuer(
                    name,
                    table.get("issuer", ""),
                    table.get("audience", ""),
                    table.get("principal_claim", "email"),
                    table.get("groups_claim", "groups"),
                    grants,
                    table.get("max_age_seconds", 300),
                    jwks,
                )
            )
        except IdentityError as error:
            raise IdentityError(f"{source}: {error}") from None
    return issuers


def issuers_by_name(issuers: Iterable[TrustedIssuer]) -> dict[str, TrustedIssuer]:
    """The issuers by their names, refusing two of one name."""
    named: dict[str, TrustedIssuer] = {}
    for each in issuers:
        if each.name in named:
            raise IdentityError(f"The issuer {quoted(each.name)} is named twice.")
        named[each.name] = each
    return named

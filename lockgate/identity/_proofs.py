"""Proofs: the signed JSON object that says who authorizes exactly which act.

:meth:`Proof.parse` reads one and checks its shape (each field, its type and its limits), and
nothing else; a :class:`Signer` makes one with a principal's private key. Whether its signature
matches, the act is the one at hand and it is fresh is the
:class:`~lockgate.identity._verifier.Verifier`'s to say.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from lockgate.identity._canonical import canonical_json, to_jsonable
from lockgate.identity._identity_errors import IdentityError, ProofRefused
from lockgate.identity._issuers import Holdings, token_nonce
from lockgate.identity._keys import (
    decode_base64url,
    encode_base64url,
    public_key_text,
    read_principal_key,
)
from lockgate.identity._names import check_channel_name, check_principal_name
from lockgate.identity._quoting import kind_of, quoted

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["Proof", "Signer", "decode_signature"]

_PROOF_VERSION = 1
_NONCE_PATTERN = re.compile(r"[0-9a-f]{32}")
_SIGNATURE_LENGTH = 64
# datetime cannot show a time after 9999-12-31T23:59:59Z, and no honest proof is issued later.
_LATEST_ISSUED_AT = 253_402_300_799
# Deeper nesting than this in `authorizes` is refused rather than walked, so that a hostile proof
# cannot exhaust the interpreter's recursion limit.
_AUTHORIZES_MAX_DEPTH = 32
_PROOF_FIELDS = (
    "lockgate_proof",
    "principal",
    "channel",
    "authorizes",
    "issued_at",
    "nonce",
)
# A proof is signed by exactly one of these: an Ed25519 signature, a passkey's assertion, or an
# ID token from a trusted issuer (lockgate.identity._issuers).
_SIGNED_BY = ("signature", "passkey", "id_token")
_MAX_ID_TOKEN = 16_384
_MAX_PASSKEY_FIELD = 16_384
"""The longest text a passkey assertion's field may hold (real ones are well under 1 KiB)."""


@dataclass(frozen=True)
class Proof:
    """A parsed proof: who authorizes what, when, and their signature over it.

    Build one with :meth:`parse`; :meth:`to_dict` gives back the JSON object.

    Attributes:
        principal: Who signed it.
        channel: Where it came from (``"cli"``, ``"mcp"``, ...).
        authorizes: The act it authorizes; always has a string ``kind``.
        issued_at: When it was signed, in unix seconds.
        nonce: 32 lowercase hex characters, unique per proof.
        signature: Ed25519 signature in base64url without padding; empty for a passkey's proof.
        passkey: A WebAuthn assertion (the browser's ``credential.toJSON()``) whose challenge is
            the digest of the rest of the proof, in place of a signature.
        id_token: An ID token from a trusted issuer whose ``nonce`` is the digest of the rest of
            the proof, in place of a signature (its principal is ``sso:ISSUER:PERSON``).
        held: What a person from an issuer holds, read from their token's groups when the
            verifier checked it; never part of the proof's JSON.
    """

    principal: str
    channel: str
    authorizes: dict[str, Any]
    issued_at: int
    nonce: str
    signature: str
    passkey: dict[str, Any] | None = None
    id_token: str | None = None
    held: Holdings | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, value: object) -> Proof:
        """Reads a proof object, checking its shape but not its signature.

        Args:
            value: Anything; a proof is a JSON object (a mapping with string keys).

        Returns:
            The proof.

        Raises:
            ProofRefused: With reason ``"malformed"`` and a sentence naming what is wrong. Nothing
                else is raised, whatever ``value`` is.
        """
        fields = _proof_fields(value)
        _check_proof_version(fields)
        unexpected = sorted(set(fields) - set(_PROOF_FIELDS) - set(_SIGNED_BY))
        if unexpected:
            names = ", ".join(quoted(name) for name in unexpected)
            raise _malformed(f"it has unexpected fields {names}")
        missing = [name for name in _PROOF_FIELDS if name not in fields]
        if missing:
            raise _malformed(f"field {quoted(missing[0])} is missing")
        signed_by = [name for name in _SIGNED_BY if name in fields]
        if len(signed_by) != 1:
            raise _malformed(
                "it needs exactly one of 'signature' (an Ed25519 key's), 'passkey' (a "
                "passkey's assertion) and 'id_token' (an identity provider's)"
            )
        passkey = _proof_passkey(fields["passkey"]) if "passkey" in fields else None
        id_token = _proof_id_token(fields["id_token"]) if "id_token" in fields else None
        proof = cls(
            principal=_proof_name(fields, "principal"),
            channel=_proof_name(fields, "channel"),
            authorizes=_proof_authorizes(fields["authorizes"]),
            issued_at=_proof_issued_at(fields["issued_at"]),
            nonce=_proof_nonce(fields["nonce"]),
            signature=_proof_signature(fields["signature"]) if "signature" in fields else "",
            passkey=passkey,
            id_token=id_token,
        )
        try:
            proof.signed_bytes()
        except (ValueError, TypeError, RecursionError) as error:
            # The checks above should make this unreachable; it keeps parse's promise regardless.
            raise _malformed("it cannot be written as canonical JSON") from error
        return proof

    def unsigned_dict(self) -> dict[str, Any]:
        """Returns the proof object without its signature: the value that is signed."""
        return {
            "lockgate_proof": _PROOF_VERSION,
            "principal": self.principal,
            "channel": self.channel,
            "authorizes": self.authorizes,
            "issued_at": self.issued_at,
            "nonce": self.nonce,
        }

    def signed_bytes(self) -> bytes:
        """Returns the bytes the signature covers: canonical JSON of :meth:`unsigned_dict`."""
        return canonical_json(self.unsigned_dict())

    def to_dict(self) -> dict[str, Any]:
        """Returns the proof as the JSON object a person pastes or a client sends."""
        if self.passkey is not None:
            return {**self.unsigned_dict(), "passkey": self.passkey}
        if self.id_token is not None:
            return {**self.unsigned_dict(), "id_token": self.id_token}
        return {**self.unsigned_dict(), "signature": self.signature}


class Signer:
    """Signs proofs as one principal: with the principal's Ed25519 key, or with an ID token
    from the company's identity provider (:meth:`from_identity_provider`).

    Example:
        >>> signer = Signer.from_keys_dir("ed", "~/.lockgate/keys")  # doctest: +SKIP
        >>> signer.sign({"kind": "resume", "run": "essay:review-1a2b"})  # doctest: +SKIP
    """

    def __init__(
        self,
        principal: str,
        private_key: Ed25519PrivateKey | None,
        channel: str = "cli",
        clock: Callable[[], float] = time.time,
        *,
        get_token: Callable[[str], str] | None = None,
    ) -> None:
        """Makes a signer.

        Args:
            principal: Who signs; the name the verifier's Directory lists (a person from the
                identity provider: ``sso:ISSUER:PERSON``).
            private_key: The principal's private key; None for a signer with ``get_token``.
            channel: Where the proofs are sent from, recorded in each proof.
            clock: Returns unix seconds; injectable for tests.
            get_token: In place of a key, returns an ID token carrying the ``nonce`` it is given
                (see :meth:`from_identity_provider`).

        Raises:
            IdentityError: ``principal`` or ``channel`` is not a valid name, or the signer was
                given both a key and ``get_token``, or neither.
        """
        check_principal_name(principal)
        check_channel_name(channel)
        if (private_key is None) == (get_token is None):
            raise IdentityError(
                f"A signer for {principal} signs with a private key or with ID tokens "
                "(get_token): give exactly one."
            )
        self.principal = principal
        self.channel = channel
        self._private_key = private_key
        self._get_token = get_token
        self._clock = clock

    @classmethod
    def from_identity_provider(
        cls,
        principal: str,
        get_token: Callable[[str], str],
        channel: str = "cli",
        clock: Callable[[], float] = time.time,
    ) -> Signer:
        """Makes a signer whose proofs carry an ID token in place of a signature, one fresh
        token per proof: ``get_token(nonce)`` asks the identity provider for an ID token whose
        ``nonce`` is the digest of the rest of the proof (a sign-in with that nonce), so the
        provider vouches for exactly this act. ``principal`` is ``sso:ISSUER:PERSON``.
        :func:`lockgate.sso.browser_sign_in` makes one that signs the person in through their
        browser."""
        return cls(principal, None, channel, clock, get_token=get_token)

    @classmethod
    def from_keys_dir(
        cls,
        principal: str,
        keys_dir: str | os.PathLike[str],
        channel: str = "cli",
        clock: Callable[[], float] = time.time,
    ) -> Signer:
        """Makes a signer from the key :func:`new_identity` wrote for ``principal``.

        Args:
            principal: Who signs.
            keys_dir: The directory holding ``<principal>.key``.
            channel: Where the proofs are sent from.
            clock: Returns unix seconds; injectable for tests.

        Raises:
            IdentityError: The name is invalid or the key file is missing or unusable.
        """
        check_principal_name(principal)
        return cls(principal, read_principal_key(principal, keys_dir), channel, clock)

    @property
    def public_key(self) -> str:
        """The signer's public key in text form.

        Raises:
            IdentityError: The signer signs with ID tokens, and holds no key.
        """
        if self._private_key is None:
            raise IdentityError(
                f"{self.principal} signs with ID tokens from the identity provider: there is no "
                "public key to list."
            )
        return public_key_text(self._private_key)

    def sign(self, authorizes: Mapping[str, Any]) -> dict[str, Any]:
        """Returns a fresh proof that this principal authorizes ``authorizes``.

        Args:
            authorizes: The act, as JSON data with a string ``kind`` (``"start"``, ``"decide"``,
                ...) and whatever fields a verifier binds (``graph``, ``run``, ``gate`` ...).

        Returns:
            The proof as a JSON object, with a new nonce.

        Raises:
            IdentityError: ``authorizes`` is not JSON data or has no string ``kind``.
        """
        try:
            act = _proof_authorizes(to_jsonable(dict(authorizes)))
        except TypeError as error:
            raise IdentityError(f"Cannot sign this act: {error}.") from error
        except ProofRefused as refusal:
            raise IdentityError(
                f"Cannot sign this act, because every verifier would refuse it: {refusal}"
            ) from refusal
        unsigned: dict[str, Any] = {
            "lockgate_proof": _PROOF_VERSION,
            "principal": self.principal,
            "channel": self.channel,
            "authorizes": act,
            "issued_at": math.floor(self._clock()),
            "nonce": secrets.token_hex(16),
        }
        if self._private_key is not None:
            signature = self._private_key.sign(canonical_json(unsigned))
            return {**unsigned, "signature": encode_base64url(signature)}
        get_token = cast("Callable[[str], str]", self._get_token)  # from_identity_provider's
        challenge = hashlib.sha256(canonical_json(unsigned)).digest()
        return {**unsigned, "id_token": get_token(token_nonce(challenge))}


def _malformed(what: str) -> ProofRefused:
    return ProofRefused("malformed", f"This is not a valid lockgate proof: {what}.")


def _proof_fields(value: object) -> dict[str, object]:
    if isinstance(value, (str, bytes)):
        raise _malformed(
            f"it must be a JSON object, not {kind_of(value)} (was it pasted as quoted text?)"
        )
    if not isinstance(value, Mapping):
        raise _malformed(f"it must be a JSON object, not {kind_of(value)}")
    try:
        fields = dict(value)
    except Exception as error:
        # Any Mapping may arrive here, and a broken one may raise anything while being read.
        raise _malformed("it could not be read as an object") from error
    for name in fields:
        if not isinstance(name, str):
            raise _malformed(f"its field names must be strings, not {kind_of(name)}")
    return fields


def _check_proof_version(fields: Mapping[str, object]) -> None:
    if "lockgate_proof" not in fields:
        raise _malformed(f"field 'lockgate_proof' is missing (it should be {_PROOF_VERSION})")
    version = fields["lockgate_proof"]
    if type(version) is not int:
        raise _malformed(f"field 'lockgate_proof' must be an integer, not {kind_of(version)}")
    if version != _PROOF_VERSION:
        raise _malformed(
            f"it is version {version}, and this lockgate reads version {_PROOF_VERSION} only"
        )


def _proof_name(fields: Mapping[str, object], name: str) -> str:
    value = fields[name]
    if not isinstance(value, str):
        raise _malformed(f"field {quoted(name)} must be a string, not {kind_of(value)}")
    if not value:
        raise _malformed(f"field {quoted(name)} is empty")
    try:
        if name == "principal":
            check_principal_name(value)
        else:
            check_channel_name(value)
    except IdentityError as error:
        raise _malformed(f"field {quoted(name)} is invalid: {error}") from error
    return value


def _proof_authorizes(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _malformed(f"field 'authorizes' must be an object, not {kind_of(value)}")
    act = _json_copy(value, "authorizes", depth=0)
    assert isinstance(act, dict)
    kind = act.get("kind")
    if not isinstance(kind, str) or not kind:
        raise _malformed("field 'authorizes' must have a non-empty string 'kind'")
    return act


def _json_copy(value: object, where: str, depth: int) -> Any:
    """Returns a plain JSON copy of ``value``, refusing anything canonical JSON cannot hold."""
    if depth > _AUTHORIZES_MAX_DEPTH:
        raise _malformed(f"{where} is nested more than {_AUTHORIZES_MAX_DEPTH} levels deep")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        # Past 2**63 other languages' JSON readers lose precision, and Python refuses to print
        # integers of more than 4300 digits.
        if not -(2**63) <= value < 2**63:
            raise _malformed(f"{where} holds an integer outside the 64-bit range")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _malformed(f"{where} holds {value}, which JSON cannot represent")
        return value
    if isinstance(value, str):
        _check_unicode(value, where)
        return value
    if isinstance(value, (list, tuple)):
        return [
            _json_copy(item, f"{where}[{index}]", depth + 1) for index, item in enumerate(value)
        ]
    if isinstance(value, Mapping):
        try:
            items = list(value.items())
        except Exception as error:
            # See _proof_fields: an arbitrary Mapping may fail in arbitrary ways.
            raise _malformed(f"{where} could not be read as an object") from error
        copy: dict[str, Any] = {}
        for key, item in items:
            if not isinstance(key, str):
                raise _malformed(f"{where} has a field name that is {kind_of(key)}, not a string")
            _check_unicode(key, where)
            copy[key] = _json_copy(item, f"{where}.{key}", depth + 1)
        return copy
    raise _malformed(f"{where} holds {kind_of(value)}, which is not JSON data")


def _check_unicode(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise _malformed(f"{where} holds text that is not valid Unicode") from error


def _proof_issued_at(value: object) -> int:
    if type(value) is not int:
        raise _malformed(
            f"field 'issued_at' must be an integer of unix seconds, not {kind_of(value)}"
        )
    if not 0 <= value <= _LATEST_ISSUED_AT:
        raise _malformed("field 'issued_at' is not a time between 1970 and 9999 in unix seconds")
    return value


def _proof_nonce(value: object) -> str:
    if not isinstance(value, str) or not _NONCE_PATTERN.fullmatch(value):
        raise _malformed("field 'nonce' must be 32 lowercase hexadecimal characters")
    return value


def _proof_signature(value: object) -> str:
    if not isinstance(value, str):
        raise _malformed(f"field 'signature' must be a string, not {kind_of(value)}")
    raw = decode_base64url(value)
    if raw is None:
        raise _malformed("field 'signature' is not base64url without padding")
    if len(raw) != _SIGNATURE_LENGTH:
        raise _malformed(f"field 'signature' is {len(raw)} bytes, not {_SIGNATURE_LENGTH}")
    return value


def _proof_passkey(value: object) -> dict[str, Any]:
    """A passkey assertion's shape: ``{id, rawId, type, response: {clientDataJSON,
    authenticatorData, signature, userHandle?}, ...}`` of short strings; the library checks the
    rest."""
    if not isinstance(value, Mapping):
        raise _malformed(f"field 'passkey' must be an object, not {kind_of(value)}")
    response = value.get("response")
    if not isinstance(response, Mapping):
        raise _malformed("field 'passkey' has no 'response' object")
    for where, fields, required in (
        ("passkey", value, ("id", "rawId", "type")),
        ("passkey.response", response, ("clientDataJSON", "authenticatorData", "signature")),
    ):
        for name in required:
            item = fields.get(name)
            if not isinstance(item, str) or not item or len(item) > _MAX_PASSKEY_FIELD:
                raise _malformed(f"field '{where}.{name}' must be a short non-empty string")
    try:
        return cast(dict[str, Any], to_jsonable(dict(value)))
    except (TypeError, ValueError, RecursionError):
        raise _malformed("field 'passkey' is not JSON data") from None


def _proof_id_token(value: object) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= _MAX_ID_TOKEN or value.count(".") != 2:
        raise _malformed("field 'id_token' must be a signed JWT (three base64url parts)")
    return value


def decode_signature(signature: str) -> bytes:
    """Returns the bytes of a proof's signature; empty if it is not canonical base64url."""
    raw = decode_base64url(signature)
    # Proof.parse guarantees a decodable signature, but a Proof built by hand may not have one.
    return raw if raw is not None else b""

"""Passkeys: a WebAuthn assertion as a lockgate proof.

A person answering in the web inbox signs with a passkey instead of an Ed25519 key file. The
proof is the same object a :class:`~lockgate.Signer` makes, with the assertion in place of
the signature: ``{lockgate_proof, principal, channel, authorizes, issued_at, nonce, passkey}``.
The assertion's challenge is the SHA-256 of the canonical JSON of everything but ``passkey``
(:func:`passkey_challenge`), so the authenticator signs exactly what the answer authorizes; the
worker recomputes the digest from the proof it judges and needs no ceremony state.

The Directory lists each principal's passkeys (credential id and COSE public key, added by an
administrator: nothing self-enrols); the worker's :class:`RelyingParty` says for which site and
origins an assertion counts. User verification is always required. The authenticator's counter is
not kept: a replay is caught by the proof's nonce, spent once, as for every proof.

Verification uses the ``webauthn`` library (``pip install 'lockgate[inbox]'``), imported when a
passkey proof first arrives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lockgate.identity._canonical import canonical_json
from lockgate.identity._identity_errors import IdentityError, ProofRefused
from lockgate.identity._keys import decode_base64url
from lockgate.identity._quoting import quoted

__all__ = ["Passkey", "RelyingParty", "passkey_challenge", "verify_passkey_assertion"]

_COSE_PREFIX = "cose:"


@dataclass(frozen=True)
class Passkey:
    """One registered passkey of a principal, as the Directory lists it.

    Attributes:
        credential_id: The credential's id, base64url (what the browser calls ``credential.id``).
        public_key: ``cose:`` and the COSE_Key bytes in base64url.
    """

    credential_id: str
    public_key: str

    def __post_init__(self) -> None:
        if not isinstance(self.credential_id, str) or not self.credential_id:
            raise IdentityError("A passkey's credential_id must be a non-empty base64url string.")
        if decode_base64url(self.credential_id) is None:
            raise IdentityError(
                f"A passkey's credential_id {quoted(self.credential_id)} is not base64url."
            )
        self.cose_key()

    def cose_key(self) -> bytes:
        """The COSE_Key bytes.

        Raises:
            IdentityError: ``public_key`` is not ``cose:<base64url>``.
        """
        if not isinstance(self.public_key, str) or not self.public_key.startswith(_COSE_PREFIX):
            raise IdentityError(
                "A passkey's public_key is 'cose:' and its COSE key in base64url, as the inbox "
                "prints it when the passkey is registered."
            )
        key = decode_base64url(self.public_key[len(_COSE_PREFIX) :])
        if not key:
            raise IdentityError("A passkey's public_key is not base64url COSE key bytes.")
        return key


@dataclass(frozen=True)
class RelyingParty:
    """The site passkeys are registered for, and the exact origins their assertions may come from.

    Attributes:
        id: The relying party id: the inbox's host name (``localhost``, ``inbox.example.com``).
        origins: The inbox's origins, exactly (``http://localhost:8240``).
    """

    id: str
    origins: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.id or not isinstance(self.id, str):
            raise IdentityError("A relying party needs its id, the inbox's host name.")
        origins = tuple(self.origins)
        if not origins:
            raise IdentityError("A relying party needs at least one origin.")
        for origin in origins:
            host = urlsplit(origin).hostname
            if host is None or not (host == self.id or host.endswith("." + self.id)):
                raise IdentityError(
                    f"The origin {quoted(origin)} is not on the relying party {quoted(self.id)}."
                )
        object.__setattr__(self, "origins", origins)

    @classmethod
    def of_origins(cls, origins: Iterable[str]) -> RelyingParty:
        """The relying party of the first origin's host, accepting all of ``origins``."""
        listed = tuple(origins)
        host = urlsplit(listed[0]).hostname if listed else None
        if not host:
            raise IdentityError("A passkey origin must be a URL such as http://localhost:8240.")
        return cls(host, listed)


def passkey_challenge(unsigned: Mapping[str, Any]) -> bytes:
    """The challenge a passkey signs for a proof: SHA-256 of the proof's canonical JSON without
    its ``passkey`` (the same bytes an Ed25519 proof signs)."""
    return hashlib.sha256(canonical_json(dict(unsigned))).digest()


def _refused(sentence: str) -> ProofRefused:
    return ProofRefused("forged", sentence)


def verify_passkey_assertion(
    assertion: Mapping[str, Any],
    challenge: bytes,
    principal: str,
    passkeys: Iterable[Passkey],
    party: RelyingParty | None,
) -> None:
    """Checks a WebAuthn assertion: one of ``principal``'s passkeys, over ``challenge``, from one
    of the relying party's origins, with the user verified.

    Raises:
        ProofRefused: It does not check out; the sentence says which part.
    """
    if party is None:
        raise ProofRefused(
            "no_public_key",
            "This worker accepts no passkeys: it was started without the inbox's origin "
            "(LockgatePlugin(relying_party=...), `lockgate worker --passkey-origin URL`).",
        )
    credential_id = assertion.get("id")
    listed = {each.credential_id: each for each in passkeys}
    passkey = listed.get(credential_id) if isinstance(credential_id, str) else None
    if passkey is None:
        raise _refused(
            f"The passkey that signed this is not one the directory lists for {principal}: "
            "register it in the inbox and have an administrator add the entry it prints."
        )
    try:
        import webauthn
        from webauthn.helpers.exceptions import InvalidAuthenticationResponse
    except ImportError:  # pragma: no cover - depends on the installation
        raise ProofRefused(
            "no_public_key",
            "This worker cannot check passkeys: install lockgate's inbox extra "
            "(pip install 'lockgate[inbox]').",
        ) from None
    try:
        webauthn.verify_authentication_response(
            credential=dict(assertion),
            expected_challenge=challenge,
            expected_rp_id=party.id,
            expected_origin=list(party.origins),
            credential_public_key=passkey.cose_key(),
            # No counter is kept (synced passkeys report 0); the nonce stops a replay.
            credential_current_sign_count=0,
            require_user_verification=True,
        )
    except InvalidAuthenticationResponse as error:
        detail = str(error).split(" See __cause__")[0].rstrip(". ")
        raise _refused(f"The passkey's assertion does not check out: {detail}.") from None
    except Exception as error:  # a malformed assertion may break the parser anywhere
        raise _refused(
            f"The passkey's assertion could not be read ({type(error).__name__})."
        ) from None

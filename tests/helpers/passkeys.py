"""A software passkey for tests that need no browser: it signs WebAuthn assertions as an
authenticator does (ES256, the algorithm most platform passkeys use)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from lockgate.identity._passkeys import Passkey, passkey_challenge

_USER_PRESENT = 0x01
_USER_VERIFIED = 0x04


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class SoftwarePasskey:
    """One ES256 credential on a software authenticator for ``rp_id``."""

    rp_id: str = "localhost"
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    credential_id: bytes = field(default_factory=lambda: secrets.token_bytes(16))
    counter: int = 0

    def directory_entry(self) -> Passkey:
        """What the Directory lists for this passkey."""
        numbers = self.key.public_key().public_numbers()
        cose = cbor2.dumps(
            {
                1: 2,  # kty: EC2
                3: -7,  # alg: ES256
                -1: 1,  # crv: P-256
                -2: numbers.x.to_bytes(32, "big"),
                -3: numbers.y.to_bytes(32, "big"),
            }
        )
        return Passkey(b64url(self.credential_id), "cose:" + b64url(cose))

    def assertion(
        self,
        challenge: bytes,
        origin: str,
        *,
        user_verified: bool = True,
        rp_id: str | None = None,
    ) -> dict[str, Any]:
        """An assertion over ``challenge`` from ``origin``, as ``credential.toJSON()`` gives it."""
        self.counter += 1
        flags = _USER_PRESENT | (_USER_VERIFIED if user_verified else 0)
        authenticator_data = (
            hashlib.sha256((rp_id or self.rp_id).encode()).digest()
            + bytes([flags])
            + struct.pack(">I", self.counter)
        )
        client_data = json.dumps(
            {"type": "webauthn.get", "challenge": b64url(challenge), "origin": origin},
            separators=(",", ":"),
        ).encode()
        signature = self.key.sign(
            authenticator_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256())
        )
        return {
            "id": b64url(self.credential_id),
            "rawId": b64url(self.credential_id),
            "type": "public-key",
            "response": {
                "clientDataJSON": b64url(client_data),
                "authenticatorData": b64url(authenticator_data),
                "signature": b64url(signature),
            },
            "clientExtensionResults": {},
        }

    def sign(self, unsigned: Mapping[str, Any], origin: str, **options: Any) -> dict[str, Any]:
        """``unsigned`` (a proof without its signature) signed with this passkey."""
        return {
            **unsigned,
            "passkey": self.assertion(passkey_challenge(unsigned), origin, **options),
        }


def unsigned_proof(principal: str, authorizes: Mapping[str, Any], issued_at: int) -> dict[str, Any]:
    """A proof's fields before its signature, as the inbox page builds them."""
    return {
        "lockgate_proof": 1,
        "principal": principal,
        "channel": "web",
        "authorizes": dict(authorizes),
        "issued_at": issued_at,
        "nonce": secrets.token_hex(16),
    }

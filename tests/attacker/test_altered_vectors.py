"""An attacker alters a conformance vector's proof by one byte, and the verifier refuses it.

The vectors of docs/proof-vectors.json are good proofs anyone can read (the key is a published
test key, and any proof a run took is in its history). Altering one byte of what a proof signs,
of its signature, or of the public key the Directory lists for its signer must never give a
proof the verifier accepts. These pin what the verifier already did before the vectors existed:
the spec and the vectors add a surface to check other signers against, not a new check.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from lockgate.identity._directory import Directory, DirectoryEntry
from lockgate.identity._identity_errors import IdentityError, ProofRefused
from lockgate.identity._keys import encode_base64url
from lockgate.identity._verifier import Verifier
from tests.identity.test_proof_vectors import PROOFS, VECTORS, names, verifier

PRINCIPAL = VECTORS["key"]["principal"]


def refused(proof: object, expected: dict[str, Any], listed: Directory | None = None) -> str:
    try:
        verifier(listed=listed).verify(proof, expected)
    except ProofRefused as refusal:
        return refusal.reason
    return "accepted"


def one_character_changes(text: str) -> list[str]:
    """``text`` with each of its characters changed to another (one at a time)."""
    changed = []
    for index, character in enumerate(text):
        other = "b" if character != "b" else "c"
        changed.append(text[:index] + other + text[index + 1 :])
    return changed


@pytest.mark.parametrize("vector", PROOFS, ids=names(PROOFS))
def test_a_binding_field_changed_by_one_character_is_refused_as_forged(
    vector: dict[str, Any],
) -> None:
    tried = 0
    for field, value in vector["authorizes"].items():
        if not isinstance(value, str):
            continue
        for changed in one_character_changes(value):
            proof = json.loads(json.dumps(vector["proof"]))
            proof["authorizes"][field] = changed
            # Checked for the act the altered proof claims, so only the signature can refuse it.
            assert refused(proof, proof["authorizes"]) == "forged", (field, changed)
            tried += 1
    assert tried > 40


@pytest.mark.parametrize("vector", PROOFS, ids=names(PROOFS))
def test_each_byte_of_the_signed_bytes_altered_is_refused(vector: dict[str, Any]) -> None:
    signed = vector["canonical"].encode("utf-8")
    outcomes: dict[str, int] = {}
    for index in range(len(signed)):
        altered = bytearray(signed)
        altered[index] ^= 0x01
        try:
            unsigned = json.loads(bytes(altered).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            outcomes["not JSON"] = outcomes.get("not JSON", 0) + 1
            continue
        if not isinstance(unsigned, dict):
            outcomes["not an object"] = outcomes.get("not an object", 0) + 1
            continue
        proof = {**unsigned, "signature": vector["signature"]}
        authorizes = unsigned.get("authorizes")
        expected = authorizes if isinstance(authorizes, dict) else vector["authorizes"]
        reason = refused(proof, expected)
        assert reason != "accepted", bytes(altered)
        outcomes[reason] = outcomes.get(reason, 0) + 1
    assert sum(outcomes.values()) == len(signed)
    assert outcomes["forged"] > 0


@pytest.mark.parametrize("vector", PROOFS, ids=names(PROOFS))
def test_each_byte_of_the_signature_altered_is_refused_as_forged(vector: dict[str, Any]) -> None:
    signature = base64.urlsafe_b64decode(vector["signature"] + "==")
    for index in range(len(signature)):
        altered = bytearray(signature)
        altered[index] ^= 0x80
        proof = {**vector["proof"], "signature": encode_base64url(bytes(altered))}
        assert refused(proof, vector["authorizes"]) == "forged", index


@pytest.mark.parametrize("vector", PROOFS[:3], ids=names(PROOFS[:3]))
def test_each_byte_of_the_listed_public_key_altered_refuses_the_proof(
    vector: dict[str, Any],
) -> None:
    raw = base64.urlsafe_b64decode(VECTORS["key"]["public_key"].removeprefix("ed25519:") + "=")
    for index in range(len(raw)):
        altered = bytearray(raw)
        altered[index] ^= 0x01
        text = "ed25519:" + encode_base64url(bytes(altered))
        try:
            listed = Directory(entries=[DirectoryEntry(PRINCIPAL, text)])
        except IdentityError:
            continue  # not a point on the curve: no Directory lists it at all
        assert refused(vector["proof"], vector["authorizes"], listed) == "forged", index


def test_the_unaltered_vectors_are_accepted_so_the_refusals_above_mean_something() -> None:
    assert all(refused(v["proof"], v["authorizes"]) == "accepted" for v in PROOFS)
    assert isinstance(verifier(), Verifier)

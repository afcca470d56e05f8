"""The conformance vectors of proof format 1 (docs/proof-vectors.json, specified by
docs/proofs.md) against lockgate's own canonicaliser, binder, signer and verifier.

Signers in other languages are checked against the same file (the TypeScript signer's Node test
reads it too), so a change to any of these functions that changes a byte of what is signed
fails here first: the format is the file, not whatever the code does today.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from lockgate.identity import _proofs
from lockgate.identity._bindings import (
    cancel_binding,
    confirm_binding,
    decide_binding,
    gate_subject,
    resume_binding,
    schedule_binding,
    start_binding,
    tool_binding,
)
from lockgate.identity._canonical import canonical_json, digest
from lockgate.identity._directory import Directory, DirectoryEntry
from lockgate.identity._identity_errors import ProofRefused
from lockgate.identity._keys import load_cryptography, public_key_text
from lockgate.identity._proofs import Signer
from lockgate.identity._verifier import Verifier

VECTORS_FILE = Path(__file__).resolve().parents[2] / "docs" / "proof-vectors.json"
VECTORS: dict[str, Any] = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
PROOFS: list[dict[str, Any]] = VECTORS["proofs"]
KINDS = ("start", "decide", "resume", "cancel", "tool", "confirm", "schedule")


def names(vectors: list[dict[str, Any]]) -> list[str]:
    return [vector["name"] for vector in vectors]


def binding_of(kind: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The binding lockgate's own functions make from a vector's arguments."""
    a = arguments
    if kind == "start":
        return start_binding(a["graph"], a["run"], a["execution"], a["inputs"], a["version"])
    if kind == "decide":
        subject = gate_subject(a["target"], a["choices"])
        return decide_binding(
            a["graph"],
            a["run"],
            a["execution"],
            a["gate"],
            a["choice"],
            subject,
            a["evidence"],
            a["waiver"],
            a["comment"],
        )
    if kind == "resume":
        return resume_binding(a["graph"], a["run"], a["execution"], a["node"])
    if kind == "cancel":
        return cancel_binding(a["graph"], a["run"], a["execution"], a["reason"])
    if kind == "tool":
        return tool_binding(a["tool"], a["arguments"], a["request"], a["execution"])
    if kind == "confirm":
        return confirm_binding(a["request"], a["token"])
    if kind == "schedule":
        return schedule_binding(
            a["graph"], a["schedule"], a["inputs"], a["not_before"], a["not_after"], a["version"]
        )
    raise AssertionError(f"no binding of kind {kind!r}")


def vector_key() -> Any:
    seed = bytes.fromhex(VECTORS["key"]["seed_hex"])
    return load_cryptography().Ed25519PrivateKey.from_private_bytes(seed)


def directory(**replaced: str) -> Directory:
    listed = {**VECTORS["directory"], **replaced}
    return Directory(entries=[DirectoryEntry(name, key) for name, key in listed.items()])


def verifier(at: int | None = None, listed: Directory | None = None) -> Verifier:
    settings = VECTORS["verifier"]
    moment = settings["at"] if at is None else at
    return Verifier(
        listed or directory(),
        window_seconds=settings["window_seconds"],
        future_skew_seconds=settings["future_skew_seconds"],
        clock=lambda: moment,
    )


def test_the_vectors_are_format_1_and_cover_every_kind_of_proof() -> None:
    assert VECTORS["format"] == "lockgate_proof 1"
    assert _proofs._PROOF_VERSION == 1
    assert {vector["authorizes"]["kind"] for vector in PROOFS} == set(KINDS)
    assert all(vector["unsigned"]["lockgate_proof"] == 1 for vector in PROOFS)


def test_the_fixed_key_is_the_one_the_vectors_list() -> None:
    key = vector_key()
    assert public_key_text(key) == VECTORS["key"]["public_key"]
    assert VECTORS["directory"][VECTORS["key"]["principal"]] == VECTORS["key"]["public_key"]
    serialization = load_cryptography().serialization
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    assert pem.decode("ascii") == VECTORS["key"]["private_key_pem"]


@pytest.mark.parametrize("case", VECTORS["canonical"], ids=names(VECTORS["canonical"]))
def test_canonical_json_writes_each_value_as_the_vector_says(case: dict[str, Any]) -> None:
    written = canonical_json(case["value"])
    assert written == case["canonical"].encode("utf-8")
    assert digest(case["value"]) == case["digest"]
    assert case["digest"] == "sha256:" + hashlib.sha256(written).hexdigest()


@pytest.mark.parametrize(
    "case", VECTORS["refused_canonical"], ids=names(VECTORS["refused_canonical"])
)
def test_canonical_json_refuses_what_no_proof_can_name(case: dict[str, Any]) -> None:
    value = json.loads(case["value_json"])
    with pytest.raises(UnicodeEncodeError):
        canonical_json(value)


@pytest.mark.parametrize("vector", PROOFS, ids=names(PROOFS))
def test_the_binding_functions_make_exactly_what_each_vector_authorizes(
    vector: dict[str, Any],
) -> None:
    made = binding_of(vector["binding"]["kind"], vector["binding"]["arguments"])
    assert made == vector["authorizes"]
    assert vector["unsigned"]["authorizes"] == vector["authorizes"]


@pytest.mark.parametrize("vector", PROOFS, ids=names(PROOFS))
def test_the_signed_bytes_are_the_canonical_json_of_the_proof_without_its_signature(
    vector: dict[str, Any],
) -> None:
    signed = _proofs.Proof.parse(vector["proof"]).signed_bytes()
    assert signed == canonical_json(vector["unsigned"]) == vector["canonical"].encode("utf-8")
    assert hashlib.sha256(signed).hexdigest() == vector["sha256"]


@pytest.mark.parametrize("vector", PROOFS, ids=names(PROOFS))
def test_the_signer_makes_each_vector_byte_for_byte(
    vector: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    unsigned = vector["unsigned"]
    monkeypatch.setattr(secrets, "token_hex", lambda _size: unsigned["nonce"])
    signer = Signer(
        unsigned["principal"],
        vector_key(),
        channel=unsigned["channel"],
        clock=lambda: unsigned["issued_at"] + 0.75,
    )
    proof = signer.sign(vector["authorizes"])
    assert proof == vector["proof"]
    assert proof["signature"] == vector["signature"]
    assert json.dumps(proof, sort_keys=True) == json.dumps(vector["proof"], sort_keys=True)


@pytest.mark.parametrize("vector", PROOFS, ids=names(PROOFS))
def test_the_verifier_accepts_each_vector_for_exactly_its_act(vector: dict[str, Any]) -> None:
    actor = verifier().verify(vector["proof"], vector["authorizes"])
    assert actor.actor == VECTORS["key"]["principal"]
    assert actor.verified is True
    assert actor.channel == VECTORS["key"]["channel"]


@pytest.mark.parametrize("vector", PROOFS, ids=names(PROOFS))
def test_each_signature_is_ed25519_over_the_canonical_bytes(vector: dict[str, Any]) -> None:
    signature = base64.urlsafe_b64decode(vector["signature"] + "==")
    public = vector_key().public_key()
    public.verify(signature, vector["canonical"].encode("utf-8"))  # raises if it is not


@pytest.mark.parametrize("vector", VECTORS["refused_proofs"], ids=names(VECTORS["refused_proofs"]))
def test_the_verifier_refuses_each_negative_vector_for_its_reason(vector: dict[str, Any]) -> None:
    principal = VECTORS["key"]["principal"]
    listed = directory(**{principal: vector["public_key"]}) if "public_key" in vector else None
    with pytest.raises(ProofRefused) as refused:
        verifier(vector.get("at"), listed).verify(vector["proof"], vector["expected"])
    assert refused.value.reason == vector["refusal"]
    assert refused.value.sentence

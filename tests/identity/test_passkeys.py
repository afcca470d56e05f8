"""Passkey proofs: a WebAuthn assertion over the proof's digest, checked by the worker's Verifier.

A software ES256 authenticator signs here; the browser's own passkeys are in
``tests/serving/test_inbox.py``.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from lockgate import Directory, RelyingParty
from lockgate.errors import IdentityError, ProofRefused
from lockgate.identity._directory import DirectoryEntry
from lockgate.identity._verifier import Verifier
from tests.helpers.passkeys import SoftwarePasskey, unsigned_proof

ORIGIN = "http://localhost:8240"
PARTY = RelyingParty.of_origins([ORIGIN])
RESUME = {"kind": "resume", "graph": "essay:review", "run": "essay:review-1"}


def verifier_for(*passkeys: SoftwarePasskey, party: RelyingParty | None = PARTY) -> Verifier:
    entry = DirectoryEntry(
        "ed",
        roles=frozenset({"editor"}),
        passkeys=tuple(each.directory_entry() for each in passkeys),
    )
    return Verifier(Directory([entry]), relying_party=party)


def signed(passkey: SoftwarePasskey, **options: Any) -> dict[str, Any]:
    return passkey.sign(unsigned_proof("ed", RESUME, int(time.time())), ORIGIN, **options)


def refusal(verifier: Verifier, proof: Any) -> ProofRefused:
    with pytest.raises(ProofRefused) as refused:
        verifier.verify(proof, RESUME)
    return refused.value


def test_a_passkey_proof_verifies_as_its_principal() -> None:
    passkey = SoftwarePasskey()

    actor = verifier_for(passkey).verify(signed(passkey), RESUME)

    assert (actor.actor, actor.verified, actor.channel) == ("ed", True, "web")


def test_a_proof_changed_after_its_passkey_signed_is_refused() -> None:
    passkey = SoftwarePasskey()
    proof = signed(passkey)
    proof["authorizes"] = {**RESUME, "run": "essay:review-2"}

    refused = refusal(verifier_for(passkey), proof)

    assert refused.reason == "forged"
    assert "does not check out" in refused.sentence


def test_an_assertion_from_another_origin_or_site_is_refused() -> None:
    passkey = SoftwarePasskey()
    elsewhere = passkey.sign(
        unsigned_proof("ed", RESUME, int(time.time())), "http://localhost:9999"
    )
    other_site = signed(passkey, rp_id="evil.example")

    assert refusal(verifier_for(passkey), elsewhere).reason == "forged"
    assert refusal(verifier_for(passkey), other_site).reason == "forged"


def test_an_assertion_without_user_verification_is_refused() -> None:
    passkey = SoftwarePasskey()

    refused = refusal(verifier_for(passkey), signed(passkey, user_verified=False))

    assert "verif" in refused.sentence.lower()


def test_a_passkey_the_directory_does_not_list_for_the_principal_is_refused() -> None:
    listed, unlisted = SoftwarePasskey(), SoftwarePasskey()

    refused = refusal(verifier_for(listed), signed(unlisted))

    assert "not one the directory lists for ed" in refused.sentence


def test_a_worker_without_a_relying_party_refuses_passkeys_and_says_why() -> None:
    passkey = SoftwarePasskey()

    refused = refusal(verifier_for(passkey, party=None), signed(passkey))

    assert "--passkey-origin" in refused.sentence


@pytest.mark.parametrize(
    "damage",
    [
        lambda proof: proof.update(passkey="not an object"),
        lambda proof: proof["passkey"].pop("response"),
        lambda proof: proof["passkey"]["response"].update(signature=7),
        lambda proof: proof.update(signature="A" * 86),
        lambda proof: proof["passkey"]["response"].update(clientDataJSON="!!"),
    ],
)
def test_a_malformed_passkey_proof_is_refused_with_a_sentence(damage: Any) -> None:
    passkey = SoftwarePasskey()
    proof = signed(passkey)
    damage(proof)

    refused = refusal(verifier_for(passkey), proof)

    assert refused.reason in ("malformed", "forged")
    assert refused.sentence.endswith(".")


def test_the_directory_reads_passkeys_and_refuses_a_bad_one_by_name() -> None:
    entry = SoftwarePasskey().directory_entry()
    text = f"""
[principals.ed]
roles = ["editor"]

[[principals.ed.passkeys]]
credential_id = "{entry.credential_id}"
public_key = "{entry.public_key}"
"""
    directory = Directory.from_toml(text)

    assert directory.entry("ed") is not None
    assert directory.entry("ed").passkeys == (entry,)  # type: ignore[union-attr]
    with pytest.raises(IdentityError, match=r"principal 'ed'.*public_key"):
        Directory.from_toml(text.replace("cose:", "ed25519:"))
    with pytest.raises(IdentityError, match="unknown field 'counter'"):
        Directory.from_toml(text + "counter = 3\n")


def test_a_relying_party_refuses_an_origin_off_its_site() -> None:
    with pytest.raises(IdentityError, match="not on the relying party"):
        RelyingParty("localhost", ("http://evil.example:8240",))

"""Keys, proofs, the Directory, verification, and what a start or a call proof names
(lockgate.identity)."""

from __future__ import annotations

import logging
import math
import os
import pickle
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockgate.gates._authority import Authority
from lockgate.gates._judgements import judge_call, judge_start, judge_start_inputs
from lockgate.identity._actors import Actor
from lockgate.identity._bindings import start_binding, tool_binding
from lockgate.identity._directory import Directory, DirectoryEntry
from lockgate.identity._identity_errors import IdentityError, ProofRefused
from lockgate.identity._keys import (
    generate_private_key,
    new_identity,
    parse_public_key,
    public_key_text,
    read_private_key,
    write_private_key,
)
from lockgate.identity._proofs import Proof, Signer
from lockgate.identity._verifier import Verifier

ISSUED_AT = 1_764_452_400  # 2025-11-29T21:40:00Z
DECIDE = {
    "kind": "decide",
    "graph": "essay:review",
    "run": "essay:review-1a2b",
    "gate": "editor_call#1",
    "choice": "publish_as_is",
}


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ed_key() -> Ed25519PrivateKey:
    return generate_private_key()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(ISSUED_AT)


@pytest.fixture
def directory(ed_key: Ed25519PrivateKey) -> Directory:
    return Directory(
        entries=[
            DirectoryEntry("ed", public_key_text(ed_key), frozenset({"editor"}), frozenset()),
            DirectoryEntry("ghost", None),
        ]
    )


@pytest.fixture
def signer(ed_key: Ed25519PrivateKey, clock: FakeClock) -> Signer:
    return Signer("ed", ed_key, clock=clock)


@pytest.fixture
def verifier(directory: Directory, clock: FakeClock) -> Verifier:
    return Verifier(directory, clock=clock)


@pytest.fixture
def authority(directory: Directory, clock: FakeClock) -> Authority:
    return Authority(directory, clock=clock)


def refusal_of(verifier: Verifier, value: object, expected: Any = DECIDE) -> ProofRefused:
    outcome = verifier.check(value, expected)
    assert isinstance(outcome, ProofRefused), outcome
    return outcome


# --- Keys ---------------------------------------------------------------------------------------


def test_public_key_text_round_trips_through_parse_public_key(ed_key: Ed25519PrivateKey) -> None:
    text = public_key_text(ed_key)

    assert text.startswith("ed25519:") and "=" not in text and len(text) == len("ed25519:") + 43
    assert public_key_text(parse_public_key(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ed25519:",
        "rsa:AAAA",
        "ed25519:not base64!",
        "ed25519:" + "A" * 42,
        "ed25519:" + "A" * 44,
    ],
)
def test_parse_public_key_refuses_text_that_is_not_an_ed25519_key(text: str) -> None:
    with pytest.raises(IdentityError, match="public key"):
        parse_public_key(text)


def test_a_written_private_key_is_owner_only_and_reads_back(
    tmp_path: Path, ed_key: Ed25519PrivateKey
) -> None:
    path = write_private_key(tmp_path / "nested" / "ed.key", ed_key)

    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert public_key_text(read_private_key(path)) == public_key_text(ed_key)


def test_reading_a_missing_private_key_names_the_path_and_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(IdentityError) as refused:
        read_private_key(tmp_path / "nobody.key")

    assert str(tmp_path / "nobody.key") in str(refused.value)
    assert "lockgate keys new" in str(refused.value)


def test_reading_a_file_that_is_not_a_private_key_says_so(tmp_path: Path) -> None:
    path = tmp_path / "ed.key"
    path.write_text("not a key")

    with pytest.raises(IdentityError, match="not an unencrypted private key"):
        read_private_key(path)


def test_new_identity_writes_an_owner_only_key_and_a_directory_entry_that_loads(
    tmp_path: Path,
) -> None:
    made = new_identity("ed@example.com", tmp_path / "keys")

    assert made.key_path == tmp_path / "keys" / "ed@example.com.key"
    assert stat.S_IMODE(os.stat(made.key_path).st_mode) == 0o600
    loaded = Directory.from_toml(made.directory_entry_toml)
    assert loaded.entry("ed@example.com") == DirectoryEntry("ed@example.com", made.public_key)
    assert public_key_text(read_private_key(made.key_path)) == made.public_key


def test_new_identity_refuses_to_overwrite_an_existing_key(tmp_path: Path) -> None:
    first = new_identity("ed", tmp_path)

    with pytest.raises(IdentityError, match="refusing to overwrite"):
        new_identity("ed", tmp_path)
    assert public_key_text(read_private_key(first.key_path)) == first.public_key


@pytest.mark.parametrize("name", ["", "ed smith", "ed/../root", "unverified:cli", "é"])
def test_new_identity_refuses_a_bad_principal_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(IdentityError, match="principal name"):
        new_identity(name, tmp_path)


def test_a_signer_reads_its_key_from_the_keys_directory(tmp_path: Path, clock: FakeClock) -> None:
    made = new_identity("ed", tmp_path)

    signer = Signer.from_keys_dir("ed", tmp_path, clock=clock)

    assert signer.public_key == made.public_key


# --- Signing and verifying ----------------------------------------------------------------------


def test_a_signed_proof_verifies_as_its_principal(signer: Signer, verifier: Verifier) -> None:
    actor = verifier.verify(signer.sign(DECIDE), DECIDE)

    assert actor == Actor("ed", True, "cli", "ed", actor.authorization)


def test_a_signed_proof_has_the_documented_shape(signer: Signer) -> None:
    proof = signer.sign(DECIDE)

    assert set(proof) == {
        "lockgate_proof",
        "principal",
        "channel",
        "authorizes",
        "issued_at",
        "nonce",
        "signature",
    }
    assert proof["lockgate_proof"] == 1
    assert proof["issued_at"] == ISSUED_AT
    assert Proof.parse(proof).to_dict() == proof


def test_each_signature_gets_a_fresh_nonce(signer: Signer) -> None:
    assert signer.sign(DECIDE)["nonce"] != signer.sign(DECIDE)["nonce"]


def test_the_actor_authorization_is_the_proof_nonce(signer: Signer, verifier: Verifier) -> None:
    proof = signer.sign(DECIDE)

    assert verifier.verify(proof, DECIDE).authorization == proof["nonce"]


def test_signing_an_act_without_a_kind_is_refused(signer: Signer) -> None:
    with pytest.raises(IdentityError, match="kind"):
        signer.sign({"run": "r"})


def test_a_proof_signed_by_another_key_is_refused_as_forged(
    clock: FakeClock, verifier: Verifier
) -> None:
    impostor = Signer("ed", generate_private_key(), clock=clock)

    refusal = refusal_of(verifier, impostor.sign(DECIDE))

    assert refusal.reason == "forged"
    assert "it was not signed by ed, or it was altered after signing" in refusal.sentence
    assert refusal.code == "UNAUTHORIZED"
    assert str(refusal) == refusal.sentence


def test_a_proof_altered_after_signing_is_refused_as_forged(
    signer: Signer, verifier: Verifier
) -> None:
    proof = signer.sign(DECIDE)
    proof["authorizes"] = {**DECIDE, "choice": "reject"}

    assert refusal_of(verifier, proof, {**DECIDE, "choice": "reject"}).reason == "forged"


def test_a_proof_for_another_run_is_refused_naming_the_field(
    signer: Signer, verifier: Verifier
) -> None:
    proof = signer.sign({**DECIDE, "run": "a"})

    refusal = refusal_of(verifier, proof, {**DECIDE, "run": "b"})

    assert refusal.reason == "wrong_binding"
    assert refusal.sentence == (
        "The proof authorizes run 'a', but this call is on run 'b': a proof is good only for the "
        "exact act it names."
    )


def test_a_proof_for_another_kind_of_act_is_refused_naming_both_kinds(
    signer: Signer, verifier: Verifier
) -> None:
    proof = signer.sign({**DECIDE, "kind": "resume"})

    refusal = refusal_of(verifier, proof, DECIDE)

    assert refusal.reason == "wrong_binding"
    assert "'resume'" in refusal.sentence and "'decide'" in refusal.sentence


def test_a_proof_missing_a_bound_field_is_refused(signer: Signer, verifier: Verifier) -> None:
    proof = signer.sign({"kind": "decide", "run": "essay:review-1a2b"})

    refusal = refusal_of(
        verifier, proof, {"kind": "decide", "run": "essay:review-1a2b", "gate": "g"}
    )

    assert refusal.reason == "wrong_binding"
    assert "authorizes no gate, but this call is on gate 'g'" in refusal.sentence


def test_binding_tells_true_from_one(signer: Signer, verifier: Verifier) -> None:
    proof = signer.sign({"kind": "tool", "confirmed": True})

    assert refusal_of(verifier, proof, {"kind": "tool", "confirmed": 1}).reason == "wrong_binding"


def test_a_proof_older_than_the_window_is_refused_with_its_times(
    signer: Signer, verifier: Verifier, clock: FakeClock
) -> None:
    proof = signer.sign(DECIDE)
    clock.now = ISSUED_AT + 301

    refusal = refusal_of(verifier, proof)

    assert refusal.reason == "expired"
    assert "2025-11-29T21:40:00Z" in refusal.sentence
    assert "2025-11-29T21:45:00Z" in refusal.sentence


def test_a_proof_at_the_end_of_its_window_is_still_good(
    signer: Signer, verifier: Verifier, clock: FakeClock
) -> None:
    proof = signer.sign(DECIDE)
    clock.now = ISSUED_AT + 300

    assert verifier.verify(proof, DECIDE).principal == "ed"


def test_a_proof_from_beyond_the_allowed_skew_is_not_yet_valid(
    signer: Signer, verifier: Verifier, clock: FakeClock
) -> None:
    proof = signer.sign(DECIDE)
    clock.now = ISSUED_AT - 61

    refusal = refusal_of(verifier, proof)

    assert refusal.reason == "not_yet_valid"
    assert "clock" in refusal.sentence


def test_a_proof_from_within_the_allowed_skew_is_good(
    signer: Signer, verifier: Verifier, clock: FakeClock
) -> None:
    proof = signer.sign(DECIDE)
    clock.now = ISSUED_AT - 60

    assert verifier.verify(proof, DECIDE).principal == "ed"


START_INPUTS = {"title": "Tides"}
EXECUTION = "0195c1a0-0000-7000-8000-000000000001"


def judge_essay_start(authority: Authority, proof: object, **facts: Any) -> Any:
    """Judges ``proof`` as the start of run essay:review-1a2b, execution EXECUTION, version 2."""
    run: dict[str, Any] = {
        "graph": "essay:review",
        "run": "essay:review-1a2b",
        "execution": EXECUTION,
        "version": 2,
        "inputs": START_INPUTS,
    }
    return judge_start(authority, proof, **(run | facts))


def test_a_start_proof_is_good_for_the_execution_graph_version_and_inputs_it_names(
    signer: Signer, authority: Authority
) -> None:
    proof = signer.sign(start_binding("essay:review", "essay:review-1a2b", EXECUTION, START_INPUTS))

    judged = judge_essay_start(authority, proof)

    assert judged.allowed and judged.actor is not None and judged.actor.principal == "ed"


@pytest.mark.parametrize(
    ("offered_to", "names"),
    [
        ({"execution": "0195c1a0-0000-7000-8000-000000000002"}, "another execution"),
        ({"run": "essay:review-9z9z"}, "this call is on run 'essay:review-9z9z'"),
        ({"graph": "memo:clearance"}, "starts a run of 'essay:review'"),
        ({"version": 1}, "version 2 of 'essay:review'"),
        ({"inputs": {"title": "Moons"}}, "other inputs"),
    ],
)
def test_a_start_proof_offered_to_anything_else_is_refused_with_what_differs(
    signer: Signer, authority: Authority, offered_to: dict[str, Any], names: str
) -> None:
    binding = start_binding("essay:review", "essay:review-1a2b", EXECUTION, START_INPUTS, 2)
    proof = signer.sign(binding)

    judged = judge_essay_start(authority, proof, **offered_to)

    assert not judged.allowed and judged.code == "UNAUTHORIZED"
    assert names in (judged.reason or "")


def test_a_start_proof_naming_no_version_starts_whichever_the_run_follows(
    signer: Signer, authority: Authority
) -> None:
    proof = signer.sign(start_binding("essay:review", "essay:review-1a2b", EXECUTION, START_INPUTS))

    assert judge_essay_start(authority, proof, version=1).allowed
    assert judge_essay_start(authority, proof, version=7).allowed


def test_a_start_proof_checked_against_inputs_learned_later_names_exactly_them(
    signer: Signer,
) -> None:
    """A workflow of your own learns its arguments only after its proof's validator ran: its
    handler judges them by the same rule, in its own words, and arguments no proof can name
    (NaN) are refused rather than raised inside the handler."""
    arguments = {"args": [{"ticket": 42}]}
    proof = Proof.parse(signer.sign(start_binding("support:refund", "r-1", EXECUTION, arguments)))

    named = judge_start_inputs(proof, "r-1", arguments, what="arguments")
    other = judge_start_inputs(proof, "r-1", {"args": [{"ticket": 43}]}, what="arguments")
    unnameable = judge_start_inputs(proof, "r-1", {"args": [math.nan]}, what="arguments")

    assert named.allowed and named.actor is not None and named.actor.principal == "ed"
    assert (other.allowed, other.code) == (False, "UNAUTHORIZED")
    assert "with other arguments than the ones it was started with" in (other.reason or "")
    assert (unnameable.allowed, unnameable.code) == (False, "VALIDATION_ERROR")
    assert "The arguments of run 'r-1' are not JSON data" in (unnameable.reason or "")


def test_an_answer_is_no_start_proof(signer: Signer, authority: Authority) -> None:
    judged = judge_essay_start(authority, signer.sign(DECIDE))

    assert not judged.allowed and "authorizes a 'decide'" in (judged.reason or "")


def test_a_call_proof_is_good_for_its_request_execution_tool_and_arguments(
    signer: Signer, authority: Authority
) -> None:
    proof = signer.sign(tool_binding("demo:add", {"a": 1}, "r-1", EXECUTION))
    facts: dict[str, Any] = {
        "tool": "demo:add",
        "arguments": {"a": 1},
        "request": "r-1",
        "execution": EXECUTION,
    }

    assert judge_call(authority, proof, **facts).allowed
    differences: list[dict[str, Any]] = [
        {"execution": "0195c1a0-0000-7000-8000-000000000002"},
        {"request": "r-2"},
        {"tool": "demo:subtract"},
        {"arguments": {"a": 2}},
    ]
    for differs in differences:
        judged = judge_call(authority, proof, **(facts | differs))
        assert not judged.allowed and judged.code == "UNAUTHORIZED", differs


def test_verifying_alone_spends_nothing(signer: Signer, verifier: Verifier) -> None:
    proof = signer.sign(DECIDE)

    assert verifier.verify(proof, DECIDE) == verifier.verify(proof, DECIDE)


def test_a_proof_from_an_unlisted_principal_is_refused(
    clock: FakeClock, verifier: Verifier
) -> None:
    stranger = Signer("mallory", generate_private_key(), clock=clock)

    refusal = refusal_of(verifier, stranger.sign(DECIDE))

    assert refusal.reason == "unknown_principal"
    assert "'mallory'" in refusal.sentence


def test_a_proof_from_a_principal_without_a_public_key_is_refused(
    clock: FakeClock, verifier: Verifier
) -> None:
    ghost = Signer("ghost", generate_private_key(), clock=clock)

    assert refusal_of(verifier, ghost.sign(DECIDE)).reason == "no_public_key"


def test_check_returns_the_actor_for_a_good_proof(signer: Signer, verifier: Verifier) -> None:
    assert isinstance(verifier.check(signer.sign(DECIDE), DECIDE), Actor)


def test_a_refusal_survives_pickling(signer: Signer, verifier: Verifier) -> None:
    refusal = refusal_of(verifier, "nonsense")

    copy = pickle.loads(pickle.dumps(refusal))

    assert (copy.reason, copy.sentence) == (refusal.reason, refusal.sentence)


# --- Malformed proofs ---------------------------------------------------------------------------


def valid_proof_fields() -> dict[str, Any]:
    return Signer("ed", generate_private_key(), clock=FakeClock(ISSUED_AT)).sign(DECIDE)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda proof: proof.pop("nonce"), "'nonce' is missing"),
        (lambda proof: proof.update(lockgate_proof=2), "version 2"),
        (lambda proof: proof.update(lockgate_proof=True), "not a boolean"),
        (lambda proof: proof.update(issued_at=True), "not a boolean"),
        (lambda proof: proof.update(issued_at=float(ISSUED_AT)), "not a number"),
        (lambda proof: proof.update(principal=""), "'principal' is empty"),
        (lambda proof: proof.update(nonce="abc"), "32 lowercase hexadecimal"),
        (lambda proof: proof.update(signature="not base64!"), "not base64url"),
        (lambda proof: proof.update(signature="AAAA"), "3 bytes, not 64"),
        (lambda proof: proof.update(authorizes={"run": "r"}), "string 'kind'"),
        (lambda proof: proof.update(authorizes=[]), "'authorizes' must be an object"),
        (lambda proof: proof.update(extra=1), "unexpected fields 'extra'"),
        (lambda proof: proof.update(principal="unverified:cli"), "reserved"),
    ],
)
def test_a_malformed_proof_is_refused_naming_what_is_wrong(
    change: Callable[[dict[str, Any]], object], named: str
) -> None:
    proof = valid_proof_fields()
    change(proof)

    with pytest.raises(ProofRefused) as refused:
        Proof.parse(proof)

    assert refused.value.reason == "malformed"
    assert named in refused.value.sentence


@pytest.mark.parametrize("value", [None, 1, [], "{}", b"{}", {1: "x"}])
def test_something_that_is_not_a_proof_object_is_refused_as_malformed(value: object) -> None:
    with pytest.raises(ProofRefused) as refused:
        Proof.parse(value)

    assert refused.value.reason == "malformed"


def test_authorizes_nested_too_deep_is_refused_as_malformed() -> None:
    proof = valid_proof_fields()
    nested: dict[str, Any] = {"kind": "tool"}
    for _ in range(100):
        nested = {"kind": "tool", "inner": nested}
    proof["authorizes"] = nested

    with pytest.raises(ProofRefused, match="nested more than"):
        Proof.parse(proof)


# --- Actors -------------------------------------------------------------------------------------


def test_an_actor_dict_has_exactly_the_five_fields(signer: Signer, verifier: Verifier) -> None:
    actor = verifier.verify(signer.sign(DECIDE), DECIDE)

    assert set(actor.to_dict()) == {"actor", "verified", "channel", "principal", "authorization"}
    assert Actor.from_dict(actor.to_dict()) == actor


def test_an_unverified_actor_is_named_after_its_channel() -> None:
    assert Actor.unverified("temporal-ui").to_dict() == {
        "actor": "unverified:temporal-ui",
        "verified": False,
        "channel": "temporal-ui",
        "principal": None,
        "authorization": None,
    }


def test_an_actor_dict_with_an_extra_field_is_refused() -> None:
    with pytest.raises(IdentityError, match="exactly the fields"):
        Actor.from_dict({**Actor.unverified("cli").to_dict(), "scopes": ["essay:publish"]})


def test_an_actor_that_claims_verification_without_a_proof_cannot_exist() -> None:
    with pytest.raises(IdentityError, match="Inconsistent actor"):
        Actor("ed", True, "cli", "ed", None)


# --- Directory ----------------------------------------------------------------------------------


def directory_toml(public_key: str, extra: str = "") -> str:
    return (
        "[principals.ed]\n"
        f'public_key = "{public_key}"\n'
        'roles = ["editor"]\n'
        'scopes = ["essay:publish"]\n'
        f"{extra}"
    )


def test_a_directory_file_loads_keys_roles_and_scopes(
    tmp_path: Path, ed_key: Ed25519PrivateKey
) -> None:
    path = tmp_path / "directory.toml"
    path.write_text(directory_toml(public_key_text(ed_key)))

    loaded = Directory.load(path)

    assert loaded.principals() == ("ed",)
    assert loaded.roles_of("ed") == frozenset({"editor"})
    assert loaded.scopes_of("ed") == frozenset({"essay:publish"})
    loaded_key = loaded.public_key_of("ed")
    assert loaded_key is not None
    assert public_key_text(loaded_key) == public_key_text(ed_key)


def test_an_unlisted_or_absent_principal_holds_nothing(directory: Directory) -> None:
    assert directory.scopes_of("nobody") == frozenset()
    assert directory.scopes_of(None) == frozenset()
    assert directory.roles_of(None) == frozenset()
    assert directory.entry(None) is None


def test_an_empty_directory_knows_no_one() -> None:
    assert Directory.empty().principals() == ()


def test_a_directory_entry_with_a_private_key_is_refused(
    tmp_path: Path, ed_key: Ed25519PrivateKey
) -> None:
    path = tmp_path / "directory.toml"
    path.write_text(directory_toml(public_key_text(ed_key), 'private_key = "secret"\n'))

    with pytest.raises(IdentityError) as refused:
        Directory.load(path)

    assert str(path) in str(refused.value)
    assert "'ed'" in str(refused.value)
    assert "Private keys never live in a directory" in str(refused.value)


def test_a_directory_entry_with_a_pem_private_key_as_its_public_key_is_refused() -> None:
    text = '[principals.ed]\npublic_key = "-----BEGIN PRIVATE KEY-----"\n'

    with pytest.raises(IdentityError, match="Private keys never live in a directory"):
        Directory.from_toml(text)


def test_a_directory_entry_with_a_bad_public_key_is_refused() -> None:
    with pytest.raises(IdentityError, match=r"<string>: principal 'ed'.*public key"):
        Directory.from_toml(directory_toml("ed25519:nope"))


def test_a_directory_entry_with_an_unknown_field_is_refused(ed_key: Ed25519PrivateKey) -> None:
    with pytest.raises(IdentityError, match="unknown field 'team'"):
        Directory.from_toml(directory_toml(public_key_text(ed_key), 'team = "a"\n'))


def test_a_directory_entry_with_roles_that_are_not_a_list_is_refused(
    ed_key: Ed25519PrivateKey,
) -> None:
    text = f'[principals.ed]\npublic_key = "{public_key_text(ed_key)}"\nroles = "editor"\n'

    with pytest.raises(IdentityError, match="roles must be a list"):
        Directory.from_toml(text)


def test_a_directory_with_a_reserved_principal_name_is_refused() -> None:
    with pytest.raises(IdentityError, match="reserved"):
        Directory.from_toml('[principals."unverified:cli"]\n')


def test_a_directory_with_an_unknown_top_level_key_is_refused() -> None:
    with pytest.raises(IdentityError, match="unknown top-level key 'owners'"):
        Directory.from_toml("owners = []\n")


def test_a_missing_directory_file_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(IdentityError, match="No directory file at"):
        Directory.load(tmp_path / "missing.toml")


def test_a_watched_directory_picks_up_a_changed_file(
    tmp_path: Path, ed_key: Ed25519PrivateKey
) -> None:
    path = tmp_path / "directory.toml"
    path.write_text(directory_toml(public_key_text(ed_key)))
    monotonic = FakeClock(100.0)
    watched = Directory.load(path, watch=True, clock=monotonic)
    path.write_text(directory_toml(public_key_text(ed_key)).replace('"essay:publish"', ""))

    monotonic.now += 0.5
    watched.refresh()
    before_a_second = watched.scopes_of("ed")
    monotonic.now += 0.6
    watched.refresh()
    after_a_second = watched.scopes_of("ed")
    watched.close()

    assert before_a_second == frozenset({"essay:publish"})
    assert after_a_second == frozenset()


def test_looking_up_a_watched_directory_never_reads_the_file(
    tmp_path: Path, ed_key: Ed25519PrivateKey
) -> None:
    path = tmp_path / "directory.toml"
    path.write_text(directory_toml(public_key_text(ed_key)))
    monotonic = FakeClock(100.0)
    watched = Directory.load(path, watch=True, clock=monotonic)
    watched.close()
    path.write_text(directory_toml(public_key_text(ed_key)).replace('"essay:publish"', ""))
    monotonic.now += 5

    looked_up = watched.scopes_of("ed")  # what a validator does: memory only
    watched.refresh()  # what the watcher thread does

    assert looked_up == frozenset({"essay:publish"})
    assert watched.scopes_of("ed") == frozenset()


def test_a_watched_directory_keeps_its_last_good_entries_when_the_file_breaks(
    tmp_path: Path, ed_key: Ed25519PrivateKey, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "directory.toml"
    path.write_text(directory_toml(public_key_text(ed_key)))
    monotonic = FakeClock(100.0)
    watched = Directory.load(path, watch=True, clock=monotonic)
    path.write_text("[principals.ed\n")
    monotonic.now += 2

    with caplog.at_level(logging.WARNING, logger="lockgate.identity"):
        watched.refresh()
        scopes = watched.scopes_of("ed")
    watched.close()

    assert scopes == frozenset({"essay:publish"})
    assert "Keeping the last good directory" in caplog.text


def test_a_directory_refuses_two_entries_for_one_principal(ed_key: Ed25519PrivateKey) -> None:
    with pytest.raises(IdentityError, match="listed twice"):
        Directory(entries=[DirectoryEntry("ed"), DirectoryEntry("ed")])


# --- Fuzzing ------------------------------------------------------------------------------------

FUZZ_KEY = generate_private_key()
FUZZ_PROOF = Signer("ed", FUZZ_KEY, clock=FakeClock(ISSUED_AT)).sign(DECIDE)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=40)
    | st.sampled_from(list(FUZZ_PROOF.values()))
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from([*FUZZ_PROOF, *DECIDE, "extra"]) | st.text(max_size=8)


@st.composite
def mutated_proofs(draw: st.DrawFn) -> dict[str, Any]:
    """The fuzz proof with up to three fields of it or of its act set to any JSON, or removed."""
    authorizes = dict(DECIDE)
    proof: dict[str, Any] = {**FUZZ_PROOF, "authorizes": authorizes}
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        target = draw(st.sampled_from([proof, authorizes]))
        name = draw(field_names)
        if draw(st.booleans()):
            target.pop(name, None)
        else:
            target[name] = draw(json_values)
    return proof


proof_candidates = json_values | mutated_proofs()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(proof_candidates)
def test_parsing_anything_gives_a_proof_or_a_malformed_refusal(value: object) -> None:
    try:
        parsed = Proof.parse(value)
    except ProofRefused as refusal:
        assert refusal.reason == "malformed"
    else:
        assert isinstance(parsed, Proof)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(proof_candidates)
def test_verifying_anything_gives_an_actor_or_a_refusal(value: object) -> None:
    clock = FakeClock(ISSUED_AT)
    verifier = Verifier(
        Directory(entries=[DirectoryEntry("ed", public_key_text(FUZZ_KEY))]), clock=clock
    )

    outcome = verifier.check(value, DECIDE)

    assert isinstance(outcome, (Actor, ProofRefused))


def test_a_signer_signs_with_a_key_or_with_id_tokens_never_both_or_neither(
    ed_key: Ed25519PrivateKey,
) -> None:
    with pytest.raises(IdentityError, match="give exactly one"):
        Signer("ed", ed_key, get_token=lambda nonce: "h.p.s")
    with pytest.raises(IdentityError, match="give exactly one"):
        Signer("ed", None)


def test_a_signer_by_id_token_has_no_public_key_to_list() -> None:
    signer = Signer.from_identity_provider("sso:corp:ed@example.com", lambda nonce: "h.p.s")

    with pytest.raises(IdentityError, match="signs with ID tokens"):
        _ = signer.public_key
    assert signer.sign({"kind": "resume", "run": "r"})["id_token"] == "h.p.s"

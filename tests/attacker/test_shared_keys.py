"""One key, two approvers.

A dual gate (two distinct approvers) was completed by ``rod`` and ``rod2``, a second Directory
entry holding rod's own public key. Every rule that counts people counts principals, so a
Directory that lists one key (or passkey) under two principals is refused when it is loaded,
naming both and the key's fingerprint; a watched file changed that way keeps its last good
entries, and the second name can answer nothing.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client

from lockgate import Directory, GraphClient, Signer
from lockgate.errors import IdentityError
from lockgate.identity._directory import DirectoryEntry
from lockgate.identity._keys import (
    decode_base64url,
    directory_entry_toml,
    generate_private_key,
    public_key_text,
)
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.gate_graphs import PAYMENT, POLICY_GRAPHS, DualPayment
from tests.helpers.passkeys import SoftwarePasskey
from tests.helpers.support import gate_of

pytestmark = pytest.mark.timeout(60)

OFFICER_WHO_SENDS = {"roles": ["officer"], "scopes": ["payment:send"]}


def fingerprint_of(public_key: str) -> str:
    """The fingerprint a refusal names: sha256 of the key's raw 32 bytes."""
    raw = decode_base64url(public_key.removeprefix("ed25519:"))
    assert raw is not None and len(raw) == 32
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def test_a_directory_listing_rods_key_under_rod2_is_refused_naming_both_and_the_key() -> None:
    rods_key = public_key_text(generate_private_key())
    text = directory_entry_toml("rod", rods_key, ["officer"]) + directory_entry_toml(
        "rod2", rods_key, ["officer"]
    )

    with pytest.raises(IdentityError) as refused:
        Directory.from_toml(text, source="directory.toml")

    assert str(refused.value) == (
        "directory.toml: principals 'rod' and 'rod2' hold the same public key "
        f"({fingerprint_of(rods_key)}). Every approver counts once, so each holds keys of their "
        "own: give one of them a new key (`lockgate keys new NAME`) and list each key under one "
        "principal only."
    )


def test_a_directory_built_in_code_with_one_key_under_two_names_is_refused() -> None:
    rods_key = public_key_text(generate_private_key())

    with pytest.raises(IdentityError, match="principals 'rod' and 'rod2' hold the same public key"):
        Directory([DirectoryEntry("rod", rods_key), DirectoryEntry("rod2", rods_key)])


def test_a_directory_file_with_one_key_under_two_names_is_refused_at_load(tmp_path: Path) -> None:
    rods_key = public_key_text(generate_private_key())
    path = tmp_path / "directory.toml"
    path.write_text(directory_entry_toml("rod", rods_key) + directory_entry_toml("rod2", rods_key))

    with pytest.raises(IdentityError, match=f"{path}: principals 'rod' and 'rod2'"):
        Directory.load(path)


def test_a_passkey_listed_under_two_principals_is_refused() -> None:
    passkey = SoftwarePasskey().directory_entry()
    own = SoftwarePasskey().directory_entry()

    with pytest.raises(IdentityError) as refused:
        Directory(
            [
                DirectoryEntry("rod", passkeys=(passkey,)),
                DirectoryEntry("rod2", passkeys=(own, passkey)),
            ]
        )

    assert "principals 'rod' and 'rod2' hold the same passkey (sha256:" in str(refused.value)


def test_a_passkey_credential_listed_under_two_principals_is_refused() -> None:
    passkey = SoftwarePasskey().directory_entry()
    other_key_same_credential = replace(
        SoftwarePasskey().directory_entry(), credential_id=passkey.credential_id
    )

    with pytest.raises(IdentityError, match="hold the same passkey credential"):
        Directory(
            [
                DirectoryEntry("rod", passkeys=(passkey,)),
                DirectoryEntry("rod2", passkeys=(other_key_same_credential,)),
            ]
        )


def test_distinct_keys_and_one_principal_without_a_key_load() -> None:
    directory = Directory(
        [
            DirectoryEntry("rod", public_key_text(generate_private_key())),
            DirectoryEntry("otto", public_key_text(generate_private_key())),
            DirectoryEntry("ghost"),
            DirectoryEntry("nobody"),
        ]
    )

    assert directory.principals() == ("ghost", "nobody", "otto", "rod")


async def test_a_dual_gate_cannot_be_completed_by_one_key_under_two_names(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="lockgate.identity")
    people = Identities(
        {
            "ada": {"roles": ["officer"], "scopes": ["payment:send"]},
            "cal": {"roles": ["clerk", "officer"], "scopes": ["payment:send"]},
            "rod": OFFICER_WHO_SENDS,
            "otto": OFFICER_WHO_SENDS,
        }
    )
    path = tmp_path / "directory.toml"
    path.write_text(people.toml)
    now = [0.0]
    directory = Directory.load(path, watch=True, clock=lambda: now[0])
    rods_key = people.key("rod")
    try:
        async with lockgate_worker(graphs=POLICY_GRAPHS, directory=directory):
            ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
            cal = GraphClient(temporal_client, task_queue, signer=people.signer("cal"))
            rod = GraphClient(temporal_client, task_queue, signer=people.signer("rod"))
            rod2 = GraphClient(temporal_client, task_queue, signer=Signer("rod2", rods_key))
            run = await ada.start(DualPayment, PAYMENT)
            await cal.decide(run["run_id"], "checked")
            first = await rod.decide(run["run_id"], "release")
            # The operator's file gains rod2, holding rod's own key, as an officer who sends.
            path.write_text(
                people.toml
                + directory_entry_toml(
                    "rod2", public_key_text(rods_key), ["officer"], ["payment:send"]
                )
            )
            now[0] += 5  # past the Directory's once-a-second look at its file
            directory.refresh()  # what its watcher thread does
            second = await rod2.decide(run["run_id"], "release")
            still = await ada.show(run["run_id"])
    finally:
        directory.close()

    assert first["status"] == "waiting", first
    assert still["status"] == "waiting", still
    assert gate_of(still).get("answers") == [{"principal": "rod", "option": "release"}]
    assert second["ok"] is False, second
    assert second["error"]["code"] == "UNVERIFIED_APPROVER", second
    assert "rod2" not in directory.principals()
    assert any(
        "principals 'rod' and 'rod2' hold the same public key" in record.getMessage()
        for record in caplog.records
    )

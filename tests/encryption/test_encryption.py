"""Payload encryption on the real server: what an attacker reading history sees, and that runs,
rotation and people's answers keep working."""

from __future__ import annotations

import subprocess
import sys
import uuid
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from lockgate import GraphClient, LockgatePlugin, ToolClient, tool
from lockgate.encryption import (
    EncryptionCodec,
    PayloadDecryptionError,
    PayloadKeys,
    PayloadKeysError,
    encrypting_client,
)
from lockgate.encryption._codec import ENCRYPTED_ENCODING, KEY_ID_METADATA, UNREADABLE_ENCODING
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import Identities, WorkerFactory
from lockgate.workflows._tool_call import call_workflow_id
from tests.helpers.encryption import marked_inputs, raw_history_bytes
from tests.helpers.graphs import ALWAYS_FAILS, essay_people, eventually
from tests.helpers.support import REPOSITORY, failed_workflow_tasks, gate_of


def plugin(people: Identities, keys: PayloadKeys | EncryptionCodec | None) -> LockgatePlugin:
    return LockgatePlugin(
        graphs=[EssayReview], directory=people.directory, secret=people.secret, encryption=keys
    )


async def test_an_encrypted_run_works_end_to_end_and_its_history_holds_no_clear_channel_value(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    keys = PayloadKeys.generate("k1")
    client = encrypting_client(temporal_client, keys)
    marker, inputs = marked_inputs()
    async with lockgate_worker(plugin=plugin(people, keys)):
        run = await GraphClient(client, task_queue, signer=people.signer("ada")).start(
            EssayReview, inputs
        )
        ed = GraphClient(client, task_queue, signer=people.signer("ed"))
        # Visibility is written after the fact: wait until the gate is listed.
        pending = await eventually(
            lambda: ed.pending(of="editor"),
            lambda rows: any(row["run_id"] == run["run_id"] for row in rows),
            what="the encrypted run's gate in pending",
        )
        answered = await ed.decide(run["run_id"], "publish_as_is")
    stored = await raw_history_bytes(temporal_client, run["run_id"])

    assert gate_of(run)["gate"].startswith("editor_call")
    assert run["run_id"] in [row["run_id"] for row in pending]
    assert answered["status"] == "finished"
    assert marker in str(answered["fields"])
    assert marker.encode() not in stored
    assert ENCRYPTED_ENCODING in stored and b"k1" in stored
    # Search attributes are not payloads: the server (and a pending inbox) still reads them.
    assert b"LockgateGraph" in stored and b"essay:review" in stored


async def test_without_keys_the_same_check_finds_the_channel_value_in_clear(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    marker, inputs = marked_inputs()
    async with lockgate_worker(plugin=plugin(people, None)):
        run = await GraphClient(temporal_client, task_queue, signer=people.signer("ada")).start(
            EssayReview, inputs
        )
    stored = await raw_history_bytes(temporal_client, run["run_id"])

    assert marker.encode() in stored


async def test_a_payload_written_under_an_old_key_still_decodes_after_rotation(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    old = PayloadKeys.generate("old")
    rotated = old.rotated("new")
    marker, inputs = marked_inputs()
    async with lockgate_worker(plugin=plugin(people, old)):
        run = await GraphClient(
            encrypting_client(temporal_client, old), task_queue, signer=people.signer("ada")
        ).start(EssayReview, inputs)
    # A new worker and client, current key "new": the run's history so far is under "old".
    client = encrypting_client(temporal_client, rotated)
    async with lockgate_worker(plugin=plugin(people, rotated)):
        ed = GraphClient(client, task_queue, signer=people.signer("ed"))
        answered = await ed.decide(run["run_id"], "publish_as_is")
    stored = await raw_history_bytes(temporal_client, run["run_id"])

    assert answered["status"] == "finished"
    assert marker in str(answered["fields"])
    assert b"old" in stored and b"new" in stored
    assert marker.encode() not in stored


async def test_an_unsigned_plain_answer_from_a_client_without_keys_is_refused_readably(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # The attacker: namespace access, no payload key, no private key. Their plain update
    # passes through the codec and is judged like any answer; the run is not wedged.
    people = essay_people()
    keys = PayloadKeys.generate("k1")
    client = encrypting_client(temporal_client, keys)
    async with lockgate_worker(plugin=plugin(people, keys)):
        run = await GraphClient(client, task_queue, signer=people.signer("ada")).start(
            EssayReview, ALWAYS_FAILS
        )
        handle = temporal_client.get_workflow_handle(run["run_id"])
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("decide", {"choice": "publish_as_is"}, result_type=dict)
        answered = await GraphClient(client, task_queue, signer=people.signer("ed")).decide(
            run["run_id"], "abandon"
        )

    cause = refused.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == "UNVERIFIED_APPROVER"
    assert "Encoded failure" not in cause.message and cause.message
    assert answered["status"] == "finished"


def test_a_tampered_ciphertext_is_refused_with_a_sentence() -> None:
    codec = EncryptionCodec(PayloadKeys.generate("k1"))
    sealed = codec.encode_one(Payload(metadata={"encoding": b"json/plain"}, data=b'"hello"'))
    tampered = Payload()
    tampered.CopyFrom(sealed)
    tampered.data = sealed.data[:-1] + bytes([sealed.data[-1] ^ 1])

    with pytest.raises(PayloadDecryptionError, match="does not decrypt: it was altered"):
        codec.decode_one(tampered)


def test_a_payload_under_a_key_no_longer_listed_names_the_missing_key() -> None:
    sealed = EncryptionCodec(PayloadKeys.generate("gone")).encode_one(Payload(data=b"x"))

    with pytest.raises(PayloadDecryptionError, match="key 'gone', which these payload keys"):
        EncryptionCodec(PayloadKeys.generate("k2")).decode_one(sealed)


def test_a_payload_keeps_its_key_id_and_a_fresh_nonce_each_time() -> None:
    codec = EncryptionCodec(PayloadKeys.generate("k1"))
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'"same"')
    first, second = codec.encode_one(plain), codec.encode_one(plain)

    assert first.metadata[KEY_ID_METADATA] == b"k1"
    assert first.data != second.data
    assert codec.decode_one(first) == plain == codec.decode_one(second)


def test_compression_shrinks_a_large_payload_and_its_flag_cannot_be_stripped() -> None:
    keys = PayloadKeys.generate("k1")
    compressing = EncryptionCodec(keys, compress_over=256)
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"tides " * 2000 + b'"')
    sealed = compressing.encode_one(plain)
    stripped = Payload()
    stripped.CopyFrom(sealed)
    del stripped.metadata["lockgate-compression"]

    assert len(sealed.data) < len(plain.data) // 10
    assert compressing.decode_one(sealed) == plain
    assert EncryptionCodec(keys).decode_one(sealed) == plain
    with pytest.raises(PayloadDecryptionError):
        compressing.decode_one(stripped)


def test_a_plain_payload_passes_through_decode_unchanged() -> None:
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'{"q": 1}')

    assert EncryptionCodec(PayloadKeys.generate("k1")).decode_one(plain) is plain


def test_payload_keys_read_back_what_they_write_and_refuse_a_bad_line(tmp_path: Any) -> None:
    keys = PayloadKeys.generate("k1").rotated("k2")
    path = keys.write(tmp_path / "payload.keys")

    loaded = PayloadKeys.load(path)
    assert loaded.key_ids == ("k2", "k1")
    assert loaded.key("k1") == keys.key("k1")
    assert (path.stat().st_mode & 0o777) == 0o600
    with pytest.raises(PayloadKeysError, match="line 1: not a payload key"):
        PayloadKeys.parse("lockgate-worker-secret:k1:abc")
    with pytest.raises(PayloadKeysError, match="refusing to overwrite"):
        keys.write(path)


def test_the_environment_names_the_keys(tmp_path: Any) -> None:
    keys = PayloadKeys.generate("k1")
    path = keys.write(tmp_path / "payload.keys")

    assert PayloadKeys.from_environment({}) is None
    from_file = PayloadKeys.from_environment({"LOCKGATE_PAYLOAD_KEYS_FILE": str(path)})
    from_text = PayloadKeys.from_environment({"LOCKGATE_PAYLOAD_KEYS": keys.to_text()})
    assert from_file is not None and from_file.key("k1") == keys.key("k1")
    assert from_text is not None and from_text.key("k1") == keys.key("k1")


def test_importing_lockgate_loads_no_cryptography_until_a_codec_is_made() -> None:
    # cryptography's Rust core cannot be initialised twice: a workflow module that imports
    # lockgate is re-imported by the sandbox, and would fail if lockgate imported it eagerly.
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, lockgate, lockgate.encryption, lockgate.cli._entry; "
            "print(any(m.startswith('cryptography') for m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPOSITORY,
    )

    assert loaded.stdout.strip() == "False"


@tool("encryption:double", "Doubles a number.")
def double(n: int) -> dict[str, Any]:
    return {"n": 2 * n}


@tool("encryption:erase", "Erases a record, once confirmed.", mutating=True, confirm=True)
def erase(record: str) -> dict[str, Any]:
    return {"erased": record}


async def test_a_refusal_quoting_the_input_reaches_the_caller_but_not_the_history(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    keys = PayloadKeys.generate("k1")
    marker = f"Secret-{uuid.uuid4().hex}"
    request_id = uuid.uuid4().hex
    plugin = LockgatePlugin([double], secret=essay_people().secret, encryption=keys)
    async with lockgate_worker(plugin=plugin):
        refused = await ToolClient(encrypting_client(temporal_client, keys), task_queue).call(
            "encryption:double", {"n": marker}, request_id=request_id
        )
    stored = await raw_history_bytes(temporal_client, call_workflow_id(request_id))

    error = refused["error"]
    assert error is not None and error["code"] == "VALIDATION_ERROR"
    assert marker in error["message"]  # pydantic quotes the input it refused
    assert marker.encode() not in stored


async def test_a_wrong_confirmation_token_is_refused_with_a_readable_sentence(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    keys = PayloadKeys.generate("k1")
    plugin = LockgatePlugin([erase], secret=essay_people().secret, encryption=keys)
    request_id = uuid.uuid4().hex
    async with lockgate_worker(plugin=plugin):
        asked = await ToolClient(encrypting_client(temporal_client, keys), task_queue).call(
            "encryption:erase", {"record": "r-1"}, request_id=request_id
        )
        # A client without keys, as the Temporal UI without a codec endpoint would send it.
        handle = temporal_client.get_workflow_handle(call_workflow_id(request_id))
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update("confirm", {"token": "guessed"})

    assert asked["data"] is not None and asked["data"]["requires_confirmation"] is True
    cause = refused.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "VALIDATION_ERROR"
    assert cause.message == (
        "The confirmation token for 'encryption:erase' is not the one this call handed out."
    )


async def test_a_forged_encrypted_signal_and_update_neither_wedge_nor_move_the_run(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    # The attacker holds no key, but can write a payload that claims to be encrypted under
    # the deployment's key id. A codec that raised on it would fail every later task.
    people = essay_people()
    keys = PayloadKeys.generate("k1")
    client = encrypting_client(temporal_client, keys)
    forged = Payload(
        metadata={"encoding": ENCRYPTED_ENCODING, KEY_ID_METADATA: b"k1"}, data=b"\x00" * 48
    )
    async with lockgate_worker(plugin=plugin(people, keys)):
        run = await GraphClient(client, task_queue, signer=people.signer("ada")).start(
            EssayReview, ALWAYS_FAILS
        )
        handle = temporal_client.get_workflow_handle(run["run_id"])
        await handle.signal("decide", RawValue(forged))
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update("decide", RawValue(forged))
        answered = await GraphClient(client, task_queue, signer=people.signer("ed")).decide(
            run["run_id"], "abandon"
        )

    assert answered["status"] == "finished"
    assert answered["trail"][-1]["node"] == "abandon"
    assert await failed_workflow_tasks(handle) == []


def test_a_worker_codec_marks_what_it_cannot_decrypt_and_a_client_codec_raises() -> None:
    codec = EncryptionCodec(PayloadKeys.generate("k1"))
    forged = Payload(metadata={"encoding": ENCRYPTED_ENCODING, KEY_ID_METADATA: b"nope"})

    marked = codec.for_worker().decode_one(forged)

    assert marked.metadata["encoding"] == UNREADABLE_ENCODING
    assert marked.metadata[KEY_ID_METADATA] == b"nope"
    with pytest.raises(PayloadDecryptionError):
        codec.decode_one(forged)

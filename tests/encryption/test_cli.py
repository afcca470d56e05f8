"""The `lockgate` command with payload keys configured: a run started, listed, answered and
shown from the command line while everything it carries is stored encrypted."""

from __future__ import annotations

import json
import stat

from temporalio.client import Client

from lockgate import Directory, LockgatePlugin, WorkerSecret
from lockgate.encryption import PayloadKeys
from lockgate.encryption._codec import ENCRYPTED_ENCODING
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import WorkerFactory
from tests.helpers.command_line import Command, lockgate_command
from tests.helpers.encryption import raw_history_bytes
from tests.helpers.graphs import ALWAYS_FAILS

__all__ = ["lockgate_command"]  # the fixture the tests here use


async def test_start_pending_decide_and_show_work_with_encryption_on(
    lockgate_command: Command, lockgate_worker: WorkerFactory, temporal_client: Client
) -> None:
    made = await lockgate_command("payload-keys", "new", "--payload-keys", "payload.keys")
    keys_file = lockgate_command.cwd / "payload.keys"
    lockgate_command.extra_environment = {"LOCKGATE_PAYLOAD_KEYS_FILE": str(keys_file)}
    directory = Directory.load(lockgate_command.cwd / ".lockgate" / "directory.toml")
    plugin = LockgatePlugin(
        graphs=[EssayReview],
        directory=directory,
        secret=WorkerSecret.generate(),
        encryption=PayloadKeys.load(keys_file),
    )
    marker = "Tides-of-the-secret-moon"
    async with lockgate_worker(plugin=plugin):
        started = await lockgate_command(
            "start",
            "essay:review",
            "--inputs",
            json.dumps({**ALWAYS_FAILS, "title": marker}),
            "--as",
            "ada",
            "--json",
        )
        run = json.loads(started.out)["run_id"]
        pending = await lockgate_command("pending", "--of", "editor", "--as", "ed")
        editor = await lockgate_command("decide", run, "publish_as_is", "--as", "ed")
        shown = await lockgate_command("show", run, "--json")
    stored = await raw_history_bytes(temporal_client, run)

    assert made.status == 0, made.err
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    assert started.status == 0, started.err
    assert run in pending.out, pending.err
    assert editor.status == 0, editor.err
    assert json.loads(shown.out)["status"] == "finished"
    assert marker in shown.out
    assert marker.encode() not in stored and ENCRYPTED_ENCODING in stored


async def test_a_command_without_the_keys_cannot_read_an_encrypted_run(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    keys = PayloadKeys.generate("k1")
    directory = Directory.load(lockgate_command.cwd / ".lockgate" / "directory.toml")
    plugin = LockgatePlugin(
        graphs=[EssayReview], directory=directory, secret=WorkerSecret.generate(), encryption=keys
    )
    lockgate_command.extra_environment = {"LOCKGATE_PAYLOAD_KEYS": keys.to_text()}
    async with lockgate_worker(plugin=plugin):
        started = await lockgate_command(
            "start", "essay:review", "--inputs", json.dumps(ALWAYS_FAILS), "--as", "ada", "--json"
        )
        run = json.loads(started.out)["run_id"]
        lockgate_command.extra_environment = {}
        shown = await lockgate_command("show", run, "--json")

    assert started.status == 0, started.err
    assert shown.status == 2 and shown.err == ""  # under --json, the refusal on stdout
    refused = json.loads(shown.out)
    assert refused["ok"] is False
    assert (
        "is encrypted (payload key 'k1') and no payload keys are configured"
        in (refused["error"]["message"])
    )
    assert "gravity" not in shown.out


async def test_payload_keys_rotate_adds_a_current_key_and_keeps_the_old_one(
    lockgate_command: Command,
) -> None:
    keys_file = lockgate_command.cwd / "payload.keys"
    await lockgate_command("payload-keys", "new", "--payload-keys", str(keys_file))
    before = PayloadKeys.load(keys_file)

    rotated = await lockgate_command("payload-keys", "rotate", "--payload-keys", str(keys_file))
    without_file = await lockgate_command("payload-keys", "rotate")

    after = PayloadKeys.load(keys_file)
    assert rotated.status == 0, rotated.err
    assert after.key_ids[1:] == before.key_ids and after.current != before.current
    assert after.key(before.current) == before.key(before.current)
    assert without_file.status == 2 and "rotate needs the keys file" in without_file.err

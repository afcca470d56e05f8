"""``lockgate codec-server`` with a real HTTP client against the real server: it decodes a real
run's history for a caller with its token (the UI's origin gets CORS headers), refuses everyone
else (an allowed ``Origin`` without the token too: any program can write one), answers the UI's
CORS preflight, serves the UI without a token only in its local mode, which binds loopback only,
and what it encodes is accepted by the run as a gate's answer (the UI's decide path)."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.client import Client
from temporalio.common import RawValue

from lockgate import GraphClient, LockgatePlugin
from lockgate.devserver import free_port, temporal_binary
from lockgate.encryption import (
    CodecAccessError,
    CodecServer,
    EncryptionCodec,
    PayloadKeys,
    encrypting_client,
)
from lockgate.encryption._codec import ENCRYPTED_ENCODING
from lockgate.encryption._server import CodecAccess
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding
from lockgate.testing import WorkerFactory
from tests.helpers.encryption import marked_inputs
from tests.helpers.graphs import essay_people
from tests.helpers.support import REPOSITORY, gate_of

UI = "http://localhost:8233"
TOKEN = "codec-test-token"


@pytest.fixture
def keys() -> PayloadKeys:
    return PayloadKeys.generate("k1")


@pytest.fixture
def codec_server(keys: PayloadKeys) -> Iterator[CodecServer]:
    server = CodecServer(
        EncryptionCodec(keys), CodecAccess(tokens=(TOKEN,), origins=(UI, "http://127.0.0.1:8233"))
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def post(
    url: str, path: str, body: bytes, headers: dict[str, str], method: str = "POST"
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request, as a browser or the `temporal` CLI sends it."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def payloads_body(payloads: list[Payload]) -> bytes:
    return json_format.MessageToJson(Payloads(payloads=payloads)).encode()


def payloads_of(body: bytes) -> list[Payload]:
    return list(json_format.Parse(body, Payloads()).payloads)


def from_browser(origin: str = UI, token: str | None = None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "X-Namespace": "default", "Origin": origin}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


@pytest.fixture
def local_codec_server(keys: PayloadKeys) -> Iterator[CodecServer]:
    """The local mode, as ``lockgate dev`` runs it: the UI's origins answered without a token."""
    server = CodecServer(
        EncryptionCodec(keys),
        CodecAccess(origins=(UI, "http://127.0.0.1:8233"), tokenless_local=True),
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def encrypted_run(
    lockgate_worker: WorkerFactory, client: Client, task_queue: str, keys: PayloadKeys
) -> tuple[str, list[Payload]]:
    """A run of EssayReview at its gate, and its start input as stored (encrypted)."""
    people = essay_people()
    marker, inputs = marked_inputs()
    plugin = LockgatePlugin(
        graphs=[EssayReview], directory=people.directory, secret=people.secret, encryption=keys
    )
    async with lockgate_worker(plugin=plugin):
        run = await GraphClient(
            encrypting_client(client, keys), task_queue, signer=people.signer("ada")
        ).start(EssayReview, inputs)
    history = await client.get_workflow_handle(run["run_id"]).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    return marker, list(started.input.payloads)


async def test_the_ui_origin_with_the_token_reads_a_run_decoded_and_gets_cors_headers(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    keys: PayloadKeys,
    codec_server: CodecServer,
) -> None:
    marker, stored = await encrypted_run(lockgate_worker, temporal_client, task_queue, keys)

    status, headers, body = await asyncio.to_thread(
        post,
        codec_server.url,
        "/decode?preserveStorageRefs=true",
        payloads_body(stored),
        from_browser(token=TOKEN),
    )

    assert stored[0].metadata["encoding"] == ENCRYPTED_ENCODING
    assert status == 200
    assert headers["access-control-allow-origin"] == UI
    decoded = payloads_of(body)
    assert decoded[0].metadata["encoding"] == b"json/plain"
    assert marker in decoded[0].data.decode()


async def test_a_program_with_the_token_reads_a_run_decoded(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    keys: PayloadKeys,
    codec_server: CodecServer,
) -> None:
    marker, stored = await encrypted_run(lockgate_worker, temporal_client, task_queue, keys)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}

    status, _, body = await asyncio.to_thread(
        post, codec_server.url, "/decode", payloads_body(stored), headers
    )

    assert status == 200
    assert marker in payloads_of(body)[0].data.decode()


@pytest.mark.parametrize(
    "headers, why",
    [
        (
            {"Content-Type": "application/json"},
            "no bearer token (send Authorization: Bearer <token>)",
        ),
        ({"Authorization": "Bearer guessed"}, "the bearer token is not one of this server's"),
        (from_browser("http://evil.example"), "origin 'http://evil.example' is not allowed"),
        (
            from_browser(UI),
            f"origin '{UI}' is allowed, but an Origin header is no access (any program can "
            "write one): send Authorization: Bearer <token>, or run the server in its local "
            "mode, on loopback, for a UI on this machine that cannot send one",
        ),
    ],
    ids=["nothing", "a wrong token", "another origin", "an allowed origin without the token"],
)
async def test_a_request_without_access_is_refused_and_decodes_nothing(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    keys: PayloadKeys,
    codec_server: CodecServer,
    headers: dict[str, str],
    why: str,
) -> None:
    marker, stored = await encrypted_run(lockgate_worker, temporal_client, task_queue, keys)

    status, answer_headers, body = await asyncio.to_thread(
        post, codec_server.url, "/decode", payloads_body(stored), headers
    )

    assert status == 401
    assert json.loads(body) == {"message": f"Not allowed: {why}."}
    assert marker.encode() not in body
    # An allowed origin's page may read why it was refused; no other page may read anything.
    assert ("access-control-allow-origin" in answer_headers) == (headers.get("Origin") == UI)


async def test_the_local_mode_answers_the_ui_origin_without_a_token(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    keys: PayloadKeys,
    local_codec_server: CodecServer,
) -> None:
    marker, stored = await encrypted_run(lockgate_worker, temporal_client, task_queue, keys)

    status, headers, body = await asyncio.to_thread(
        post, local_codec_server.url, "/decode", payloads_body(stored), from_browser()
    )
    refused, _, _ = await asyncio.to_thread(
        post, local_codec_server.url, "/decode", payloads_body(stored), {}
    )

    assert local_codec_server.url.startswith("http://127.0.0.1:")
    assert status == 200 and headers["access-control-allow-origin"] == UI
    assert marker in payloads_of(body)[0].data.decode()
    assert refused == 401


@pytest.mark.parametrize("host", ["0.0.0.0", ""])
def test_the_local_mode_refuses_to_bind_anything_but_loopback(keys: PayloadKeys, host: str) -> None:
    access = CodecAccess(origins=(UI,), tokenless_local=True)

    with pytest.raises(CodecAccessError, match="binds only to a loopback address"):
        CodecServer(EncryptionCodec(keys), access, host=host)


def test_the_ui_preflight_is_answered_for_its_origin_only(codec_server: CodecServer) -> None:
    preflight = {
        "Origin": UI,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-namespace",
    }

    status, headers, _ = post(codec_server.url, "/encode", b"", preflight, method="OPTIONS")
    other, other_headers, _ = post(
        codec_server.url, "/encode", b"", {**preflight, "Origin": "http://evil.example"}, "OPTIONS"
    )

    assert status == 204
    assert headers["access-control-allow-origin"] == UI
    assert "POST" in headers["access-control-allow-methods"]
    assert {"content-type", "x-namespace"} <= {
        header.strip() for header in headers["access-control-allow-headers"].split(",")
    }
    assert other == 403 and "access-control-allow-origin" not in other_headers


def test_a_tampered_payload_is_refused_with_a_sentence(codec_server: CodecServer) -> None:
    sealed = codec_server.codec.encode_one(Payload(metadata={"encoding": b"json/plain"}, data=b"1"))
    sealed.data = sealed.data[:-1] + bytes([sealed.data[-1] ^ 1])

    status, _, body = post(
        codec_server.url, "/decode", payloads_body([sealed]), from_browser(token=TOKEN)
    )
    garbage, _, garbage_body = post(
        codec_server.url, "/decode", b"{not json", from_browser(token=TOKEN)
    )

    assert status == 400 and "does not decrypt: it was altered" in json.loads(body)["message"]
    assert garbage == 400 and "not protobuf-JSON Payloads" in json.loads(garbage_body)["message"]


def test_a_body_too_deep_or_of_a_negative_length_is_refused_with_a_sentence(
    codec_server: CodecServer,
) -> None:
    deep = b'{"payloads": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    headers = from_browser(token=TOKEN)

    status, _, body = post(codec_server.url, "/decode", deep, headers)
    negative, _, negative_body = post(
        codec_server.url, "/decode", b"", {**headers, "Content-Length": "-1"}
    )

    assert status == 400 and "recursion depth" in json.loads(body)["message"]
    assert negative == 411 and "Content-Length" in json.loads(negative_body)["message"]


async def test_an_answer_encoded_by_the_server_as_the_ui_sends_it_is_accepted(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    keys: PayloadKeys,
    codec_server: CodecServer,
) -> None:
    # The UI's "Send an Update": the typed JSON goes to /encode, and what comes back is sent
    # as the update's payload by a client that holds no key.
    people = essay_people()
    plugin = LockgatePlugin(
        graphs=[EssayReview], directory=people.directory, secret=people.secret, encryption=keys
    )
    _, inputs = marked_inputs()
    async with lockgate_worker(plugin=plugin):
        run = await GraphClient(
            encrypting_client(temporal_client, keys), task_queue, signer=people.signer("ada")
        ).start(EssayReview, inputs)
        proof = people.signer("ed").sign(answer_binding(gate_of(run), "abandon"))
        typed = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(proof).encode())
        status, _, body = await asyncio.to_thread(
            post,
            codec_server.url,
            "/encode?preserveStorageRefs=true",
            payloads_body([typed]),
            from_browser(token=TOKEN),
        )
        encoded = payloads_of(body)[0]
        handle = temporal_client.get_workflow_handle(run["run_id"])
        answered = await _decide_raw(handle, encoded, keys)

    assert status == 200 and encoded.metadata["encoding"] == ENCRYPTED_ENCODING
    assert answered["status"] == "finished"
    assert answered["trail"][-1]["node"] == "abandon"


async def _decide_raw(handle: Any, encoded: Payload, keys: PayloadKeys) -> dict[str, Any]:
    raw = await handle.execute_update("decide", RawValue(encoded), result_type=RawValue)
    # The result comes back encrypted too: the UI decodes it through /decode.
    (decoded,) = await EncryptionCodec(keys).decode([raw.payload])
    result: dict[str, Any] = json.loads(decoded.data)
    return result


async def test_the_temporal_cli_shows_a_run_decoded_through_the_server_with_its_token(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    keys: PayloadKeys,
    codec_server: CodecServer,
) -> None:
    marker, _ = await encrypted_run(lockgate_worker, temporal_client, task_queue, keys)
    run_id = await _latest_run(temporal_client, task_queue)
    address = temporal_client.service_client.config.target_host

    def show(*auth: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                str(temporal_binary()),
                "workflow",
                "show",
                "--address",
                address,
                "-w",
                run_id,
                "-o",
                "json",
                "--codec-endpoint",
                codec_server.url,
                *auth,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    with_token = await asyncio.to_thread(show, "--codec-auth", f"Bearer {TOKEN}")
    without = await asyncio.to_thread(show)

    assert with_token.returncode == 0, with_token.stderr
    assert marker in base64.b64decode(_first_input(with_token.stdout)).decode()
    assert without.returncode != 0 and marker not in without.stdout


async def _latest_run(client: Client, task_queue: str) -> str:
    async for execution in client.list_workflows(f"TaskQueue = '{task_queue}'"):
        return execution.id
    raise AssertionError(f"no run on {task_queue}")


def _first_input(shown: str) -> str:
    history = json.loads(shown)
    events = history["events"]
    started = events[0]["workflowExecutionStartedEventAttributes"]
    data: str = started["input"]["payloads"][0]["data"]
    return data


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        pytest.param(
            [], "codec-server answers only callers with its token", id="without an access rule"
        ),
        pytest.param(
            ["--host", "0.0.0.0", "--allow-origin", UI, "--local-without-token"],
            "binds only to a loopback address",
            id="its local mode on another address",
        ),
    ],
)
def test_lockgate_codec_server_refuses_to_start_without_an_access_rule_or_local_off_loopback(
    tmp_path: Any, flags: list[str], says: str
) -> None:
    keys_file = PayloadKeys.generate("k1").write(tmp_path / "payload.keys")

    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "lockgate.cli",
            "codec-server",
            "--payload-keys",
            str(keys_file),
            "--port",
            str(free_port()),
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPOSITORY,
        check=False,
    )

    assert ran.returncode == 2
    assert says in ran.stderr


async def test_lockgate_codec_server_in_local_mode_serves_the_ui_origin_until_stopped(
    tmp_path: Any,
) -> None:
    keys = PayloadKeys.generate("k1")
    keys_file = keys.write(tmp_path / "payload.keys")
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "codec-server",
        "--payload-keys",
        str(keys_file),
        "--port",
        str(port),
        "--allow-origin",
        UI,
        "--local-without-token",
        cwd=REPOSITORY,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        ready = await asyncio.wait_for(process.stdout.readline(), 30)
        sealed = EncryptionCodec(keys).encode_one(
            Payload(metadata={"encoding": b"json/plain"}, data=b'"hello"')
        )
        status, _, body = await asyncio.to_thread(
            post, f"http://127.0.0.1:{port}", "/decode", payloads_body([sealed]), from_browser()
        )
    finally:
        process.terminate()
        await process.wait()

    assert f"codec server at http://127.0.0.1:{port}" in ready.decode()
    assert status == 200 and payloads_of(body)[0].data == b'"hello"'

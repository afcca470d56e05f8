"""``lockgate payload-keys new|rotate`` (the keys payloads are encrypted with) and
``lockgate codec-server`` (the endpoint the Temporal UI and CLI read encrypted runs through)."""

from __future__ import annotations

import argparse
import asyncio
import os

from lockgate._defaults import PAYLOAD_KEYS_FILE_ENV
from lockgate.cli._output import CommandError, print_new_secret
from lockgate.cli._settings import payload_keys, payload_keys_path
from lockgate.encryption import (
    CodecAccessError,
    CodecServer,
    EncryptionCodec,
    PayloadKeys,
    PayloadKeysError,
)
from lockgate.encryption._server import CODEC_SERVER_TOKEN_ENV, CodecAccess

__all__ = ["manage_payload_keys", "serve_codec"]


def manage_payload_keys(arguments: argparse.Namespace) -> int:
    """``lockgate payload-keys new|rotate``: makes the payload keys file, or rotates it."""
    target = payload_keys_path(arguments)
    try:
        if arguments.payload_keys_command == "new":
            return print_new_secret(
                PayloadKeys.generate(),
                target,
                what="payload keys",
                to="them to every worker, client and codec server",
            )
        if target is None:
            raise CommandError(
                f"rotate needs the keys file: --payload-keys FILE or {PAYLOAD_KEYS_FILE_ENV}."
            )
        current = PayloadKeys.load(target)
        updated = current.rotated()
        updated.write(target, overwrite=True)
    except PayloadKeysError as error:
        raise CommandError(str(error)) from None
    print(
        f"# {target}: new current key {updated.current}; {', '.join(current.key_ids)} still "
        "decrypt; copy it everywhere, then restart workers and the codec server"
    )
    return 0


async def serve_codec(arguments: argparse.Namespace) -> int:
    """``lockgate codec-server``: serves ``/encode`` and ``/decode`` until Ctrl-C."""
    keys = payload_keys(arguments)
    if keys is None:
        raise CommandError(
            "codec-server needs the payload keys: --payload-keys FILE, or "
            f"{PAYLOAD_KEYS_FILE_ENV}; `lockgate payload-keys new` makes them."
        )
    token = os.environ.get(CODEC_SERVER_TOKEN_ENV, "")
    origins = tuple(origin.rstrip("/") for origin in arguments.allow_origin or ())
    local = bool(arguments.local_without_token)
    if not token and not local:
        raise CommandError(
            f"codec-server answers only callers with its token: set {CODEC_SERVER_TOKEN_ENV} "
            "(programs send `temporal --codec-auth 'Bearer TOKEN'`). For a Temporal UI on this "
            "machine that cannot send one, --local-without-token --allow-origin ORIGIN serves "
            "it on loopback without a token (any program here can then decrypt)."
        )
    if local and not origins:
        raise CommandError(
            "--local-without-token answers the allowed origins only: name the UI's with "
            "--allow-origin (e.g. http://localhost:8233)."
        )
    access = CodecAccess(
        tokens=(token,) if token else (),
        origins=origins,
        namespaces=tuple(arguments.only_namespace or ()),
        tokenless_local=local,
    )
    try:
        server = CodecServer(EncryptionCodec(keys), access, arguments.host, arguments.port)
    except CodecAccessError as error:
        raise CommandError(str(error)) from None
    except OSError as error:
        raise CommandError(
            f"Cannot listen on {arguments.host}:{arguments.port}: {error}."
        ) from None
    server.start()
    print(
        f"codec server at {server.url}: keys {', '.join(keys.key_ids)}; origins "
        f"{', '.join(origins) or '(none)'}; bearer token {'set' if token else 'not set'}"
        f"{'; local mode: the origins are answered without a token' if local else ''}. "
        f"Point the UI at it (temporal server start-dev --ui-codec-endpoint {server.url}) and "
        f"the CLI (temporal --codec-endpoint {server.url}); Ctrl-C stops it",
        flush=True,
    )
    try:
        await asyncio.Event().wait()
    finally:
        server.stop()
    return 0

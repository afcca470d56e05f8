"""``lockgate inbox``: the web inbox, where people see open gates and answer them."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any

from lockgate.cli._keys import enrolment_secret
from lockgate.cli._output import CommandError
from lockgate.cli._settings import (
    connect,
    directory_path,
    enrolment_secret_path,
    local_directory,
    payload_keys,
)
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._passkeys import RelyingParty

__all__ = [
    "PASSKEY_ORIGINS_ENV",
    "inbox_socket",
    "relying_party_of",
    "serve_inbox",
    "start_inbox",
]

PASSKEY_ORIGINS_ENV = "LOCKGATE_PASSKEY_ORIGINS"
"""The inbox's origins (comma-separated) a worker accepts passkey answers from."""


def relying_party_of(origins: Sequence[str] | None) -> RelyingParty | None:
    """The relying party of ``--passkey-origin`` flags, else of ``LOCKGATE_PASSKEY_ORIGINS``.

    Raises:
        CommandError: an origin is not a URL on one site.
    """
    listed = list(origins or [])
    if not listed:
        listed = [
            o.strip() for o in os.environ.get(PASSKEY_ORIGINS_ENV, "").split(",") if o.strip()
        ]
    if not listed:
        return None
    try:
        return RelyingParty.of_origins(listed)
    except IdentityError as error:
        raise CommandError(str(error)) from None


def inbox_socket(host: str, port: int, move_it: str) -> socket.socket:
    """A socket for the inbox, bound to ``host:port`` before anything else starts, so that a
    taken port is said at once and in lockgate's words, not as uvicorn's bare bind error.

    Args:
        host: The address to listen on.
        port: The port.
        move_it: What the person runs instead, e.g. the flag that moves the inbox.

    Raises:
        CommandError: the port is taken, or the address is not one of this machine's.
    """
    listening = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    if sys.platform != "win32":
        # As uvicorn binds: a port whose old connections linger in TIME_WAIT is free.
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as error:
        listening.close()
        raise CommandError(
            f"The inbox cannot listen on {host}:{port}: {error.strerror or error} (another "
            f"lockgate dev or inbox?). {move_it}"
        ) from None
    return listening


async def start_inbox(
    arguments: argparse.Namespace,
    client: Any,
    listening: socket.socket,
    origin: str,
    *,
    open_to_anyone: bool = False,
) -> tuple[Any, asyncio.Task[None]]:
    """Starts the inbox's server on ``listening`` (from :func:`inbox_socket`) as a task on this
    loop; returns it and its task, once it listens. ``open_to_anyone`` lets visitors read every
    run without signing in (``lockgate dev`` only).

    Raises:
        CommandError: the inbox's extra is missing, there is no Directory, or it did not start.
    """
    try:
        import uvicorn

        from lockgate.inbox import inbox_app
    except ImportError as error:
        raise CommandError(str(error)) from None
    keys = payload_keys(arguments)
    if keys is not None:
        # The gates' memos are encrypted with the runs: the inbox reads them with the keys.
        from lockgate.encryption import encrypting_client

        client = encrypting_client(client, keys)
    directory = local_directory(arguments)
    if directory is None:
        raise CommandError(
            f"The inbox signs people in against the workers' Directory, and there is none at "
            f"{directory_path(arguments)}: name it with --directory (or LOCKGATE_DIRECTORY)."
        )
    app = inbox_app(
        client,
        arguments.task_queue,
        RelyingParty.of_origins([origin]),
        directory=directory,
        enrolment=enrolment_secret(arguments, make=open_to_anyone),
        open_to_anyone=open_to_anyone,
        session_seconds=getattr(arguments, "session_minutes", 60.0) * 60,
    )
    # The command configured logging (lockgate.cli._logs): uvicorn's records go there.
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", log_config=None))
    task = asyncio.create_task(server.serve(sockets=[listening]))
    while not server.started:
        if task.done():
            host, port = listening.getsockname()[:2]
            raise CommandError(f"The inbox did not start on {host}:{port}.")
        await asyncio.sleep(0.02)
    return server, task


async def serve_inbox(arguments: argparse.Namespace) -> int:
    """Serves the inbox until stopped."""
    origin = arguments.origin or f"http://localhost:{arguments.port}"
    listening = inbox_socket(
        arguments.host, arguments.port, "Pass another port: `lockgate inbox --port N`."
    )
    try:
        client = await connect(arguments)
        server, task = await start_inbox(arguments, client, listening, origin)
    except BaseException:
        listening.close()
        raise
    enrolling = (
        "passkeys registered with codes from `lockgate keys enrol NAME`"
        if enrolment_secret_path(arguments).exists()
        else f"no passkey registration: no enrolment secret at {enrolment_secret_path(arguments)}"
    )
    print(
        f"lockgate inbox: {origin} (workers accept its passkey answers with "
        f"--passkey-origin {origin}); people sign in with their key or passkey; {enrolling}; "
        "Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    try:
        await task
    finally:
        server.should_exit = True
    return 0

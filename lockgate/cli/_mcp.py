"""``lockgate mcp``: the MCP server, over stdio or (``--http``) streamable HTTP with a JSON API.

Over stdio whoever holds the pipe is the caller: without ``--as`` that is a client with no
signer, ``unverified:temporal``, which may start runs and call tools that need no scope, and never
answers a gate (the ``mcp`` and ``http`` channels require a verified principal). ``--as
agent-7`` signs every call as that principal with its key (judged against the workers'
Directory); gate answers are still only relayed, as proofs their approvers signed. Over HTTP
every request also needs the bearer token the operator configured.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from lockgate.cli._output import CommandError
from lockgate.cli._settings import connect, keys_dir, local_directory
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._proofs import Signer
from lockgate.operations._operations import Operations

__all__ = ["TOKEN_ENV", "serve_mcp"]

TOKEN_ENV = "LOCKGATE_MCP_TOKEN"
"""The variable holding the HTTP server's bearer token (else ``--token-file``)."""


def _token(arguments: argparse.Namespace) -> str:
    if arguments.token_file:
        try:
            return Path(arguments.token_file).read_text().strip()
        except OSError as error:
            raise CommandError(f"Cannot read the token file: {error}") from None
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise CommandError(
            f"lockgate mcp --http needs a bearer token its clients present: set {TOKEN_ENV} or "
            "pass --token-file (at least 16 characters; `python -c 'import secrets; "
            "print(secrets.token_urlsafe())'` makes one)."
        )
    return token


async def serve_mcp(arguments: argparse.Namespace) -> int:
    """Serves MCP (and, over HTTP, the JSON API) until stopped."""
    try:
        from lockgate.serving import BearerToken, ToolNameError, build_mcp_server, http_app
    except ImportError as error:
        raise CommandError(str(error)) from None
    # stdout is the protocol over stdio: everything else goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    channel = "http" if arguments.http else "mcp"
    signer = None
    if arguments.as_principal:
        try:
            signer = Signer.from_keys_dir(
                arguments.as_principal, keys_dir(arguments), channel=channel
            )
        except IdentityError as error:
            raise CommandError(str(error)) from None
    operations = Operations(
        await connect(arguments),
        arguments.task_queue,
        signer,
        directory=local_directory(arguments),
    )
    server = build_mcp_server(operations, poll_seconds=arguments.poll_seconds)
    try:
        # Once at start: a name no MCP host accepts stops the server here, not in a host.
        await server.handlers.tools()
    except ToolNameError as error:
        raise CommandError(str(error)) from None
    if not arguments.http:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return 0
    try:
        token = BearerToken(_token(arguments))
    except ValueError as error:
        raise CommandError(str(error)) from None
    import uvicorn

    app = http_app(server, operations, token, allowed_hosts=arguments.allowed_host)
    config = uvicorn.Config(app, host=arguments.host, port=arguments.port, log_level="warning")
    print(
        f"lockgate mcp: MCP at http://{arguments.host}:{arguments.port}/mcp, the JSON API at "
        f"/api, as {operations.principal}; Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    await uvicorn.Server(config).serve()
    return 0

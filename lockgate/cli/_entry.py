"""Running a command: parse, dispatch, map errors to exit statuses, and end the process."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from lockgate.cli._arguments import build_parser
from lockgate.cli._codec import manage_payload_keys, serve_codec
from lockgate.cli._dev import run_dev_stack
from lockgate.cli._inbox import serve_inbox
from lockgate.cli._keys import manage_keys, manage_worker_secret
from lockgate.cli._loop import run_on_the_fastest_loop
from lockgate.cli._mcp import serve_mcp
from lockgate.cli._output import CommandError, fail
from lockgate.cli._runs import (
    decide_gate,
    list_pending_gates,
    list_runs,
    resume_run,
    show_run,
    start_run,
)
from lockgate.cli._setup import set_up_namespace
from lockgate.cli._sign import print_signed_answer
from lockgate.cli._tools import use_tools
from lockgate.cli._worker import serve_worker
from lockgate.encryption import PayloadDecryptionError

__all__ = ["entry", "main"]

_ASYNC_COMMANDS = {
    "dev": run_dev_stack,
    "worker": serve_worker,
    "setup": set_up_namespace,
    "mcp": serve_mcp,
    "inbox": serve_inbox,
    "tools": use_tools,
    "start": start_run,
    "pending": list_pending_gates,
    "decide": decide_gate,
    "resume": resume_run,
    "show": show_run,
    "list": list_runs,
    "sign": print_signed_answer,
    "codec-server": serve_codec,
}


_LONG_RUNNING = {"dev", "worker", "mcp", "inbox", "codec-server"}
"""Commands that serve until stopped: they run on uvloop where it is installed."""


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``lockgate`` command; returns its exit status."""
    # Like uvicorn and gunicorn: `--tools myapp.tools` names modules relative to where you are.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    arguments = build_parser().parse_args(argv)
    try:
        if arguments.command == "keys":
            return manage_keys(arguments)
        if arguments.command == "secret":
            return manage_worker_secret(arguments)
        if arguments.command == "payload-keys":
            return manage_payload_keys(arguments)
        command = _ASYNC_COMMANDS[arguments.command](arguments)
        if arguments.command in _LONG_RUNNING:
            return run_on_the_fastest_loop(command)
        return asyncio.run(command)
    except (CommandError, PayloadDecryptionError) as error:
        fail(str(error), 2)
    except KeyboardInterrupt:
        return 130


def entry() -> NoReturn:
    """The console script: :func:`main`, then an immediate exit.

    temporalio's core runs native threads that can abort the interpreter while it finalizes
    ("PyGILState_Release ... must be current"), turning a finished command's status into 134;
    everything is flushed and done by then, so the process leaves without finalizing.
    """
    try:
        status = main()
    except SystemExit as leaving:  # a refusal (`fail`) or argparse's usage error
        code = leaving.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)

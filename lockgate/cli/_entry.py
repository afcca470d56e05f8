"""Running a command: parse, dispatch, map errors to exit statuses, and end the process."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, NoReturn

from lockgate.cli._arguments import build_parser
from lockgate.cli._logs import log_to_stderr
from lockgate.cli._loop import run_on_the_fastest_loop
from lockgate.cli._output import CommandError, fail

__all__ = ["entry", "main"]

_COMMANDS = {
    "keys": "lockgate.cli._keys:manage_keys",
    "secret": "lockgate.cli._keys:manage_worker_secret",
    "payload-keys": "lockgate.cli._codec:manage_payload_keys",
    "dev": "lockgate.cli._dev:run_dev_stack",
    "worker": "lockgate.cli._worker:serve_worker",
    "setup": "lockgate.cli._setup:set_up_namespace",
    "login": "lockgate.cli._login:log_in",
    "mcp": "lockgate.cli._mcp:serve_mcp",
    "inbox": "lockgate.cli._inbox:serve_inbox",
    "tools": "lockgate.cli._tools:use_tools",
    "start": "lockgate.cli._runs:start_run",
    "schedule": "lockgate.cli._runs:create_schedule",
    "pending": "lockgate.cli._runs:list_pending_gates",
    "decide": "lockgate.cli._runs:decide_gate",
    "resume": "lockgate.cli._runs:resume_run",
    "cancel": "lockgate.cli._runs:cancel_run",
    "graphs": "lockgate.cli._runs:list_graphs",
    "show": "lockgate.cli._runs:show_run",
    "list": "lockgate.cli._runs:list_runs",
    "sign": "lockgate.cli._sign:print_signed_answer",
    "codec-server": "lockgate.cli._codec:serve_codec",
}
"""Where each command's function lives, imported only when that command runs: ``lockgate
--help`` and a usage mistake answer without importing temporalio. The ones that return a
coroutine run on an event loop."""

_ENDED_BY_SIGPIPE = 128 + 13
"""The exit status a shell reports for a program that SIGPIPE (13) ended."""

_SYNCHRONOUS = {"keys", "secret", "payload-keys", "login"}
"""Commands that need no Temporal and no event loop."""


def _command(name: str) -> Callable[[argparse.Namespace], Any]:
    module, _, function = _COMMANDS[name].partition(":")
    command: Callable[[argparse.Namespace], Any] = getattr(
        importlib.import_module(module), function
    )
    return command


_LONG_RUNNING = {"dev", "worker", "mcp", "inbox", "codec-server"}
"""Commands that serve until stopped: they run on uvloop where it is installed."""


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``lockgate`` command; returns its exit status."""
    # Like uvicorn and gunicorn: `--tools myapp.tools` names modules relative to where you are.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        arguments = build_parser().parse_args(words)
    except CommandError as mistake:
        # The parse failed, so the words say whether --json was asked for.
        if "--json" not in words:
            print(mistake.usage or "", end="", file=sys.stderr)
        fail(str(mistake), 2, as_json="--json" in words)
    from lockgate.encryption import PayloadDecryptionError

    if arguments.command in _LONG_RUNNING and arguments.command != "dev":
        log_to_stderr()  # `lockgate dev` keeps its log in a file (_dev)

    try:
        run = _command(arguments.command)
        if arguments.command in _SYNCHRONOUS:
            status: int = run(arguments)
            return status
        command: Coroutine[Any, Any, int] = run(arguments)
        if arguments.command in _LONG_RUNNING:
            return run_on_the_fastest_loop(command)
        return asyncio.run(command)
    except CommandError as error:
        fail(str(error), 2, as_json=arguments.json, code=error.code)
    except PayloadDecryptionError as error:
        fail(str(error), 2, as_json=arguments.json)
    except KeyboardInterrupt:
        return 130


def entry() -> NoReturn:
    """The console script: :func:`main`, then an immediate exit.

    temporalio's core runs native threads that can abort the interpreter while it finalizes
    ("PyGILState_Release ... must be current"), turning a finished command's status into 134;
    everything is flushed and done by then, so the process leaves without finalizing.
    """
    try:
        try:
            status = main()
        except SystemExit as leaving:  # a refusal (`fail`) or argparse's usage error
            code = leaving.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`lockgate list | head`): stop quietly, with the status of a program
        # that SIGPIPE ended, as CLIs that leave SIGPIPE alone do. What is still buffered goes
        # to /dev/null, so that flushing it cannot raise again (as Python's docs advise).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = _ENDED_BY_SIGPIPE
    sys.stderr.flush()
    os._exit(status)

"""`lockgate --help` and every command's: an answer that imports no temporalio."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

from lockgate.cli._arguments import build_parser
from lockgate.cli._entry import _COMMANDS
from tests.support import REPOSITORY


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield " ".join((*path, name)), command
                yield from _commands(command, (*path, name))


COMMANDS = dict(_commands(build_parser()))


def test_every_command_runs_a_function_that_exists() -> None:
    top_level = {name for name in COMMANDS if " " not in name}
    functions = {
        name: getattr(__import__(module, fromlist=["_"]), function, None)
        for name, (module, _, function) in (
            (name, where.partition(":")) for name, where in _COMMANDS.items()
        )
    }

    assert set(functions) == top_level
    assert [name for name, function in functions.items() if not callable(function)] == []


def test_lockgate_help_imports_no_temporalio() -> None:
    script = (
        "import sys\n"
        "from lockgate.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'temporalio', 'pydantic'}))\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPOSITORY,
        timeout=60,
    )

    assert "usage: lockgate" in shown.stdout
    assert shown.stdout.splitlines()[-1] == "[]"

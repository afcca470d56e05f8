"""`lockgate --help` and every command's: a line that says what it does, help for every flag,
the global options listed once and taken anywhere, and an answer that imports no temporalio;
`lockgate --version`, which answers the same way."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

import pytest

import lockgate
from lockgate.cli._arguments import build_parser
from lockgate.cli._entry import _COMMANDS
from tests.helpers.support import REPOSITORY

GLOBAL_OPTIONS = (
    "--address",
    "--namespace",
    "--profile",
    "--task-queue",
    "--keys-dir",
    "--directory",
    "--json",
    "--secret-file",
    "--payload-keys",
)


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield " ".join((*path, name)), command
                yield from _commands(command, (*path, name))


COMMANDS = dict(_commands(build_parser()))


def _help_of(*arguments: str) -> str:
    shown = subprocess.run(
        [sys.executable, "-m", "lockgate.cli", *arguments, "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPOSITORY,
        timeout=60,
    )
    return shown.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_says_in_one_line_what_it_does(name: str) -> None:
    description = COMMANDS[name].description

    assert description
    assert "\n" not in description


@pytest.mark.parametrize("name", COMMANDS)
def test_every_argument_of_every_command_has_help_text(name: str) -> None:
    undocumented = [
        action.dest
        for action in COMMANDS[name]._actions
        if not action.help and not isinstance(action, argparse._SubParsersAction)
    ]

    assert undocumented == []


def test_every_global_option_has_help_text() -> None:
    undocumented = [
        action.dest
        for action in build_parser()._actions
        if not action.help and not isinstance(action, argparse._SubParsersAction)
    ]

    assert undocumented == []


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


def test_lockgate_help_lists_each_global_option_once() -> None:
    shown = _help_of()

    for option in GLOBAL_OPTIONS:
        listed = [line for line in shown.splitlines() if line.strip().startswith(option)]
        assert len(listed) == 1, option


def test_a_commands_help_points_at_the_global_options_instead_of_repeating_them() -> None:
    shown = _help_of("start")

    assert "--inputs" in shown
    assert [line for line in shown.splitlines() if line.strip().startswith("--json")] == []
    assert "global options" in shown


@pytest.mark.parametrize(
    "arguments",
    [
        ["--json", "--address", "elsewhere:7233", "list"],
        ["list", "--json", "--address", "elsewhere:7233"],
        ["--json", "secret", "new", "--address", "elsewhere:7233"],
        ["secret", "--address", "elsewhere:7233", "new", "--json"],
    ],
    ids=" ".join,
)
def test_a_global_option_works_before_or_after_the_command(arguments: list[str]) -> None:
    parsed = build_parser().parse_args(arguments)

    assert (parsed.json, parsed.address) == (True, "elsewhere:7233")


def test_a_global_option_left_out_keeps_its_default() -> None:
    parsed = build_parser().parse_args(["tools", "list"])

    assert (parsed.json, parsed.address, parsed.task_queue) == (False, None, "lockgate")


@pytest.mark.parametrize(
    ("flag", "answer"), [("--help", "global options"), ("--version", "lockgate ")]
)
def test_lockgate_help_and_version_answer_without_importing_temporalio(
    flag: str, answer: str
) -> None:
    script = (
        "import sys\n"
        "from lockgate.cli import main\n"
        "try:\n"
        f"    main([{flag!r}])\n"
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

    assert answer in shown.stdout
    assert shown.stdout.splitlines()[-1] == "[]"


def test_lockgate_version_prints_the_packages_version_and_exits_zero() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "lockgate.cli", "--version"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPOSITORY,
        timeout=60,
    )

    assert (shown.returncode, shown.stdout) == (0, f"lockgate {lockgate.__version__}\n")

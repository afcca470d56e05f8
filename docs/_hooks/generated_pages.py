"""Pages the site builds from the code, so that none is a copy kept by hand.

- ``reference/cli.md``: every ``lockgate`` command and its flags, read from the parser that the
  command itself runs (``lockgate.cli._parser``).
- ``reference/errors.md``: every refusal code of ``ErrorCode``, with the meaning its member's
  docstring gives (read from the source, where the docstrings are).
- ``reference/api/<module>.md``: each public module, every name of its ``__all__`` rendered from
  its docstrings by mkdocstrings, and the site's navigation to them.

MkDocs loads this file as a hook (``hooks:`` in ``mkdocs.yml``).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
from typing import Any

from mkdocs.structure.files import File, Files

from lockgate.cli import _parser
from lockgate.tools import _tool_result


def _cell(text: str | None) -> str:
    """``text`` fit for a cell of a Markdown table."""
    return (text or "").replace("|", "\\|").replace("\n", " ")


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows: list[str] = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(
            action, argparse._SubParsersAction | argparse._HelpAction
        ):
            continue
        if action.option_strings:
            names = ", ".join(f"`{name}`" for name in action.option_strings)
            if action.nargs != 0 and action.metavar != argparse.SUPPRESS:
                names += f" `{action.metavar or action.dest.upper()}`"
        else:
            names = f"`{action.metavar or action.dest}`"
        default = ""
        said = "default" in (action.help or "")
        if (
            action.default not in (None, False, argparse.SUPPRESS)
            and action.nargs != 0
            and not said
        ):
            default = f" (default: `{action.default}`)"
        rows.append(f"| {names} | {_cell(action.help)}{_cell(default)} |")
    if not rows:
        return []
    return ["| argument | what it is |", "|---|---|", *rows, ""]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _command(words: list[str], parser: argparse.ArgumentParser, lines: list[str]) -> None:
    name = " ".join(words)
    lines += [f"## `{name}`", ""]
    if parser.description:
        lines += [parser.description[0].upper() + parser.description[1:] + ".", ""]
    usage = " ".join(parser.format_usage().split()).removeprefix("usage: ")
    lines += [f"Usage: `{usage}`", ""]
    lines += _options(parser)
    for word, child in _subcommands(parser).items():
        _command([*words, word], child, lines)


def cli_page() -> str:
    """The command line's reference, from its parser."""
    parser = _parser()
    lines = [
        "# Command line",
        "",
        "Generated from the parser of the `lockgate` command as the site is built.",
        f"{parser.description} {parser.epilog}",
        "",
        "## Global options",
        "",
        "Every command takes these, before or after its name; `-h`/`--help` after a command's",
        "name prints its help.",
        "",
        *_options(parser),
    ]
    for word, child in _subcommands(parser).items():
        _command(["lockgate", word], child, lines)
    return "\n".join(lines) + "\n"


def error_meanings() -> dict[str, str]:
    """Each ``ErrorCode`` member's docstring, by its value, read from the enum's source."""
    source = ast.parse(inspect.getsource(_tool_result))
    (enum,) = [
        node
        for node in source.body
        if isinstance(node, ast.ClassDef) and node.name == _tool_result.ErrorCode.__name__
    ]
    meanings: dict[str, str] = {}
    body = enum.body
    for statement, following in zip(body, [*body[1:], None], strict=True):
        if not (isinstance(statement, ast.Assign) and isinstance(following, ast.Expr)):
            continue
        (target,) = statement.targets
        if isinstance(target, ast.Name) and isinstance(following.value, ast.Constant):
            meanings[target.id] = inspect.cleandoc(str(following.value.value))
    return meanings


def errors_page() -> str:
    """Every refusal code, in the enum's order, with its meaning."""
    meanings = error_meanings()
    lines = [
        "# Refusal codes",
        "",
        "Every refusal and failure carries `error: {code, message}`: the code for programs, the",
        "sentence for people. These are all the codes, generated from `lockgate.ErrorCode` as",
        "the site is built. [Troubleshooting](../guides/troubleshooting.md) says what to do",
        "about the common ones.",
        "",
        "| code | meaning |",
        "|---|---|",
    ]
    for code in _tool_result.ErrorCode:
        lines.append(f"| `{code.value}` | {_cell(meanings.get(code.name, ''))} |")
    return "\n".join(lines) + "\n"


API_MODULES = [
    "lockgate",
    "lockgate.contracts",
    "lockgate.errors",
    "lockgate.testing",
    "lockgate.worker",
    "lockgate.authorization",
    "lockgate.tool_runtime",
    "lockgate.namespace",
    "lockgate.encryption",
    "lockgate.telemetry",
    "lockgate.operations",
    "lockgate.serving",
    "lockgate.devserver",
    "lockgate.sso",
    "lockgate.redis_ratelimit",
    "lockgate.adapters.langgraph",
    "lockgate.adapters.openai_agents",
    "lockgate.adapters.pydantic_ai",
]
"""The public modules (``tests/test_public_surface.py`` pins their names, and
``tests/test_docs.py`` that this list is theirs)."""


def api_page(module_name: str) -> str:
    """One public module: its docstring, then each name it exports, from the docstrings."""
    module = importlib.import_module(module_name)
    lines = [
        f"# `{module_name}`",
        "",
        f"::: {module_name}",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
        "",
    ]
    for name in module.__all__:
        lines += [f"::: {module_name}.{name}", ""]
    return "\n".join(lines)


def _api_path(module_name: str) -> str:
    return f"reference/api/{module_name}.md"


GENERATED = {"reference/cli.md": cli_page, "reference/errors.md": errors_page}


def on_config(config: Any, **_: Any) -> Any:
    """Lists the generated API pages under Reference → Python API in the navigation."""
    pages = [{module: _api_path(module)} for module in API_MODULES]
    for section in config["nav"]:
        for entries in section.values():
            if isinstance(entries, list):
                for index, entry in enumerate(entries):
                    if isinstance(entry, dict) and "Python API" in entry:
                        entries[index] = {"Python API": pages}
    return config


def on_files(files: Files, config: Any, **_: Any) -> Files:
    """Adds the generated pages to the site."""
    for path, page in GENERATED.items():
        files.append(File.generated(config, path, content=page()))
    for module in API_MODULES:
        files.append(File.generated(config, _api_path(module), content=api_page(module)))
    return files

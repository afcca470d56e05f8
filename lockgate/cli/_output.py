"""What a command prints and how it exits: ``--json``, refusals, and usage mistakes.

A refusal prints ``refused [CODE]: sentence`` to stderr and exits 1 (or, with ``--json``, the
result as it came); a :class:`CommandError`, argparse's usage mistakes among them, prints
``lockgate: message`` (a usage mistake: the usage, then its sentence) and exits 2. With
``--json`` every one of them prints the one refusal shape, ``{"ok": false, "error": {"code",
"message"}}`` (:func:`~lockgate.contracts.refusal`), on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from lockgate._errors import LockgateError
from lockgate.contracts import refusal
from lockgate.identity._keyrings import Keyring
from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "CommandError",
    "fail",
    "is_refused",
    "print_json",
    "print_new_secret",
    "report_result",
]


class CommandError(LockgateError):
    """A mistake in how the command was called, or what it needs missing; exits 2 with the
    message (under ``--json``, the refusal of ``code`` with it)."""

    def __init__(
        self, message: str, *, code: str = ErrorCode.VALIDATION_ERROR, usage: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.usage = usage
        """argparse's usage line, for a usage mistake: printed above the sentence, without
        ``--json``."""


def fail(
    message: str, status: int, *, as_json: bool = False, code: str = ErrorCode.VALIDATION_ERROR
) -> NoReturn:
    """Prints ``lockgate: message`` to stderr (with ``as_json``, the refusal of ``code`` with
    ``message`` to stdout) and leaves with ``status``."""
    if as_json:
        print_json(refusal(code, message))
    else:
        print(f"lockgate: {message}", file=sys.stderr)
    raise SystemExit(status)


def print_new_secret(made: Keyring, target: str | Path | None, *, what: str, to: str) -> int:
    """Prints the keys a ``new`` command made where there is no ``target``; else writes them
    there (mode 0600) and says whom to copy them ``to``."""
    if target is None:
        print(made.to_text(), end="")
        return 0
    written = made.write(target)
    print(f"# {what} written to {written} (mode 0600); copy {to}")
    return 0


def print_json(value: Any) -> None:
    """Prints ``value`` as indented JSON; what JSON cannot hold is printed as its ``str``."""
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def is_refused(result: Mapping[str, Any]) -> bool:
    """Whether a client's result is a refusal (a graph's ``ok`` or a tool's ``success`` false)."""
    return result.get("ok") is False or result.get("success") is False


def report_result(result: Mapping[str, Any], arguments: argparse.Namespace) -> int:
    """Prints ``result`` under ``--json``, else its refusal if refused; returns the exit status.

    Every refusal, a graph's or a tool's, says what went wrong as ``error: {code, message}``.
    """
    if arguments.json:
        print_json(result)
    elif is_refused(result):
        error = result.get("error") or {}
        print(f"refused [{error.get('code')}]: {error.get('message')}", file=sys.stderr)
    return 1 if is_refused(result) else 0

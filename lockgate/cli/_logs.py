"""Where a serving command's log goes: stderr, or for ``lockgate dev`` a file, with one line in
the terminal for each thing a person there acts on.

lockgate's library code leaves logging to its application (its logger has a ``NullHandler``);
the ``lockgate`` command is an application, and configures it here.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

__all__ = ["log_the_dev_stack", "log_to_stderr"]

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_CORE_LOGGER = "temporalio.core"
"""The logger the Temporal SDK's Rust core's records are forwarded to in ``lockgate dev``."""

_NOT_FOR_THE_TERMINAL = ("lockgate.audit", _CORE_LOGGER)
"""Records the dev terminal does not show. A refused call's audit record: whoever called heard
the refusal already. The SDK core's warnings: retries and connections, which the Python SDK's
own records (a failing workflow task, a failing activity) already say in terms of the run."""


def log_to_stderr() -> None:
    """Warnings and errors, lockgate's and Temporal's, to stderr with time and source."""
    logging.basicConfig(level=logging.WARNING, format=_FORMAT, stream=sys.stderr)


class _OneLine(logging.Formatter):
    """A warning as one line that says where the whole record is."""

    def __init__(self, log_file: Path) -> None:
        super().__init__()
        self._log_file = log_file

    def format(self, record: logging.LogRecord) -> str:
        first_line = record.getMessage().strip().split("\n", 1)[0]
        if len(first_line) > 240:
            first_line = first_line[:239] + "…"
        return (
            f"lockgate dev: {record.levelname.lower()} from {record.name}: {first_line} "
            f"(the whole record is in {self._log_file})"
        )


def log_the_dev_stack(log_file: Path) -> None:
    """``lockgate dev``'s logging: every record from INFO up, tracebacks included, to
    ``log_file``; one line in the terminal for each warning a person acts on (a workflow task
    or an activity that fails, the inbox's errors); and the SDK core's records, which it would
    otherwise print to the terminal in colour, into the same file.

    Call it before the first Temporal client connects: the core's log forwarding is a setting
    of the runtime that clients are made on.
    """
    from temporalio.runtime import (
        LogForwardingConfig,
        LoggingConfig,
        Runtime,
        TelemetryConfig,
        TelemetryFilter,
    )

    log_file.parent.mkdir(parents=True, exist_ok=True)
    to_file = logging.FileHandler(log_file, encoding="utf-8")
    to_file.setFormatter(logging.Formatter(_FORMAT))
    to_terminal = logging.StreamHandler(sys.stderr)
    to_terminal.setLevel(logging.WARNING)
    to_terminal.setFormatter(_OneLine(log_file))
    to_terminal.addFilter(lambda record: not record.name.startswith(_NOT_FOR_THE_TERMINAL))
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(to_file)
    root.addHandler(to_terminal)
    core = LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=logging.getLogger(_CORE_LOGGER)),
    )
    Runtime.set_default(
        Runtime(telemetry=TelemetryConfig(logging=core)), error_if_already_set=False
    )

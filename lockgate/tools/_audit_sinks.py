"""Where audit records go besides ``logging``: a JSON-lines file, or any :class:`AuditSink`.

An operator ships the file anywhere (a log agent tails it); the OpenTelemetry logs sink is in
``lockgate.telemetry`` (the ``otel`` extra). A sink gets each record once, already redacted,
as the same dict ``logging`` handlers find in ``record.lockgate_audit``.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lockgate._defaults import AUDIT_FILE_ENV

__all__ = ["AUDIT_FILE_ENV", "AuditSink", "JsonLinesAuditSink"]


@runtime_checkable
class AuditSink(Protocol):
    """Receives every audit record, redacted, once."""

    def write(self, record: Mapping[str, Any], *, accepted: bool) -> None:
        """Takes one record; ``accepted`` is False for a refusal or a failed call.

        A sink must not raise for a record it cannot take (it would turn an audit problem into
        a refused call): it drops or reports the record itself.
        """


class JsonLinesAuditSink:
    """Appends each record to a file as one line of JSON, with the time it was written (UTC).

    Several workers (processes) may append to one file: each line is written with a single
    ``write`` on a file opened for appending. The file is made readable by its owner only.

    Example:
        >>> sink = JsonLinesAuditSink("audit.jsonl")  # doctest: +SKIP
        >>> AuditLogger(sinks=[sink])  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._lock = threading.Lock()

    def write(self, record: Mapping[str, Any], *, accepted: bool) -> None:
        """Appends ``record`` as one line."""
        line = json.dumps(
            {"at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **record},
            ensure_ascii=False,
            default=repr,
            separators=(",", ":"),
        )
        data = (line + "\n").encode("utf-8")
        # A full disk must not refuse the call it records; the logger still has the record.
        with self._lock, contextlib.suppress(OSError):
            os.write(self._descriptor, data)

    def close(self) -> None:
        """Closes the file."""
        with self._lock:
            os.close(self._descriptor)

    def __repr__(self) -> str:
        return f"JsonLinesAuditSink({str(self.path)!r})"

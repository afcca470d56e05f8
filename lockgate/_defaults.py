"""Names and defaults the library and the ``lockgate`` command share, in a module that imports
nothing: ``lockgate --help`` shows them without importing the layers that use them."""

from __future__ import annotations

__all__ = [
    "AUDIT_FILE_ENV",
    "DEFAULT_GRACE_SECONDS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TASK_QUEUE",
    "DEFAULT_WINDOW_SECONDS",
    "ENROLMENT_SECRET_FILE_ENV",
    "PAYLOAD_KEYS_FILE_ENV",
    "WORKER_SECRET_FILE_ENV",
]

DEFAULT_TASK_QUEUE = "lockgate"
"""The task queue lockgate's workers serve and its clients use unless told otherwise."""

DEFAULT_MAX_TOKENS = 100
"""A rate limit's tokens per key per window, unless told otherwise."""

DEFAULT_WINDOW_SECONDS = 60.0
"""A rate limit's window, unless told otherwise."""

DEFAULT_GRACE_SECONDS = 10.0
"""How long a stopping worker lets running activities finish before cancelling them: long enough
for a typical tool call, short enough for an orchestrator's default 30 s termination grace."""

AUDIT_FILE_ENV = "LOCKGATE_AUDIT_FILE"
"""The environment variable that may name the JSON-lines audit file of ``lockgate worker``."""

ENROLMENT_SECRET_FILE_ENV = "LOCKGATE_ENROLMENT_SECRET_FILE"
"""The environment variable that may name the enrolment secret's file."""

PAYLOAD_KEYS_FILE_ENV = "LOCKGATE_PAYLOAD_KEYS_FILE"
"""The environment variable that may name the file holding the payload keys."""

WORKER_SECRET_FILE_ENV = "LOCKGATE_WORKER_SECRET_FILE"
"""The environment variable that may name the file holding the worker secret."""

"""Names and defaults the library and the ``lockgate`` command share, in a module that imports
nothing of lockgate's (the standard library only): ``lockgate --help`` shows them without
importing the layers that use them."""

from __future__ import annotations

import shlex
from collections.abc import Mapping

__all__ = [
    "AUDIT_FILE_ENV",
    "DEFAULT_GRACE_SECONDS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TASK_QUEUE",
    "DEFAULT_WINDOW_SECONDS",
    "ENROLMENT_SECRET_FILE_ENV",
    "PAYLOAD_KEYS_FILE_ENV",
    "TASK_QUEUE_ENV",
    "WORKER_SECRET_FILE_ENV",
    "command_task_queue",
    "task_queue_flag",
]

DEFAULT_TASK_QUEUE = "lockgate"
"""The task queue lockgate's workers serve and its clients use unless told otherwise."""

TASK_QUEUE_ENV = "LOCKGATE_TASK_QUEUE"
"""The variable that sets the ``lockgate`` command's task queue where ``--task-queue`` does not."""


def command_task_queue(environ: Mapping[str, str]) -> str:
    """The ``lockgate`` command's default task queue: :data:`TASK_QUEUE_ENV`, else
    :data:`DEFAULT_TASK_QUEUE`."""
    return environ.get(TASK_QUEUE_ENV) or DEFAULT_TASK_QUEUE


def task_queue_flag(task_queue: str, environ: Mapping[str, str] | None = None) -> str:
    """`` --task-queue QUEUE`` for a ``lockgate`` command a hint prints, or nothing where the
    command reaches ``task_queue`` without it: the queue is the default and ``environ`` (the
    printing shell's, where the hint is read; None in workflow code, which reads no
    environment) names no other."""
    if task_queue == DEFAULT_TASK_QUEUE and (environ or {}).get(TASK_QUEUE_ENV) in (
        None,
        "",
        DEFAULT_TASK_QUEUE,
    ):
        return ""
    # A queue name is a Temporal name, which may hold any character: quoted for a shell.
    return f" --task-queue {shlex.quote(task_queue)}"


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

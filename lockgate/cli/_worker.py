"""``lockgate worker``: serves tools and graphs on a task queue until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from lockgate.cli._loop import event_loop_name
from lockgate.cli._output import CommandError
from lockgate.cli._settings import connect, directory_path, payload_keys, worker_secret
from lockgate.gating import AUDIT_FILE_ENV, AuditLogger, JsonLinesAuditSink
from lockgate.worker import LockgatePlugin, load_components, run_worker

__all__ = ["plugin_for", "serve_worker"]


def plugin_for(arguments: argparse.Namespace, references: Sequence[str]) -> LockgatePlugin:
    """The plugin serving the tools and graphs ``references`` name, with the Directory file.

    Without a Directory file it warns and serves anyway: nobody is verified then.

    Raises:
        CommandError: a reference does not load, or there is no worker secret.
    """
    try:
        tools, graphs = load_components(references)
    except ValueError as error:
        raise CommandError(str(error)) from None
    secret = worker_secret(arguments)
    encryption = payload_keys(arguments)
    audit = _audit(arguments)
    path = directory_path(arguments)
    if not path.exists():
        print(
            f"warning: no Directory at {path}: nobody is verified, unsigned callers run only "
            "tools that need no scope",
            file=sys.stderr,
        )
        return LockgatePlugin(tools, graphs, secret=secret, encryption=encryption, audit=audit)
    return LockgatePlugin(
        tools, graphs, str(path), secret=secret, encryption=encryption, audit=audit
    )


def _audit(arguments: argparse.Namespace) -> AuditLogger | None:
    """The audit log with a JSON-lines file (``--audit-file`` or its variable), else None."""
    chosen = getattr(arguments, "audit_file", None) or os.environ.get(AUDIT_FILE_ENV)
    if not chosen:
        return None
    try:
        return AuditLogger(sinks=[JsonLinesAuditSink(chosen)])
    except OSError as error:
        raise CommandError(f"Cannot open the audit file {chosen}: {error}.") from None


async def serve_worker(arguments: argparse.Namespace) -> int:
    """``lockgate worker --tools ... --graphs ...``: runs a worker until it is stopped."""
    references = [*(arguments.tools or []), *(arguments.graphs or [])]
    if not references:
        raise CommandError("worker needs --tools and/or --graphs (module or module:attr).")
    plugin = plugin_for(arguments, references)
    client = await connect(arguments)
    await run_worker(
        client,
        plugin,
        arguments.task_queue,
        on_ready=lambda: print(
            f"worker ready: {len(plugin.registry)} tools, {len(plugin.graph_workflows)} graphs "
            f"on task queue '{arguments.task_queue}' ({client.namespace}), on "
            f"{event_loop_name()}; Ctrl-C stops it",
            flush=True,
        ),
    )
    return 0

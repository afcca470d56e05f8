"""``lockgate dev``: a local Temporal, a worker serving the examples, and demo people to try
them with."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path

from lockgate._defaults import TASK_QUEUE_ENV, task_queue_flag
from lockgate.cli._inbox import inbox_socket, start_inbox
from lockgate.cli._logs import log_the_dev_stack
from lockgate.cli._output import CommandError
from lockgate.cli._settings import (
    STATE_DIRECTORY,
    directory_path,
    keys_dir,
    payload_keys,
    secret_path,
)
from lockgate.cli._worker import EXAMPLES_PACKAGE, plugin_for
from lockgate.encryption import CodecServer, EncryptionCodec, PayloadKeys
from lockgate.encryption._server import CODEC_SERVER_TOKEN_ENV, CodecAccess
from lockgate.identity._keys import new_identity
from lockgate.identity._seals import WORKER_SECRET_ENV, WorkerSecret
from lockgate.worker import run_worker

__all__ = [
    "DEMO_PRINCIPALS",
    "EXAMPLES",
    "SERVER_LOG",
    "WORKER_LOG",
    "activate_line",
    "run_dev_stack",
]

DEMO_PRINCIPALS: dict[str, dict[str, list[str]]] = {
    "ada": {"roles": [], "scopes": []},
    "ed": {"roles": ["editor"], "scopes": ["essay:publish", "post:publish"]},
    "clerk": {"roles": ["editor"], "scopes": []},
    "rod": {"roles": ["officer"], "scopes": ["memo:release"]},
}
"""``lockgate dev``'s people: an agent that writes, an editor who may publish, an editor who may
not, and an officer who may release memos."""

EXAMPLES = (EXAMPLES_PACKAGE,)
"""What ``lockgate dev`` serves: the example graphs that ship in the package."""

SERVER_LOG = STATE_DIRECTORY / "temporal.log"
"""Where ``lockgate dev``'s Temporal server writes: its warnings stay out of the terminal."""

WORKER_LOG = STATE_DIRECTORY / "worker.log"
"""Where ``lockgate dev``'s worker, inbox and SDK records go, tracebacks included; the terminal
shows a line for each warning, pointing here."""


def _demo_identities(arguments: argparse.Namespace) -> Path:
    directory = directory_path(arguments)
    if directory.exists():
        return directory
    keys = keys_dir(arguments)
    entries: list[str] = [
        "# lockgate dev's demo people. Public keys only; the keys are in keys/.",
        "",
    ]
    for principal, holds in DEMO_PRINCIPALS.items():
        key_path = keys / f"{principal}.key"
        if key_path.exists():
            key_path.unlink()  # a demo identity whose Directory entry is gone is useless
        made = new_identity(principal, keys, holds["roles"], holds["scopes"])
        entries.append(made.directory_entry_toml)
    directory.parent.mkdir(parents=True, exist_ok=True)
    directory.write_text("\n".join(entries))
    return directory


_NEXT_STEPS = """\
lockgate dev is up.
  Temporal Web UI:  {ui}
  Inbox:            {inbox}
  Temporal server:  {target} (namespace {namespace}), task queue '{task_queue}'
  Logs:             the server's in {server_log}, the worker's in {worker_log}
  Demo people:      ada (writes), ed (editor, may publish), clerk (editor, may not), rod (officer)
                    keys in {keys}, Directory in {directory}

In another terminal, in this folder{on_path}:
{activate}  export TEMPORAL_ADDRESS={target}{task_queue_export}
  lockgate start essay:review --as ada \\
      --inputs '{{"title": "Tides", "rubric": "gravity, moon, salt, wind, orbit"}}'
  lockgate pending --of editor --as ed
  lockgate decide <run-id> publish_as_is --as clerk     # refused: clerk may not publish
  lockgate decide <run-id> publish_as_is --as ed        # accepted: publish runs as ed
  lockgate show <run-id>
  lockgate tools call essay:grade --args '{{"rubric": "tides", "draft": "Tides."}}'
From the UI: `lockgate sign decide <run-id> publish_as_is --as ed` prints what to paste into the
run's More Actions → Send an Update (name: decide).
Ctrl-C stops the worker and the server (runs are kept in {db}, {durability}).
"""


def activate_line(
    prefix: str | Path | None = None,
    base_prefix: str | Path | None = None,
    path: str | None = None,
    cwd: Path | None = None,
) -> str:
    """The banner's line that puts this Python's ``lockgate`` on PATH (``source
    .venv/bin/activate``), or nothing: only when this Python is a virtual environment's and a
    terminal with ``path`` would not run that environment's ``lockgate`` (``make dev`` runs
    ``.venv/bin/lockgate`` without activating it). The environment is named relative to
    ``cwd`` when it is inside it. Defaults: this interpreter's, this PATH, this folder.
    """
    prefix = Path(sys.prefix if prefix is None else prefix)
    base_prefix = Path(sys.base_prefix if base_prefix is None else base_prefix)
    path = os.environ.get("PATH", "") if path is None else path
    cwd = Path.cwd() if cwd is None else cwd
    activate = prefix / "bin" / "activate"
    if prefix == base_prefix or not activate.is_file():
        return ""
    found = shutil.which("lockgate", path=path)
    if found is not None and Path(found).resolve().parent == (prefix / "bin").resolve():
        return ""
    try:
        shown = activate.resolve().relative_to(cwd.resolve())
    except ValueError:
        shown = activate
    return f"  source {shlex.quote(str(shown))}    # puts this Python's `lockgate` on PATH\n"


def _codec_note(codec: CodecServer | None, keys: PayloadKeys | None) -> str:
    """What ``lockgate dev`` says about encryption, when it is on."""
    if codec is None or keys is None:
        return ""
    cli = (
        f'temporal --codec-endpoint {codec.url} --codec-auth "Bearer ${CODEC_SERVER_TOKEN_ENV}" ...'
        if os.environ.get(CODEC_SERVER_TOKEN_ENV)
        else f"set {CODEC_SERVER_TOKEN_ENV} before `lockgate dev` to give it a token"
    )
    return (
        f"Payloads are encrypted (keys {', '.join(keys.key_ids)}). The Web UI decodes them "
        f"through the codec server at {codec.url}, which answers the UI's origin without a "
        "token (local mode: loopback only, and any program on this machine can ask it too)."
        f"\nThe temporal CLI goes through it with a token: {cli}\n"
    )


def _codec_server(arguments: argparse.Namespace, keys: PayloadKeys) -> CodecServer:
    """A codec server on a free loopback port, in its local mode: the dev UI (plain http, no
    login) cannot send a token, so its origins are answered without one; programs use the token
    in ``LOCKGATE_CODEC_SERVER_TOKEN``, if set."""
    ui_port = arguments.ui_port or arguments.port + 1000
    token = os.environ.get(CODEC_SERVER_TOKEN_ENV, "")
    access = CodecAccess(
        tokens=(token,) if token else (),
        origins=(f"http://localhost:{ui_port}", f"http://127.0.0.1:{ui_port}"),
        tokenless_local=True,
    )
    server = CodecServer(EncryptionCodec(keys), access)
    server.start()
    return server


async def run_dev_stack(arguments: argparse.Namespace) -> int:
    """Starts a dev server, makes the demo people once, and serves the examples until Ctrl-C."""
    from lockgate.devserver import DevServer, DevServerError

    STATE_DIRECTORY.mkdir(exist_ok=True)
    log_the_dev_stack(WORKER_LOG)
    secret_file = secret_path(arguments)
    if not secret_file.exists() and not os.environ.get(WORKER_SECRET_ENV):
        WorkerSecret.generate().write(secret_file)
    directory_file = _demo_identities(arguments)
    arguments.directory = str(directory_file)
    inbox_origin = None
    if not arguments.no_inbox and _inbox_installed():
        inbox_origin = f"http://localhost:{arguments.inbox_port}"
        arguments.passkey_origin = [inbox_origin]
    plugin = plugin_for(arguments, list(arguments.examples or EXAMPLES))
    keys = payload_keys(arguments)
    codec = _codec_server(arguments, keys) if keys is not None else None
    server = DevServer(
        port=arguments.port,
        ui_port=arguments.ui_port,
        ui=not arguments.headless,
        db_file=STATE_DIRECTORY / "temporal.db",
        durability=arguments.durability,
        extra_args=("--ui-codec-endpoint", codec.url) if codec is not None else (),
        log_file=SERVER_LOG,
    )
    # Before the server starts: every taken port is said at once, each with the flag that moves
    # it (a second `lockgate dev` finds them all taken).
    taken = server.taken_ports()
    inbox_listening = None
    if inbox_origin is not None:
        try:
            inbox_listening = inbox_socket(
                "127.0.0.1",
                arguments.inbox_port,
                "Move it with `lockgate dev --inbox-port N`, or start without it: `--no-inbox`.",
            )
        except CommandError as error:
            taken.append(str(error))
    if taken:
        if codec is not None:
            codec.stop()
        if inbox_listening is not None:
            inbox_listening.close()
        if len(taken) == 1:
            raise CommandError(taken[0])
        raise CommandError(
            f"lockgate dev needs {len(taken)} ports that are taken:\n"
            + "\n".join(f"  - {sentence}" for sentence in taken)
        )
    try:
        await server.start()
    except DevServerError as error:
        if codec is not None:
            codec.stop()
        if inbox_listening is not None:
            inbox_listening.close()
        raise CommandError(str(error)) from None
    inbox = None
    stopped_by: list[str] = []
    try:
        client = server.client
        if inbox_listening is not None and inbox_origin is not None:
            # Open for the tour: anyone on this machine reads every run, as the banner says.
            inbox = await start_inbox(
                arguments, client, inbox_listening, inbox_origin, open_to_anyone=True
            )
        activate = activate_line()
        await run_worker(
            client,
            plugin,
            arguments.task_queue,
            on_ready=lambda: print(
                _codec_note(codec, keys)
                + _NEXT_STEPS.format(
                    ui=server.ui_url or "(headless)",
                    inbox=_inbox_line(inbox_origin, arguments),
                    target=server.target,
                    activate=activate,
                    on_path=", with this Python's `lockgate` on PATH" if not activate else "",
                    namespace=server.namespace,
                    task_queue=arguments.task_queue,
                    task_queue_export=(
                        f"\n  export {TASK_QUEUE_ENV}={shlex.quote(arguments.task_queue)}"
                        if task_queue_flag(arguments.task_queue, os.environ)
                        else ""
                    ),
                    server_log=SERVER_LOG,
                    worker_log=WORKER_LOG,
                    keys=keys_dir(arguments),
                    directory=directory_file,
                    db=STATE_DIRECTORY / "temporal.db",
                    durability=(
                        "every commit synced"
                        if arguments.durability == "full"
                        else "synced at checkpoints: a power loss may lose the last commits"
                    ),
                ),
                flush=True,
            ),
            on_stopped=stopped_by.append,
        )
    finally:
        if inbox is not None:
            inbox[0].should_exit = True
            await inbox[1]
        elif inbox_listening is not None:
            inbox_listening.close()
        await server.stop()
        if codec is not None:
            codec.stop()
    if stopped_by:
        print(
            f"lockgate dev stopped ({stopped_by[0]}): the worker"
            + (", the inbox" if inbox is not None else "")
            + f" and the Temporal server are down; runs are kept in "
            f"{STATE_DIRECTORY / 'temporal.db'}",
            flush=True,
        )
    return 0


def _inbox_installed() -> bool:
    try:
        import lockgate.inbox  # noqa: F401
    except ImportError:
        return False
    return True


def _inbox_line(origin: str | None, arguments: argparse.Namespace) -> str:
    if origin is not None:
        return (
            f"{origin}  (open to anyone on this machine; answer gates by importing a key "
            f"from {keys_dir(arguments)}; a passkey needs `lockgate keys enrol NAME`)"
        )
    if arguments.no_inbox:
        return "(off)"
    return "(not installed: pip install 'lockgate[inbox]')"

"""The ``lockgate`` command: a dev stack, a worker, and every client operation.

Human-readable by default, ``--json`` for scripts. A refusal prints its sentence and exits 1;
a usage mistake exits 2. Connection settings follow Temporal's conventions: ``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE``, TLS and API-key variables, and env-config profiles (``--profile``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from temporalio.client import Client
from temporalio.envconfig import ClientConfig

from lockgate.gating import (
    WORKER_SECRET_ENV,
    WORKER_SECRET_FILE_ENV,
    Directory,
    IdentityError,
    Signer,
    WorkerSecret,
    WorkerSecretError,
    new_identity,
    start_binding,
)
from lockgate.namespace import SearchAttributesMissingError, add_search_attributes
from lockgate.worker import (
    DEFAULT_TASK_QUEUE,
    LockgatePlugin,
    load_components,
    run_worker,
)
from lockgate.workflows._catalogue import CatalogueError
from lockgate.workflows._client import GraphClient
from lockgate.workflows._tool_client import ToolClient

__all__ = ["entry", "main"]

STATE_DIRECTORY = Path(".lockgate")
DEMO_PRINCIPALS: dict[str, dict[str, list[str]]] = {
    "ada": {"roles": [], "scopes": []},
    "ed": {"roles": ["editor"], "scopes": ["essay:publish", "post:publish"]},
    "clerk": {"roles": ["editor"], "scopes": []},
    "rod": {"roles": ["officer"], "scopes": ["memo:release"]},
}
"""``lockgate dev``'s people: an agent that writes, an editor who may publish, an editor who may
not, and an officer who may release memos."""

EXAMPLES = ("lockgate.examples",)
"""What ``lockgate dev`` serves: the example graphs that ship in the package."""


class CommandError(Exception):
    """A mistake in how the command was called; exits 2 with the message."""


def _keys_dir(arguments: argparse.Namespace) -> Path:
    return Path(arguments.keys_dir or os.environ.get("LOCKGATE_KEYS") or STATE_DIRECTORY / "keys")


def _directory_path(arguments: argparse.Namespace) -> Path:
    chosen = getattr(arguments, "directory", None) or os.environ.get("LOCKGATE_DIRECTORY")
    return Path(chosen or STATE_DIRECTORY / "directory.toml")


def _secret_path(arguments: argparse.Namespace) -> Path:
    chosen = getattr(arguments, "secret_file", None) or os.environ.get(WORKER_SECRET_FILE_ENV)
    return Path(chosen or STATE_DIRECTORY / "worker.secret")


def _worker_secret(arguments: argparse.Namespace) -> WorkerSecret:
    try:
        if os.environ.get(WORKER_SECRET_ENV) and not getattr(arguments, "secret_file", None):
            found = WorkerSecret.from_environment()
            assert found is not None
            return found
        return WorkerSecret.load(_secret_path(arguments))
    except WorkerSecretError as error:
        raise CommandError(
            f"{error} A worker needs the deployment's worker secret (--secret-file, "
            f"{WORKER_SECRET_FILE_ENV} or {WORKER_SECRET_ENV})."
        ) from None


def _signer(arguments: argparse.Namespace) -> Signer | None:
    principal = getattr(arguments, "as_principal", None)
    if not principal:
        return None
    try:
        return Signer.from_keys_dir(principal, _keys_dir(arguments), channel="cli")
    except IdentityError as error:
        raise CommandError(str(error)) from None


def _local_directory(arguments: argparse.Namespace) -> Directory | None:
    path = _directory_path(arguments)
    if not path.exists():
        return None
    try:
        return Directory.load(path)
    except IdentityError as error:
        raise CommandError(str(error)) from None


async def _connect(arguments: argparse.Namespace) -> Client:
    try:
        config: dict[str, Any] = dict(
            ClientConfig.load_client_connect_config(profile=arguments.profile)
        )
    except Exception as error:
        raise CommandError(f"Cannot read the Temporal connection settings: {error}") from None
    if arguments.address:
        config["target_host"] = arguments.address
    if arguments.namespace:
        config["namespace"] = arguments.namespace
    config.setdefault("target_host", "localhost:7233")
    try:
        return await Client.connect(**config)
    except RuntimeError as error:
        target = config["target_host"]
        raise CommandError(
            f"Cannot reach Temporal at {target}: {error}. Start one with `lockgate dev` (or "
            "`make dev`), or point TEMPORAL_ADDRESS / --address at your cluster."
        ) from None


def _json_argument(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise CommandError(
            f"{what} is not valid JSON ({error.msg} at {error.pos}): {text}"
        ) from None


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _refused(result: dict[str, Any]) -> bool:
    return result.get("ok") is False or result.get("success") is False


def _exit_for(result: dict[str, Any], arguments: argparse.Namespace) -> int:
    if arguments.json:
        _print_json(result)
    elif _refused(result):
        error = result.get("error")
        sentence = error.get("message") if isinstance(error, dict) else error
        code = error.get("code") if isinstance(error, dict) else result.get("code")
        print(f"refused [{code}]: {sentence}", file=sys.stderr)
    return 1 if _refused(result) else 0


# Runs --------------------------------------------------------------------------------------------


def _describe_run(shown: dict[str, Any]) -> str:
    lines = [
        f"run {shown.get('run_id')}  graph {shown.get('graph')} v{shown.get('version')}  "
        f"status {shown.get('status')}"
    ]
    requester = (shown.get("requester") or {}).get("actor")
    if requester:
        lines.append(f"requester: {requester}")
    gate = shown.get("awaiting")
    if gate:
        lines.append(
            f"waiting at gate {gate['gate']} for a(n) {gate['role']}: {gate['because']}".rstrip()
        )
        for choice in gate["choices"]:
            needs = f" (needs {', '.join(choice['needs'])})" if choice["needs"] else ""
            lines.append(f"  - {choice['option']} → {choice['leads_to'] or '(a gate)'}{needs}")
    parked = shown.get("parked")
    if parked:
        lines.append(f"parked at node {parked['node']} ({parked['operation']})")
    if shown.get("ignored_inputs"):
        lines.append(f"ignored inputs (not channels): {', '.join(shown['ignored_inputs'])}")
    trail = shown.get("trail") or []
    if trail:
        total, first = shown.get("trail_total", len(trail)), shown.get("trail_from", 0)
        shown_rows = (
            f" (rows {first + 1}–{first + len(trail)} of {total})" if total > len(trail) else ""
        )
        lines.append(f"trail{shown_rows}:")
        for row in trail:
            by = (row.get("by") or {}).get("actor", "?")
            extra = f" → {row['answer']}" if row.get("answer") else ""
            lines.append(
                f"  {row['outcome']:>8}  {row['node']} ({row['operation']}) by {by}{extra}"
            )
            if row.get("why"):
                lines.append(f"            {row['why']}")
    channels = shown.get("channels")
    if channels:
        lines.append("channels: " + json.dumps(channels, ensure_ascii=False))
    return "\n".join(lines)


async def _start(arguments: argparse.Namespace) -> int:
    inputs = _json_argument(arguments.inputs, "--inputs")
    if not isinstance(inputs, dict):
        raise CommandError("--inputs must be a JSON object of starting channel values.")
    client = GraphClient(
        await _connect(arguments), arguments.task_queue, _signer(arguments), channel="cli"
    )
    result = await client.start(arguments.graph, inputs, wait=not arguments.no_wait)
    if not arguments.json and not _refused(result):
        print(_describe_run(result))
        gate = result.get("awaiting")
        if gate:
            print(
                f"\nanswer it: lockgate decide {result['run_id']} {gate['choices'][0]['option']} "
                "--as <an approver>"
            )
    return _exit_for(result, arguments)


async def _decide(arguments: argparse.Namespace) -> int:
    signer = _signer(arguments)
    if signer is None:
        raise CommandError(
            "decide needs --as PRINCIPAL: a gate is answered only by a signed proof, made with "
            "that principal's key in --keys-dir."
        )
    client = GraphClient(await _connect(arguments), arguments.task_queue, signer)
    result = await client.decide(arguments.run, arguments.choice)
    if not arguments.json and not _refused(result):
        print(_describe_run(result))
    return _exit_for(result, arguments)


async def _resume(arguments: argparse.Namespace) -> int:
    signer = _signer(arguments)
    if signer is None:
        raise CommandError(
            "resume needs --as PRINCIPAL: a run is resumed only by a signed proof, made with "
            "that principal's key in --keys-dir."
        )
    client = GraphClient(await _connect(arguments), arguments.task_queue, signer)
    result = await client.resume(arguments.run)
    if not arguments.json and not _refused(result):
        print(_describe_run(result))
    return _exit_for(result, arguments)


async def _show(arguments: argparse.Namespace) -> int:
    client = GraphClient(await _connect(arguments), arguments.task_queue)
    result = await client.show(arguments.run)
    if not arguments.json and not _refused(result):
        print(_describe_run(result))
    return _exit_for(result, arguments)


async def _pending(arguments: argparse.Namespace) -> int:
    signer = _signer(arguments)
    client = GraphClient(
        await _connect(arguments),
        arguments.task_queue,
        signer,
        directory=_local_directory(arguments),
    )
    rows = await client.pending(of=arguments.of)
    if arguments.json:
        _print_json(rows)
        return 0
    if not rows:
        print("no open gates" + (f" for {arguments.of}" if arguments.of else ""))
        return 0
    for row in rows:
        target = row.get("target") or {}
        named = ", ".join(f"{key}={value!r}" for key, value in target.items())
        print(
            f"{row['run_id']}  {row['graph']}  gate {row['gate']}  for {row['assignee']}  {named}"
        )
        print(f"  opened by {row['requester']}: {row['because']}")
        for choice in row["choices"]:
            needs = f" needs {', '.join(choice['needs'])}" if choice["needs"] else ""
            verdict = ""
            if "may" in choice:
                verdict = "  ✓ you may" if choice["may"] else f"  ✗ {choice['why_not']}"
            print(f"    {choice['option']} → {choice['leads_to'] or '(a gate)'}{needs}{verdict}")
    return 0


async def _list(arguments: argparse.Namespace) -> int:
    client = GraphClient(await _connect(arguments), arguments.task_queue)
    rows = await client.list(arguments.graph)
    if arguments.json:
        _print_json(rows)
        return 0
    for row in rows:
        awaiting = f" (awaiting {row['awaiting']})" if row["awaiting"] else ""
        print(f"{row['run_id']}  {row['graph']}  {row['status']}{awaiting}  {row['started_at']}")
    if not rows:
        print("no runs")
    return 0


# Signing for the Temporal UI and CLI -------------------------------------------------------------


async def _sign(arguments: argparse.Namespace) -> int:
    signer = _signer(arguments)
    if signer is None:
        raise CommandError("sign needs --as PRINCIPAL (whose key in --keys-dir signs).")
    if arguments.what == "start":
        inputs = _json_argument(arguments.inputs, "--inputs")
        proof = signer.sign(start_binding(arguments.graph, arguments.run, inputs))
        _print_json({"inputs": inputs, "proof": proof, "channel": "cli"})
        return 0
    runs = GraphClient(await _connect(arguments), arguments.task_queue, signer)
    if arguments.what == "decide":
        proof = await runs.sign_decide(arguments.run, arguments.choice)
    else:
        proof = await runs.sign_resume(arguments.run)
    if proof.get("ok") is False:
        return _exit_for(proof, arguments)
    text = json.dumps(proof, separators=(",", ":"))
    if arguments.json:
        print(text)
        return 0
    name = arguments.what
    print(text)
    print(
        textwrap.dedent(
            f"""
            Valid for {int(300 / 60)} minutes, once. Paste it as the input of the update '{name}':
              Temporal UI: the run's page → More Actions → Send an Update → Name: {name} → Data
              temporal CLI: temporal workflow update execute -w {arguments.run} --name {name} \\
                              --input '{text}'
              (or as a signal, recorded in the trail even when refused:
               temporal workflow signal -w {arguments.run} --name {name} --input '...')"""
        ),
        file=sys.stderr,
    )
    return 0


# Tools -------------------------------------------------------------------------------------------


async def _tools(arguments: argparse.Namespace) -> int:
    client = await _connect(arguments)
    tools = ToolClient(client, arguments.task_queue, _signer(arguments), channel="temporal")
    if arguments.tools_command == "list":
        try:
            listed = await tools.list()
        except CatalogueError as error:
            raise CommandError(str(error)) from None
        if arguments.json:
            _print_json(listed)
        else:
            for definition in listed:
                schema = definition["inputSchema"].get("properties", {})
                print(f"{definition['name']}({', '.join(schema)})  {definition['description']}")
        return 0
    if arguments.tools_command == "confirm":
        result = await tools.confirm(arguments.request_id, arguments.token)
    else:
        call_arguments = _json_argument(arguments.args, "--args")
        result = await tools.call(arguments.name, call_arguments, request_id=arguments.request_id)
    if arguments.json:
        _print_json(result)
        return 1 if _refused(result) else 0
    if _refused(result):
        return _exit_for(result, arguments)
    data = result.get("data")
    if isinstance(data, dict) and data.get("requires_confirmation"):
        print(f"? confirm {data['action_summary']} before {data['expires_at']}:")
        print(f"  lockgate tools confirm {data['request_id']} {data['confirm_token']}")
        return 0
    _print_json(data)
    return 0


# Keys, setup, worker, dev ------------------------------------------------------------------------


def _secret(arguments: argparse.Namespace) -> int:
    target = getattr(arguments, "secret_file", None)
    try:
        if arguments.secret_command == "new":
            secret = WorkerSecret.generate()
            if target is None:
                print(secret.to_text(), end="")
                return 0
            written = secret.write(target)
            print(f"# worker secret written to {written} (mode 0600); copy it to every worker")
            return 0
        path = _secret_path(arguments)
        current = WorkerSecret.load(path)
        if arguments.secret_command == "rotate":
            updated = current.rotated()
            note = f"new current key {updated.current}; {', '.join(current.key_ids)} still open"
        else:
            updated = current.retired(arguments.key_id)
            note = f"key {arguments.key_id} retired"
        updated.write(path, overwrite=True)
    except WorkerSecretError as error:
        raise CommandError(str(error)) from None
    print(f"# {path}: {note}; copy it to every worker, then restart them")
    return 0


def _keys(arguments: argparse.Namespace) -> int:
    try:
        made = new_identity(arguments.principal, _keys_dir(arguments))
    except IdentityError as error:
        raise CommandError(str(error)) from None
    print(f"# private key written to {made.key_path} (keep it; it never goes in a Directory)")
    print("# add this to the worker's Directory file, with the roles and scopes it holds:")
    print(made.directory_entry_toml)
    return 0


async def _setup(arguments: argparse.Namespace) -> int:
    client = await _connect(arguments)
    try:
        added = await add_search_attributes(client)
    except SearchAttributesMissingError as error:
        print(error, file=sys.stderr)
        return 1
    if added:
        print(f"added to namespace '{client.namespace}': {', '.join(added)}")
    else:
        print(f"namespace '{client.namespace}' has lockgate's search attributes")
    return 0


def _plugin(arguments: argparse.Namespace, references: Sequence[str]) -> LockgatePlugin:
    try:
        tools, graphs = load_components(references)
    except ValueError as error:
        raise CommandError(str(error)) from None
    secret = _worker_secret(arguments)
    path = _directory_path(arguments)
    if not path.exists():
        print(
            f"warning: no Directory at {path}: nobody is verified, unsigned callers run only "
            "tools that need no scope",
            file=sys.stderr,
        )
        return LockgatePlugin(tools, graphs, secret=secret)
    return LockgatePlugin(tools, graphs, str(path), secret=secret)


async def _worker(arguments: argparse.Namespace) -> int:
    references = [*(arguments.tools or []), *(arguments.graphs or [])]
    if not references:
        raise CommandError("worker needs --tools and/or --graphs (module or module:attr).")
    plugin = _plugin(arguments, references)
    client = await _connect(arguments)
    await run_worker(
        client,
        plugin,
        arguments.task_queue,
        on_ready=lambda: print(
            f"worker ready: {len(plugin.registry)} tools, {len(plugin.graph_workflows)} graphs "
            f"on task queue '{arguments.task_queue}' ({client.namespace}); Ctrl-C stops it",
            flush=True,
        ),
    )
    return 0


def _demo_identities(arguments: argparse.Namespace) -> Path:
    directory_path = _directory_path(arguments)
    if directory_path.exists():
        return directory_path
    keys_dir = _keys_dir(arguments)
    entries: list[str] = [
        "# lockgate dev's demo people. Public keys only; the keys are in keys/.",
        "",
    ]
    for principal, holds in DEMO_PRINCIPALS.items():
        key_path = keys_dir / f"{principal}.key"
        if key_path.exists():
            key_path.unlink()  # a demo identity whose Directory entry is gone is useless
        made = new_identity(principal, keys_dir, holds["roles"], holds["scopes"])
        entries.append(made.directory_entry_toml)
    directory_path.parent.mkdir(parents=True, exist_ok=True)
    directory_path.write_text("\n".join(entries))
    return directory_path


_NEXT_STEPS = """\
lockgate dev is up.
  Temporal Web UI:  {ui}
  Temporal server:  {target} (namespace {namespace}), task queue '{task_queue}'
  Demo people:      ada (writes), ed (editor, may publish), clerk (editor, may not), rod (officer)
                    keys in {keys}, Directory in {directory}

In another terminal, in this folder, with this Python's `lockgate` on PATH:
  export TEMPORAL_ADDRESS={target}
  lockgate start essay:review --as ada \\
      --inputs '{{"title": "Tides", "rubric": "gravity, moon, salt, wind, orbit"}}'
  lockgate pending --of editor --as ed
  lockgate decide <run-id> publish_as_is --as clerk     # refused: clerk may not publish
  lockgate decide <run-id> publish_as_is --as ed        # accepted: publish runs as ed
  lockgate show <run-id>
  lockgate tools call essay:grade --args '{{"rubric": "tides", "draft": "Tides."}}'
From the UI: `lockgate sign decide <run-id> publish_as_is --as ed` prints what to paste into the
run's More Actions → Send an Update (name: decide).
Ctrl-C stops the worker and the server (runs are kept in {db}).
"""


async def _dev(arguments: argparse.Namespace) -> int:
    from lockgate.devserver import DevServer, DevServerError

    STATE_DIRECTORY.mkdir(exist_ok=True)
    secret_path = _secret_path(arguments)
    if not secret_path.exists() and not os.environ.get(WORKER_SECRET_ENV):
        WorkerSecret.generate().write(secret_path)
    directory_path = _demo_identities(arguments)
    arguments.directory = str(directory_path)
    plugin = _plugin(arguments, list(arguments.examples or EXAMPLES))
    server = DevServer(
        port=arguments.port,
        ui_port=arguments.ui_port,
        ui=not arguments.headless,
        db_file=STATE_DIRECTORY / "temporal.db",
    )
    try:
        await server.start()
    except DevServerError as error:
        raise CommandError(str(error)) from None
    try:
        client = server.client
        await run_worker(
            client,
            plugin,
            arguments.task_queue,
            on_ready=lambda: print(
                _NEXT_STEPS.format(
                    ui=server.ui_url or "(headless)",
                    target=server.target,
                    namespace=server.namespace,
                    task_queue=arguments.task_queue,
                    keys=_keys_dir(arguments),
                    directory=directory_path,
                    db=STATE_DIRECTORY / "temporal.db",
                ),
                flush=True,
            ),
        )
    finally:
        await server.stop()
    return 0


# Parsing -----------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--address", help="Temporal frontend host:port (or TEMPORAL_ADDRESS)")
    common.add_argument("--namespace", help="Temporal namespace (or TEMPORAL_NAMESPACE)")
    common.add_argument("--profile", help="Temporal env-config profile (or TEMPORAL_PROFILE)")
    common.add_argument("--task-queue", default=DEFAULT_TASK_QUEUE, help="lockgate's task queue")
    common.add_argument("--keys-dir", help="where private keys live (default .lockgate/keys)")
    common.add_argument("--directory", help="Directory TOML (default .lockgate/directory.toml)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument(
        "--secret-file",
        help=f"the worker secret (default {WORKER_SECRET_FILE_ENV} or .lockgate/worker.secret)",
    )
    signed = argparse.ArgumentParser(add_help=False)
    signed.add_argument(
        "--as", dest="as_principal", metavar="PRINCIPAL", help="sign as this principal"
    )

    parser = argparse.ArgumentParser(
        prog="lockgate", description="Governed tools and declared graphs on Temporal."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser("dev", parents=[common], help="dev server + worker + demo people")
    dev.add_argument("--port", type=int, default=7233, help="the server's port (default 7233)")
    dev.add_argument("--ui-port", type=int, help="the Web UI's port (default: port + 1000)")
    dev.add_argument("--headless", action="store_true", help="no Web UI")
    dev.add_argument("--examples", nargs="*", help="modules to serve instead of the examples")

    worker = commands.add_parser("worker", parents=[common], help="serve tools and graphs")
    worker.add_argument("--tools", nargs="+", metavar="MODULE[:ATTR]")
    worker.add_argument("--graphs", nargs="+", metavar="MODULE[:ATTR]")

    commands.add_parser("setup", parents=[common], help="register lockgate's search attributes")

    secret = commands.add_parser("secret", parents=[common], help="the workers' shared secret")
    secret_commands = secret.add_subparsers(dest="secret_command", required=True)
    secret_commands.add_parser(
        "new", parents=[common], help="a new worker secret (to --secret-file, else printed)"
    )
    secret_commands.add_parser(
        "rotate", parents=[common], help="add a new current key; the old ones still open"
    )
    retire = secret_commands.add_parser(
        "retire", parents=[common], help="drop an old key (once what it sealed has been opened)"
    )
    retire.add_argument("key_id")

    keys = commands.add_parser("keys", parents=[common], help="identities")
    keys_commands = keys.add_subparsers(dest="keys_command", required=True)
    keys_new = keys_commands.add_parser("new", parents=[common], help="a new private key")
    keys_new.add_argument("principal")

    tools = commands.add_parser("tools", parents=[common], help="tools through Temporal")
    tools_commands = tools.add_subparsers(dest="tools_command", required=True)
    tools_commands.add_parser("list", parents=[common])
    call = tools_commands.add_parser("call", parents=[common, signed])
    call.add_argument("name")
    call.add_argument("--args", default="{}", help="JSON object of arguments")
    call.add_argument("--request-id", help="asking again with it returns the first answer")
    confirm = tools_commands.add_parser("confirm", parents=[common, signed])
    confirm.add_argument("request_id")
    confirm.add_argument("token")

    start = commands.add_parser("start", parents=[common, signed], help="start a graph run")
    start.add_argument("graph")
    start.add_argument("--inputs", default="{}", help="JSON object of starting channels")
    start.add_argument("--no-wait", action="store_true", help="return once started")

    pending = commands.add_parser("pending", parents=[common, signed], help="open gates")
    pending.add_argument("--of", metavar="ROLE")

    decide = commands.add_parser("decide", parents=[common, signed], help="answer a gate")
    decide.add_argument("run")
    decide.add_argument("choice")

    resume = commands.add_parser("resume", parents=[common, signed], help="resume a parked run")
    resume.add_argument("run")

    show = commands.add_parser("show", parents=[common], help="a run and its trail")
    show.add_argument("run")

    listing = commands.add_parser("list", parents=[common], help="runs")
    listing.add_argument("--graph")

    sign = commands.add_parser("sign", parents=[common], help="print a signed answer to paste")
    sign_commands = sign.add_subparsers(dest="what", required=True)
    sign_decide = sign_commands.add_parser("decide", parents=[common, signed])
    sign_decide.add_argument("run")
    sign_decide.add_argument("choice")
    sign_resume = sign_commands.add_parser("resume", parents=[common, signed])
    sign_resume.add_argument("run")
    sign_start = sign_commands.add_parser("start", parents=[common, signed])
    sign_start.add_argument("graph")
    sign_start.add_argument("run", help="the workflow id the run will be started with")
    sign_start.add_argument("--inputs", default="{}")
    return parser


_ASYNC_COMMANDS = {
    "dev": _dev,
    "worker": _worker,
    "setup": _setup,
    "tools": _tools,
    "start": _start,
    "pending": _pending,
    "decide": _decide,
    "resume": _resume,
    "show": _show,
    "list": _list,
    "sign": _sign,
}


def _fail(message: str, status: int) -> NoReturn:
    print(f"lockgate: {message}", file=sys.stderr)
    raise SystemExit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``lockgate`` command; returns its exit status."""
    # Like uvicorn and gunicorn: `--tools myapp.tools` names modules relative to where you are.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    arguments = _parser().parse_args(argv)
    try:
        if arguments.command == "keys":
            return _keys(arguments)
        if arguments.command == "secret":
            return _secret(arguments)
        return asyncio.run(_ASYNC_COMMANDS[arguments.command](arguments))
    except CommandError as error:
        _fail(str(error), 2)
    except KeyboardInterrupt:
        return 130


def entry() -> NoReturn:
    """The console script: :func:`main`, then an immediate exit.

    temporalio's core runs native threads that can abort the interpreter while it finalizes
    ("PyGILState_Release ... must be current"), turning a finished command's status into 134;
    everything is flushed and done by then, so the process leaves without finalizing.
    """
    try:
        status = main()
    except SystemExit as leaving:  # a refusal (`_fail`) or argparse's usage error
        code = leaving.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    entry()

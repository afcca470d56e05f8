"""The command line itself: every ``lockgate`` command, its flags, and reading a JSON flag.

Every command takes the global options (``--address``, ``--keys-dir``, ``--json`` ...), before or
after its name; the ones that sign also take ``--as PRINCIPAL``. Building the parser imports
nothing heavy: ``lockgate --help`` answers without importing temporalio.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import TYPE_CHECKING, Any, NoReturn

from lockgate._defaults import (
    AUDIT_FILE_ENV,
    DEFAULT_GRACE_SECONDS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_TASK_QUEUE,
    DEFAULT_WINDOW_SECONDS,
    ENROLMENT_SECRET_FILE_ENV,
    PAYLOAD_KEYS_FILE_ENV,
    TASK_QUEUE_ENV,
    WORKER_SECRET_FILE_ENV,
    command_task_queue,
)
from lockgate._version import __version__
from lockgate.cli._output import CommandError

__all__ = ["build_parser", "json_argument"]


def json_argument(text: str, what: str) -> Any:
    """``text``, the value of the flag ``what``, read as JSON.

    Raises:
        CommandError: it is not JSON; the message names the flag and where the JSON breaks.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise CommandError(
            f"{what} is not valid JSON ({error.msg} at {error.pos}): {text}"
        ) from None


def _seconds(text: str) -> float:
    """A flag's value of seconds: a number, zero or more."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(seconds) and seconds >= 0):
        raise argparse.ArgumentTypeError(f"{text!r}: seconds are a finite number, zero or more")
    return seconds


class _Parser(argparse.ArgumentParser):
    """A parser that raises its usage mistakes as a :class:`CommandError` (exit 2), for the
    command to print as text or, under ``--json``, as a refusal, where argparse would print
    them itself; its commands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        raise CommandError(f"{message} (see `{self.prog} --help`)", usage=self.format_usage())


_TAKES_GLOBAL_OPTIONS = (
    "It takes lockgate's global options too (--address, --namespace, --json, ...: see "
    "`lockgate --help`), before or after its name."
)


if TYPE_CHECKING:
    _SubParsersAction = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # generic only to type checkers
    _SubParsersAction = argparse._SubParsersAction


class _Commands(_SubParsersAction):
    """Commands whose own help opens with the line the command list shows for them, and says
    that the global options, which it does not list, work there too."""

    def add_parser(self, name: str, **settings: Any) -> argparse.ArgumentParser:
        settings.setdefault("description", settings.get("help"))
        settings.setdefault("epilog", _TAKES_GLOBAL_OPTIONS)
        return super().add_parser(name, **settings)


def build_parser() -> argparse.ArgumentParser:
    """The ``lockgate`` parser, with every command and its flags."""
    common = _Parser(add_help=False)  # every command's parent
    _add_global_options(common, shown=False)
    enrolling = _Parser(add_help=False)
    enrolling.add_argument(
        "--enrolment-secret",
        metavar="FILE",
        help=f"the secret enrolment codes are made with (default {ENROLMENT_SECRET_FILE_ENV} or "
        ".lockgate/enrolment.secret)",
    )
    keyed = _Parser(add_help=False)  # a server that signs with a key only
    keyed.add_argument(
        "--as", dest="as_principal", metavar="PRINCIPAL", help="sign as this principal"
    )
    signed = _Parser(add_help=False)
    signer = signed.add_mutually_exclusive_group()
    signer.add_argument(
        "--as", dest="as_principal", metavar="PRINCIPAL", help="sign as this principal"
    )
    signer.add_argument(
        "--sso",
        action="store_true",
        help="sign as the person `lockgate login` signed in, with a fresh sign-in at the "
        "identity provider for each act (decide, resume, cancel and sign do so by default "
        "after `lockgate login`)",
    )
    signed.add_argument(
        "--no-browser",
        action="store_true",
        help="with --sso: only print the sign-in link (to open in a browser elsewhere)",
    )

    parser = _Parser(
        prog="lockgate",
        description="Governed tools and declared graphs on Temporal.",
        epilog="`lockgate COMMAND --help` says what a command takes.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {__version__}",
        help="show lockgate's version and exit",
    )
    _add_global_options(parser, shown=True)
    commands = parser.add_subparsers(
        title="commands", dest="command", required=True, metavar="COMMAND", action=_Commands
    )

    dev = commands.add_parser(
        "dev", parents=[common, enrolling], help="dev server + worker + demo people"
    )
    dev.add_argument("--port", type=int, default=7233, help="the server's port (default 7233)")
    dev.add_argument("--ui-port", type=int, help="the Web UI's port (default: port + 1000)")
    dev.add_argument("--headless", action="store_true", help="no Web UI")
    dev.add_argument(
        "--durability",
        choices=["full", "fast"],
        default="full",
        help="how the server's SQLite file is written: full (default) syncs every commit; fast "
        "syncs at checkpoints, so a power loss may lose the last commits",
    )
    dev.add_argument("--examples", nargs="*", help="modules to serve instead of the examples")
    dev.add_argument("--inbox-port", type=int, default=8240, help="the inbox's port (8240)")
    dev.add_argument("--no-inbox", action="store_true", help="no web inbox")

    worker = commands.add_parser("worker", parents=[common], help="serve tools and graphs")
    worker.add_argument(
        "--tools",
        nargs="+",
        metavar="MODULE[:NAME]",
        help="tools to serve: a module's TOOLS list, or module:NAME for one tool, a list of "
        "tools or a ToolRegistry",
    )
    worker.add_argument(
        "--graphs",
        nargs="+",
        metavar="MODULE[:NAME]",
        help="graphs to serve: a module's GRAPHS (and TOOLS) lists, or module:NAME for one graph "
        "class or a list",
    )
    worker.add_argument(
        "--allow-examples",
        action="store_true",
        help="serve lockgate's example modules (lockgate.examples...) on purpose: without it the "
        "worker refuses them, so an image started without its own --tools/--graphs says so",
    )
    worker.add_argument(
        "--audit-file",
        metavar="FILE",
        help=f"also append every audit record to FILE as JSON lines (or {AUDIT_FILE_ENV})",
    )
    worker.add_argument(
        "--audit-otel",
        action="store_true",
        help="also emit every audit record as an OpenTelemetry log record (lockgate[otel])",
    )
    worker.add_argument(
        "--otel",
        action="store_true",
        help="traces and metrics to the global OpenTelemetry providers, as set up by "
        "opentelemetry-instrument or your code (lockgate[otel])",
    )
    worker.add_argument(
        "--passkey-origin",
        action="append",
        metavar="URL",
        help="the inbox's origin: accept answers signed with passkeys there (repeatable; or "
        "LOCKGATE_PASSKEY_ORIGINS)",
    )

    worker.add_argument(
        "--notifications",
        metavar="TOML",
        help="webhooks told when a gate of their role opens or closes",
    )
    worker.add_argument(
        "--channel",
        action="append",
        metavar="NAME=FLAGS",
        help="govern the channel NAME (one your own surface signs with, or a built-in one "
        "replaced) by comma-separated policy flags: require_auth, block_mutating, "
        "require_confirmation_for_mutating, confirmation_requires_signature, allow_all on; "
        "no_signature_is_consent off; none for the defaults (slack=require_auth). Repeatable; "
        "a channel nobody registered fails closed",
    )
    worker.add_argument(
        "--rate-limit",
        metavar="STORE",
        help="budgets per channel:principal:tool: redis://HOST:PORT/DB shares them with every "
        "worker on that Redis (lockgate[redis]); memory keeps one per worker process; a store "
        "that cannot be reached refuses calls (default: no limit)",
    )
    worker.add_argument(
        "--rate-limit-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        metavar="N",
        help=f"tokens per key per window; a mutating call spends 5, a read 1 (default "
        f"{DEFAULT_MAX_TOKENS})",
    )
    worker.add_argument(
        "--rate-limit-window",
        type=float,
        default=DEFAULT_WINDOW_SECONDS,
        metavar="SECONDS",
        help=f"the window's length (default {DEFAULT_WINDOW_SECONDS:g})",
    )
    worker.add_argument(
        "--grace-seconds",
        type=_seconds,
        default=DEFAULT_GRACE_SECONDS,
        metavar="N",
        help="on SIGTERM or Ctrl-C, stop polling at once and give running activities N seconds "
        "to finish before they are cancelled and retried elsewhere (default "
        f"{DEFAULT_GRACE_SECONDS:g}; keep an orchestrator's termination grace above it)",
    )
    worker.add_argument(
        "--health-port",
        type=int,
        metavar="PORT",
        help="answer GET /livez (200 while the process runs) and /readyz (200 once the "
        "Directory, the worker secret and the namespace are checked and the worker polls; 503 "
        "with a JSON reason before that and while draining) on PORT",
    )
    worker.add_argument(
        "--health-host",
        default="0.0.0.0",
        metavar="ADDRESS",
        help="the address --health-port binds (default 0.0.0.0: an orchestrator probes the "
        "pod's own address; the answers say only whether the worker is ready)",
    )
    worker.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics on PORT at /metrics: the Temporal SDK's (temporal_*) and "
        "lockgate's (lockgate_tool_calls, lockgate_refusals, lockgate_gates_opened, "
        "lockgate_gates_answered, lockgate_gate_decision_seconds)",
    )
    worker.add_argument(
        "--metrics-host",
        default="0.0.0.0",
        metavar="ADDRESS",
        help="the address --metrics-port binds (default 0.0.0.0, where Prometheus scrapes a pod; "
        "the series name tools, graphs, roles and refusal codes, never people or arguments)",
    )
    worker.add_argument(
        "--deployment",
        metavar="NAME",
        help="Temporal Worker Versioning: the worker deployment this worker belongs to (with "
        "--build-id). It gets tasks once its build is the deployment's current version "
        "(`temporal worker deployment set-current-version`); lockgate's runs are auto-upgrade: "
        "at their next task they move to the current version and finish there on the graph "
        "version they started with, so a build must serve every graph version still running",
    )
    worker.add_argument(
        "--build-id",
        metavar="ID",
        help="Temporal Worker Versioning: this worker's build of --deployment (with --deployment)",
    )
    worker.add_argument(
        "--unsealed-runs-before",
        metavar="TIME",
        help="believe the unsealed history of runs started before TIME (ISO 8601 with a time "
        "zone, e.g. 2026-12-04T12:00:00Z): runs recorded by a lockgate that did not yet seal "
        "what its workers accept. Without it every run's history must carry this deployment's "
        "seals; drop it once those runs have finished",
    )

    inbox = commands.add_parser(
        "inbox", parents=[common, enrolling], help="the web inbox for people"
    )
    inbox.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    inbox.add_argument("--port", type=int, default=8240, help="port (default 8240)")
    inbox.add_argument(
        "--origin",
        help="the address people open, for passkeys (default http://localhost:PORT; passkeys "
        "refuse IP addresses)",
    )
    inbox.add_argument(
        "--session-minutes",
        type=float,
        default=60.0,
        help="how long a sign-in lasts (default 60 minutes)",
    )

    commands.add_parser("setup", parents=[common], help="register lockgate's search attributes")

    login = commands.add_parser(
        "login",
        parents=[common],
        help="sign in at your identity provider, so decide, resume, cancel and sign sign as you",
    )
    login.add_argument(
        "--issuer",
        metavar="NAME",
        help="the issuer, as the Directory names it ([issuers.NAME]); default: the Directory's "
        "only one, else the last login's",
    )
    login.add_argument(
        "--issuer-url", metavar="URL", help="its issuer URL (default: the Directory's)"
    )
    login.add_argument(
        "--client-id",
        metavar="ID",
        help="lockgate's client id there, a native app with the loopback redirect "
        "http://127.0.0.1/callback (default: the Directory's audience)",
    )
    login.add_argument(
        "--principal-claim",
        choices=["email", "preferred_username", "sub"],
        help="the claim that names you (default: the Directory's, else email)",
    )
    login.add_argument(
        "--scopes",
        metavar="'openid ...'",
        help="the scopes asked for, space-separated: openid, and what releases the claim that "
        "names you and your groups (default: openid and email or profile)",
    )
    login.add_argument(
        "--no-browser",
        action="store_true",
        help="only print the sign-in link (to open in a browser elsewhere)",
    )

    mcp = commands.add_parser(
        "mcp", parents=[common, keyed], help="MCP server (stdio, or --http with a JSON API)"
    )
    mcp.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    mcp.add_argument("--token-file", help="the bearer token (default: LOCKGATE_MCP_TOKEN)")
    mcp.add_argument(
        "--allowed-host",
        action="append",
        help="a Host header MCP accepts besides localhost (behind a proxy); repeatable",
    )
    mcp.add_argument(
        "--poll-seconds",
        type=float,
        default=1.0,
        help="how often open gates are checked, to notify subscribed clients (default 1)",
    )

    secret = commands.add_parser("secret", parents=[common], help="the workers' shared secret")
    secret_commands = secret.add_subparsers(dest="secret_command", required=True, action=_Commands)
    secret_commands.add_parser(
        "new", parents=[common], help="a new worker secret (to --secret-file, else printed)"
    )
    secret_commands.add_parser(
        "rotate", parents=[common], help="add a new current key; the old ones still open"
    )
    retire = secret_commands.add_parser(
        "retire",
        parents=[common],
        help="drop an old key (once every run open while it was current has finished)",
    )
    retire.add_argument("key_id", help="the key to drop (as `secret rotate` named it)")

    payload_keys = commands.add_parser(
        "payload-keys", parents=[common], help="the keys payloads are encrypted with"
    )
    payload_keys_commands = payload_keys.add_subparsers(
        dest="payload_keys_command", required=True, action=_Commands
    )
    payload_keys_commands.add_parser(
        "new", parents=[common], help="new payload keys (to --payload-keys, else printed)"
    )
    payload_keys_commands.add_parser(
        "rotate", parents=[common], help="add a new current key; the old ones still decrypt"
    )

    codec = commands.add_parser(
        "codec-server", parents=[common], help="decode runs for the Temporal UI and CLI"
    )
    codec.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    codec.add_argument("--port", type=int, default=8081, help="port (default 8081)")
    codec.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="a browser origin whose pages may read the answers (CORS), e.g. the UI's "
        "http://localhost:8233 (repeatable); it still needs the token, unless "
        "--local-without-token",
    )
    codec.add_argument(
        "--local-without-token",
        action="store_true",
        help="answer the allowed origins without a token (for a Temporal UI on this machine "
        "that cannot send one); binds loopback only, and any program here can then decrypt",
    )
    codec.add_argument(
        "--only-namespace",
        action="append",
        metavar="NAMESPACE",
        help="answer only requests for this namespace (X-Namespace; repeatable)",
    )

    keys = commands.add_parser(
        "keys", parents=[common], help="identities: keys and enrolment codes"
    )
    keys_commands = keys.add_subparsers(dest="keys_command", required=True, action=_Commands)
    keys_new = keys_commands.add_parser(
        "new",
        parents=[common],
        help="a new private key, and its Directory entry (into --directory FILE, else printed)",
    )
    keys_new.add_argument("principal", help="whose key it is: their name in the Directory")
    keys_new.add_argument(
        "--role", dest="roles", action="append", metavar="ROLE", help="a role it holds (repeatable)"
    )
    keys_new.add_argument(
        "--scope",
        dest="scopes",
        action="append",
        metavar="SCOPE",
        help="a scope it holds (repeatable)",
    )
    keys_enrol = keys_commands.add_parser(
        "enrol",
        parents=[common, enrolling],
        help="an enrolment code: lets PRINCIPAL register a passkey in the inbox",
    )
    keys_enrol.add_argument("principal", help="who may register a passkey with the code")
    keys_enrol.add_argument(
        "--valid-for",
        type=float,
        default=24.0,
        metavar="HOURS",
        help="how long the code is good (default 24 hours)",
    )

    tools = commands.add_parser("tools", parents=[common], help="tools through Temporal")
    tools_commands = tools.add_subparsers(dest="tools_command", required=True, action=_Commands)
    tools_commands.add_parser("list", parents=[common], help="the tools the workers serve")
    call = tools_commands.add_parser(
        "call", parents=[common, signed], help="call a tool as a durable run"
    )
    call.add_argument("name", help="the tool, e.g. essay:grade")
    call.add_argument("--args", default="{}", help="JSON object of arguments")
    call.add_argument("--request-id", help="asking again with it returns the first answer")
    confirm = tools_commands.add_parser(
        "confirm", parents=[common, signed], help="confirm a call that asked for confirmation"
    )
    confirm.add_argument("request_id", help="the request id the call was made with")
    confirm.add_argument("token", help="the confirmation token the call answered with")

    start = commands.add_parser("start", parents=[common, signed], help="start a graph run")
    start.add_argument("graph", help="the graph to run, e.g. essay:review")
    start.add_argument("--inputs", default="{}", help="JSON object of starting fields")
    start.add_argument("--no-wait", action="store_true", help="return once started")

    schedule = commands.add_parser(
        "schedule", parents=[common], help="Temporal Schedules whose runs start as you"
    )
    schedule_commands = schedule.add_subparsers(
        dest="schedule_command", required=True, action=_Commands
    )
    create = schedule_commands.add_parser(
        "create",
        parents=[common, signed],
        help="a schedule of a graph whose runs start as --as, until --until",
    )
    create.add_argument("graph", help="the graph to run, e.g. essay:review")
    cadence = create.add_mutually_exclusive_group(required=True)
    cadence.add_argument("--cron", metavar="EXPR", help="tick by a cron expression")
    cadence.add_argument(
        "--interval", metavar="DURATION", help="tick every DURATION (30s, 15m, 2h, 1d)"
    )
    create.add_argument(
        "--until",
        required=True,
        metavar="DATE",
        help="when your grant ends (ISO 8601, UTC unless it says: 2027-01-01T09:00Z); no "
        "run starts as you after it",
    )
    create.add_argument("--inputs", default="{}", help="JSON object of starting fields")
    create.add_argument(
        "--schedule-id", help="the schedule's id (default <graph>-schedule-<8 hex>)"
    )

    pending = commands.add_parser("pending", parents=[common, signed], help="open gates")
    pending.add_argument("--of", metavar="ROLE", help="only the gates that ask this role")
    pending.add_argument(
        "--all-queues",
        action="store_true",
        help="every task queue whose workers serve lockgate, not only --task-queue",
    )

    answer = _Parser(add_help=False)  # what `decide` and `sign decide` take
    answer.add_argument("run", help="the run whose gate to answer")
    answer.add_argument("choice", help="one of the options the gate offers")
    answer.add_argument(
        "--evidence", help="the evidence the gate asks for with this choice, as a JSON object"
    )
    answer.add_argument(
        "--waive", metavar="REASON", help="waive the gate (as the role it may be waived by)"
    )
    answer.add_argument(
        "--comment",
        metavar="TEXT",
        help="what you say with the answer, signed with it and kept in the trail (decides nothing)",
    )
    commands.add_parser("decide", parents=[common, signed, answer], help="answer a gate")

    resume = commands.add_parser("resume", parents=[common, signed], help="resume a parked run")
    resume.add_argument("run", help="the parked run")

    cancel = commands.add_parser(
        "cancel", parents=[common, signed], help="end a run you started (as its requester)"
    )
    cancel.add_argument("run", help="the run to end")
    cancel.add_argument("--reason", help="why it is cancelled (shown in the run's trail)")

    commands.add_parser(
        "graphs",
        parents=[common],
        help="the graphs the workers serve: versions, inputs (types, defaults), gates, roles",
    )

    show = commands.add_parser("show", parents=[common], help="a run and its trail")
    show.add_argument("run", help="the run")

    listing = commands.add_parser("list", parents=[common], help="runs, newest first")
    listing.add_argument("--graph", help="only the runs of this graph")

    sign = commands.add_parser("sign", parents=[common], help="print a signed answer to paste")
    sign_commands = sign.add_subparsers(dest="what", required=True, action=_Commands)
    sign_commands.add_parser(
        "decide", parents=[common, signed, answer], help="a signed answer to a gate"
    )
    sign_resume = sign_commands.add_parser(
        "resume", parents=[common, signed], help="a signed resume of a parked run"
    )
    sign_resume.add_argument("run", help="the parked run")
    sign_start = sign_commands.add_parser(
        "start", parents=[common, signed], help="a signed start of a run begun elsewhere"
    )
    sign_start.add_argument(
        "run",
        help='a run started as signed (`temporal workflow start ... --input \'{"inputs": '
        '{...}, "signed": true}\'`): its proof names the execution the server started',
    )
    return parser


def _add_global_options(parser: argparse.ArgumentParser, *, shown: bool) -> None:
    """The connection, state and output options every command takes.

    ``lockgate`` itself shows them, once, with their defaults. Every command's parser takes them
    too, so that they work after the command's name as well as before it, but hidden there and
    without a default (``argparse.SUPPRESS``): argparse copies a subcommand's values over the
    top level's, and a copy left unset must not undo ``lockgate --json list``.
    """
    group = (
        parser.add_argument_group("global options (before or after the command)")
        if shown
        else parser
    )

    def option(*flags: str, **settings: Any) -> None:
        if not shown:
            settings.update(default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        group.add_argument(*flags, **settings)

    option("--address", help="Temporal frontend host:port (or TEMPORAL_ADDRESS)")
    option("--namespace", help="Temporal namespace (or TEMPORAL_NAMESPACE)")
    option("--profile", help="Temporal env-config profile (or TEMPORAL_PROFILE)")
    option(
        "--task-queue",
        default=command_task_queue(os.environ),
        help=f"lockgate's task queue (default {TASK_QUEUE_ENV}, else {DEFAULT_TASK_QUEUE})",
    )
    option("--keys-dir", help="where private keys live (default .lockgate/keys)")
    option("--directory", help="Directory TOML (default .lockgate/directory.toml)")
    option("--json", action="store_true", help="machine-readable output")
    option(
        "--secret-file",
        help=f"the worker secret (default {WORKER_SECRET_FILE_ENV} or .lockgate/worker.secret)",
    )
    option(
        "--payload-keys",
        metavar="FILE",
        help=f"payload keys: encrypt what runs carry (default {PAYLOAD_KEYS_FILE_ENV}; none: "
        "payloads are stored as they are)",
    )

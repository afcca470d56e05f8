"""Wiring lockgate into a Temporal worker: a plugin for your worker, or ``lockgate worker``.

A Temporal shop adds :class:`LockgatePlugin` to the ``Worker`` it already runs::

    plugin = LockgatePlugin(tools=[grade, publish], graphs=[EssayReview],
                            directory="directory.toml", secret=WorkerSecret.load("worker.secret"))
    worker = Worker(client, task_queue="essays", workflows=[MyWorkflow],
                    activities=[my_activity], plugins=[plugin])

Its tools become activities named ``lockgate.tool:<tool>`` (no name of yours can collide), its
graphs workflow types named after them, and nothing else in the worker changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.converter import DataConverter
from temporalio.plugin import SimplePlugin
from temporalio.worker import (
    UnsandboxedWorkflowRunner,
    Worker,
    WorkerConfig,
    WorkerDeploymentConfig,
    WorkflowRunner,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from lockgate._defaults import DEFAULT_GRACE_SECONDS
from lockgate._health import WorkerHealth, serve_health
from lockgate.activities._model_calls import ModelCalls, check_models
from lockgate.activities._notify import NotificationActivities
from lockgate.activities._temporal import ToolActivities
from lockgate.activities._workflow_starts import WorkflowStartActivities
from lockgate.clients._client_support import DEFAULT_TASK_QUEUE
from lockgate.clients._gate_notifier import GateNotifier
from lockgate.clients._issuer_keys import IssuerKeyFetcher
from lockgate.encryption import EncryptionCodec, PayloadKeys, encrypted_data_converter
from lockgate.encryption._clients import codec_of, worker_client
from lockgate.gates._authority import Authority
from lockgate.gates._notifications import Notifications
from lockgate.graphs._compile_agents import agent_tools, check_models_given
from lockgate.graphs._compile_asks import check_staffing
from lockgate.graphs._declare import GraphDeclarationError
from lockgate.graphs._graph_registry import GraphRegistry
from lockgate.identity._directory import Directory
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._issuers import IssuerKeyring
from lockgate.identity._names import check_channel_name
from lockgate.identity._passkeys import RelyingParty
from lockgate.identity._seals import (
    WORKER_SECRET_ENV,
    WORKER_SECRET_FILE_ENV,
    WorkerSecret,
    WorkerSecretError,
)
from lockgate.namespace import SearchAttributesMissingError, check_search_attributes
from lockgate.tools._audit import AuditLogger
from lockgate.tools._authorization import ChannelPolicy, check_channel_policy
from lockgate.tools._configuration import check_flag, check_setting, refused_setting
from lockgate.tools._ratelimit import RateLimiter
from lockgate.tools._registry import ToolRegistry
from lockgate.tools._tool import definition_of, is_tool
from lockgate.workflows._authority_context import AuthorityInterceptor
from lockgate.workflows._catalogue import catalogue_workflow
from lockgate.workflows._graph_workflow import graph_workflow
from lockgate.workflows._metrics import PROMETHEUS_BUCKETS, TemporalMetrics
from lockgate.workflows._notify import NotifyWorkflow
from lockgate.workflows._own_workflows import workflow_type_names
from lockgate.workflows._stack_traces import TracelessWorkflowRunner, without_activity_stack_traces
from lockgate.workflows._tool_call import ToolCallWorkflow
from lockgate.workflows._versioning import with_versioning_behavior

if TYPE_CHECKING:
    from lockgate.telemetry import LockgateTelemetry

__all__ = [
    "PROMETHEUS_BUCKETS",
    "LockgatePlugin",
    "WorkerHealth",
    "run_worker",
    "serve_health",
]

_log = logging.getLogger("lockgate.worker")

DEFAULT_GRACE = timedelta(seconds=DEFAULT_GRACE_SECONDS)
"""How long :func:`run_worker` lets running activities finish once told to stop."""

SANDBOX_PASSTHROUGH = (
    # lockgate's own modules, for users' workflow modules that import lockgate: re-importing it
    # per workflow run costs time for nothing (lockgate's own workflows run unsandboxed).
    "lockgate",
    # cryptography's Rust core cannot be initialised twice in one process.
    "cryptography",
    # jsonschema and what it loads lazily: re-importing them costs ~35 ms per workflow, and a
    # lazy import of attrs inside the sandbox trips its platform check and wedges the task.
    "jsonschema",
    "jsonschema_specifications",
    "referencing",
    "rpds",
    "attrs",
    "attr",
    # With telemetry on, temporalio's tracing interceptor runs in sandboxed workflows: a second
    # copy of OpenTelemetry there would not see the worker's providers or its trace context.
    "opentelemetry",
)
"""Modules passed through the workflow sandbox on workers (and replayers) with the plugin."""


def _failing_declarations(
    types: Sequence[type[BaseException]] | None,
) -> Sequence[type[BaseException]]:
    """A workflow of the user's own that declares a gate lockgate cannot open (an ``Ask`` of no
    enum, an option leading to a tool the worker lacks) fails with that sentence, instead of
    retrying its workflow task for ever: the same code would raise the same error again."""
    return [*(types or []), GraphDeclarationError]


def _with_passthrough(runner: WorkflowRunner | None) -> WorkflowRunner:
    if runner is None:
        runner = SandboxedWorkflowRunner()
    if isinstance(runner, SandboxedWorkflowRunner):
        restrictions = runner.restrictions.with_passthrough_modules(*SANDBOX_PASSTHROUGH)
        return dataclasses.replace(runner, restrictions=restrictions)
    return runner


def _registry_of(tools: ToolRegistry | Iterable[Callable[..., Any]] | None) -> ToolRegistry:
    if isinstance(tools, ToolRegistry):
        return tools
    registry = ToolRegistry()
    registry.register(*(tools or ()))
    return registry


def _directory_of(directory: Directory | str | os.PathLike[str] | None) -> Directory:
    if directory is None:
        return Directory.empty()
    if isinstance(directory, Directory):
        return directory
    return Directory.load(directory, watch=True)


class LockgatePlugin(SimplePlugin):
    """Adds lockgate's tools, graphs and judges to any Temporal worker (and replayer).

    Every tool becomes an activity named ``lockgate.tool:<tool>``. Every graph becomes its own
    workflow type named after it, and the tools its nodes run are registered too. The durable
    single tool call (``lockgate.tool_call``) and the task queue's catalogue
    (``lockgate.catalogue``) come along. The worker's Directory
    judges every caller; the deployment's worker secret seals what its workers hand each other.
    At start the worker checks that lockgate's search attributes exist and says how to add them
    if not.

    Args:
        tools: ``@tool`` functions, or a :class:`ToolRegistry` (its gate, limiter and audit log
            are used).
        rate_limiter: Budgets per ``channel:principal:tool`` for the tool calls this worker
            runs: :class:`~lockgate.InMemoryRateLimiter` counts in this process only (each
            worker of a fleet a budget of its own),
            :class:`~lockgate.redis_ratelimit.RedisRateLimiter` once for the whole fleet. Given
            to the plugin's registry; a registry passed as ``tools`` with a limiter of its own
            takes none from here. Without either, nothing is limited.
        channels: Policies of the channels your own surfaces sign with, by name
            (``{"slack": ChannelPolicy(require_auth=True)}``), or a built-in channel's replaced
            (``cli``, ``tui``, ``mcp``, ``http``, ``telegram``, ``web``, ``temporal``). A channel
            nobody registered fails closed. Given to the plugin's registry's authorizer.
        graphs: ``@graph`` classes (several versions of one graph may be served side by side).
        directory: The Directory, or the path of its TOML file (re-read when it changes). Without
            one, nobody is verified: unsigned callers run only tools that need no scope.
        secret: The deployment's worker secret, the same on every worker (``lockgate secret
            new`` makes one). Without it, ``LOCKGATE_WORKER_SECRET`` or the file
            ``LOCKGATE_WORKER_SECRET_FILE`` names; with none of them the plugin refuses to be
            built: a worker that cannot seal cannot keep anyone from acting as someone else.
        audit: Where judgements are recorded (and the tool calls, unless ``tools`` is a
            registry with its own): an :class:`AuditLogger`, with sinks such as a JSON-lines
            file (:class:`~lockgate.JsonLinesAuditSink`).
        check_search_attributes: Refuse to start a worker whose namespace lacks lockgate's search
            attributes (an upsert of a missing one would wedge every graph run).
        relying_party: The web inbox's site and exact origins: answers signed with a passkey
            are accepted from there (``RelyingParty.of_origins(["http://localhost:8240"])``).
        notifications: Webhooks told when a gate of their role opens or closes; the worker
            watches its task queue's gates for them (``Notifications.load("notify.toml")``).
        encryption: Payload keys (or a ready :class:`~lockgate.encryption.EncryptionCodec`):
            every payload the worker's client and the worker write to Temporal is encrypted
            with them, and a client the plugin is added to encrypts too. Without it, the keys
            ``LOCKGATE_PAYLOAD_KEYS`` or the file ``LOCKGATE_PAYLOAD_KEYS_FILE`` holds; with
            none of them, payloads are stored as they are.
        telemetry: Tracing and metrics through OpenTelemetry (``lockgate[otel]``):
            temporalio's tracing interceptor for the client and worker, and lockgate's own
            spans and metrics. Off without it.
        models: Pydantic AI models (``lockgate[pydantic-ai]``) by the name the graphs' agent
            steps give them (``{"support-model": OpenAIChatModel("gpt-5")}``): a model is a
            client with credentials, so it is given to the worker, never sent through Temporal.
            Each request is the activity ``lockgate.model``.
        metrics: Count tool calls, refusals and gates on Temporal's own metric meter, so that
            what the worker client's Runtime exports (``PrometheusConfig``, say) carries
            lockgate's series beside the SDK's (``lockgate_tool_calls``, ``lockgate_refusals``,
            ``lockgate_gates_opened``, ``lockgate_gates_answered``,
            ``lockgate_gate_decision_seconds``); give a ``PrometheusConfig``
            :data:`PROMETHEUS_BUCKETS` as its ``histogram_bucket_overrides``.
        unsealed_runs_before: Believe the unsealed history of runs started before this moment
            (by the server's clock): runs recorded by a lockgate that did not yet seal what its
            workers accept and record. Without it (the default) a run believes nothing of its
            history that this deployment's workers did not seal, and stops at the first such
            claim (see SECURITY.md, "History is evidence"). Set it when upgrading with such
            runs in flight, and drop it once they have finished.
        unsigned_starts: Workflows of your own (classes, run methods or type names) whose runs
            may open gates although nobody signed their start, as
            ``@graph(allow_unsigned_start=True)`` lets a graph: four eyes then let every
            verified approver answer unless they made the work. Any other workflow of your own
            started unsigned fails at its first gate, saying so (a run that opened its gate
            before the setting changed replays as it ran).

    Raises:
        WorkerSecretError: No worker secret was given or configured.
        GraphDeclarationError: An agent step names a model the worker was not given.
    """

    def __init__(
        self,
        tools: ToolRegistry | Iterable[Callable[..., Any]] | None = None,
        graphs: Iterable[type | str] = (),
        directory: Directory | str | os.PathLike[str] | None = None,
        *,
        secret: WorkerSecret | None = None,
        audit: AuditLogger | None = None,
        check_search_attributes: bool = True,
        relying_party: RelyingParty | None = None,
        notifications: Notifications | None = None,
        encryption: PayloadKeys | EncryptionCodec | None = None,
        telemetry: LockgateTelemetry | None = None,
        models: Mapping[str, Any] | None = None,
        rate_limiter: RateLimiter | None = None,
        channels: Mapping[str, ChannelPolicy] | None = None,
        metrics: bool = False,
        unsealed_runs_before: datetime | None = None,
        unsigned_starts: Iterable[type | str | Callable[..., Any]] = (),
    ) -> None:
        _check_plugin_settings(
            tools=tools,
            graphs=graphs,
            directory=directory,
            secret=secret,
            audit=audit,
            check_search_attributes=check_search_attributes,
            relying_party=relying_party,
            notifications=notifications,
            encryption=encryption,
            telemetry=telemetry,
            models=models,
            rate_limiter=rate_limiter,
            channels=channels,
            metrics=metrics,
            unsealed_runs_before=unsealed_runs_before,
        )
        self.registry = _registry_of(tools)
        if rate_limiter is not None:
            self.registry.rate_limiter = rate_limiter
        for channel, policy in (channels or {}).items():
            self.registry.authorizer.set_channel_policy(channel, policy)
        if audit is not None and not isinstance(tools, ToolRegistry):
            # One audit log for the tool calls and the judgements of the plugin's own registry.
            self.registry.audit = audit
        if encryption is None:
            encryption = PayloadKeys.from_environment()
        self.codec: EncryptionCodec | None = (
            codec_of(encryption) if encryption is not None else None
        )
        self.graphs = GraphRegistry(graphs)
        self.models = check_models(models or {})
        for compiled in self.graphs:
            check_models_given(compiled, self.models)
            for node in compiled.nodes.values():
                if node.definition is not None and node.tool not in self.registry:
                    self.registry.register(node.definition)
            for definition in agent_tools(compiled.nodes):
                if definition.name not in self.registry:
                    self.registry.register(definition)
        # A Directory loaded here from a path is the plugin's to stop watching.
        self._owns_directory = not isinstance(directory, Directory)
        self.issuer_keys = IssuerKeyring()
        """The trusted issuers' signing keys: fetched while the worker runs, read by judges."""
        self.authority = Authority(
            _directory_of(directory),
            secret=_secret_of(secret),
            audit=audit or self.registry.audit,
            relying_party=relying_party,
            issuer_keys=self.issuer_keys,
        )
        self.issuer_fetcher = IssuerKeyFetcher(self.authority.directory, self.issuer_keys)
        """Fetches the Directory's issuers' keys while the worker runs (its settings may be
        changed before it starts)."""
        for compiled in self.graphs:
            check_staffing(compiled, self.authority.directory)
        self.telemetry = telemetry
        audit_logs = {id(log): log for log in (self.authority.audit, self.registry.audit)}.values()
        if telemetry is not None:
            for audit_log in audit_logs:
                audit_log.sinks.append(telemetry)
            self.registry.trace_stages = True
        self.metrics = TemporalMetrics() if metrics else None
        if self.metrics is not None:
            for audit_log in audit_logs:
                audit_log.sinks.append(self.metrics)
        self.check_search_attributes = check_search_attributes
        self._ready_namespaces: set[tuple[str, str]] = set()
        self.tool_activities = ToolActivities(
            self.registry,
            self.authority,
            self.graphs.catalogue,
            self.graphs.model,
            self.graphs.evidence,
            newest=lambda name: max(self.graphs.versions(name), default=None),
        )
        self.notifications = notifications
        self.notification_activities = NotificationActivities(notifications, self.authority)
        self.graph_workflows = [
            graph_workflow(name, self.graphs.versions(name)) for name in self.graphs.names()
        ]
        self.own_workflows: list[type] = [
            ToolCallWorkflow,
            NotifyWorkflow,
            catalogue_workflow(self.tool_activities.tools_and_graphs),
            *self.graph_workflows,
        ]
        super().__init__(
            "lockgate",
            activities=[
                *self.tool_activities.activities(),
                WorkflowStartActivities(self.authority).open_workflow_start,
                self.notification_activities.deliver,
                *([ModelCalls(self.models, self.authority).call_model] if self.models else []),
            ],
            workflows=self.own_workflows,
            interceptors=[
                AuthorityInterceptor(
                    self.authority,
                    self.registry,
                    unsealed_runs_before=unsealed_runs_before,
                    unsigned_starts=workflow_type_names(
                        "LockgatePlugin", "unsigned_starts", unsigned_starts
                    ),
                ),
                *([telemetry.interceptor] if telemetry is not None else []),
            ],
            workflow_runner=_with_passthrough,
            workflow_failure_exception_types=_failing_declarations,
            data_converter=self._encrypting if self.codec is not None else None,
        )

    def _encrypting(self, converter: DataConverter | None) -> DataConverter:
        assert self.codec is not None
        return encrypted_data_converter(self.codec, converter)

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Adds the tools, graphs and judges; with payload keys, gives the worker a client on
        the same connection that encrypts (a worker uses its client's data converter), and
        that passes on a payload it cannot decrypt as unreadable rather than fail the task.

        What lockgate's own workflows and activities write carries no stack trace (anyone with
        namespace access reads every history, and can make them fail): their failures keep
        type, message and details; a shop's own workflows and activities keep their traces.

        On a worker whose ``deployment_config`` turns Worker Versioning on, lockgate's workflow
        types (graph runs, ``lockgate.tool_call``, ``lockgate.notify``, ``lockgate.catalogue``)
        carry the versioning behaviour auto-upgrade, whatever the worker's default: a run
        moves to the deployment's current version at its next task and finishes there on the
        graph version it started with. A shop's own workflows keep theirs."""
        config = super().configure_worker(config)
        client = config["client"]
        if self.codec is not None:
            client = worker_client(client, self.codec)
        config["client"] = _with_data_converter(
            client, without_activity_stack_traces(client.data_converter)
        )
        own_workflows = self.own_workflows
        deployment = config.get("deployment_config")
        if deployment is not None and deployment.use_worker_versioning:
            # Worker Versioning wants a behaviour on every workflow type (see _versioning).
            versioned = {cls: with_versioning_behavior(cls) for cls in own_workflows}
            config["workflows"] = [versioned.get(cls, cls) for cls in config.get("workflows", [])]
            own_workflows = list(versioned.values())
        # lockgate's workflows all opt out of the sandbox, so they run on this runner.
        config["unsandboxed_workflow_runner"] = TracelessWorkflowRunner(
            config.get("unsandboxed_workflow_runner") or UnsandboxedWorkflowRunner(),
            own_workflows,
        )
        return config

    async def check_namespace(self, client: Client) -> None:
        """Refuses a namespace that lacks lockgate's search attributes, when the plugin serves
        graphs and was not told to skip the check.

        Raises:
            SearchAttributesMissingError: Some are missing (or of another type); the message
                names ``lockgate setup`` and the ``temporal operator search-attribute create``
                commands that add them.
        """
        if not (self.check_search_attributes and self.graph_workflows):
            return
        # `lockgate.worker.run_worker` checks before it says the worker is ready, and the worker
        # it starts checks again as it runs: a namespace found ready is asked once.
        namespace = (client.service_client.config.target_host, client.namespace)
        if namespace in self._ready_namespaces:
            return
        check = await check_search_attributes(client)
        if not check.ok:
            raise SearchAttributesMissingError(check.explain())
        self._ready_namespaces.add(namespace)

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Checks the namespace's search attributes, then runs the worker; the Directory file
        the plugin loaded is watched while the worker runs.

        A refused check ends the worker before it polls, however it is run: ``worker.run()``
        and ``async with Worker(...)`` raise :class:`SearchAttributesMissingError`, whose
        message names the commands that add them."""
        try:
            await self.check_namespace(worker.client)
        except BaseException:
            _never_started(worker)
            raise
        if self.metrics is not None and self.metrics.runtime is None:
            # What is judged outside workflows and activities counts on the worker's Runtime.
            self.metrics.runtime = worker.client.service_client.config.runtime
        directory = self.authority.directory
        if self._owns_directory:
            directory.watch()
        notifier = None
        if self.notifications is not None and self.notifications.webhooks:
            watcher = GateNotifier(
                worker.client, worker.task_queue, self.notifications, self.authority.sealer
            )
            notifier = asyncio.create_task(watcher.watch(), name="lockgate gate notifier")
        # Validators read the issuers' keys from memory; this fetches them, outside workflows.
        fetcher = asyncio.create_task(self.issuer_fetcher.run(), name="lockgate issuer keys")
        try:
            await super().run_worker(worker, next)
        finally:
            fetcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await fetcher
            if notifier is not None:
                notifier.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await notifier
            if self._owns_directory:
                directory.close()


def _never_started(worker: Worker) -> None:
    """Marks a worker a plugin refused to run as shut down.

    temporalio marks a worker's shutdown complete only in its own ``_run``, which a plugin's
    ``next`` leads to. A plugin that refuses before calling it leaves ``shutdown()`` waiting for
    ever, and ``async with Worker(...)`` awaits ``shutdown()`` on its way out: the error never
    surfaced, the block hung, and the shop's own workflows on that worker went unserved without
    a word. The SDK does the same for its own namespace check (``Worker._run``); the plugin tests
    pin it for each way of running a worker.
    """
    completed = getattr(worker, "_shutdown_complete_event", None)
    if isinstance(completed, asyncio.Event):
        completed.set()


def _check_plugin_settings(
    *,
    tools: object,
    graphs: object,
    directory: object,
    secret: object,
    audit: object,
    check_search_attributes: object,
    relying_party: object,
    notifications: object,
    encryption: object,
    telemetry: object,
    models: object,
    rate_limiter: object,
    channels: object,
    metrics: object,
    unsealed_runs_before: object,
) -> None:
    """Refuses, before anything is built, a setting of the wrong type (a dict for a Directory, a
    string for the secret), naming it, what it got and what it takes; and two rate limiters
    for one registry."""
    where = "LockgatePlugin"
    # A string is iterable too, and its letters are neither tools nor graphs.
    if isinstance(tools, (str, bytes)) or not (tools is None or isinstance(tools, Iterable)):
        raise refused_setting(where, "tools", tools, "a ToolRegistry or a list of @tool functions")
    if isinstance(graphs, (str, bytes)) or not isinstance(graphs, Iterable):
        raise refused_setting(where, "graphs", graphs, "a list of @graph classes")
    check_setting(
        where,
        "directory",
        directory,
        (Directory, str, os.PathLike),
        "a Directory or the path of its TOML file",
        optional=True,
    )
    check_setting(
        where,
        "secret",
        secret,
        WorkerSecret,
        "a WorkerSecret (WorkerSecret.load(...))",
        optional=True,
    )
    check_setting(where, "audit", audit, AuditLogger, "an AuditLogger", optional=True)
    check_flag(where, "check_search_attributes", check_search_attributes)
    check_setting(
        where,
        "relying_party",
        relying_party,
        RelyingParty,
        "a RelyingParty (RelyingParty.of_origins([...]))",
        optional=True,
    )
    check_setting(
        where,
        "notifications",
        notifications,
        Notifications,
        "a Notifications (Notifications.load(...))",
        optional=True,
    )
    check_setting(
        where,
        "encryption",
        encryption,
        (PayloadKeys, EncryptionCodec),
        "PayloadKeys or an EncryptionCodec",
        optional=True,
    )
    if telemetry is not None:
        # Imported only when given: it needs lockgate[otel].
        from lockgate.telemetry import LockgateTelemetry

        check_setting(where, "telemetry", telemetry, LockgateTelemetry, "a LockgateTelemetry")
    check_setting(
        where, "models", models, Mapping, "a mapping of model names to models", optional=True
    )
    if isinstance(rate_limiter, str):
        # Not shown: a store's URL may hold its password.
        raise TypeError(
            f"{where}: rate_limiter must be a RateLimiter, and it got a string: give a store's "
            "URL as RedisRateLimiter(url)."
        )
    if rate_limiter is not None and not callable(getattr(rate_limiter, "consume", None)):
        raise refused_setting(
            where,
            "rate_limiter",
            rate_limiter,
            "a RateLimiter (InMemoryRateLimiter() or RedisRateLimiter(url))",
        )
    if (
        rate_limiter is not None
        and isinstance(tools, ToolRegistry)
        and tools.rate_limiter is not None
        and tools.rate_limiter is not rate_limiter
    ):
        # Which of the two would count is a guess either way, and a guess about a limit is a
        # budget someone did not mean to give.
        raise TypeError(
            f"{where}: rate_limiter {rate_limiter!r} was given, and the ToolRegistry given as "
            f"tools has its own, {tools.rate_limiter!r}: give one of them (the registry's is "
            "used when only it has one)."
        )
    _check_channels(where, channels)
    check_flag(where, "metrics", metrics)
    check_setting(
        where,
        "unsealed_runs_before",
        unsealed_runs_before,
        datetime,
        "a datetime with a time zone",
        optional=True,
    )
    if isinstance(unsealed_runs_before, datetime):
        if unsealed_runs_before.tzinfo is None:
            raise ValueError(
                f"{where}: unsealed_runs_before must say its time zone "
                "(datetime(..., tzinfo=timezone.utc)): runs are compared by the server's clock."
            )
        if unsealed_runs_before > datetime.now(timezone.utc):
            raise ValueError(
                f"{where}: unsealed_runs_before is in the future "
                f"({unsealed_runs_before.isoformat()}): runs started until then would go "
                "unsealed. Give the moment the last worker that did not seal stopped."
            )


def _check_channels(where: str, channels: object) -> None:
    """Refuses channel policies that are not a mapping of channel names to ChannelPolicy: a
    name no caller can sign with (the deadline's own, say) would govern nobody, silently."""
    check_setting(
        where,
        "channels",
        channels,
        Mapping,
        "a mapping of channel names to ChannelPolicy ({'slack': ChannelPolicy(...)})",
        optional=True,
    )
    for channel, policy in cast(Mapping[object, object], channels or {}).items():
        try:
            check_channel_name(channel)
        except IdentityError as error:
            raise ValueError(f"{where}: channels: {error}") from None
        check_channel_policy(where, channel, policy)


_NO_SECRET = (
    "LockgatePlugin needs the deployment's worker secret, the same on every worker: it seals what "
    "workers hand each other through Temporal (who a tool runs as, the state a run carries on), "
    "so that nobody with only namespace access can act as someone else. Make one with "
    "`lockgate secret new --secret-file worker.secret`, then pass "
    f"secret=WorkerSecret.load(...), or set {WORKER_SECRET_FILE_ENV} (or {WORKER_SECRET_ENV}) "
    "on every worker."
)


def _with_data_converter(client: Client, converter: DataConverter) -> Client:
    """``client`` on the same connection with ``converter``; ``client`` when it has it."""
    if client.data_converter is converter:
        return client
    settings = client.config(active_config=True)
    settings["data_converter"] = converter
    # The plugins already configured these settings; running them again would add their
    # interceptors twice.
    settings["plugins"] = []
    return Client(**settings)


def _secret_of(secret: WorkerSecret | None) -> WorkerSecret:
    found = secret if secret is not None else WorkerSecret.from_environment()
    if found is None:
        raise WorkerSecretError(_NO_SECRET)
    return found


def _resolve(reference: str) -> Any:
    module_name, _, attribute = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"Cannot import '{module_name}' (from '{reference}'): {error}") from None
    if not attribute:
        return module
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ValueError(f"'{module_name}' has no attribute '{attribute}'.") from None


def _lists_nothing(module: ModuleType, reference: str) -> str:
    """Why a module serves nothing, with what it does define and how to name it."""
    graphs = sorted(
        name
        for name, value in vars(module).items()
        if isinstance(value, type) and hasattr(value, "__lockgate_graph__")
    )
    tools = sorted(
        name
        for name, value in vars(module).items()
        if isinstance(value, ToolRegistry) or (callable(value) and is_tool(value))
    )
    sentence = (
        f"'{reference}' serves nothing: lockgate looked for module-level TOOLS and GRAPHS lists "
        f"in {module.__name__} ({getattr(module, '__file__', 'no file')}) and found neither."
    )
    if not graphs and not tools:
        return f"{sentence} It defines no graph or tool either: is it the module you meant?"
    named = [
        f"{kind}{'s' if len(names) > 1 else ''} {', '.join(names)} "
        f"(--{flag} {module.__name__}:{names[0]})"
        for kind, flag, names in (("graph", "graphs", graphs), ("tool", "tools", tools))
        if names
    ]
    return (
        f"{sentence} It defines {' and '.join(named)}: name one with module:NAME, or list them "
        "in GRAPHS = [...] and TOOLS = [...]."
    )


def load_components(
    references: Iterable[str],
) -> tuple[list[Callable[..., Any]], list[type]]:
    """Tools and graphs named by ``module[:NAME]`` references.

    A module contributes its ``TOOLS`` and ``GRAPHS`` lists; ``module:NAME`` names one tool, one
    graph class, a list of them, or a :class:`ToolRegistry` (its tools).

    Raises:
        ValueError: a reference does not import, names something else, or names a module with
            neither list; the message says what the module defines and how to name it.
    """
    tools: list[Callable[..., Any]] = []
    graphs: list[type] = []

    def take(item: Any, reference: str) -> None:
        if isinstance(item, ModuleType):
            if not hasattr(item, "TOOLS") and not hasattr(item, "GRAPHS"):
                raise ValueError(_lists_nothing(item, reference))
            for entry in [*getattr(item, "TOOLS", []), *getattr(item, "GRAPHS", [])]:
                take(entry, reference)
        elif isinstance(item, ToolRegistry):
            tools.extend(definition.handler for definition in item)
        elif isinstance(item, (list, tuple)):
            for entry in item:
                take(entry, reference)
        elif isinstance(item, type) and hasattr(item, "__lockgate_graph__"):
            graphs.append(item)
        elif callable(item) and is_tool(item):
            definition_of(item)
            tools.append(item)
        else:
            raise ValueError(f"'{reference}' names {item!r}, which is neither a tool nor a graph.")

    for reference in references:
        take(_resolve(reference), reference)
    return tools, graphs


async def run_worker(
    client: Client,
    plugin: LockgatePlugin,
    task_queue: str = DEFAULT_TASK_QUEUE,
    *,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[], None] | None = None,
    grace: timedelta = DEFAULT_GRACE,
    health: WorkerHealth | None = None,
    deployment_version: WorkerDeploymentVersion | None = None,
    on_stopped: Callable[[str], None] | None = None,
) -> None:
    """Serves ``task_queue`` until ``stop`` is set, or until SIGINT, SIGTERM or SIGHUP (the
    terminal closing); then calls ``on_stopped`` (if given) with what stopped it (``SIGTERM``,
    or ``stop`` for the event) once the worker has shut down.

    Shuts down gracefully: polling stops at once, so other workers on the queue take the new
    work, and the activities running here get ``grace`` to finish and report their results.
    Those still running then are cancelled; Temporal retries them on another worker (a tool's
    idempotency key is the same on every attempt).

    With ``health`` (served by :func:`serve_health` for an orchestrator's
    probes), it marks the worker ready once the plugin holds its Directory and worker secret,
    the namespace is checked and the worker polls, and draining once it is told to stop.

    With ``deployment_version`` the worker uses Temporal's Worker Versioning as that build of
    that worker deployment: it gets tasks once the version is the deployment's current (or
    ramping) one, and lockgate's workflow types carry the behaviour auto-upgrade (see
    :meth:`LockgatePlugin.configure_worker`). No default behaviour is set, so the SDK checks
    as the worker starts that every workflow type on it carries one.

    Raises:
        SearchAttributesMissingError: The namespace lacks lockgate's search attributes (checked
            before the worker starts, so ``on_ready`` is never called for it).
    """
    health = health or WorkerHealth()
    health.mark("directory")
    if plugin.authority.secret is not None:  # a plugin is never built without one
        health.mark("worker secret")
    await plugin.check_namespace(client)
    health.mark("namespace")
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    hangup = getattr(signal, "SIGHUP", None)
    stopped_by: list[str] = []

    def stop_on(signum: signal.Signals) -> None:
        stopped_by.append(signum.name)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM, *([hangup] if hangup is not None else [])):
        try:
            loop.add_signal_handler(signum, stop_on, signum)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # not the main thread, or no signals here: the caller stops us with `stop`
    try:
        async with Worker(
            client,
            task_queue=task_queue,
            plugins=[plugin],
            graceful_shutdown_timeout=grace,
            deployment_config=_versioned(deployment_version),
        ) as worker:
            # The SDK checks the namespace before its pollers start: ready means polling.
            while not worker.is_running:
                await asyncio.sleep(0.01)
            health.mark("polling")
            _log.info("lockgate worker serving task queue %r", task_queue)
            if on_ready is not None:
                on_ready()
            await stop.wait()
            health.drain()
            _log.info("lockgate worker draining: polling stops, running activities get %s", grace)
        if on_stopped is not None:
            on_stopped(stopped_by[0] if stopped_by else "stop")
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


def _versioned(version: WorkerDeploymentVersion | None) -> WorkerDeploymentConfig | None:
    """Worker Versioning as ``version``, or none without one."""
    if version is None:
        return None
    return WorkerDeploymentConfig(version=version, use_worker_versioning=True)

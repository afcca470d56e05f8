"""``lockgate worker``: serves tools and graphs on a task queue until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from temporalio.common import WorkerDeploymentVersion
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from lockgate.cli._inbox import relying_party_of
from lockgate.cli._loop import event_loop_name
from lockgate.cli._output import CommandError
from lockgate.cli._settings import connect, directory_path, payload_keys, worker_secret
from lockgate.gates._notifications import Notifications
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._names import check_channel_name
from lockgate.namespace import SearchAttributesMissingError
from lockgate.tools._audit import AuditLogger
from lockgate.tools._audit_sinks import AUDIT_FILE_ENV, AuditSink, JsonLinesAuditSink
from lockgate.tools._authorization import ChannelPolicy
from lockgate.tools._ratelimit import InMemoryRateLimiter, RateLimiter
from lockgate.worker import (
    PROMETHEUS_BUCKETS,
    LockgatePlugin,
    WorkerHealth,
    load_components,
    run_worker,
    serve_health,
)

if TYPE_CHECKING:
    from lockgate.telemetry import LockgateTelemetry

__all__ = [
    "EXAMPLES_PACKAGE",
    "deployment_version",
    "plugin_for",
    "rate_limiter_of",
    "serve_worker",
    "unsealed_runs_before",
]

EXAMPLES_PACKAGE = "lockgate.examples"
"""The examples that ship in the package: ``lockgate dev`` serves them; ``lockgate worker``
only with ``--allow-examples``."""


def deployment_version(arguments: argparse.Namespace) -> WorkerDeploymentVersion | None:
    """The Worker Versioning version ``--deployment`` and ``--build-id`` name, or None with
    neither.

    Raises:
        CommandError: only one of them is given, or one is empty.
    """
    name = getattr(arguments, "deployment", None)
    build = getattr(arguments, "build_id", None)
    if name is None and build is None:
        return None
    if not name or not build:
        raise CommandError(
            "--deployment and --build-id go together: a versioned worker is one build of one "
            "worker deployment (e.g. --deployment essays --build-id 2025-06-01.1); give both, "
            "or neither for a worker without Worker Versioning."
        )
    return WorkerDeploymentVersion(deployment_name=name, build_id=build)


def _as_build(version: WorkerDeploymentVersion | None) -> str:
    if version is None:
        return ""
    return (
        f", as build '{version.build_id}' of worker deployment '{version.deployment_name}' "
        "(it gets tasks once that build is the deployment's current version)"
    )


def unsealed_runs_before(arguments: argparse.Namespace) -> datetime | None:
    """The moment ``--unsealed-runs-before`` names, or None without it.

    Raises:
        CommandError: it is not an ISO 8601 time with a time zone.
    """
    given = getattr(arguments, "unsealed_runs_before", None)
    if given is None:
        return None
    try:
        moment = datetime.fromisoformat(given.replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise CommandError(
            f"--unsealed-runs-before takes an ISO 8601 time with a time zone, such as "
            f"2026-12-04T12:00:00Z; {given!r} is not one."
        )
    return moment


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
    party = relying_party_of(getattr(arguments, "passkey_origin", None))
    notifications = None
    if getattr(arguments, "notifications", None):
        try:
            notifications = Notifications.load(arguments.notifications)
        except IdentityError as error:
            raise CommandError(str(error)) from None
    encryption = payload_keys(arguments)
    metrics = getattr(arguments, "metrics_port", None) is not None
    audit = _audit(arguments)
    telemetry = _telemetry(arguments)
    limiter = rate_limiter_of(arguments)
    unsealed = unsealed_runs_before(arguments)
    channels = channel_policies_of(arguments)
    path = directory_path(arguments)
    if not path.exists():
        print(
            f"warning: no Directory at {path}: nobody is verified, unsigned callers run only "
            "tools that need no scope",
            file=sys.stderr,
        )
    return LockgatePlugin(
        tools,
        graphs,
        str(path) if path.exists() else None,
        secret=secret,
        relying_party=party,
        notifications=notifications,
        encryption=encryption,
        audit=audit,
        telemetry=telemetry,
        rate_limiter=limiter,
        channels=channels,
        metrics=metrics,
        unsealed_runs_before=unsealed,
    )


def channel_policies_of(arguments: argparse.Namespace) -> dict[str, ChannelPolicy]:
    """The channel policies ``--channel NAME=FLAGS`` gives, by channel.

    Raises:
        CommandError: one is not NAME=FLAGS, names a channel twice, or spells a flag wrong.
    """
    policies: dict[str, ChannelPolicy] = {}
    for given in getattr(arguments, "channel", None) or ():
        name, equals, flags = given.partition("=")
        if not equals or not name:
            raise CommandError(
                f"--channel {given}: give NAME=FLAGS, e.g. slack=require_auth (or slack= for "
                "the default policy)."
            )
        if name in policies:
            raise CommandError(f"--channel names '{name}' twice; give each channel once.")
        try:
            check_channel_name(name)
            policies[name] = ChannelPolicy.parse(flags)
        except (IdentityError, ValueError) as error:
            raise CommandError(f"--channel {given}: {error}") from None
    return policies


def rate_limiter_of(arguments: argparse.Namespace) -> RateLimiter | None:
    """The limiter ``--rate-limit`` names: ``memory`` (this process), ``redis://...`` (the
    fleet's, shared through that Redis), or None without the flag.

    Raises:
        CommandError: the flag names neither, the Redis client is not installed, or the
            budget is not a positive number.
    """
    chosen = getattr(arguments, "rate_limit", None)
    if not chosen:
        return None
    tokens = arguments.rate_limit_tokens
    window = arguments.rate_limit_window
    if tokens < 1 or not window > 0:
        raise CommandError(
            f"--rate-limit-tokens must be at least 1 and --rate-limit-window more than 0 "
            f"seconds; they are {tokens} and {window:g}."
        )
    if chosen == "memory":
        return InMemoryRateLimiter(max_tokens=tokens, window_seconds=window)
    if not chosen.startswith(("redis://", "rediss://", "unix://")):
        # Not echoed: what was meant as a store's URL may hold its password.
        raise CommandError(
            "--rate-limit takes memory (one budget per worker process) or a Redis URL, "
            "redis://HOST:PORT/DB (rediss:// for TLS), whose budgets every worker on it shares."
        )
    try:
        from lockgate.redis_ratelimit import RedisRateLimiter
    except ImportError:
        raise CommandError(
            "--rate-limit redis://... needs the Redis client: pip install 'lockgate[redis]'."
        ) from None
    try:
        return RedisRateLimiter(chosen, max_tokens=tokens, window_seconds=window)
    except ValueError as error:
        raise CommandError(str(error)) from None


def _metrics_runtime(arguments: argparse.Namespace) -> Runtime | None:
    """A Runtime serving Prometheus metrics on ``--metrics-port``; None without it.

    Raises:
        CommandError: the address cannot be bound.
    """
    if arguments.metrics_port is None:
        return None
    address = f"{arguments.metrics_host}:{arguments.metrics_port}"
    if ":" in arguments.metrics_host:  # an IPv6 address
        address = f"[{arguments.metrics_host}]:{arguments.metrics_port}"
    try:
        return Runtime(
            telemetry=TelemetryConfig(
                metrics=PrometheusConfig(
                    bind_address=address, histogram_bucket_overrides=PROMETHEUS_BUCKETS
                )
            )
        )
    except ValueError as error:  # how the SDK reports an address it cannot bind
        raise CommandError(f"Cannot serve metrics on {address}: {error}.") from None


def _audit(arguments: argparse.Namespace) -> AuditLogger | None:
    """The audit log with its sinks: a JSON-lines file (``--audit-file`` or its variable),
    OpenTelemetry logs (``--audit-otel``); None with neither."""
    chosen = getattr(arguments, "audit_file", None) or os.environ.get(AUDIT_FILE_ENV)
    sinks: list[AuditSink] = []
    if chosen:
        try:
            sinks.append(JsonLinesAuditSink(chosen))
        except OSError as error:
            raise CommandError(f"Cannot open the audit file {chosen}: {error}.") from None
    if getattr(arguments, "audit_otel", False):
        try:
            from lockgate.telemetry import OpenTelemetryAuditSink
        except ImportError:
            raise CommandError(_NO_OTEL) from None
        sinks.append(OpenTelemetryAuditSink())
    return AuditLogger(sinks=sinks) if sinks else None


def _telemetry(arguments: argparse.Namespace) -> LockgateTelemetry | None:
    """Tracing and metrics with the global OpenTelemetry providers (``--otel``), else None."""
    if not getattr(arguments, "otel", False):
        return None
    try:
        from lockgate.telemetry import LockgateTelemetry
    except ImportError:
        raise CommandError(_NO_OTEL) from None
    return LockgateTelemetry()


def _is_example(reference: str) -> bool:
    """Whether ``reference`` (``module`` or ``module:NAME``) names one of lockgate's examples."""
    module = reference.partition(":")[0]
    return module == EXAMPLES_PACKAGE or module.startswith(f"{EXAMPLES_PACKAGE}.")


def _limited(plugin: LockgatePlugin) -> str:
    """What the ready line says of the rate limit: where budgets are counted, if anywhere."""
    limiter = plugin.registry.rate_limiter
    if limiter is None:
        return ""
    where = getattr(limiter, "address", None)  # a shared store's, without credentials
    return f", rate-limited in {where}" if where else ", rate-limited in this process"


_NO_OTEL = "--otel and --audit-otel need OpenTelemetry: pip install 'lockgate[otel]'."


async def serve_worker(arguments: argparse.Namespace) -> int:
    """``lockgate worker --tools ... --graphs ...``: runs a worker until it is stopped."""
    references = [*(arguments.tools or []), *(arguments.graphs or [])]
    if not references:
        raise CommandError("worker needs --tools and/or --graphs (module or module:attr).")
    examples = [reference for reference in references if _is_example(reference)]
    if examples and not arguments.allow_examples:
        raise CommandError(
            f"lockgate worker was asked to serve lockgate's examples ({', '.join(examples)}), "
            "which a deployment does not mean to: name your own modules with --tools/--graphs, "
            "or add --allow-examples to serve the examples on purpose."
        )
    health = WorkerHealth()
    probes = None
    if arguments.health_port is not None:
        # Up before anything loads: a probe hears what the worker still waits for.
        try:
            probes = await serve_health(health, arguments.health_host, arguments.health_port)
        except OSError as error:
            raise CommandError(
                f"Cannot answer health probes on {arguments.health_host}:"
                f"{arguments.health_port}: {error}."
            ) from None
    try:
        return await _serve(arguments, references, health)
    finally:
        if probes is not None:
            probes.close()
            await probes.wait_closed()


async def _serve(
    arguments: argparse.Namespace, references: Sequence[str], health: WorkerHealth
) -> int:
    version = deployment_version(arguments)
    plugin = plugin_for(arguments, references)
    client = await connect(arguments, runtime=_metrics_runtime(arguments))
    try:
        await run_worker(
            client,
            plugin,
            arguments.task_queue,
            grace=timedelta(seconds=arguments.grace_seconds),
            health=health,
            on_ready=lambda: print(
                f"worker ready: {len(plugin.registry)} tools, {len(plugin.graph_workflows)} "
                f"graphs on task queue '{arguments.task_queue}' ({client.namespace}), on "
                f"{event_loop_name()}{_limited(plugin)}{_as_build(version)}; Ctrl-C stops it",
                flush=True,
            ),
            deployment_version=version,
            on_stopped=lambda how: print(
                f"lockgate worker stopped ({how}): task queue '{arguments.task_queue}' is no "
                "longer served by this process",
                flush=True,
            ),
        )
    except SearchAttributesMissingError as error:
        # Its message is the fix (`lockgate setup`, or the commands to hand an operator).
        print(f"lockgate: {error}", file=sys.stderr)
        return 1
    return 0

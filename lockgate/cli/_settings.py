"""What a command takes from its flags and the environment: where state lives, who signs, which
Temporal.

Connection settings follow Temporal's conventions: ``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``,
TLS and API-key variables, and env-config profiles (``--profile``); the flags win over them.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.envconfig import ClientConfig

from lockgate.cli._output import CommandError
from lockgate.gating import (
    WORKER_SECRET_ENV,
    WORKER_SECRET_FILE_ENV,
    Directory,
    IdentityError,
    Signer,
    WorkerSecret,
    WorkerSecretError,
)

__all__ = [
    "STATE_DIRECTORY",
    "connect",
    "directory_path",
    "keys_dir",
    "local_directory",
    "secret_path",
    "signer",
    "worker_secret",
]

STATE_DIRECTORY = Path(".lockgate")
"""Where keys, the Directory, the worker secret and ``lockgate dev``'s database live by default."""


def keys_dir(arguments: argparse.Namespace) -> Path:
    """Where private keys live: ``--keys-dir``, ``LOCKGATE_KEYS``, else ``.lockgate/keys``."""
    return Path(arguments.keys_dir or os.environ.get("LOCKGATE_KEYS") or STATE_DIRECTORY / "keys")


def directory_path(arguments: argparse.Namespace) -> Path:
    """The Directory file: ``--directory``, ``LOCKGATE_DIRECTORY``, else ``.lockgate/``'s."""
    chosen = getattr(arguments, "directory", None) or os.environ.get("LOCKGATE_DIRECTORY")
    return Path(chosen or STATE_DIRECTORY / "directory.toml")


def secret_path(arguments: argparse.Namespace) -> Path:
    """The worker secret's file: ``--secret-file``, its variable, else ``.lockgate/``'s."""
    chosen = getattr(arguments, "secret_file", None) or os.environ.get(WORKER_SECRET_FILE_ENV)
    return Path(chosen or STATE_DIRECTORY / "worker.secret")


def worker_secret(arguments: argparse.Namespace) -> WorkerSecret:
    """The deployment's worker secret, from its variable unless ``--secret-file`` names a file.

    Raises:
        CommandError: there is none, or it cannot be read.
    """
    try:
        if os.environ.get(WORKER_SECRET_ENV) and not getattr(arguments, "secret_file", None):
            found = WorkerSecret.from_environment()
            assert found is not None
            return found
        return WorkerSecret.load(secret_path(arguments))
    except WorkerSecretError as error:
        raise CommandError(
            f"{error} A worker needs the deployment's worker secret (--secret-file, "
            f"{WORKER_SECRET_FILE_ENV} or {WORKER_SECRET_ENV})."
        ) from None


def signer(arguments: argparse.Namespace) -> Signer | None:
    """The signer for ``--as PRINCIPAL`` from its key in the keys folder; ``None`` without ``--as``.

    Raises:
        CommandError: the principal's key cannot be read.
    """
    principal = getattr(arguments, "as_principal", None)
    if not principal:
        return None
    try:
        return Signer.from_keys_dir(principal, keys_dir(arguments), channel="cli")
    except IdentityError as error:
        raise CommandError(str(error)) from None


def local_directory(arguments: argparse.Namespace) -> Directory | None:
    """The Directory file loaded, or ``None`` when there is none.

    Raises:
        CommandError: the file is there but is not a valid Directory.
    """
    path = directory_path(arguments)
    if not path.exists():
        return None
    try:
        return Directory.load(path)
    except IdentityError as error:
        raise CommandError(str(error)) from None


async def connect(arguments: argparse.Namespace) -> Client:
    """A client for the Temporal the flags, environment and profile name.

    Raises:
        CommandError: the settings cannot be read, or nothing answers at the address.
    """
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

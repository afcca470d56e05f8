"""What a command takes from its flags and the environment: where state lives, who signs (a key,
or the person ``lockgate login`` signed in), which Temporal, and the door
(:class:`~lockgate.operations.Operations`) every command that acts on runs, gates and tools goes
through.

Connection settings follow Temporal's conventions: ``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``,
TLS and API-key variables, and env-config profiles (``--profile``); the flags win over them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import temporalio.converter
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import PayloadCodec
from temporalio.envconfig import ClientConfig
from temporalio.runtime import Runtime

from lockgate._defaults import PAYLOAD_KEYS_FILE_ENV
from lockgate.cli._output import CommandError
from lockgate.encryption import (
    EncryptionCodec,
    PayloadDecryptionError,
    PayloadKeys,
    PayloadKeysError,
    encrypted_data_converter,
)
from lockgate.encryption._codec import ENCRYPTED_ENCODING, KEY_ID_METADATA
from lockgate.encryption._keys import PAYLOAD_KEYS_ENV
from lockgate.identity._directory import Directory
from lockgate.identity._enrolment import ENROLMENT_SECRET_FILE_ENV
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._issuers import TrustedIssuer
from lockgate.identity._proofs import Signer
from lockgate.identity._seals import (
    WORKER_SECRET_ENV,
    WORKER_SECRET_FILE_ENV,
    WorkerSecret,
    WorkerSecretError,
)
from lockgate.operations._operations import Operations
from lockgate.sso import SignInError, browser_sign_in
from lockgate.tools._tool_result import ErrorCode

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "STATE_DIRECTORY",
    "Login",
    "connect",
    "directory_path",
    "enrolment_secret_path",
    "keys_dir",
    "local_directory",
    "login_path",
    "operations",
    "payload_keys",
    "payload_keys_path",
    "remembered_login",
    "secret_path",
    "signer",
    "worker_secret",
]

STATE_DIRECTORY = Path(".lockgate")
"""Where keys, the Directory, the worker secret and ``lockgate dev``'s database live by default."""

_COMMAND_WAIT_SECONDS = 60.0
"""How long a command waits for a run to settle: a person at a terminal is given as long as a
``GraphClient`` waits by default, where a server answering agents waits 30 seconds."""


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


def enrolment_secret_path(arguments: argparse.Namespace) -> Path:
    """The enrolment secret's file: ``--enrolment-secret``, its variable, else ``.lockgate/``'s."""
    chosen = getattr(arguments, "enrolment_secret", None) or os.environ.get(
        ENROLMENT_SECRET_FILE_ENV
    )
    return Path(chosen or STATE_DIRECTORY / "enrolment.secret")


def payload_keys_path(arguments: argparse.Namespace) -> Path | None:
    """The payload keys file ``--payload-keys`` or its variable names; None when neither does."""
    chosen = getattr(arguments, "payload_keys", None) or os.environ.get(PAYLOAD_KEYS_FILE_ENV)
    return Path(chosen) if chosen else None


def payload_keys(arguments: argparse.Namespace) -> PayloadKeys | None:
    """The payload keys: ``--payload-keys FILE``, else ``LOCKGATE_PAYLOAD_KEYS`` (the keys'
    text), else the file ``LOCKGATE_PAYLOAD_KEYS_FILE`` names; None when none is set (payloads
    are then stored as they are).

    Raises:
        CommandError: the keys named cannot be read.
    """
    try:
        chosen = getattr(arguments, "payload_keys", None)
        if chosen:
            return PayloadKeys.load(chosen)
        return PayloadKeys.from_environment()
    except PayloadKeysError as error:
        raise CommandError(
            f"{error} Payload keys come from --payload-keys, {PAYLOAD_KEYS_ENV} or "
            f"{PAYLOAD_KEYS_FILE_ENV}."
        ) from None


def signer(arguments: argparse.Namespace, *, needed: bool = False) -> Signer | None:
    """Who signs what the command does: ``--as PRINCIPAL`` with its key in the keys folder;
    ``--sso`` with a fresh sign-in at the identity provider ``lockgate login`` chose, one per
    act. A command that cannot act unsigned (``needed``: decide, resume, cancel, sign) signs as
    the person ``lockgate login`` signed in where neither is given; otherwise ``None``.

    Raises:
        CommandError: the principal's key cannot be read, or ``--sso`` is given and nobody
            signed in with ``lockgate login``.
    """
    principal = getattr(arguments, "as_principal", None)
    if principal:
        try:
            return Signer.from_keys_dir(principal, keys_dir(arguments), channel="cli")
        except IdentityError as error:
            raise CommandError(str(error)) from None
    if getattr(arguments, "sso", False) or (needed and login_path().exists()):
        return _signed_in(arguments)
    return None


def login_path() -> Path:
    """The per-user file ``lockgate login`` writes: ``$XDG_CONFIG_HOME/lockgate/login.toml``,
    else ``~/.config/lockgate/login.toml``."""
    home = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(home) / "lockgate" / "login.toml"


@dataclasses.dataclass(frozen=True)
class Login:
    """Who ``lockgate login`` signed in, and where: what every ``--sso`` act signs in with again.

    It holds no token: each act gets a fresh one, whose nonce names that act.
    """

    issuer: TrustedIssuer
    """The issuer, as the Directory names it (its URL, lockgate's client id there as its
    audience, the claim that names a person, how recent a sign-in must be)."""
    scopes: tuple[str, ...]
    principal: str
    """``sso:ISSUER:PERSON``, read from the ID token of the sign-in."""

    def write(self, path: Path) -> None:
        """Writes the login to ``path`` (made owner-only: it says who you are)."""
        fields = {
            "issuer": self.issuer.name,
            "issuer_url": self.issuer.issuer,
            "client_id": self.issuer.audience,
            "principal_claim": self.issuer.principal_claim,
            "max_age_seconds": self.issuer.max_age_seconds,
            "scopes": list(self.scopes),
            "principal": self.principal,
        }
        lines = [f"{name} = {json.dumps(value)}" for name, value in fields.items()]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "# Written by `lockgate login`: who `lockgate decide`, `resume`, `cancel` and `sign`\n"
            "# sign as without --as (a fresh sign-in at this issuer for each act).\n"
            "[login]\n" + "\n".join(lines) + "\n"
        )
        path.chmod(0o600)


def remembered_login() -> Login | None:
    """The login ``lockgate login`` wrote, or None where it wrote none.

    Raises:
        CommandError: the file is there but unusable.
    """
    path = login_path()
    if not path.exists():
        return None
    try:
        table = tomllib.loads(path.read_text())["login"]
        scopes = table["scopes"]
        if not isinstance(scopes, list) or not all(isinstance(each, str) for each in scopes):
            raise TypeError("scopes")
        issuer = TrustedIssuer(
            table["issuer"],
            table["issuer_url"],
            table["client_id"],
            table["principal_claim"],
            max_age_seconds=table["max_age_seconds"],
        )
        principal = table["principal"]
        if not isinstance(principal, str) or not principal.startswith(f"sso:{issuer.name}:"):
            raise TypeError("principal")
    except (OSError, ValueError, KeyError, TypeError, IdentityError) as error:
        raise CommandError(
            f"The login file {path} is unusable ({type(error).__name__}: {error}): sign in "
            "again with `lockgate login`."
        ) from None
    return Login(issuer, tuple(scopes), principal)


def _signed_in(arguments: argparse.Namespace) -> Signer:
    """A signer that signs each act with a fresh sign-in as the person ``lockgate login``
    signed in.

    Raises:
        CommandError: nobody signed in (then, or when a sign-in for an act fails: nothing is
            signed).
    """
    login = remembered_login()
    if login is None:
        raise CommandError(
            "--sso signs with a sign-in at your identity provider, and nobody has signed in "
            "with `lockgate login` here: run `lockgate login --issuer NAME` first."
        )
    get_token = browser_sign_in(
        login.issuer.issuer,
        login.issuer.audience,
        scopes=login.scopes,
        max_age_seconds=login.issuer.max_age_seconds,
        open_browser=not getattr(arguments, "no_browser", False),
    )

    def token_for(nonce: str) -> str:
        try:
            return get_token(nonce)
        except SignInError as error:
            raise CommandError(f"{error} (signing as {login.principal})") from None

    return Signer.from_identity_provider(login.principal, token_for, channel="cli")


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


async def connect(arguments: argparse.Namespace, *, runtime: Runtime | None = None) -> Client:
    """A client for the Temporal the flags, environment and profile name; with payload keys
    configured (:func:`payload_keys`), it encrypts and decrypts payloads with them. With
    ``runtime`` (one that exports metrics, say), the client and the workers on it run there.

    Raises:
        CommandError: the settings cannot be read, or nothing answers at the address.
    """
    try:
        config: dict[str, Any] = dict(
            ClientConfig.load_client_connect_config(profile=arguments.profile)
        )
    except Exception as error:
        raise CommandError(f"Cannot read the Temporal connection settings: {error}") from None
    keys = payload_keys(arguments)
    converter = config.get("data_converter") or temporalio.converter.default()
    if keys is not None:
        config["data_converter"] = encrypted_data_converter(EncryptionCodec(keys), converter)
    else:
        # An encrypted payload is refused with a sentence naming the keys' settings, not a
        # KeyError from the payload converter.
        config["data_converter"] = dataclasses.replace(converter, payload_codec=_NoPayloadKeys())
    if arguments.address:
        config["target_host"] = arguments.address
    if arguments.namespace:
        config["namespace"] = arguments.namespace
    config.setdefault("target_host", "localhost:7233")
    if runtime is not None:
        config["runtime"] = runtime
    try:
        return await Client.connect(**config)
    except (RuntimeError, ValueError) as error:
        target = config["target_host"]
        raise CommandError(
            f"Cannot reach Temporal at {target}: {_why_unreachable(error)}. Check the address "
            "(--address, TEMPORAL_ADDRESS or the profile's) and that a server runs there: "
            "`lockgate dev` (or `make dev`) starts one here.",
            code=ErrorCode.UNAVAILABLE,
        ) from None


def _why_unreachable(error: Exception) -> str:
    """What a failed connection's error says went wrong, in a few words: the SDK's text carries
    the transport's whole dump (``tonic::transport::Error(...)``), which helps nobody here."""
    text = str(error)
    lowered = text.lower()
    if isinstance(error, ValueError):
        return f"that is not an address ({text})"
    if "dns error" in lowered:
        return "its host name does not resolve"
    if "connectionrefused" in lowered or "connection refused" in lowered:
        return "nothing listens there (connection refused)"
    if "timed out" in lowered or "deadline" in lowered:
        return "nothing answered in time"
    if "tls" in lowered or "certificate" in lowered:
        return "the TLS handshake failed (check the TLS settings and the server's certificate)"
    if "get_system_info" in lowered:
        return "what answers there is not a Temporal frontend"
    return text.split("tonic::")[0].split("Status {")[0].rstrip(" :(") or "it did not answer"


async def operations(
    arguments: argparse.Namespace,
    signing: Signer | None = None,
    *,
    channel: str = "cli",
    directory: Directory | None = None,
) -> Operations:
    """The door a command reaches runs, gates and tools through, on the Temporal and task queue
    the flags name.

    Args:
        arguments: The command's flags.
        signing: Who signs what the command does: the signer of ``--as`` (:func:`signer`), or
            None for a command that signs nothing.
        channel: The channel of an unsigned start or call (``cli``; ``temporal`` for a tool
            call, as the ``temporal`` CLI makes one).
        directory: The Directory that judges which options a viewer may take (``pending``).

    Raises:
        CommandError: the settings cannot be read, or nothing answers at the address.
    """
    return Operations(
        await connect(arguments),
        arguments.task_queue,
        signing,
        channel=channel,
        directory=directory,
        wait_seconds=_COMMAND_WAIT_SECONDS,
    )


class _NoPayloadKeys(PayloadCodec):
    """A command's codec when no payload keys are configured: it reads and writes plain payloads
    and refuses an encrypted one with a sentence."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        for payload in payloads:
            if payload.metadata.get("encoding") == ENCRYPTED_ENCODING:
                key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode("utf-8", "replace")
                raise PayloadDecryptionError(
                    f"What Temporal returned is encrypted (payload key {key_id!r}) and no "
                    f"payload keys are configured: pass --payload-keys FILE, or set "
                    f"{PAYLOAD_KEYS_FILE_ENV} (or {PAYLOAD_KEYS_ENV})."
                )
        return list(payloads)

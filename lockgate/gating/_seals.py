"""The worker secret: how a deployment's workers vouch to each other for what they hand over.

A graph run hands its state to its next run at continue-as-new, and schedules tool activities
saying whom they run as. Both travel through Temporal, where anyone with namespace access can
write the same shapes (a foreign continue-as-new, an activity scheduled from their own worker).
So what stands for identity or authority is *sealed*: an HMAC-SHA256 under the deployment's
worker secret, over a purpose and a binding that names the workflow id and execution it belongs
to. Only workers holding the secret make seals; a seal opens only for the exact purpose and
binding it was made for.

The secret is a keyring so it can be rotated without stopping runs: new seals use the current
key, and every listed key still opens the seals it made. Keep a retired key listed until what it
sealed has been opened (a day is plenty: seals are opened within the activity retries and
continue-as-new handovers that carry them).

Example:
    >>> secret = WorkerSecret.generate()
    >>> seal = secret.seal("carry", {"workflow_id": "essay-1", "execution": "run-a"})
    >>> secret.opens(seal, "carry", {"workflow_id": "essay-1", "execution": "run-a"})
    True
    >>> secret.opens(seal, "carry", {"workflow_id": "essay-1", "execution": "run-b"})
    False
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lockgate.gating._canonical import canonical_json

__all__ = ["WORKER_SECRET_ENV", "WORKER_SECRET_FILE_ENV", "WorkerSecret", "WorkerSecretError"]

WORKER_SECRET_ENV = "LOCKGATE_WORKER_SECRET"
"""The environment variable that may hold the worker secret's text."""

WORKER_SECRET_FILE_ENV = "LOCKGATE_WORKER_SECRET_FILE"
"""The environment variable that may name the file holding the worker secret."""

_LINE_PREFIX = "lockgate-worker-secret"
_KEY_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
_KEY_BYTES = 32
_SEAL = re.compile(r"lgs1\.([a-z0-9][a-z0-9-]{0,39})\.([A-Za-z0-9_-]{43})")


class WorkerSecretError(ValueError):
    """A worker secret is missing or unusable; the message says what to do."""


class WorkerSecret:
    """The HMAC keys a deployment's workers share, the first being the one new seals use.

    Never written to history, logs or the repository: it lives in a file readable by the worker
    only, or in an environment variable (see :meth:`from_environment`).
    """

    def __init__(self, keys: Iterable[tuple[str, bytes]]) -> None:
        """Makes a keyring.

        Args:
            keys: ``(key id, 32 random bytes)`` pairs, the current key first.

        Raises:
            WorkerSecretError: No keys, a malformed or repeated key id, or a key of the wrong size.
        """
        ring: dict[str, bytes] = {}
        for key_id, key in keys:
            if not isinstance(key_id, str) or not _KEY_ID.fullmatch(key_id):
                raise WorkerSecretError(
                    f"{key_id!r} is not a key id: use up to 40 lowercase letters, digits and '-'."
                )
            if key_id in ring:
                raise WorkerSecretError(f"The key id {key_id!r} is listed twice.")
            if not isinstance(key, bytes) or len(key) != _KEY_BYTES:
                raise WorkerSecretError(f"The key {key_id!r} is not {_KEY_BYTES} bytes.")
            ring[key_id] = key
        if not ring:
            raise WorkerSecretError("A worker secret needs at least one key.")
        self._keys = ring
        self.current = next(iter(ring))

    # Making and reading ------------------------------------------------------------------------

    @classmethod
    def generate(cls, key_id: str | None = None) -> WorkerSecret:
        """A new secret with one random key (its id made from today's date unless given)."""
        return cls([(key_id or _new_key_id(), secrets.token_bytes(_KEY_BYTES))])

    @classmethod
    def parse(cls, text: str, source: str = "<text>") -> WorkerSecret:
        """Reads the form :meth:`to_text` writes: one ``lockgate-worker-secret:ID:KEY`` per line.

        Blank lines and ``#`` comments are skipped; commas separate keys on one line too (for an
        environment variable). The first key is the current one.

        Raises:
            WorkerSecretError: The text holds no key, or a line is not a key; the message names
                ``source`` and the line, never the key material.
        """
        keys: list[tuple[str, bytes]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            for item in line.split("#", 1)[0].split(","):
                item = item.strip()
                if not item:
                    continue
                parts = item.split(":")
                raw = _decode(parts[2]) if len(parts) == 3 else None
                if parts[0] != _LINE_PREFIX or raw is None:
                    raise WorkerSecretError(
                        f"{source}, line {number}: not a worker secret key (expected "
                        f"'{_LINE_PREFIX}:ID:KEY', as `lockgate secret new` prints)."
                    )
                keys.append((parts[1], raw))
        if not keys:
            raise WorkerSecretError(
                f"{source} holds no worker secret key: `lockgate secret new` makes one."
            )
        try:
            return cls(keys)
        except WorkerSecretError as error:
            raise WorkerSecretError(f"{source}: {error}") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WorkerSecret:
        """Reads a secret file (see :meth:`parse`).

        Raises:
            WorkerSecretError: The file is missing, unreadable or holds no key.
        """
        file = Path(path).expanduser()
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise WorkerSecretError(
                f"No worker secret at {file}: `lockgate secret new --secret-file {file}` makes "
                "one; every worker of the deployment needs the same file."
            ) from None
        except (OSError, UnicodeDecodeError) as error:
            raise WorkerSecretError(f"Cannot read the worker secret {file}: {error}.") from None
        return cls.parse(text, str(file))

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> WorkerSecret | None:
        """The secret ``LOCKGATE_WORKER_SECRET`` holds, or the file ``LOCKGATE_WORKER_SECRET_FILE``
        names; None when neither is set.
        """
        environ = os.environ if environ is None else environ
        text = environ.get(WORKER_SECRET_ENV)
        if text:
            return cls.parse(text, WORKER_SECRET_ENV)
        path = environ.get(WORKER_SECRET_FILE_ENV)
        if path:
            return cls.load(path)
        return None

    def to_text(self) -> str:
        """The secret as :meth:`parse` reads it, current key first. Keep it out of logs."""
        return "".join(
            f"{_LINE_PREFIX}:{key_id}:{_encode(key)}\n" for key_id, key in self._keys.items()
        )

    def write(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Writes :meth:`to_text` to ``path``, readable by its owner only (mode 0o600).

        Raises:
            WorkerSecretError: The file exists (and ``overwrite`` is off) or cannot be written.
        """
        file = Path(path).expanduser()
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            descriptor = os.open(file, flags, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(
                    "# lockgate worker secret: the same file on every worker of the deployment.\n"
                    "# Never commit it. The first key seals; every key listed still opens.\n"
                    + self.to_text()
                )
            os.chmod(file, 0o600)
        except FileExistsError:
            raise WorkerSecretError(
                f"A worker secret already exists at {file}; refusing to overwrite it (runs "
                "sealed with it would be refused). Rotate it instead: `lockgate secret rotate`."
            ) from None
        except OSError as error:
            raise WorkerSecretError(f"Cannot write the worker secret to {file}: {error}.") from None
        return file

    def rotated(self, key_id: str | None = None) -> WorkerSecret:
        """This secret with a new current key; the old keys still open what they sealed."""
        fresh = key_id or _new_key_id()
        if fresh in self._keys:
            fresh = f"{fresh}-{secrets.token_hex(2)}"
        return WorkerSecret([(fresh, secrets.token_bytes(_KEY_BYTES)), *self._keys.items()])

    def retired(self, key_id: str) -> WorkerSecret:
        """This secret without ``key_id`` (which must not be the current key)."""
        if key_id == self.current:
            raise WorkerSecretError("The current key cannot be retired: rotate first.")
        return WorkerSecret([(k, v) for k, v in self._keys.items() if k != key_id])

    @property
    def key_ids(self) -> tuple[str, ...]:
        """The key ids, current first."""
        return tuple(self._keys)

    def __repr__(self) -> str:
        return f"WorkerSecret(key_ids={list(self._keys)!r})"

    # Seals -------------------------------------------------------------------------------------

    def seal(self, purpose: str, binding: Mapping[str, Any]) -> str:
        """A seal on ``binding`` for ``purpose``, under the current key.

        Args:
            purpose: What the seal vouches for (``"carry"``, ``"tool-activity"``, ...): a seal
                made for one purpose never opens for another.
            binding: JSON data naming exactly what is vouched for, including the workflow id and
                execution it belongs to.
        """
        mac = self._mac(self._keys[self.current], purpose, binding)
        return f"lgs1.{self.current}.{mac}"

    def opens(self, seal: object, purpose: str, binding: Mapping[str, Any]) -> bool:
        """Whether ``seal`` was made by one of these keys for exactly ``purpose`` and ``binding``.

        Anything that is not such a seal (missing, malformed, an unknown key, another binding)
        is False; nothing is raised because of ``seal``.
        """
        if not isinstance(seal, str):
            return False
        match = _SEAL.fullmatch(seal)
        if match is None:
            return False
        key = self._keys.get(match.group(1))
        if key is None:
            return False
        return hmac.compare_digest(match.group(2), self._mac(key, purpose, binding))

    def token(self, purpose: str, binding: Mapping[str, Any]) -> str:
        """A secret value derived from ``binding`` under the current key (a confirmation token):
        the same every time it is asked for, unknowable without the secret.
        """
        return self._mac(self._keys[self.current], "token:" + purpose, binding)

    def token_matches(self, token: object, purpose: str, binding: Mapping[str, Any]) -> bool:
        """Whether ``token`` is :meth:`token` of ``binding`` under any of these keys."""
        if not isinstance(token, str):
            return False
        return any(
            hmac.compare_digest(token, self._mac(key, "token:" + purpose, binding))
            for key in self._keys.values()
        )

    @staticmethod
    def _mac(key: bytes, purpose: str, binding: Mapping[str, Any]) -> str:
        message = b"lockgate-seal\x00" + purpose.encode("utf-8") + b"\x00" + canonical_json(binding)
        return _encode(hmac.new(key, message, hashlib.sha256).digest())


def _new_key_id() -> str:
    return time.strftime("k%Y%m%d", time.gmtime()) + "-" + secrets.token_hex(3)


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes | None:
    if not re.fullmatch(r"[A-Za-z0-9_-]{43}", text):
        return None
    try:
        return base64.urlsafe_b64decode(text + "=")
    except (binascii.Error, ValueError):
        return None

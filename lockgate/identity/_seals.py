"""The worker secret: how a deployment's workers vouch to each other for what they hand over.

A graph run hands its state to its next run at continue-as-new, and schedules tool activities
saying whom they run as. Both travel through Temporal, where anyone with namespace access can
write the same shapes (a foreign continue-as-new, an activity scheduled from their own worker).
So what stands for identity or authority is *sealed*: an HMAC-SHA256 under the deployment's
worker secret, over a purpose and a binding that names the workflow id and execution it belongs
to. Only workers holding the secret make seals; a seal opens only for the exact purpose and
binding it was made for.

The secret is a keyring so it can be rotated without stopping runs: new seals use the current
key, and every listed key still opens the seals it made. A run's history keeps seals too (what
its workers accepted and recorded, see :mod:`lockgate.workflows._history_seals`), opened again
whenever the run is replayed: keep a retired key listed until every run that was open while it
was current has finished or continued as new.

Example:
    >>> secret = WorkerSecret.generate()
    >>> seal = secret.seal("carry", {"workflow_id": "essay-1", "execution": "run-a"})
    >>> secret.opens(seal, "carry", {"workflow_id": "essay-1", "execution": "run-a"})
    True
    >>> secret.opens(seal, "carry", {"workflow_id": "essay-1", "execution": "run-b"})
    False
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from lockgate._defaults import WORKER_SECRET_FILE_ENV
from lockgate._errors import ConfigurationError
from lockgate.identity._canonical import canonical_json
from lockgate.identity._keyrings import Keyring
from lockgate.identity._keys import decode_base64url, encode_base64url

__all__ = ["WORKER_SECRET_ENV", "WORKER_SECRET_FILE_ENV", "WorkerSecret", "WorkerSecretError"]

WORKER_SECRET_ENV = "LOCKGATE_WORKER_SECRET"
"""The environment variable that may hold the worker secret's text."""


_SEAL = re.compile(r"lgs1\.([a-z0-9][a-z0-9-]{0,39})\.([A-Za-z0-9_-]{43})")
_SEALED_DATA = re.compile(r"lge1\.([a-z0-9][a-z0-9-]{0,39})\.([A-Za-z0-9_-]{38,20000})")


class WorkerSecretError(ConfigurationError):
    """A worker secret is missing or unusable; the message says what to do."""


class WorkerSecret(Keyring):
    """The HMAC keys a deployment's workers share, the first being the one new seals use.

    Never written to history, logs or the repository: it lives in a file readable by the worker
    only, or in an environment variable (see :meth:`from_environment`). Made, read, written and
    rotated as every :class:`~lockgate.identity._keyrings.Keyring` is.
    """

    _error = WorkerSecretError
    _line_prefix = "lockgate-worker-secret"
    _env = WORKER_SECRET_ENV
    _file_env = WORKER_SECRET_FILE_ENV
    _empty = "A worker secret needs at least one key."
    _entry = "worker secret key"
    _maker = "`lockgate secret new`"
    _name = "worker secret"
    _header = (
        "# lockgate worker secret: the same file on every worker of the deployment.\n"
        "# Never commit it. The first key seals; every key listed still opens.\n"
    )

    _missing = (
        "No worker secret at {file}: `lockgate secret new --secret-file {file}` makes one; "
        "every worker of the deployment needs the same file."
    )
    _exists = (
        "A worker secret already exists at {file}; refusing to overwrite it (runs sealed with "
        "it would be refused). Rotate it instead: `lockgate secret rotate`."
    )

    def retired(self, key_id: str) -> WorkerSecret:
        """This secret without ``key_id`` (which must not be the current key)."""
        if key_id == self.current:
            raise WorkerSecretError("The current key cannot be retired: rotate first.")
        return WorkerSecret([(k, v) for k, v in self._keys.items() if k != key_id])

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

    @staticmethod
    def key_of(seal: object) -> str | None:
        """The id of the key ``seal`` says it was made with; None for anything not a seal."""
        match = _SEAL.fullmatch(seal) if isinstance(seal, str) else None
        return match.group(1) if match is not None else None

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

    # Sealed data ---------------------------------------------------------------------------------

    def seal_data(self, purpose: str, binding: Mapping[str, Any], data: Mapping[str, Any]) -> str:
        """``data`` encrypted and sealed for ``purpose`` and ``binding``, under the current key:
        what one worker hands another through history that nobody else may read or change.

        AES-256-GCM under a key derived from the secret's for ``purpose``, with ``binding`` as
        its associated data. Its nonce is derived from the binding and the data, so the same
        data sealed twice for the same binding (a workflow replayed) reads the same; anything
        else never shares a nonce.
        """
        key = self._data_key(self._keys[self.current], purpose)
        associated = canonical_json(binding)
        plain = canonical_json(dict(data))
        nonce = hmac.new(key, associated + b"\x00" + plain, hashlib.sha256).digest()[:12]
        sealed = nonce + AESGCM(key).encrypt(nonce, plain, associated)
        return f"lge1.{self.current}.{encode_base64url(sealed)}"

    def open_data(self, text: object, purpose: str, binding: Mapping[str, Any]) -> Any:
        """The data :meth:`seal_data` sealed in ``text`` for exactly ``purpose`` and
        ``binding`` under one of these keys; None for anything else (nothing is raised because
        of ``text``)."""
        match = _SEALED_DATA.fullmatch(text) if isinstance(text, str) else None
        key = self._keys.get(match.group(1)) if match is not None else None
        if match is None or key is None:
            return None
        sealed = decode_base64url(match.group(2))
        if sealed is None:
            return None
        try:
            data_key = self._data_key(key, purpose)
            plain = AESGCM(data_key).decrypt(sealed[:12], sealed[12:], canonical_json(binding))
            return json.loads(plain)
        except (InvalidTag, ValueError):
            return None

    @staticmethod
    def _data_key(key: bytes, purpose: str) -> bytes:
        return hmac.new(
            key, b"lockgate-data\x00" + purpose.encode("utf-8"), hashlib.sha256
        ).digest()

    @staticmethod
    def _mac(key: bytes, purpose: str, binding: Mapping[str, Any]) -> str:
        message = b"lockgate-seal\x00" + purpose.encode("utf-8") + b"\x00" + canonical_json(binding)
        return encode_base64url(hmac.new(key, message, hashlib.sha256).digest())

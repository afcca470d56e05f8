"""The payload keys: the AES-256 keys that encrypt what a run carries in Temporal's history.

A keyring so keys can be rotated without stopping runs: new payloads are encrypted under the
current key, and every listed key still decrypts what it encrypted. Unlike the worker secret,
a payload key must stay listed for as long as any history it wrote is kept: a worker replaying
that history, or a person reading it through the codec server, needs it.

The file holds one ``lockgate-payload-key:ID:KEY`` per line, the current key first
(``lockgate payload-keys new`` makes one). It lives beside the worker secret, readable by the
workers, the codec server and the people's clients only; never in the repository.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path

from lockgate.gating._seals import _KEY_ID, _decode, _encode, _new_key_id

__all__ = ["PAYLOAD_KEYS_ENV", "PAYLOAD_KEYS_FILE_ENV", "PayloadKeys", "PayloadKeysError"]

PAYLOAD_KEYS_ENV = "LOCKGATE_PAYLOAD_KEYS"
"""The environment variable that may hold the payload keys' text."""

PAYLOAD_KEYS_FILE_ENV = "LOCKGATE_PAYLOAD_KEYS_FILE"
"""The environment variable that may name the file holding the payload keys."""

_LINE_PREFIX = "lockgate-payload-key"
_KEY_BYTES = 32


class PayloadKeysError(ValueError):
    """Payload keys are missing or unusable; the message says what to do, never a key."""


class PayloadKeys:
    """The AES-256 keys payloads are encrypted with, the first being the one new payloads use.

    Example:
        >>> keys = PayloadKeys.generate("k1")
        >>> keys.current
        'k1'
        >>> keys.rotated("k2").key_ids
        ('k2', 'k1')
    """

    def __init__(self, keys: Iterable[tuple[str, bytes]]) -> None:
        """Makes a keyring.

        Args:
            keys: ``(key id, 32 random bytes)`` pairs, the current key first.

        Raises:
            PayloadKeysError: No keys, a malformed or repeated key id, or a key of the wrong size.
        """
        ring: dict[str, bytes] = {}
        for key_id, key in keys:
            if not isinstance(key_id, str) or not _KEY_ID.fullmatch(key_id):
                raise PayloadKeysError(
                    f"{key_id!r} is not a key id: use up to 40 lowercase letters, digits and '-'."
                )
            if key_id in ring:
                raise PayloadKeysError(f"The key id {key_id!r} is listed twice.")
            if not isinstance(key, bytes) or len(key) != _KEY_BYTES:
                raise PayloadKeysError(f"The payload key {key_id!r} is not {_KEY_BYTES} bytes.")
            ring[key_id] = key
        if not ring:
            raise PayloadKeysError("Payload keys need at least one key.")
        self._keys = ring
        self.current = next(iter(ring))

    @classmethod
    def generate(cls, key_id: str | None = None) -> PayloadKeys:
        """A new keyring with one random key (its id made from today's date unless given)."""
        return cls([(key_id or _new_key_id(), secrets.token_bytes(_KEY_BYTES))])

    @classmethod
    def parse(cls, text: str, source: str = "<text>") -> PayloadKeys:
        """Reads what :meth:`to_text` writes: one ``lockgate-payload-key:ID:KEY`` per line.

        Blank lines and ``#`` comments are skipped; commas separate keys on one line too (for an
        environment variable). The first key is the current one.

        Raises:
            PayloadKeysError: The text holds no key, or an entry is not a key; the message names
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
                    raise PayloadKeysError(
                        f"{source}, line {number}: not a payload key (expected "
                        f"'{_LINE_PREFIX}:ID:KEY', as `lockgate payload-keys new` prints)."
                    )
                keys.append((parts[1], raw))
        if not keys:
            raise PayloadKeysError(
                f"{source} holds no payload key: `lockgate payload-keys new` makes one."
            )
        try:
            return cls(keys)
        except PayloadKeysError as error:
            raise PayloadKeysError(f"{source}: {error}") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PayloadKeys:
        """Reads a payload keys file (see :meth:`parse`).

        Raises:
            PayloadKeysError: The file is missing, unreadable or holds no key.
        """
        file = Path(path).expanduser()
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PayloadKeysError(
                f"No payload keys at {file}: `lockgate payload-keys new --payload-keys {file}` "
                "makes them; every worker and client of the deployment needs the same file."
            ) from None
        except (OSError, UnicodeDecodeError) as error:
            raise PayloadKeysError(f"Cannot read the payload keys {file}: {error}.") from None
        return cls.parse(text, str(file))

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> PayloadKeys | None:
        """The keys ``LOCKGATE_PAYLOAD_KEYS`` holds, or the file ``LOCKGATE_PAYLOAD_KEYS_FILE``
        names; None when neither is set (payloads are then not encrypted).

        Raises:
            PayloadKeysError: A variable is set but names no usable keys.
        """
        environ = os.environ if environ is None else environ
        text = environ.get(PAYLOAD_KEYS_ENV)
        if text:
            return cls.parse(text, PAYLOAD_KEYS_ENV)
        path = environ.get(PAYLOAD_KEYS_FILE_ENV)
        if path:
            return cls.load(path)
        return None

    def to_text(self) -> str:
        """The keys as :meth:`parse` reads them, current first. Keep it out of logs."""
        return "".join(
            f"{_LINE_PREFIX}:{key_id}:{_encode(key)}\n" for key_id, key in self._keys.items()
        )

    def write(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Writes :meth:`to_text` to ``path``, readable by its owner only (mode 0o600).

        Raises:
            PayloadKeysError: The file exists (and ``overwrite`` is off) or cannot be written.
        """
        file = Path(path).expanduser()
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            descriptor = os.open(file, flags, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(
                    "# lockgate payload keys: the same file on every worker, client and codec\n"
                    "# server. Never commit it. The first key encrypts; keep every key that\n"
                    "# encrypted a history you still keep.\n" + self.to_text()
                )
            os.chmod(file, 0o600)
        except FileExistsError:
            raise PayloadKeysError(
                f"Payload keys already exist at {file}; refusing to overwrite them (histories "
                "they encrypted could no longer be read). Rotate instead: "
                "`lockgate payload-keys rotate`."
            ) from None
        except OSError as error:
            raise PayloadKeysError(f"Cannot write the payload keys to {file}: {error}.") from None
        return file

    def rotated(self, key_id: str | None = None) -> PayloadKeys:
        """These keys with a new current key; the old keys still decrypt what they encrypted."""
        fresh = key_id or _new_key_id()
        if fresh in self._keys:
            fresh = f"{fresh}-{secrets.token_hex(2)}"
        return PayloadKeys([(fresh, secrets.token_bytes(_KEY_BYTES)), *self._keys.items()])

    def key(self, key_id: str) -> bytes | None:
        """The key ``key_id`` names, or None when it is not listed."""
        return self._keys.get(key_id)

    @property
    def key_ids(self) -> tuple[str, ...]:
        """The key ids, current first."""
        return tuple(self._keys)

    def __repr__(self) -> str:
        return f"PayloadKeys(key_ids={list(self._keys)!r})"

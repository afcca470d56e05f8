"""Keyrings: 32-byte keys under short ids, the first the current one, kept in owner-only files.

The worker secret (HMAC keys that seal what workers hand each other) and the payload keys (AES
keys that encrypt what runs carry) are both keyrings: rotated by putting a new key first, every
listed key still in use. They differ only in what they are called and what they are for; this
module holds what they share, so the file format, its checks and its refusals are written once.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import ClassVar, TypeVar

from lockgate.identity._keys import encode_base64url

__all__ = ["KEY_BYTES", "Keyring", "new_key_id"]

KEY_BYTES = 32
"""Every key's length."""

_KEY_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")

_K = TypeVar("_K", bound="Keyring")


def new_key_id() -> str:
    """A fresh key id: today's date and a random suffix."""
    return time.strftime("k%Y%m%d", time.gmtime()) + "-" + secrets.token_hex(3)


def _decode_key(text: str) -> bytes | None:
    if not re.fullmatch(r"[A-Za-z0-9_-]{43}", text):
        return None
    try:
        return base64.urlsafe_b64decode(text + "=")
    except (binascii.Error, ValueError):
        return None


class Keyring:
    """Keys by id, the current one first, read from and written to ``PREFIX:ID:KEY`` lines.

    A subclass names itself: its error type, its line prefix and variables, and the words of its
    refusals (which never quote key material).
    """

    _error: ClassVar[type[ValueError]] = ValueError
    _line_prefix: ClassVar[str] = "lockgate-key"
    _env: ClassVar[str] = ""
    _file_env: ClassVar[str] = ""
    _key_noun: ClassVar[str] = "key"
    """What one key is called where its size is wrong."""
    _empty: ClassVar[str] = "A keyring needs at least one key."
    _entry: ClassVar[str] = "key"
    """What a line of the file holds."""
    _maker: ClassVar[str] = ""
    """The command that makes the file."""
    _name: ClassVar[str] = "keys"
    """What the whole file is called."""
    _header: ClassVar[str] = ""
    """The comment written above the keys."""
    _missing: ClassVar[str] = "No {name} at {file}: {maker} makes it."
    """The refusal for a file that is not there: how to make it (``{file}`` is its path)."""
    _exists: ClassVar[str] = "{Name} already exist at {file}; refusing to overwrite them."
    """The refusal for writing over a file that is there: why not, and what instead."""

    def __init__(self, keys: Iterable[tuple[str, bytes]]) -> None:
        """Makes a keyring.

        Args:
            keys: ``(key id, 32 random bytes)`` pairs, the current key first.

        Raises:
            ValueError: (the subclass's error) No keys, a malformed or repeated key id, or a key
                of the wrong size.
        """
        ring: dict[str, bytes] = {}
        for key_id, key in keys:
            if not isinstance(key_id, str) or not _KEY_ID.fullmatch(key_id):
                raise self._error(
                    f"{key_id!r} is not a key id: use up to 40 lowercase letters, digits and '-'."
                )
            if key_id in ring:
                raise self._error(f"The key id {key_id!r} is listed twice.")
            if not isinstance(key, bytes) or len(key) != KEY_BYTES:
                raise self._error(f"The {self._key_noun} {key_id!r} is not {KEY_BYTES} bytes.")
            ring[key_id] = key
        if not ring:
            raise self._error(self._empty)
        self._keys = ring
        self.current = next(iter(ring))

    @classmethod
    def generate(cls: type[_K], key_id: str | None = None) -> _K:
        """A new keyring with one random key (its id made from today's date unless given)."""
        return cls([(key_id or new_key_id(), secrets.token_bytes(KEY_BYTES))])

    @classmethod
    def parse(cls: type[_K], text: str, source: str = "<text>") -> _K:
        """Reads what :meth:`to_text` writes: one ``PREFIX:ID:KEY`` per line.

        Blank lines and ``#`` comments are skipped; commas separate keys on one line too (for an
        environment variable). The first key is the current one.

        Raises:
            ValueError: (the subclass's error) The text holds no key, or an entry is not a key;
                the message names ``source`` and the line, never the key material.
        """
        keys: list[tuple[str, bytes]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            for item in line.split("#", 1)[0].split(","):
                item = item.strip()
                if not item:
                    continue
                parts = item.split(":")
                raw = _decode_key(parts[2]) if len(parts) == 3 else None
                if parts[0] != cls._line_prefix or raw is None:
                    raise cls._error(
                        f"{source}, line {number}: not a {cls._entry} (expected "
                        f"'{cls._line_prefix}:ID:KEY', as {cls._maker} prints)."
                    )
                keys.append((parts[1], raw))
        if not keys:
            raise cls._error(f"{source} holds no {cls._entry}: {cls._maker} makes one.")
        try:
            return cls(keys)
        except cls._error as error:
            raise cls._error(f"{source}: {error}") from None

    @classmethod
    def _words(cls, refusal: str, file: Path) -> str:
        """One of this keyring's refusals about ``file``, in its own words."""
        return refusal.format(
            file=file, name=cls._name, Name=cls._name.capitalize(), maker=cls._maker
        )

    @classmethod
    def load(cls: type[_K], path: str | os.PathLike[str]) -> _K:
        """Reads a keyring file (see :meth:`parse`).

        Raises:
            ValueError: (the subclass's error) The file is missing, unreadable or holds no key.
        """
        file = Path(path).expanduser()
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise cls._error(cls._words(cls._missing, file)) from None
        except (OSError, UnicodeDecodeError) as error:
            raise cls._error(f"Cannot read the {cls._name} {file}: {error}.") from None
        return cls.parse(text, str(file))

    @classmethod
    def from_environment(cls: type[_K], environ: Mapping[str, str] | None = None) -> _K | None:
        """The keys the text variable holds, or the file the file variable names; None when
        neither is set.

        Raises:
            ValueError: (the subclass's error) A variable is set but names no usable keys.
        """
        environ = os.environ if environ is None else environ
        text = environ.get(cls._env)
        if text:
            return cls.parse(text, cls._env)
        path = environ.get(cls._file_env)
        if path:
            return cls.load(path)
        return None

    def to_text(self) -> str:
        """The keys as :meth:`parse` reads them, current first. Keep it out of logs."""
        return "".join(
            f"{self._line_prefix}:{key_id}:{encode_base64url(key)}\n"
            for key_id, key in self._keys.items()
        )

    def write(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Writes :meth:`to_text` to ``path``, readable by its owner only (mode 0o600).

        Raises:
            ValueError: (the subclass's error) The file exists (and ``overwrite`` is off) or
                cannot be written.
        """
        file = Path(path).expanduser()
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            descriptor = os.open(file, flags, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(self._header + self.to_text())
            os.chmod(file, 0o600)
        except FileExistsError:
            raise self._error(self._words(self._exists, file)) from None
        except OSError as error:
            raise self._error(f"Cannot write the {self._name} to {file}: {error}.") from None
        return file

    def rotated(self: _K, key_id: str | None = None) -> _K:
        """These keys with a new current key; the old keys stay listed."""
        fresh = key_id or new_key_id()
        if fresh in self._keys:
            fresh = f"{fresh}-{secrets.token_hex(2)}"
        return type(self)([(fresh, secrets.token_bytes(KEY_BYTES)), *self._keys.items()])

    @property
    def key_ids(self) -> tuple[str, ...]:
        """The key ids, current first."""
        return tuple(self._keys)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(key_ids={list(self._keys)!r})"

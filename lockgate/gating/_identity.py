"""Identity and authority: keys, signed proofs, the Directory and verification.

A *proof* is a small signed JSON object that says who authorizes exactly which act. A
:class:`Signer` makes one with a principal's Ed25519 private key; a :class:`Verifier` checks it
against the public key a :class:`Directory` lists for that principal, the act the call is about,
and the proof's age; a :class:`~lockgate.gating.NonceLedger` says whether it was spent before. The
result is an :class:`Actor`: who the call is verified to come from, never what they hold. Scopes
and roles are looked up in the Directory each time they are judged.

This module is pure: it imports no temporalio, reads no clock and touches no file at import time,
so it also runs inside the Temporal workflow sandbox.

Example:
    >>> key = generate_private_key()
    >>> directory = Directory(entries=[DirectoryEntry("ed", public_key_text(key))])
    >>> proof = Signer("ed", key).sign({"kind": "resume", "run": "essay:review-1"})
    >>> Verifier(directory).verify(proof, {"kind": "resume", "run": "essay:review-1"}).actor
    'ed'
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import json
import logging
import math
import os
import re
import secrets
import sys
import threading
import time
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from lockgate.gating._canonical import canonical_json, to_jsonable

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@functools.cache
def _crypto() -> types.SimpleNamespace:
    """The parts of ``cryptography`` this module uses, imported on first use.

    cryptography's Rust core cannot be initialised twice in one process, and the Temporal
    workflow sandbox re-imports every module a workflow file imports: importing it at module
    level would make ``import lockgate`` fail inside any workflow module.
    """
    from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    return types.SimpleNamespace(
        InvalidSignature=InvalidSignature,
        UnsupportedAlgorithm=UnsupportedAlgorithm,
        serialization=serialization,
        Ed25519PrivateKey=Ed25519PrivateKey,
        Ed25519PublicKey=Ed25519PublicKey,
    )


__all__ = [
    "Actor",
    "Directory",
    "DirectoryEntry",
    "IdentityError",
    "NewIdentity",
    "Proof",
    "ProofRefused",
    "RefusalReason",
    "Signer",
    "Verifier",
    "directory_entry_toml",
    "generate_private_key",
    "new_identity",
    "parse_public_key",
    "public_key_text",
    "read_private_key",
    "write_private_key",
]

_logger = logging.getLogger("lockgate.identity")

_PROOF_VERSION = 1
_PUBLIC_KEY_PREFIX = "ed25519:"
_UNVERIFIED_PREFIX = "unverified:"
_NAME_PATTERN = re.compile(r"[A-Za-z0-9._@:-]+")
# A principal's key file is named "<principal>.key"; 128 keeps that well under the usual 255-byte
# file-name limit.
_NAME_MAX_LENGTH = 128
_NONCE_PATTERN = re.compile(r"[0-9a-f]{32}")
_BASE64URL_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
_SIGNATURE_LENGTH = 64
_PUBLIC_KEY_LENGTH = 32
# datetime cannot show a time after 9999-12-31T23:59:59Z, and no honest proof is issued later.
_LATEST_ISSUED_AT = 253_402_300_799
# Deeper nesting than this in `authorizes` is refused rather than walked, so that a hostile proof
# cannot exhaust the interpreter's recursion limit.
_AUTHORIZES_MAX_DEPTH = 32
_PROOF_FIELDS = (
    "lockgate_proof",
    "principal",
    "channel",
    "authorizes",
    "issued_at",
    "nonce",
    "signature",
)
_ENTRY_FIELDS = ("public_key", "roles", "scopes")
_PRIVATE_FIELD_HINTS = ("private", "secret", "seed", "password", "passphrase")
_WATCH_INTERVAL_SECONDS = 1.0
_KEYS_NEW_HINT = "run `lockgate keys new PRINCIPAL`"

RefusalReason = Literal[
    "malformed",
    "unknown_principal",
    "no_public_key",
    "forged",
    "wrong_binding",
    "expired",
    "not_yet_valid",
    "replayed",
]
"""Why a proof was refused; the ``reason`` of a :class:`ProofRefused`."""


class IdentityError(ValueError):
    """A key, principal name, key file or Directory file is unusable.

    The message is a sentence that says what is wrong and, where there is one, what to do.
    """


class ProofRefused(Exception):
    """A proof does not authorize the call it came with.

    Attributes:
        code: Always ``"UNAUTHORIZED"``, the error code callers report.
        reason: Which check refused the proof (see :data:`RefusalReason`).
        sentence: What is wrong, in a sentence a person can act on; also ``str(error)``.
    """

    code = "UNAUTHORIZED"

    def __init__(self, reason: RefusalReason, sentence: str) -> None:
        """Makes a refusal.

        Args:
            reason: Which check refused the proof.
            sentence: What is wrong, for the person who sent the proof.
        """
        super().__init__(sentence)
        self.reason: RefusalReason = reason
        self.sentence = sentence

    def __str__(self) -> str:
        return self.sentence

    def __reduce__(self) -> tuple[type[ProofRefused], tuple[RefusalReason, str]]:
        # The default reduction would call __init__ with the sentence alone.
        return (type(self), (self.reason, self.sentence))


# --- Keys ---------------------------------------------------------------------------------------


def generate_private_key() -> Ed25519PrivateKey:
    """Returns a new random Ed25519 private key."""
    return _crypto().Ed25519PrivateKey.generate()  # type: ignore[no-any-return]


def public_key_text(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """Returns the text form of a public key, as a Directory lists it.

    Args:
        key: A private key (its public half is used) or a public key.

    Returns:
        ``"ed25519:"`` followed by the raw 32 key bytes in base64url without padding.
    """
    crypto = _crypto()
    public_key = cast(
        "Ed25519PublicKey", key.public_key() if isinstance(key, crypto.Ed25519PrivateKey) else key
    )
    raw = public_key.public_bytes(
        crypto.serialization.Encoding.Raw, crypto.serialization.PublicFormat.Raw
    )
    return _PUBLIC_KEY_PREFIX + _encode_base64url(raw)


def parse_public_key(text: str) -> Ed25519PublicKey:
    """Reads a public key in the form :func:`public_key_text` writes.

    Args:
        text: ``"ed25519:<base64url of 32 bytes, no padding>"``.

    Returns:
        The public key.

    Raises:
        IdentityError: ``text`` is not a public key in that form.
    """
    expected_form = "ed25519:<43 base64url characters>, as `lockgate keys new` prints it"
    if not isinstance(text, str):
        raise IdentityError(f"A public key must be text of the form {expected_form}.")
    if not text.startswith(_PUBLIC_KEY_PREFIX):
        raise IdentityError(
            f"The public key {_show(text)} does not start with 'ed25519:'; "
            f"expected {expected_form}."
        )
    raw = _decode_base64url(text[len(_PUBLIC_KEY_PREFIX) :])
    if raw is None or len(raw) != _PUBLIC_KEY_LENGTH:
        raise IdentityError(
            f"The public key {_show(text)} is not 32 bytes of base64url; expected {expected_form}."
        )
    try:
        return _crypto().Ed25519PublicKey.from_public_bytes(raw)  # type: ignore[no-any-return]
    except ValueError as error:
        raise IdentityError(
            f"The public key {_show(text)} is not a valid Ed25519 key: {error}."
        ) from error


def write_private_key(
    path: str | os.PathLike[str],
    key: Ed25519PrivateKey,
    *,
    overwrite: bool = False,
) -> Path:
    """Writes a private key as unencrypted PKCS8 PEM, readable by its owner only (mode 0o600).

    Missing parent directories are created (mode 0o700).

    Args:
        path: Where to write the key.
        key: The private key.
        overwrite: Replace an existing file. Off by default, because a replaced key cannot be
            recovered and every Directory listing its public half stops accepting its proofs.

    Returns:
        The path written.

    Raises:
        IdentityError: The file exists (and ``overwrite`` is off) or cannot be written.
    """
    key_path = Path(path)
    serialization = _crypto().serialization
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    try:
        key_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        descriptor = os.open(key_path, flags, 0o600)
        with os.fdopen(descriptor, "wb") as key_file:
            key_file.write(pem)
        # An overwritten file keeps its old mode, and a process umask may have narrowed the new
        # one; either way the key must end up owner-only.
        os.chmod(key_path, 0o600)
    except FileExistsError as error:
        raise IdentityError(
            f"A key file already exists at {key_path}; refusing to overwrite it. Move it away "
            "first if you really mean to replace that identity."
        ) from error
    except OSError as error:
        raise IdentityError(
            f"Cannot write the private key to {key_path}: {error.strerror or error}."
        ) from error
    return key_path


def read_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """Reads a private key written by :func:`write_private_key`.

    Args:
        path: The key file (unencrypted PKCS8 PEM).

    Returns:
        The private key.

    Raises:
        IdentityError: The file is missing, unreadable, or not an unencrypted Ed25519 key.
    """
    key_path = Path(path)
    try:
        pem = key_path.read_bytes()
    except FileNotFoundError as error:
        raise IdentityError(
            f"No private key at {key_path}: {_KEYS_NEW_HINT} to make one, or point to the right "
            "keys directory."
        ) from error
    except OSError as error:
        raise IdentityError(
            f"Cannot read the private key at {key_path} ({error.strerror or error}): check that "
            "the file is yours and readable."
        ) from error
    crypto = _crypto()
    try:
        key = crypto.serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, crypto.UnsupportedAlgorithm) as error:
        raise IdentityError(
            f"The file at {key_path} is not an unencrypted private key in PEM form: "
            f"{_KEYS_NEW_HINT} to make one."
        ) from error
    if not isinstance(key, crypto.Ed25519PrivateKey):
        raise IdentityError(
            f"The key at {key_path} is a {type(key).__name__}, not an Ed25519 key: "
            f"{_KEYS_NEW_HINT} to make one."
        )
    private_key: Ed25519PrivateKey = key
    return private_key


@dataclass(frozen=True)
class NewIdentity:
    """What :func:`new_identity` made.

    Attributes:
        key_path: The private key file, mode 0o600.
        public_key: The public key in text form.
        directory_entry_toml: A ``[principals.NAME]`` table to paste into a Directory file.
    """

    key_path: Path
    public_key: str
    directory_entry_toml: str


def directory_entry_toml(
    principal: str, public_key: str, roles: Iterable[str] = (), scopes: Iterable[str] = ()
) -> str:
    """A ``[principals.NAME]`` table of a Directory file, as :meth:`Directory.from_toml` reads."""
    _check_principal_name(principal)
    return (
        f"[principals.{_toml_key(principal)}]\n"
        f"public_key = {json.dumps(public_key)}\n"
        f"roles = {json.dumps(sorted(roles))}\n"
        f"scopes = {json.dumps(sorted(scopes))}\n"
    )


def new_identity(
    principal: str,
    keys_dir: str | os.PathLike[str],
    roles: Iterable[str] = (),
    scopes: Iterable[str] = (),
) -> NewIdentity:
    """Makes a key pair for ``principal`` and writes its private key to ``keys_dir``.

    The key file is ``<keys_dir>/<principal>.key``, mode 0o600.

    Args:
        principal: The name the Directory will know the principal by.
        keys_dir: Where private keys live; created if missing.
        roles: The roles to list in the Directory entry.
        scopes: The scopes to list in the Directory entry.

    Returns:
        The key file, the public key and the Directory entry to paste.

    Raises:
        IdentityError: The name is not a valid principal name, or a key file for it already
            exists.
    """
    _check_principal_name(principal)
    key = generate_private_key()
    key_path = write_private_key(_key_path(principal, keys_dir), key)
    public_key = public_key_text(key)
    entry_toml = directory_entry_toml(principal, public_key, roles, scopes)
    return NewIdentity(key_path=key_path, public_key=public_key, directory_entry_toml=entry_toml)


# --- Proofs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proof:
    """A parsed proof: who authorizes what, when, and their signature over it.

    Build one with :meth:`parse`; :meth:`to_dict` gives back the JSON object.

    Attributes:
        principal: Who signed it.
        channel: Where it came from (``"cli"``, ``"mcp"``, ...).
        authorizes: The act it authorizes; always has a string ``kind``.
        issued_at: When it was signed, in unix seconds.
        nonce: 32 lowercase hex characters, unique per proof.
        signature: Ed25519 signature in base64url without padding.
    """

    principal: str
    channel: str
    authorizes: dict[str, Any]
    issued_at: int
    nonce: str
    signature: str

    @classmethod
    def parse(cls, value: object) -> Proof:
        """Reads a proof object, checking its shape but not its signature.

        Args:
            value: Anything; a proof is a JSON object (a mapping with string keys).

        Returns:
            The proof.

        Raises:
            ProofRefused: With reason ``"malformed"`` and a sentence naming what is wrong. Nothing
                else is raised, whatever ``value`` is.
        """
        fields = _proof_fields(value)
        _check_proof_version(fields)
        unexpected = sorted(set(fields) - set(_PROOF_FIELDS))
        if unexpected:
            names = ", ".join(_show(name) for name in unexpected)
            raise _malformed(f"it has unexpected fields {names}")
        missing = [name for name in _PROOF_FIELDS if name not in fields]
        if missing:
            raise _malformed(f"field {_show(missing[0])} is missing")
        proof = cls(
            principal=_proof_name(fields, "principal"),
            channel=_proof_name(fields, "channel"),
            authorizes=_proof_authorizes(fields["authorizes"]),
            issued_at=_proof_issued_at(fields["issued_at"]),
            nonce=_proof_nonce(fields["nonce"]),
            signature=_proof_signature(fields["signature"]),
        )
        try:
            proof.signed_bytes()
        except (ValueError, TypeError, RecursionError) as error:
            # The checks above should make this unreachable; it keeps parse's promise regardless.
            raise _malformed("it cannot be written as canonical JSON") from error
        return proof

    def unsigned_dict(self) -> dict[str, Any]:
        """Returns the proof object without its signature: the value that is signed."""
        return {
            "lockgate_proof": _PROOF_VERSION,
            "principal": self.principal,
            "channel": self.channel,
            "authorizes": self.authorizes,
            "issued_at": self.issued_at,
            "nonce": self.nonce,
        }

    def signed_bytes(self) -> bytes:
        """Returns the bytes the signature covers: canonical JSON of :meth:`unsigned_dict`."""
        return canonical_json(self.unsigned_dict())

    def to_dict(self) -> dict[str, Any]:
        """Returns the proof as the JSON object a person pastes or a client sends."""
        return {**self.unsigned_dict(), "signature": self.signature}


class Signer:
    """Signs proofs as one principal.

    Example:
        >>> signer = Signer.from_keys_dir("ed", "~/.lockgate/keys")  # doctest: +SKIP
        >>> signer.sign({"kind": "resume", "run": "essay:review-1a2b"})  # doctest: +SKIP
    """

    def __init__(
        self,
        principal: str,
        private_key: Ed25519PrivateKey,
        channel: str = "cli",
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Makes a signer.

        Args:
            principal: Who signs; the name the verifier's Directory lists.
            private_key: The principal's private key.
            channel: Where the proofs are sent from, recorded in each proof.
            clock: Returns unix seconds; injectable for tests.

        Raises:
            IdentityError: ``principal`` or ``channel`` is not a valid name.
        """
        _check_principal_name(principal)
        _check_channel_name(channel)
        self.principal = principal
        self.channel = channel
        self._private_key = private_key
        self._clock = clock

    @classmethod
    def from_keys_dir(
        cls,
        principal: str,
        keys_dir: str | os.PathLike[str],
        channel: str = "cli",
        clock: Callable[[], float] = time.time,
    ) -> Signer:
        """Makes a signer from the key :func:`new_identity` wrote for ``principal``.

        Args:
            principal: Who signs.
            keys_dir: The directory holding ``<principal>.key``.
            channel: Where the proofs are sent from.
            clock: Returns unix seconds; injectable for tests.

        Raises:
            IdentityError: The name is invalid or the key file is missing or unusable.
        """
        _check_principal_name(principal)
        return cls(principal, read_private_key(_key_path(principal, keys_dir)), channel, clock)

    @property
    def public_key(self) -> str:
        """The signer's public key in text form."""
        return public_key_text(self._private_key)

    def sign(self, authorizes: Mapping[str, Any]) -> dict[str, Any]:
        """Returns a fresh proof that this principal authorizes ``authorizes``.

        Args:
            authorizes: The act, as JSON data with a string ``kind`` (``"start"``, ``"decide"``,
                ...) and whatever fields a verifier binds (``graph``, ``run``, ``gate`` ...).

        Returns:
            The proof as a JSON object, with a new nonce.

        Raises:
            IdentityError: ``authorizes`` is not JSON data or has no string ``kind``.
        """
        try:
            act = _proof_authorizes(to_jsonable(dict(authorizes)))
        except TypeError as error:
            raise IdentityError(f"Cannot sign this act: {error}.") from error
        except ProofRefused as refusal:
            raise IdentityError(
                f"Cannot sign this act, because every verifier would refuse it: {refusal}"
            ) from refusal
        unsigned: dict[str, Any] = {
            "lockgate_proof": _PROOF_VERSION,
            "principal": self.principal,
            "channel": self.channel,
            "authorizes": act,
            "issued_at": math.floor(self._clock()),
            "nonce": secrets.token_hex(16),
        }
        signature = self._private_key.sign(canonical_json(unsigned))
        return {**unsigned, "signature": _encode_base64url(signature)}


# --- Directory ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DirectoryEntry:
    """What the worker knows about one principal.

    Attributes:
        principal: The principal's name.
        public_key: Its public key in text form, or None if it cannot sign proofs.
        roles: Roles it holds (who may answer which gates).
        scopes: Scopes it holds (which tools and nodes it may run).
    """

    principal: str
    public_key: str | None = None
    roles: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        _check_principal_name(self.principal)
        if self.public_key is not None:
            parse_public_key(self.public_key)
        for label in ("roles", "scopes"):
            names = getattr(self, label)
            if (
                isinstance(names, str)
                or not isinstance(names, Iterable)
                or not all(isinstance(name, str) and name for name in names)
            ):
                raise IdentityError(
                    f"The {label} of principal {_show(self.principal)} must be non-empty strings."
                )
            # Callers may pass a list or set; an entry is a value and must stay one.
            object.__setattr__(self, label, frozenset(names))


class Directory:
    """Maps principals to their public keys, roles and scopes.

    Loaded from a TOML file of ``[principals.NAME]`` tables::

        [principals.ed]
        public_key = "ed25519:..."
        roles = ["editor"]
        scopes = ["essay:publish"]

    A Directory loaded with ``watch=True`` re-reads its file when it changes, so an operator can
    grant or revoke without restarting workers. A watcher thread looks at the file once a second;
    lookups only read memory, so judging an answer (in an update validator, workflow code) never
    touches the disk.
    """

    def __init__(self, entries: Iterable[DirectoryEntry] = ()) -> None:
        """Makes a fixed directory.

        Args:
            entries: One entry per principal.

        Raises:
            IdentityError: Two entries name the same principal.
        """
        self._entries: dict[str, DirectoryEntry] = {}
        self._public_keys: dict[str, Ed25519PublicKey] = {}
        self._replace_entries(entries, source="<entries>")
        self._watched_path: Path | None = None
        self._clock: Callable[[], float] = time.monotonic
        self._last_check = 0.0
        self._file_stamp: tuple[int, int] | None = None
        self._reload_lock = threading.Lock()
        self._stop_watching = threading.Event()
        self._watcher: threading.Thread | None = None

    @classmethod
    def empty(cls) -> Directory:
        """Returns a directory that knows no one."""
        return cls()

    @classmethod
    def from_toml(cls, text: str, source: str = "<string>") -> Directory:
        """Reads a directory from TOML text.

        Args:
            text: The TOML document.
            source: Where the text came from, named in error messages.

        Raises:
            IdentityError: The text is not valid TOML or not a valid directory; the message names
                ``source`` and the principal at fault.
        """
        return cls(_parse_directory(text, source))

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        watch: bool = False,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> Directory:
        """Reads a directory from a TOML file.

        Args:
            path: The file.
            watch: Re-read the file when its modification time or size changes, looked at once a
                second by a watcher thread (see :meth:`refresh`; :meth:`close` stops it). A
                change that fails to load is logged on the ``lockgate.identity`` logger and the
                last good entries are kept.
            clock: Monotonic seconds, for the once-a-second check; injectable for tests.

        Raises:
            IdentityError: The file is missing, unreadable or not a valid directory.
        """
        file_path = Path(path)
        stamp = _file_stamp(file_path)
        directory = cls(_parse_directory(_read_directory_text(file_path), str(file_path)))
        if watch:
            directory._watched_path = file_path
            directory._clock = clock
            directory._last_check = clock()
            directory._file_stamp = stamp
            directory.watch()
        return directory

    def watch(self) -> None:
        """Starts the watcher thread again after :meth:`close` (a directory loaded with
        ``watch=True`` starts watching at once). Nothing for a fixed directory, or when it is
        watching already."""
        if self._watched_path is None:
            return
        with self._reload_lock:
            if self._watcher is not None and not self._stop_watching.is_set():
                return
            self._stop_watching = threading.Event()
            self._watcher = threading.Thread(
                target=self._watch,
                args=(self._stop_watching,),
                name=f"lockgate-directory:{self._watched_path}",
                daemon=True,
            )
            self._watcher.start()

    def _watch(self, stop: threading.Event) -> None:
        while not stop.wait(_WATCH_INTERVAL_SECONDS):
            self.refresh()

    def close(self) -> None:
        """Stops watching the file (the entries stay as they were last read; :meth:`watch`
        starts again)."""
        self._stop_watching.set()

    def entry(self, principal: str | None) -> DirectoryEntry | None:
        """Returns the entry for ``principal``, or None if it is not listed."""
        if principal is None:
            return None
        return self._entries.get(principal)

    def public_key_of(self, principal: str | None) -> Ed25519PublicKey | None:
        """Returns the public key of ``principal``, or None if it is unlisted or has none."""
        if principal is None:
            return None
        return self._public_keys.get(principal)

    def roles_of(self, principal: str | None) -> frozenset[str]:
        """Returns the roles ``principal`` holds; empty if it is None or unlisted."""
        found = self.entry(principal)
        return found.roles if found is not None else frozenset()

    def scopes_of(self, principal: str | None) -> frozenset[str]:
        """Returns the scopes ``principal`` holds; empty if it is None or unlisted."""
        found = self.entry(principal)
        return found.scopes if found is not None else frozenset()

    def principals(self) -> tuple[str, ...]:
        """Returns the listed principals, sorted."""
        return tuple(sorted(self._entries))

    def _replace_entries(self, entries: Iterable[DirectoryEntry], source: str) -> None:
        by_principal: dict[str, DirectoryEntry] = {}
        for listed in entries:
            if listed.principal in by_principal:
                raise IdentityError(
                    f"{source}: principal {_show(listed.principal)} is listed twice."
                )
            by_principal[listed.principal] = listed
        public_keys = {
            principal: parse_public_key(listed.public_key)
            for principal, listed in by_principal.items()
            if listed.public_key is not None
        }
        # Lookups read these two attributes without the lock; rebinding them (never mutating the
        # dicts) keeps each lookup consistent with one version of the file.
        self._entries = by_principal
        self._public_keys = public_keys

    def refresh(self) -> None:
        """Re-reads a watched file if it changed, at most once a second by this directory's
        clock; the watcher thread calls it, and so may a test. Nothing for a fixed directory."""
        if self._watched_path is None:
            return
        now = self._clock()
        if now - self._last_check < _WATCH_INTERVAL_SECONDS:
            return
        with self._reload_lock:
            if now - self._last_check < _WATCH_INTERVAL_SECONDS:
                return
            self._last_check = now
            path = self._watched_path
            try:
                stamp = _file_stamp(path)
                if stamp == self._file_stamp:
                    return
                # Remember the stamp before parsing, so a broken file is reported once, not on
                # every check until it is fixed.
                self._file_stamp = stamp
                entries = _parse_directory(_read_directory_text(path), str(path))
                self._replace_entries(entries, str(path))
            except IdentityError as error:
                _logger.warning("Keeping the last good directory: %s", error)


def _parse_directory(text: str, source: str) -> list[DirectoryEntry]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise IdentityError(f"{source} is not valid TOML: {error}.") from error
    unknown = sorted(set(document) - {"principals"})
    if unknown:
        raise IdentityError(
            f"{source}: unknown top-level key {_show(unknown[0])}; a directory file holds only "
            "[principals.NAME] tables."
        )
    principals = document.get("principals", {})
    if not isinstance(principals, dict):
        raise IdentityError(
            f"{source}: 'principals' must be tables, one [principals.NAME] per principal."
        )
    return [
        _parse_directory_entry(principal, fields, source)
        for principal, fields in principals.items()
    ]


def _parse_directory_entry(principal: str, fields: object, source: str) -> DirectoryEntry:
    try:
        _check_principal_name(principal)
    except IdentityError as error:
        raise IdentityError(f"{source}: {error}") from error
    where = f"{source}: principal {_show(principal)}"
    if not isinstance(fields, dict):
        raise IdentityError(f"{where} must be a table, [principals.{_toml_key(principal)}].")
    for field_name in fields:
        if any(hint in field_name.lower() for hint in _PRIVATE_FIELD_HINTS):
            raise IdentityError(
                f"{where} has a {_show(field_name)} field. Private keys never live in a "
                "directory: keep the key in the principal's own key file, remove it from "
                f"{source}, and list only its public_key here."
            )
        if field_name not in _ENTRY_FIELDS:
            raise IdentityError(
                f"{where} has an unknown field {_show(field_name)}; the fields are public_key, "
                "roles and scopes."
            )
    public_key = fields.get("public_key")
    if public_key is not None:
        if not isinstance(public_key, str):
            raise IdentityError(f"{where}: public_key must be a string.")
        if "PRIVATE KEY" in public_key:
            raise IdentityError(
                f"{where} has a private key as its public_key. Private keys never live in a "
                f"directory: remove it from {source} and paste the public key that "
                "`lockgate keys new` printed."
            )
        try:
            parse_public_key(public_key)
        except IdentityError as error:
            raise IdentityError(f"{where}: {error}") from error
    names: dict[str, frozenset[str]] = {}
    for label in ("roles", "scopes"):
        listed = fields.get(label, [])
        if not isinstance(listed, list) or not all(isinstance(n, str) and n for n in listed):
            raise IdentityError(f"{where}: {label} must be a list of non-empty strings.")
        names[label] = frozenset(listed)
    return DirectoryEntry(principal, public_key, names["roles"], names["scopes"])


def _read_directory_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError as error:
        raise IdentityError(
            f"No directory file at {path}: create it with one [principals.NAME] table per "
            "principal (`lockgate keys new NAME` prints one)."
        ) from error
    except OSError as error:
        raise IdentityError(
            f"Cannot read the directory file {path}: {error.strerror or error}."
        ) from error
    except UnicodeDecodeError as error:
        raise IdentityError(f"The directory file {path} is not UTF-8 text.") from error


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return (status.st_mtime_ns, status.st_size)


# --- Actors and verification --------------------------------------------------------------------


@dataclass(frozen=True)
class Actor:
    """Who a call is verified to come from.

    Never what they hold: scopes and roles stay in the Directory and are looked up when judged.

    Attributes:
        actor: The principal's name if verified, else ``"unverified:<channel>"``.
        verified: Whether a proof was checked.
        channel: Where the call came from.
        principal: The verified principal, or None.
        authorization: The nonce of the proof that authorized the call, or None.
    """

    actor: str
    verified: bool
    channel: str
    principal: str | None
    authorization: str | None

    def __post_init__(self) -> None:
        if self.verified:
            consistent = (
                isinstance(self.principal, str)
                and self.actor == self.principal
                and isinstance(self.authorization, str)
            )
        else:
            consistent = (
                self.actor == _UNVERIFIED_PREFIX + self.channel
                and self.principal is None
                and self.authorization is None
            )
        if not consistent:
            # A verified flag that disagrees with the other fields would let an unverified caller
            # pass for someone, so such an Actor cannot exist.
            raise IdentityError(
                f"Inconsistent actor {self.to_dict()!r}: a verified actor is its principal and "
                "carries its proof's nonce; an unverified one is 'unverified:<channel>' with "
                "neither."
            )

    @classmethod
    def unverified(cls, channel: str) -> Actor:
        """Returns the actor for a caller that sent no proof over ``channel``."""
        return cls(_UNVERIFIED_PREFIX + channel, False, channel, None, None)

    @classmethod
    def of_proof(cls, proof: Proof) -> Actor:
        """Returns the actor a checked proof verifies. Does not check the proof."""
        return cls(proof.principal, True, proof.channel, proof.principal, proof.nonce)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Actor:
        """Reads an actor written by :meth:`to_dict`.

        Raises:
            IdentityError: ``value`` does not have exactly the five actor fields with their types,
                or they are inconsistent.
        """
        fields = ("actor", "verified", "channel", "principal", "authorization")
        if not isinstance(value, Mapping) or set(value) != set(fields):
            raise IdentityError(
                f"An actor is an object with exactly the fields {', '.join(fields)}."
            )
        actor, verified, channel = value["actor"], value["verified"], value["channel"]
        principal, authorization = value["principal"], value["authorization"]
        if not (
            isinstance(actor, str)
            and isinstance(verified, bool)
            and isinstance(channel, str)
            and (principal is None or isinstance(principal, str))
            and (authorization is None or isinstance(authorization, str))
        ):
            raise IdentityError(
                "An actor's actor and channel are strings, verified is a boolean, and principal "
                "and authorization are strings or null."
            )
        return cls(actor, verified, channel, principal, authorization)

    def to_dict(self) -> dict[str, Any]:
        """Returns the five fields as a JSON object, as the trail records it."""
        return {
            "actor": self.actor,
            "verified": self.verified,
            "channel": self.channel,
            "principal": self.principal,
            "authorization": self.authorization,
        }


class Verifier:
    """Checks proofs against a Directory and turns them into Actors.

    A verifier checks shape, signer, signature, binding and age. Whether a proof was already
    spent is the :class:`NonceLedger`'s to say (see :meth:`Authority.verify_once`), or, for
    answers bound to one run, that run's own history.

    Example:
        >>> verifier = Verifier(directory)  # doctest: +SKIP
        >>> actor = verifier.verify(proof, {"kind": "resume", "run": run_id})  # doctest: +SKIP
    """

    def __init__(
        self,
        directory: Directory,
        window_seconds: float = 300,
        future_skew_seconds: float = 60,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Makes a verifier.

        Args:
            directory: Where principals' public keys are looked up.
            window_seconds: How long after it was issued a proof is good.
            future_skew_seconds: How far ahead of this clock a signer's clock may be.
            clock: Returns unix seconds.

        Raises:
            ValueError: A window or skew is negative or not finite.
        """
        for label, seconds in (
            ("window_seconds", window_seconds),
            ("future_skew_seconds", future_skew_seconds),
        ):
            if not (math.isfinite(seconds) and seconds >= 0):
                raise ValueError(f"{label} must be a finite number of seconds, at least 0.")
        self.directory = directory
        self.window_seconds = window_seconds
        self.future_skew_seconds = future_skew_seconds
        self._clock = clock

    def verify(self, value: object, expected: Mapping[str, Any]) -> Actor:
        """Checks that ``value`` is a good proof for the act ``expected`` describes.

        Checks run in this order, the first failure refusing: shape, principal listed, public key
        listed, signature, binding, freshness.

        Args:
            value: The proof as received; anything.
            expected: The fields the proof must authorize with exactly these values, for example
                ``{"kind": "decide", "run": run_id, "gate": gate, "choice": choice}``.

        Returns:
            The verified actor.

        Raises:
            ProofRefused: The proof does not authorize this call; nothing else is raised because
                of ``value``.
            TypeError: ``expected`` is not JSON data (a bug in the caller).
            ValueError: ``expected`` holds a NaN or infinity (a bug in the caller).
        """
        return Actor.of_proof(self.verify_proof(value, expected))

    def verify_proof(self, value: object, expected: Mapping[str, Any]) -> Proof:
        """Like :meth:`verify`, but returns the checked :class:`Proof` (its nonce and age)."""
        expected_json = {key: canonical_json(item) for key, item in expected.items()}
        proof = Proof.parse(value)
        entry = self.directory.entry(proof.principal)
        if entry is None:
            raise ProofRefused(
                "unknown_principal",
                f"The directory lists no principal {_show(proof.principal)}: add it to the "
                "directory file, or sign as a principal it lists.",
            )
        public_key = self.directory.public_key_of(proof.principal)
        if public_key is None:
            raise ProofRefused(
                "no_public_key",
                f"The directory lists {_show(proof.principal)} without a public_key, so no proof "
                "from it can be checked: add the public_key that `lockgate keys new` printed.",
            )
        try:
            public_key.verify(_decode_signature(proof.signature), proof.signed_bytes())
        except _crypto().InvalidSignature:
            raise ProofRefused(
                "forged",
                "The proof's signature does not match: it was not signed by "
                f"{proof.principal}, or it was altered after signing.",
            ) from None
        self._check_binding(proof, expected, expected_json)
        self._check_freshness(proof)
        return proof

    def check(self, value: object, expected: Mapping[str, Any]) -> Actor | ProofRefused:
        """Like :meth:`verify`, but returns the refusal instead of raising it."""
        try:
            return self.verify(value, expected)
        except ProofRefused as refusal:
            return refusal

    def _check_binding(
        self,
        proof: Proof,
        expected: Mapping[str, Any],
        expected_json: Mapping[str, bytes],
    ) -> None:
        # The kind is checked first so that a proof for another sort of act is reported as such,
        # not as a mismatch in some field that act happens to share.
        ordered = sorted(expected, key=lambda key: key != "kind")
        for key in ordered:
            authorized = proof.authorizes.get(key)
            if key in proof.authorizes and canonical_json(authorized) == expected_json[key]:
                continue
            wanted = to_jsonable(expected[key])
            if key == "kind":
                sentence = (
                    f"The proof authorizes a {_show(proof.authorizes['kind'])}, but this call is "
                    f"a {_show(wanted)}"
                )
            elif key not in proof.authorizes:
                sentence = (
                    f"The proof authorizes no {key}, but this call is on {key} {_show(wanted)}"
                )
            else:
                sentence = (
                    f"The proof authorizes {key} {_show(proof.authorizes[key])}, but this call is "
                    f"on {key} {_show(wanted)}"
                )
            raise ProofRefused(
                "wrong_binding", sentence + ": a proof is good only for the exact act it names."
            )

    def _check_freshness(self, proof: Proof) -> None:
        now = self._clock()
        expires_at = proof.issued_at + self.window_seconds
        if now > expires_at:
            raise ProofRefused(
                "expired",
                f"The proof was issued at {_iso(proof.issued_at)} and expired at "
                f"{_iso(expires_at)} (a proof is good for {self.window_seconds:g} seconds): sign "
                "a fresh one.",
            )
        if proof.issued_at > now + self.future_skew_seconds:
            raise ProofRefused(
                "not_yet_valid",
                f"The proof says it was issued at {_iso(proof.issued_at)}, but it is only "
                f"{_iso(now)} here, more than the {self.future_skew_seconds:g} seconds of clock "
                "skew allowed: check the signer's clock.",
            )


# --- Helpers ------------------------------------------------------------------------------------


def _check_principal_name(principal: object) -> None:
    if not isinstance(principal, str) or not _NAME_PATTERN.fullmatch(principal):
        raise IdentityError(
            f"{_show(principal)} is not a principal name: use letters, digits and . _ @ : - only."
        )
    if len(principal) > _NAME_MAX_LENGTH:
        raise IdentityError(
            f"The principal name {_show(principal)} is longer than {_NAME_MAX_LENGTH} characters."
        )
    if principal.startswith(_UNVERIFIED_PREFIX):
        raise IdentityError(
            f"The principal name {_show(principal)} starts with 'unverified:', which is reserved "
            "for callers without a proof; choose another name."
        )


def _check_channel_name(channel: object) -> None:
    if (
        not isinstance(channel, str)
        or not _NAME_PATTERN.fullmatch(channel)
        or len(channel) > _NAME_MAX_LENGTH
    ):
        raise IdentityError(
            f"{_show(channel)} is not a channel name: use up to {_NAME_MAX_LENGTH} letters, "
            "digits and . _ @ : - only."
        )


def _key_path(principal: str, keys_dir: str | os.PathLike[str]) -> Path:
    return Path(keys_dir).expanduser() / f"{principal}.key"


def _toml_key(name: str) -> str:
    # Bare TOML keys allow only these characters; '.' would nest and '@' or ':' would not parse.
    if re.fullmatch(r"[A-Za-z0-9_-]+", name):
        return name
    return json.dumps(name)


def _malformed(what: str) -> ProofRefused:
    return ProofRefused("malformed", f"This is not a valid lockgate proof: {what}.")


def _proof_fields(value: object) -> dict[str, object]:
    if isinstance(value, (str, bytes)):
        raise _malformed(
            f"it must be a JSON object, not {_kind_of(value)} (was it pasted as quoted text?)"
        )
    if not isinstance(value, Mapping):
        raise _malformed(f"it must be a JSON object, not {_kind_of(value)}")
    try:
        fields = dict(value)
    except Exception as error:
        # Any Mapping may arrive here, and a broken one may raise anything while being read.
        raise _malformed("it could not be read as an object") from error
    for name in fields:
        if not isinstance(name, str):
            raise _malformed(f"its field names must be strings, not {_kind_of(name)}")
    return fields


def _check_proof_version(fields: Mapping[str, object]) -> None:
    if "lockgate_proof" not in fields:
        raise _malformed(f"field 'lockgate_proof' is missing (it should be {_PROOF_VERSION})")
    version = fields["lockgate_proof"]
    if type(version) is not int:
        raise _malformed(f"field 'lockgate_proof' must be an integer, not {_kind_of(version)}")
    if version != _PROOF_VERSION:
        raise _malformed(
            f"it is version {version}, and this lockgate reads version {_PROOF_VERSION} only"
        )


def _proof_name(fields: Mapping[str, object], name: str) -> str:
    value = fields[name]
    if not isinstance(value, str):
        raise _malformed(f"field {_show(name)} must be a string, not {_kind_of(value)}")
    if not value:
        raise _malformed(f"field {_show(name)} is empty")
    try:
        if name == "principal":
            _check_principal_name(value)
        else:
            _check_channel_name(value)
    except IdentityError as error:
        raise _malformed(f"field {_show(name)} is invalid: {error}") from error
    return value


def _proof_authorizes(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _malformed(f"field 'authorizes' must be an object, not {_kind_of(value)}")
    act = _json_copy(value, "authorizes", depth=0)
    assert isinstance(act, dict)
    kind = act.get("kind")
    if not isinstance(kind, str) or not kind:
        raise _malformed("field 'authorizes' must have a non-empty string 'kind'")
    return act


def _json_copy(value: object, where: str, depth: int) -> Any:
    """Returns a plain JSON copy of ``value``, refusing anything canonical JSON cannot hold."""
    if depth > _AUTHORIZES_MAX_DEPTH:
        raise _malformed(f"{where} is nested more than {_AUTHORIZES_MAX_DEPTH} levels deep")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        # Past 2**63 other languages' JSON readers lose precision, and Python refuses to print
        # integers of more than 4300 digits.
        if not -(2**63) <= value < 2**63:
            raise _malformed(f"{where} holds an integer outside the 64-bit range")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _malformed(f"{where} holds {value}, which JSON cannot represent")
        return value
    if isinstance(value, str):
        _check_unicode(value, where)
        return value
    if isinstance(value, (list, tuple)):
        return [
            _json_copy(item, f"{where}[{index}]", depth + 1) for index, item in enumerate(value)
        ]
    if isinstance(value, Mapping):
        try:
            items = list(value.items())
        except Exception as error:
            # See _proof_fields: an arbitrary Mapping may fail in arbitrary ways.
            raise _malformed(f"{where} could not be read as an object") from error
        copy: dict[str, Any] = {}
        for key, item in items:
            if not isinstance(key, str):
                raise _malformed(f"{where} has a field name that is {_kind_of(key)}, not a string")
            _check_unicode(key, where)
            copy[key] = _json_copy(item, f"{where}.{key}", depth + 1)
        return copy
    raise _malformed(f"{where} holds {_kind_of(value)}, which is not JSON data")


def _check_unicode(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise _malformed(f"{where} holds text that is not valid Unicode") from error


def _proof_issued_at(value: object) -> int:
    if type(value) is not int:
        raise _malformed(
            f"field 'issued_at' must be an integer of unix seconds, not {_kind_of(value)}"
        )
    if not 0 <= value <= _LATEST_ISSUED_AT:
        raise _malformed("field 'issued_at' is not a time between 1970 and 9999 in unix seconds")
    return value


def _proof_nonce(value: object) -> str:
    if not isinstance(value, str) or not _NONCE_PATTERN.fullmatch(value):
        raise _malformed("field 'nonce' must be 32 lowercase hexadecimal characters")
    return value


def _proof_signature(value: object) -> str:
    if not isinstance(value, str):
        raise _malformed(f"field 'signature' must be a string, not {_kind_of(value)}")
    raw = _decode_base64url(value)
    if raw is None:
        raise _malformed("field 'signature' is not base64url without padding")
    if len(raw) != _SIGNATURE_LENGTH:
        raise _malformed(f"field 'signature' is {len(raw)} bytes, not {_SIGNATURE_LENGTH}")
    return value


def _decode_signature(signature: str) -> bytes:
    raw = _decode_base64url(signature)
    # Proof.parse guarantees a decodable signature, but a Proof built by hand may not have one.
    return raw if raw is not None else b""


def _encode_base64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode_base64url(text: str) -> bytes | None:
    """Returns the bytes ``text`` encodes, or None unless it is canonical unpadded base64url."""
    if not _BASE64URL_PATTERN.fullmatch(text):
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    # Unused trailing bits would give one value many spellings; only the canonical one is read.
    return raw if _encode_base64url(raw) == text else None


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def _show(value: object, limit: int = 80) -> str:
    """Returns ``value`` quoted for a sentence: strings in single quotes, the rest as JSON."""
    if isinstance(value, str):
        # A lone surrogate would make the sentence itself unprintable.
        text = "'" + value.encode("utf-8", "backslashreplace").decode("utf-8") + "'"
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            text = _kind_of(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _iso(unix_seconds: float) -> str:
    try:
        moment = datetime.datetime.fromtimestamp(unix_seconds, tz=datetime.timezone.utc)
    except (OverflowError, ValueError, OSError):
        return f"{unix_seconds:g} unix seconds"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

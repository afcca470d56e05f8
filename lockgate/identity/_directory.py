"""The Directory: the principals a worker knows, with their public keys, roles and scopes.

Read from a TOML file of ``[principals.NAME]`` tables, which
:func:`~lockgate.identity._keys.new_identity` prints one of (and :func:`add_directory_entry`
writes into the file), and optionally watched so that grants and revocations take effect without
a restart. Lookups only read memory.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._issuers import (
    ISSUER_PREFIX,
    TrustedIssuer,
    issuers_by_name,
    parse_issuers,
)
from lockgate.identity._keys import decode_base64url, parse_public_key, public_key_bytes
from lockgate.identity._names import check_principal_name, toml_key
from lockgate.identity._passkeys import Passkey
from lockgate.identity._quoting import quoted

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["Directory", "DirectoryEntry", "add_directory_entry"]

# Directory.load documents this logger by name, and log configuration selects it by that name.
_logger = logging.getLogger("lockgate.identity")

_ENTRY_FIELDS = ("public_key", "roles", "scopes", "passkeys")
_PRIVATE_FIELD_HINTS = ("private", "secret", "seed", "password", "passphrase")
_WATCH_INTERVAL_SECONDS = 1.0


@dataclass(frozen=True)
class DirectoryEntry:
    """What the worker knows about one principal.

    Attributes:
        principal: The principal's name.
        public_key: Its public key in text form, or None if it cannot sign proofs.
        roles: Roles it holds (who may answer which gates).
        scopes: Scopes it holds (which tools and nodes it may run).
        passkeys: Its registered passkeys (for answers from the web inbox).
    """

    principal: str
    public_key: str | None = None
    roles: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    passkeys: tuple[Passkey, ...] = ()

    def __post_init__(self) -> None:
        check_principal_name(self.principal)
        if self.principal.startswith(ISSUER_PREFIX):
            raise IdentityError(
                f"The principal name {quoted(self.principal)} starts with 'sso:', which names "
                "the people of a trusted issuer; a Directory entry takes another name."
            )
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
                    f"The {label} of principal {quoted(self.principal)} must be non-empty strings."
                )
            # Callers may pass a list or set; an entry is a value and must stay one.
            object.__setattr__(self, label, frozenset(names))
        object.__setattr__(self, "passkeys", tuple(self.passkeys))


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

    def __init__(
        self,
        entries: Iterable[DirectoryEntry] = (),
        *,
        source: str = "<entries>",
        issuers: Iterable[TrustedIssuer] = (),
    ) -> None:
        """Makes a fixed directory.

        Args:
            entries: One entry per principal.
            source: Where the entries came from, named in error messages.
            issuers: The identity providers whose ID tokens vouch for people (``sso:NAME:...``),
                with what their groups grant.

        Raises:
            IdentityError: Two entries name the same principal, or two principals hold the same
                public key or passkey (each approver counts once, so each holds keys of their
                own).
        """
        self._entries: dict[str, DirectoryEntry] = {}
        self._public_keys: dict[str, Ed25519PublicKey] = {}
        self._issuers: dict[str, TrustedIssuer] = issuers_by_name(issuers)
        self._replace_entries(entries, source=source)
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
        entries, issuers = _parse_directory(text, source)
        return cls(entries, source=source, issuers=issuers)

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
        entries, issuers = _parse_directory(_read_directory_text(file_path), str(file_path))
        directory = cls(entries, source=str(file_path), issuers=issuers)
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

    def can_verify(self, principal: str | None) -> bool:
        """Whether a proof from ``principal`` could be verified: it is listed with a public key
        or a passkey. A name listed with neither, or not listed, is nobody anyone can verify."""
        found = self.entry(principal)
        return found is not None and (found.public_key is not None or bool(found.passkeys))

    def roles_of(self, principal: str | None) -> frozenset[str]:
        """Returns the roles ``principal`` holds; empty if it is None or unlisted."""
        found = self.entry(principal)
        return found.roles if found is not None else frozenset()

    def scopes_of(self, principal: str | None) -> frozenset[str]:
        """Returns the scopes ``principal`` holds; empty if it is None or unlisted."""
        found = self.entry(principal)
        return found.scopes if found is not None else frozenset()

    def issuer(self, name: str) -> TrustedIssuer | None:
        """The trusted issuer named ``name``, or None."""
        return self._issuers.get(name)

    def issuers(self) -> tuple[TrustedIssuer, ...]:
        """The trusted issuers, by name."""
        return tuple(self._issuers[name] for name in sorted(self._issuers))

    def principals(self) -> tuple[str, ...]:
        """Returns the listed principals, sorted."""
        return tuple(sorted(self._entries))

    def _replace_entries(self, entries: Iterable[DirectoryEntry], source: str) -> None:
        by_principal: dict[str, DirectoryEntry] = {}
        for listed in entries:
            if listed.principal in by_principal:
                raise IdentityError(
                    f"{source}: principal {quoted(listed.principal)} is listed twice."
                )
            by_principal[listed.principal] = listed
        public_keys = {
            principal: parse_public_key(listed.public_key)
            for principal, listed in by_principal.items()
            if listed.public_key is not None
        }
        _check_keys_are_distinct(by_principal, public_keys, source)
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
                entries, issuers = _parse_directory(_read_directory_text(path), str(path))
                self._replace_entries(entries, str(path))
                self._issuers = issuers_by_name(issuers)
            except IdentityError as error:
                _logger.warning("Keeping the last good directory: %s", error)


def add_directory_entry(
    path: str | os.PathLike[str], principal: str, entry: Callable[[], str]
) -> Path:
    """Adds ``principal``'s ``[principals.NAME]`` table to the Directory file at ``path``,
    creating the file if it is missing.

    The file is checked first (a valid Directory that does not list ``principal`` yet); only
    then is ``entry`` called for the table (``lockgate keys new`` writes the key file there, so
    a refusal leaves no key behind). The table is appended, so the rest of the file, comments
    too, stays as it was; the new text is checked as a whole and replaces the file in one step,
    so a worker watching it never reads half of it.

    Args:
        path: The Directory file.
        principal: Whose entry it is.
        entry: Makes the table, as :func:`~lockgate.identity._keys.directory_entry_toml` writes
            it for ``principal``.

    Returns:
        The file written.

    Raises:
        IdentityError: The file is not a valid Directory, already lists ``principal``, or
            cannot be written; the file is unchanged then.
    """
    file_path = Path(path)
    before = _read_directory_text(file_path) if file_path.exists() else ""
    _parse_directory(before, str(file_path))
    if principal in tomllib.loads(before).get("principals", {}):
        raise IdentityError(
            f"{file_path} already lists the principal {quoted(principal)}; nothing was written "
            "(an entry is changed by editing the file, never replaced)."
        )
    separator = "\n" if before.endswith("\n") else "\n\n" if before else ""
    after = before + separator + entry()
    Directory.from_toml(after, str(file_path))
    file_path.parent.mkdir(parents=True, exist_ok=True)
    mode = file_path.stat().st_mode & 0o777 if before else 0o644
    handle, scratch = tempfile.mkstemp(dir=file_path.parent, prefix=f".{file_path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as written:
            written.write(after)
        os.chmod(scratch, mode)
        os.replace(scratch, file_path)
    except OSError as error:
        Path(scratch).unlink(missing_ok=True)
        raise IdentityError(
            f"Cannot write the directory file {file_path}: {error.strerror or error}."
        ) from error
    return file_path


def _check_keys_are_distinct(
    by_principal: Mapping[str, DirectoryEntry],
    public_keys: Mapping[str, Ed25519PublicKey],
    source: str,
) -> None:
    """Refuses a key or passkey listed under two principals.

    Every rule that counts people (a quorum's distinct approvers, four eyes) counts principals;
    two names holding one key would let one person count as two. Compared as raw key bytes, so
    two spellings of one key are one key.
    """
    holders: dict[tuple[str, bytes], str] = {}
    for principal, listed in by_principal.items():
        held: list[tuple[str, bytes]] = []
        if principal in public_keys:
            held.append(("public key", public_key_bytes(public_keys[principal])))
        for passkey in listed.passkeys:
            held.append(("passkey", passkey.cose_key()))
            held.append(("passkey credential", decode_base64url(passkey.credential_id) or b""))
        for kind, raw in held:
            other = holders.setdefault((kind, raw), principal)
            if other != principal:
                fingerprint = "sha256:" + hashlib.sha256(raw).hexdigest()
                raise IdentityError(
                    f"{source}: principals {quoted(other)} and {quoted(principal)} hold the same "
                    f"{kind} ({fingerprint}). Every approver counts once, so each holds keys of "
                    "their own: give one of them a new key (`lockgate keys new NAME`) and list "
                    "each key under one principal only."
                )


def _parse_directory(text: str, source: str) -> tuple[list[DirectoryEntry], list[TrustedIssuer]]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise IdentityError(f"{source} is not valid TOML: {error}.") from error
    unknown = sorted(set(document) - {"principals", "issuers"})
    if unknown:
        raise IdentityError(
            f"{source}: unknown top-level key {quoted(unknown[0])}; a directory file holds only "
            "[principals.NAME] and [issuers.NAME] tables."
        )
    issuers = parse_issuers(document.get("issuers", {}), source)
    principals = document.get("principals", {})
    if not isinstance(principals, dict):
        raise IdentityError(
            f"{source}: 'principals' must be tables, one [principals.NAME] per principal."
        )
    return [
        _parse_directory_entry(principal, fields, source)
        for principal, fields in principals.items()
    ], issuers


def _parse_directory_entry(principal: str, fields: object, source: str) -> DirectoryEntry:
    try:
        check_principal_name(principal)
    except IdentityError as error:
        raise IdentityError(f"{source}: {error}") from error
    where = f"{source}: principal {quoted(principal)}"
    if not isinstance(fields, dict):
        raise IdentityError(f"{where} must be a table, [principals.{toml_key(principal)}].")
    for field_name in fields:
        if any(hint in field_name.lower() for hint in _PRIVATE_FIELD_HINTS):
            raise IdentityError(
                f"{where} has a {quoted(field_name)} field. Private keys never live in a "
                "directory: keep the key in the principal's own key file, remove it from "
                f"{source}, and list only its public_key here."
            )
        if field_name not in _ENTRY_FIELDS:
            raise IdentityError(
                f"{where} has an unknown field {quoted(field_name)}; the fields are public_key, "
                "roles, scopes and passkeys."
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
    return DirectoryEntry(
        principal,
        public_key,
        names["roles"],
        names["scopes"],
        _parse_passkeys(fields.get("passkeys", []), where),
    )


def _parse_passkeys(listed: object, where: str) -> tuple[Passkey, ...]:
    """``[[principals.NAME.passkeys]]`` tables of ``credential_id`` and ``public_key``."""
    if not isinstance(listed, list) or not all(isinstance(each, dict) for each in listed):
        raise IdentityError(
            f"{where}: passkeys are [[principals.NAME.passkeys]] tables, as the inbox prints them."
        )
    passkeys = []
    for each in listed:
        unknown = sorted(set(each) - {"credential_id", "public_key"})
        if unknown:
            raise IdentityError(
                f"{where}: a passkey has an unknown field {quoted(unknown[0])}; its fields are "
                "credential_id and public_key."
            )
        try:
            passkeys.append(Passkey(each.get("credential_id"), each.get("public_key")))
        except IdentityError as error:
            raise IdentityError(f"{where}: {error}") from error
    return tuple(passkeys)


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

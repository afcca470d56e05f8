"""Ed25519 keys: making, writing and reading private keys, and the text form of public keys.

Also :func:`new_identity`, what ``lockgate keys new`` does (a key file, and the Directory entry to
paste), and unpadded base64url, the one spelling of a public key's and a signature's bytes.

``cryptography`` is imported on first use (see :func:`load_cryptography`), not with this module,
so that ``import lockgate`` works inside the Temporal workflow sandbox.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import functools
import json
import os
import re
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._names import check_principal_name, toml_key
from lockgate.identity._quoting import quoted

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

__all__ = [
    "NewIdentity",
    "decode_base64url",
    "directory_entry_toml",
    "encode_base64url",
    "generate_private_key",
    "load_cryptography",
    "new_identity",
    "parse_public_key",
    "private_key_path",
    "public_key_text",
    "read_principal_key",
    "read_private_key",
    "write_private_key",
]

_PUBLIC_KEY_PREFIX = "ed25519:"
_PUBLIC_KEY_LENGTH = 32
_BASE64URL_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
_KEYS_NEW_HINT = "run `lockgate keys new PRINCIPAL`"


@functools.cache
def load_cryptography() -> types.SimpleNamespace:
    """The parts of ``cryptography`` that keys and proofs use, imported on first use.

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


def generate_private_key() -> Ed25519PrivateKey:
    """Returns a new random Ed25519 private key."""
    return load_cryptography().Ed25519PrivateKey.generate()  # type: ignore[no-any-return]


def public_key_text(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """Returns the text form of a public key, as a Directory lists it.

    Args:
        key: A private key (its public half is used) or a public key.

    Returns:
        ``"ed25519:"`` followed by the raw 32 key bytes in base64url without padding.
    """
    crypto = load_cryptography()
    public_key = cast(
        "Ed25519PublicKey", key.public_key() if isinstance(key, crypto.Ed25519PrivateKey) else key
    )
    raw = public_key.public_bytes(
        crypto.serialization.Encoding.Raw, crypto.serialization.PublicFormat.Raw
    )
    return _PUBLIC_KEY_PREFIX + encode_base64url(raw)


def public_key_bytes(key: Ed25519PublicKey) -> bytes:
    """The raw 32 bytes of a public key: the key itself, however its text was spelled."""
    crypto = load_cryptography()
    raw: bytes = key.public_bytes(
        crypto.serialization.Encoding.Raw, crypto.serialization.PublicFormat.Raw
    )
    return raw


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
            f"The public key {quoted(text)} does not start with 'ed25519:'; "
            f"expected {expected_form}."
        )
    raw = decode_base64url(text[len(_PUBLIC_KEY_PREFIX) :])
    if raw is None or len(raw) != _PUBLIC_KEY_LENGTH:
        raise IdentityError(
            f"The public key {quoted(text)} is not 32 bytes of base64url; expected {expected_form}."
        )
    try:
        public_key: Ed25519PublicKey = load_cryptography().Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as error:
        raise IdentityError(
            f"The public key {quoted(text)} is not a valid Ed25519 key: {error}."
        ) from error
    return public_key


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
    serialization = load_cryptography().serialization
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


def read_principal_key(principal: str, keys_dir: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """Reads ``principal``'s private key from ``keys_dir`` (see :func:`private_key_path`).

    Raises:
        IdentityError: The key is missing (the sentence names the keys ``keys_dir`` holds, and
            the one ``principal`` is close to), unreadable, or not an Ed25519 key.
    """
    path = private_key_path(principal, keys_dir)
    if path.exists():
        return read_private_key(path)
    folder = path.parent
    held = sorted(key.stem for key in folder.glob("*.key")) if folder.is_dir() else []
    close = difflib.get_close_matches(principal, held, n=1)
    if held:
        there = f"the keys there are {', '.join(held)}"
        there += f" (did you mean {close[0]}?)" if close else ""
    else:
        there = "it holds no keys" if folder.is_dir() else "there is no such folder"
    raise IdentityError(
        f"No private key for {quoted(principal)} in {folder}: {there}. Run `lockgate keys new "
        f"{principal}` to make one, or point to the keys directory that holds it."
    )


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
    crypto = load_cryptography()
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
    check_principal_name(principal)
    return (
        f"[principals.{toml_key(principal)}]\n"
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
    check_principal_name(principal)
    key = generate_private_key()
    key_path = write_private_key(private_key_path(principal, keys_dir), key)
    public_key = public_key_text(key)
    entry_toml = directory_entry_toml(principal, public_key, roles, scopes)
    return NewIdentity(key_path=key_path, public_key=public_key, directory_entry_toml=entry_toml)


def private_key_path(principal: str, keys_dir: str | os.PathLike[str]) -> Path:
    """Returns where ``principal``'s private key lives in ``keys_dir``: ``<principal>.key``."""
    return Path(keys_dir).expanduser() / f"{principal}.key"


def encode_base64url(raw: bytes) -> str:
    """Returns ``raw`` in base64url without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_base64url(text: str) -> bytes | None:
    """Returns the bytes ``text`` encodes, or None unless it is canonical unpadded base64url."""
    if not _BASE64URL_PATTERN.fullmatch(text):
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    # Unused trailing bits would give one value many spellings; only the canonical one is read.
    return raw if encode_base64url(raw) == text else None

"""The payload codec: AES-256-GCM over every payload a client or worker hands Temporal.

What Temporal stores is then ``binary/encrypted`` with the key id beside it, for workflow and
activity inputs and results, signals, updates, queries, memo and user metadata. Search
attributes are not payloads and stay readable (the server indexes them); failure messages and
stack traces are moved into an encrypted attribute by :class:`LockgateFailureConverter`.

Payloads that are not encrypted pass through ``decode`` unchanged: the Temporal UI sends query
arguments in clear, and a strict codec would wedge a run on the first plain signal it got.

``cryptography`` is imported when a codec is made, not with this module, so that ``import
lockgate`` keeps working inside the workflow sandbox (its Rust core cannot be initialised twice).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import temporalio.converter
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter, DefaultFailureConverter, PayloadCodec

from lockgate._errors import RefusedError
from lockgate.activities._refusal import Refusal
from lockgate.encryption._keys import PayloadKeys

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "ENCRYPTED_ENCODING",
    "KEY_ID_METADATA",
    "UNREADABLE_ENCODING",
    "EncryptionCodec",
    "LockgateFailureConverter",
    "PayloadDecryptionError",
    "encrypted_data_converter",
]

ENCRYPTED_ENCODING = b"binary/encrypted"
"""The ``encoding`` of an encrypted payload: the name the Temporal UI and CLI know."""

KEY_ID_METADATA = "encryption-key-id"
"""The metadata entry naming the key a payload was encrypted with."""

UNREADABLE_ENCODING = b"binary/lockgate-unreadable"
"""The ``encoding`` a worker's codec gives a payload it cannot decrypt: no payload converter
reads it, so only the one argument that carried it fails to convert (a signal is dropped, an
update rejected, an activity result raises in the run, which retries), never the whole task."""

_REASON_METADATA = "lockgate-unreadable-reason"
_COMPRESSION_METADATA = "lockgate-compression"
_log = logging.getLogger("lockgate.encryption")
_NONCE_BYTES = 12


class PayloadDecryptionError(RefusedError, ValueError):
    """An encrypted payload cannot be decrypted: its key is not listed, or it was altered."""


class EncryptionCodec(PayloadCodec):
    """Encrypts payloads with the current payload key; decrypts with whichever key wrote them.

    Each payload is serialised whole (metadata and data), optionally compressed, and sealed
    with AES-256-GCM under a fresh 96-bit nonce; the key id and the compression are the
    associated data, so neither can be swapped without the tag failing.

    Args:
        keys: The keyring.
        compress_over: Compress (zlib) payloads larger than this many bytes before encrypting;
            None (the default) never compresses. Compression makes a ciphertext's length
            depend on its content: leave it off where an attacker can put chosen text next
            to a secret in one payload and watch sizes.
        unreadable: What ``decode`` does with a payload it cannot decrypt: ``"raise"``
            :class:`PayloadDecryptionError` (a client: the caller is told), or ``"mark"`` it
            :data:`UNREADABLE_ENCODING` (a worker, see :meth:`for_worker`): anyone with
            namespace access can send a signal that claims to be encrypted, and a codec that
            raised would fail every workflow task of that run from then on.
    """

    def __init__(
        self,
        keys: PayloadKeys,
        *,
        compress_over: int | None = None,
        unreadable: Literal["raise", "mark"] = "raise",
    ) -> None:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self.keys = keys
        self.compress_over = compress_over
        self.unreadable = unreadable
        self._invalid_tag = InvalidTag
        self._ciphers: dict[str, AESGCM] = {
            key_id: AESGCM(keys.key(key_id) or b"") for key_id in keys.key_ids
        }

    def for_worker(self) -> EncryptionCodec:
        """This codec with the same keys, marking what it cannot decrypt instead of raising."""
        if self.unreadable == "mark":
            return self
        return EncryptionCodec(self.keys, compress_over=self.compress_over, unreadable="mark")

    def encode_one(self, payload: Payload) -> Payload:
        """``payload`` encrypted under the current key (synchronously)."""
        plain = payload.SerializeToString()
        compression = b""
        if self.compress_over is not None and len(plain) > self.compress_over:
            packed = zlib.compress(plain, 6)
            if len(packed) < len(plain):
                plain, compression = packed, b"zlib"
        key_id = self.keys.current
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._ciphers[key_id].encrypt(nonce, plain, _associated(key_id, compression))
        metadata = {"encoding": ENCRYPTED_ENCODING, KEY_ID_METADATA: key_id.encode()}
        if compression:
            metadata[_COMPRESSION_METADATA] = compression
        return Payload(metadata=metadata, data=nonce + sealed)

    def decode_one(self, payload: Payload) -> Payload:
        """``payload`` decrypted; returned as it is when it is not encrypted.

        Raises:
            PayloadDecryptionError: Its key is not listed, or it was altered (unless this codec
                marks such payloads, see ``unreadable``).
        """
        if payload.metadata.get("encoding") != ENCRYPTED_ENCODING:
            return payload
        try:
            return self._decrypt(payload)
        except PayloadDecryptionError as error:
            if self.unreadable == "raise":
                raise
            _log.warning("%s It is passed on as unreadable.", error)
            key_id = payload.metadata.get(KEY_ID_METADATA, b"")
            return Payload(
                metadata={
                    "encoding": UNREADABLE_ENCODING,
                    KEY_ID_METADATA: key_id,
                    _REASON_METADATA: str(error).encode("utf-8"),
                }
            )

    def _decrypt(self, payload: Payload) -> Payload:
        key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode("utf-8", "replace")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise PayloadDecryptionError(
                f"The payload was encrypted with key {key_id!r}, which these payload keys do "
                f"not list (they hold {', '.join(self.keys.key_ids)}): add the key that wrote it."
            )
        compression = payload.metadata.get(_COMPRESSION_METADATA, b"")
        data = payload.data
        try:
            plain = cipher.decrypt(
                data[:_NONCE_BYTES], data[_NONCE_BYTES:], _associated(key_id, compression)
            )
        except self._invalid_tag:
            raise PayloadDecryptionError(
                f"A payload encrypted with key {key_id!r} does not decrypt: it was altered, "
                "or the key of that id is not the one that wrote it."
            ) from None
        if compression == b"zlib":
            plain = zlib.decompress(plain)
        decoded = Payload()
        decoded.ParseFromString(plain)
        return decoded

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """See :class:`temporalio.converter.PayloadCodec`."""
        return [self.encode_one(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """See :class:`temporalio.converter.PayloadCodec`."""
        return [self.decode_one(payload) for payload in payloads]


def _associated(key_id: str, compression: bytes) -> bytes:
    return b"lockgate-payload\x00" + key_id.encode() + b"\x00" + compression


class LockgateFailureConverter(DefaultFailureConverter):
    """Moves every failure's message and stack trace into its encrypted attributes, except an
    answer's refusal in an update validator.

    A failure's message and trace are not payloads: by default they are stored in clear, and a
    message can quote a value (a validation error quotes the input it refused). A refusal raised
    while judging an answer is never stored (a rejected update writes nothing) and is what the
    approver must read, in the Temporal UI too, so it keeps its sentence, with no trace.
    """

    def __init__(self) -> None:
        super().__init__(encode_common_attributes=True)
        self._plain = DefaultFailureConverter()

    def to_failure(
        self,
        exception: BaseException,
        payload_converter: temporalio.converter.PayloadConverter,
        failure: Failure,
    ) -> None:
        """See :class:`temporalio.converter.FailureConverter`."""
        if isinstance(exception, Refusal) and exception.never_stored:
            self._plain.to_failure(exception, payload_converter, failure)
            failure.stack_trace = ""
            return
        super().to_failure(exception, payload_converter, failure)


def encrypted_data_converter(
    codec: EncryptionCodec, base: DataConverter | None = None
) -> DataConverter:
    """``base`` (Temporal's default converter unless given) with ``codec`` and
    :class:`LockgateFailureConverter`.

    Raises:
        ValueError: ``base`` already has another payload codec (lockgate will not guess which
            runs first).
    """
    base = base or temporalio.converter.default()
    if base.payload_codec is not None and base.payload_codec is not codec:
        if isinstance(base.payload_codec, EncryptionCodec):
            return dataclasses.replace(base, payload_codec=codec)
        raise ValueError(
            "The client's data converter already has a payload codec; lockgate's encryption "
            "would replace it. Chain them yourself and pass the converter to Client.connect."
        )
    return dataclasses.replace(
        base, payload_codec=codec, failure_converter_class=LockgateFailureConverter
    )

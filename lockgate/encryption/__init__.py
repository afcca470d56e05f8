"""Payload encryption: lockgate's codec, its keys, and the codec server people read runs through.

With payload keys configured, :class:`lockgate.LockgatePlugin` gives the worker's client (and a
client it is added to) :class:`EncryptionCodec`: everything a run carries is stored in Temporal
encrypted with AES-256-GCM. People read runs in the Temporal UI and the ``temporal`` CLI through
``lockgate codec-server`` (:class:`CodecServer`), which holds the same keys.
"""

from lockgate.encryption._clients import codec_of, encrypting_client, worker_client
from lockgate.encryption._codec import (
    ENCRYPTED_ENCODING,
    KEY_ID_METADATA,
    UNREADABLE_ENCODING,
    EncryptionCodec,
    LockgateFailureConverter,
    PayloadDecryptionError,
    encrypted_data_converter,
)
from lockgate.encryption._keys import (
    PAYLOAD_KEYS_ENV,
    PAYLOAD_KEYS_FILE_ENV,
    PayloadKeys,
    PayloadKeysError,
)
from lockgate.encryption._server import (
    CODEC_SERVER_TOKEN_ENV,
    CodecAccess,
    CodecAccessError,
    CodecServer,
)

__all__ = [
    "CODEC_SERVER_TOKEN_ENV",
    "ENCRYPTED_ENCODING",
    "KEY_ID_METADATA",
    "PAYLOAD_KEYS_ENV",
    "PAYLOAD_KEYS_FILE_ENV",
    "UNREADABLE_ENCODING",
    "CodecAccess",
    "CodecAccessError",
    "CodecServer",
    "EncryptionCodec",
    "LockgateFailureConverter",
    "PayloadDecryptionError",
    "PayloadKeys",
    "PayloadKeysError",
    "codec_of",
    "encrypted_data_converter",
    "encrypting_client",
    "worker_client",
]

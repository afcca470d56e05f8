"""Payload encryption: lockgate's codec, its keys, and the codec server people read runs through.

With payload keys configured, :class:`lockgate.LockgatePlugin` gives the worker's client (and a
client it is added to) :class:`EncryptionCodec`: everything a run carries is stored in Temporal
encrypted with AES-256-GCM. People read runs in the Temporal UI and the ``temporal`` CLI through
``lockgate codec-server`` (:class:`CodecServer`), which holds the same keys. A client of your own
reads them with :func:`encrypting_client`.
"""

from lockgate.encryption._clients import encrypting_client
from lockgate.encryption._codec import (
    EncryptionCodec,
    PayloadDecryptionError,
    encrypted_data_converter,
)
from lockgate.encryption._keys import PayloadKeys, PayloadKeysError
from lockgate.encryption._server import CodecAccessError, CodecServer

__all__ = [
    "CodecAccessError",
    "CodecServer",
    "EncryptionCodec",
    "PayloadDecryptionError",
    "PayloadKeys",
    "PayloadKeysError",
    "encrypted_data_converter",
    "encrypting_client",
]

"""Giving a client (and so its workers) the codec."""

from __future__ import annotations

from temporalio.client import Client

from lockgate.encryption._codec import EncryptionCodec, encrypted_data_converter
from lockgate.encryption._keys import PayloadKeys

__all__ = ["codec_of", "encrypting_client", "worker_client"]


def codec_of(encryption: PayloadKeys | EncryptionCodec) -> EncryptionCodec:
    """``encryption`` as a codec: keys get the default codec (no compression)."""
    if isinstance(encryption, EncryptionCodec):
        return encryption
    return EncryptionCodec(encryption)


def encrypting_client(client: Client, encryption: PayloadKeys | EncryptionCodec) -> Client:
    """``client`` on the same connection, encrypting and decrypting payloads with these keys.

    A client that already encrypts with lockgate's codec is returned as it is. Workers built on
    the returned client encrypt too (a worker uses its client's data converter).

    Example::

        client = encrypting_client(await Client.connect("localhost:7233"), PayloadKeys.load(path))
    """
    current = client.data_converter
    if isinstance(current.payload_codec, EncryptionCodec):
        return client
    settings = client.config(active_config=True)
    settings["data_converter"] = encrypted_data_converter(codec_of(encryption), current)
    # The plugins already configured these settings; running them again would add their
    # interceptors twice.
    settings["plugins"] = []
    return Client(**settings)


def worker_client(client: Client, codec: EncryptionCodec) -> Client:
    """``client`` on the same connection for a worker: its codec marks a payload it cannot
    decrypt instead of raising (:meth:`EncryptionCodec.for_worker`), whatever codec of
    lockgate's the client had."""
    current = client.data_converter
    if isinstance(current.payload_codec, EncryptionCodec) and current.payload_codec.unreadable == (
        "mark"
    ):
        return client
    settings = client.config(active_config=True)
    settings["data_converter"] = encrypted_data_converter(codec.for_worker(), current)
    settings["plugins"] = []
    return Client(**settings)

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

from lockgate._defaults import PAYLOAD_KEYS_FILE_ENV
from lockgate._errors import ConfigurationError
from lockgate.identity._keyrings import Keyring

__all__ = ["PAYLOAD_KEYS_ENV", "PAYLOAD_KEYS_FILE_ENV", "PayloadKeys", "PayloadKeysError"]

PAYLOAD_KEYS_ENV = "LOCKGATE_PAYLOAD_KEYS"
"""The environment variable that may hold the payload keys' text."""


class PayloadKeysError(ConfigurationError):
    """Payload keys are missing or unusable; the message says what to do, never a key."""


class PayloadKeys(Keyring):
    """The AES-256 keys payloads are encrypted with, the first being the one new payloads use.

    Made, read, written and rotated as every :class:`~lockgate.identity._keyrings.Keyring` is;
    :meth:`from_environment` is None when no keys are configured (payloads are then stored as
    they are).

    Example:
        >>> keys = PayloadKeys.generate("k1")
        >>> keys.current
        'k1'
        >>> keys.rotated("k2").key_ids
        ('k2', 'k1')
    """

    _error = PayloadKeysError
    _line_prefix = "lockgate-payload-key"
    _env = PAYLOAD_KEYS_ENV
    _file_env = PAYLOAD_KEYS_FILE_ENV
    _key_noun = "payload key"
    _empty = "Payload keys need at least one key."
    _entry = "payload key"
    _maker = "`lockgate payload-keys new`"
    _name = "payload keys"
    _header = (
        "# lockgate payload keys: the same file on every worker, client and codec\n"
        "# server. Never commit it. The first key encrypts; keep every key that\n"
        "# encrypted a history you still keep.\n"
    )

    _missing = (
        "No payload keys at {file}: `lockgate payload-keys new --payload-keys {file}` makes "
        "them; every worker and client of the deployment needs the same file."
    )
    _exists = (
        "Payload keys already exist at {file}; refusing to overwrite them (histories they "
        "encrypted could no longer be read). Rotate instead: `lockgate payload-keys rotate`."
    )

    def key(self, key_id: str) -> bytes | None:
        """The key ``key_id`` names, or None when it is not listed."""
        return self._keys.get(key_id)

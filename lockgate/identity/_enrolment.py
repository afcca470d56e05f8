"""Enrolment codes: an operator's leave for one person to register a passkey under their name.

A passkey registered in the inbox becomes a Directory entry an administrator adds. Without a
code, anyone who reaches the inbox could make an entry for any name and hand it to the
administrator as someone else's. So the inbox registers a passkey only for a name an operator
issued a code for (``lockgate keys enrol NAME``), before the code's expiry.

A code is an HMAC-SHA256 under the *enrolment secret*, over the name and the expiry: nothing is
stored, the inbox and the command only share the secret's file. It is a keyring of its own, never
the worker secret, so an inbox (which only relays proofs) holds nothing a worker vouches with.

Example:
    >>> secret = EnrolmentSecret.generate()
    >>> code = secret.code("ed", expires_at=2_000_000_000)
    >>> secret.check(code, "ed", now=1_900_000_000)
    >>> secret.check(code, "ada", now=1_900_000_000)
    Traceback (most recent call last):
    ...
    lockgate.identity._enrolment.EnrolmentRefused: This enrolment code is not one issued for...
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import re

from lockgate._defaults import ENROLMENT_SECRET_FILE_ENV
from lockgate._errors import ConfigurationError
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._keyrings import Keyring
from lockgate.identity._keys import encode_base64url
from lockgate.identity._quoting import quoted

__all__ = [
    "ENROLMENT_SECRET_FILE_ENV",
    "EnrolmentRefused",
    "EnrolmentSecret",
    "EnrolmentSecretError",
]


_CODE = re.compile(r"lge1-([0-9]{1,12})-([A-Za-z0-9_-]{22})")


class EnrolmentSecretError(ConfigurationError):
    """An enrolment secret is missing or unusable; the message says what to do."""


class EnrolmentRefused(IdentityError):
    """An enrolment code does not let this name register a passkey; the message says why."""


class EnrolmentSecret(Keyring):
    """The keys enrolment codes are made with, the first being the one new codes use."""

    _error = EnrolmentSecretError
    _line_prefix = "lockgate-enrolment-secret"
    _env = "LOCKGATE_ENROLMENT_SECRET"
    _file_env = ENROLMENT_SECRET_FILE_ENV
    _empty = "An enrolment secret needs at least one key."
    _entry = "enrolment secret key"
    _maker = "`lockgate keys enrol NAME`"
    _name = "enrolment secret"
    _header = (
        "# lockgate enrolment secret: shared by `lockgate keys enrol` and the inbox.\n"
        "# Never commit it. The first key makes codes; every key listed still checks them.\n"
    )

    _missing = (
        "No enrolment secret at {file}: `lockgate keys enrol NAME` makes one the first time it "
        "issues a code; the inbox needs the same file."
    )

    def code(self, principal: str, expires_at: int) -> str:
        """The code that lets ``principal`` register a passkey until ``expires_at`` (unix)."""
        mac = self._mac(self._keys[self.current], principal, expires_at)
        return f"lge1-{expires_at}-{mac}"

    def check(self, code: object, principal: str, now: float) -> None:
        """Returns if ``code`` lets ``principal`` register a passkey at ``now``.

        Raises:
            EnrolmentRefused: The code is missing, malformed, for another name, made with a key
                not listed, or expired; nothing else is raised because of ``code``.
        """
        if not isinstance(code, str) or not code.strip():
            raise EnrolmentRefused(
                "A passkey is registered only with the enrolment code an operator issued for "
                f"your name (`lockgate keys enrol {principal}`): ask them for it."
            )
        match = _CODE.fullmatch(code.strip())
        if match is None:
            raise EnrolmentRefused(
                "This is not an enrolment code (one looks like lge1-1767225600-…): copy it "
                "again from what `lockgate keys enrol` printed."
            )
        expires_at = int(match.group(1))
        if not any(
            hmac.compare_digest(match.group(2), self._mac(key, principal, expires_at))
            for key in self._keys.values()
        ):
            raise EnrolmentRefused(
                f"This enrolment code is not one issued for {quoted(principal)}: a code lets "
                "only the name it was issued for register a passkey."
            )
        if now > expires_at:
            raise EnrolmentRefused(
                f"This enrolment code expired at {_iso(expires_at)}: ask for a new one "
                f"(`lockgate keys enrol {principal}`)."
            )

    @staticmethod
    def _mac(key: bytes, principal: str, expires_at: int) -> str:
        message = f"lockgate-enrol\x00{principal}\x00{expires_at}".encode()
        return encode_base64url(hmac.new(key, message, hashlib.sha256).digest()[:16])


def _iso(unix_seconds: int) -> str:
    moment = datetime.datetime.fromtimestamp(unix_seconds, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M UTC")

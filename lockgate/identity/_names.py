"""Principal and channel names: which are valid, which are reserved, and their TOML spelling.

A principal's name is also its key file's name (``<principal>.key``), a Directory table's key and
the ``principal`` of its proofs, so the rules live here once for keys, proofs and the Directory.
"""

from __future__ import annotations

import json
import re

from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._quoting import quoted

__all__ = ["UNVERIFIED_PREFIX", "check_channel_name", "check_principal_name", "toml_key"]

UNVERIFIED_PREFIX = "unverified:"
"""Starts the actor name of a caller without a proof, so no principal may be named so."""

_NAME_PATTERN = re.compile(r"[A-Za-z0-9._@:-]+")
# A principal's key file is named "<principal>.key"; 128 keeps that well under the usual 255-byte
# file-name limit.
_NAME_MAX_LENGTH = 128


def check_principal_name(principal: object) -> None:
    """Raises :class:`IdentityError` unless ``principal`` is a valid, unreserved principal name."""
    if not isinstance(principal, str) or not _NAME_PATTERN.fullmatch(principal):
        raise IdentityError(
            f"{quoted(principal)} is not a principal name: use letters, digits and . _ @ : - only."
        )
    if len(principal) > _NAME_MAX_LENGTH:
        raise IdentityError(
            f"The principal name {quoted(principal)} is longer than {_NAME_MAX_LENGTH} characters."
        )
    if principal.startswith(UNVERIFIED_PREFIX):
        raise IdentityError(
            f"The principal name {quoted(principal)} starts with 'unverified:', which is reserved "
            "for callers without a proof; choose another name."
        )


def check_channel_name(channel: object) -> None:
    """Raises :class:`IdentityError` unless ``channel`` is a valid channel name."""
    if (
        not isinstance(channel, str)
        or not _NAME_PATTERN.fullmatch(channel)
        or len(channel) > _NAME_MAX_LENGTH
    ):
        raise IdentityError(
            f"{quoted(channel)} is not a channel name: use up to {_NAME_MAX_LENGTH} letters, "
            "digits and . _ @ : - only."
        )


def toml_key(name: str) -> str:
    """Returns ``name`` as a TOML key: bare if TOML allows it, else quoted."""
    # Bare TOML keys allow only these characters; '.' would nest and '@' or ':' would not parse.
    if re.fullmatch(r"[A-Za-z0-9_-]+", name):
        return name
    return json.dumps(name)

"""Confirmation tokens: one "yes" for one exact call, by one caller, for a short while."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from lockgate.identity._canonical import digest

__all__ = [
    "DEFAULT_CONFIRMATION_TTL_SECONDS",
    "Confirmation",
    "ConfirmationStore",
    "TokenCheck",
    "action_summary",
]

DEFAULT_CONFIRMATION_TTL_SECONDS = 60.0


def action_summary(tool: str, arguments: Mapping[str, Any]) -> str:
    """``tool(k=v, ...)`` with the first three scalar arguments: what a person confirms."""
    scalars = [
        f"{key}={value}"
        for key, value in arguments.items()
        if isinstance(value, (str, int, float, bool)) or value is None
    ][:3]
    return f"{tool}({', '.join(scalars)})"


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A pending confirmation: the token handed to the caller, and what it is bound to."""

    token: str
    tool: str
    principal: str | None
    arguments_digest: str
    expires_at: float
    summary: str

    @property
    def expires_at_iso(self) -> str:
        """The expiry as ISO-8601 UTC."""
        return _iso(self.expires_at)


@dataclass(frozen=True, slots=True)
class TokenCheck:
    """The verdict on presenting a token (a :class:`~lockgate.tools._verdict.Verdict`).

    Attributes:
        allowed: Whether the token confirms this call (it is spent then).
        code: ``ok``, or why not, as a key.
        reason: Why not, in a sentence that says what to do.
    """

    allowed: bool
    code: Literal[
        "ok", "unknown", "expired", "wrong_tool", "wrong_principal", "different_arguments"
    ]
    reason: str | None = None


class ConfirmationStore:
    """Mints and redeems confirmation tokens.

    A token is bound to the tool, the principal and a digest of the exact arguments; it can be
    redeemed once, before it expires. A token presented for another tool, by another principal
    or with other arguments is refused and stays valid for the call it was minted for.
    """

    def __init__(
        self,
        ttl_seconds: float = DEFAULT_CONFIRMATION_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._pending: dict[str, Confirmation] = {}
        self._lock = threading.Lock()

    def create(
        self, tool: str, principal: str | None, arguments: Mapping[str, Any]
    ) -> Confirmation:
        """Mints a token for exactly this call."""
        now = self._clock()
        confirmation = Confirmation(
            token=secrets.token_hex(16),
            tool=tool,
            principal=principal,
            arguments_digest=digest(dict(arguments)),
            expires_at=now + self.ttl_seconds,
            summary=action_summary(tool, arguments),
        )
        with self._lock:
            for token in [t for t, c in self._pending.items() if c.expires_at < now]:
                del self._pending[token]
            self._pending[confirmation.token] = confirmation
        return confirmation

    def redeem(
        self, token: str, tool: str, principal: str | None, arguments: Mapping[str, Any]
    ) -> TokenCheck:
        """Spends ``token`` if it was minted for exactly this call and has not expired."""
        with self._lock:
            confirmation = self._pending.get(token)
            if confirmation is None:
                return TokenCheck(
                    False,
                    "unknown",
                    f"The confirmation token for '{tool}' is unknown or was already used; call "
                    f"'{tool}' again without a token to get a new one.",
                )
            if self._clock() > confirmation.expires_at:
                del self._pending[token]
                return TokenCheck(
                    False,
                    "expired",
                    f"The confirmation token for '{tool}' expired at "
                    f"{confirmation.expires_at_iso}; call '{tool}' again without a token to get "
                    "a new one.",
                )
            if confirmation.tool != tool:
                return TokenCheck(
                    False,
                    "wrong_tool",
                    f"The confirmation token was issued for '{confirmation.tool}', not for "
                    f"'{tool}'.",
                )
            if confirmation.principal != principal:
                return TokenCheck(
                    False,
                    "wrong_principal",
                    f"The confirmation token was issued to {confirmation.principal or '(nobody)'},"
                    f" not to {principal or '(nobody)'}: only who asked can confirm.",
                )
            if confirmation.arguments_digest != digest(dict(arguments)):
                return TokenCheck(
                    False,
                    "different_arguments",
                    f"The confirmation token was issued for other arguments "
                    f"({confirmation.summary}); call '{tool}' again without a token to confirm "
                    "these.",
                )
            del self._pending[token]
            return TokenCheck(True, "ok")

"""Rate limits per channel, principal and tool."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_WINDOW_SECONDS",
    "MUTATING_COST",
    "InMemoryRateLimiter",
    "RateDecision",
    "RateLimiter",
    "rate_key",
]

DEFAULT_MAX_TOKENS = 100
DEFAULT_WINDOW_SECONDS = 60.0
MUTATING_COST = 5
"""A mutating call spends five tokens, a read one: 20 writes or 100 reads per window."""


def rate_key(channel: str, principal: str | None, tool: str) -> str:
    """``channel:principal:tool`` (an anonymous caller leaves the middle empty)."""
    return f"{channel}:{principal or ''}:{tool}"


@dataclass(frozen=True, slots=True)
class RateDecision:
    """Whether a call may spend ``cost`` tokens now, and if not, when to try again."""

    allowed: bool
    remaining: int
    retry_after_seconds: float = 0.0
    reason: str | None = None


class RateLimiter(Protocol):
    """Anything that can spend tokens from a budget named by a key."""

    def consume(self, key: str, cost: int = 1) -> RateDecision:
        """Spends ``cost`` tokens from ``key``'s budget, or refuses without spending."""
        ...


class InMemoryRateLimiter:
    """A fixed-window limiter in this process's memory.

    Each key gets ``max_tokens`` per ``window_seconds``; the window restarts when it has fully
    elapsed. Workers do not share it: with N workers a key can spend up to N budgets.
    """

    def __init__(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_tokens = max_tokens
        self.window_seconds = window_seconds
        self._clock = clock
        self._buckets: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def consume(self, key: str, cost: int = 1) -> RateDecision:
        """See :class:`RateLimiter`."""
        now = self._clock()
        with self._lock:
            started, used = self._buckets.get(key, (now, 0))
            if now - started >= self.window_seconds:
                started, used = now, 0
            if used + cost > self.max_tokens:
                self._buckets[key] = (started, used)
                retry_after = max(0.0, self.window_seconds - (now - started))
                return RateDecision(
                    False,
                    max(0, self.max_tokens - used),
                    retry_after,
                    f"Rate limit exceeded for '{key}': max {self.max_tokens} tokens per "
                    f"{self.window_seconds:g}s; try again in {retry_after:.0f}s.",
                )
            used += cost
            self._buckets[key] = (started, used)
            return RateDecision(True, self.max_tokens - used)

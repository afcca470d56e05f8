"""Rate limits per channel, principal and tool: the protocol, the decision, and the limiter
that counts in this process's memory.

A limiter shared by every worker of a fleet counts in a store of its own: Redis, in
:mod:`lockgate.redis_ratelimit`. Whatever counts, a refusal reads the same
(:func:`over_budget`), and a shared store that cannot count refuses (:func:`store_unavailable`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from lockgate._defaults import DEFAULT_MAX_TOKENS, DEFAULT_WINDOW_SECONDS

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_WINDOW_SECONDS",
    "MUTATING_COST",
    "STORE_RETRY_SECONDS",
    "InMemoryRateLimiter",
    "RateDecision",
    "RateLimiter",
    "over_budget",
    "rate_key",
    "store_unavailable",
]

MUTATING_COST = 5
"""A mutating call spends five tokens, a read one: 20 writes or 100 reads per window."""


def _key_part(part: str) -> str:
    """``part`` with ``%`` and ``:`` escaped (``%25``, ``%3A``): it holds no separator then."""
    return part.replace("%", "%25").replace(":", "%3A")


def rate_key(channel: str, principal: str | None, tool: str) -> str:
    """``channel:principal:tool`` (an anonymous caller leaves the middle empty), each budget
    named by exactly one key.

    Names may contain ``:`` (an IdP's ``https://issuer|sub``, a tool ``notes:search``), so the
    channel and the principal are written with ``%`` and ``:`` escaped (``%25``, ``%3A``): the
    first two ``:`` of a key are always its separators, and the tool is all that follows. A
    principal ``ed:essay`` calling ``publish`` spends ``web:ed%3Aessay:publish``, never ``ed``'s
    budget for ``essay:publish`` (``web:ed:essay:publish``). Names without ``%`` or ``:`` read
    as they always did, so the budgets a store already counts keep their keys.

    Example:
        >>> rate_key("web", "ed:essay", "publish"), rate_key("web", "ed", "essay:publish")
        ('web:ed%3Aessay:publish', 'web:ed:essay:publish')
    """
    return f"{_key_part(channel)}:{_key_part(principal or '')}:{tool}"


@dataclass(frozen=True, slots=True)
class RateDecision:
    """Whether a call may spend ``cost`` tokens now, and if not, when to try again (a
    :class:`~lockgate.tools._verdict.Verdict`).

    ``unavailable_store`` names (without credentials) a shared store that could not count the
    call: the call is refused then too, since nothing can say it is within its budget.

    A :class:`RateLimiter` of your own builds one as ``RateDecision(True, remaining)``, or with
    :func:`over_budget` and :func:`store_unavailable`, which word the refusal as lockgate does.
    """

    allowed: bool
    remaining: int
    retry_after_seconds: float = 0.0
    reason: str | None = None
    unavailable_store: str | None = None

    @property
    def code(self) -> str | None:
        """Why not, as a key: ``store_unavailable`` (the shared store could not count the
        call) or ``over_budget``; None when allowed.

        Read from the fields rather than kept as one, so a decision your limiter builds as
        ``RateDecision(False, 0, ...)`` has it too.
        """
        if self.allowed:
            return None
        return "store_unavailable" if self.unavailable_store is not None else "over_budget"


class RateLimiter(Protocol):
    """Anything that can spend tokens from a budget named by a key.

    ``consume`` returns the decision, or an awaitable of it: a limiter in memory answers at
    once; one whose budgets live in a shared store
    (:class:`~lockgate.redis_ratelimit.RedisRateLimiter`) answers once the store has. The
    pipeline awaits only what it must.
    """

    def consume(self, key: str, cost: int = 1) -> RateDecision | Awaitable[RateDecision]:
        """Spends ``cost`` tokens from ``key``'s budget, or refuses without spending."""
        ...


def over_budget(
    key: str, max_tokens: int, window_seconds: float, used: int, retry_after_seconds: float
) -> RateDecision:
    """The refusal of a call over ``key``'s budget, in the one sentence every limiter uses."""
    return RateDecision(
        False,
        max(0, max_tokens - used),
        retry_after_seconds,
        f"Rate limit exceeded for '{key}': max {max_tokens} tokens per {window_seconds:g}s; "
        f"try again in {retry_after_seconds:.0f}s.",
    )


STORE_RETRY_SECONDS = 1.0
"""What a refusal for a store that cannot count suggests waiting: long enough not to hammer a
store that is down, short enough to resume soon after it answers."""


def store_unavailable(key: str, store: str, why: str) -> RateDecision:
    """The refusal of a call whose budget lives in a shared store that did not answer.

    Args:
        key: The budget (``channel:principal:tool``).
        store: The store's address, without credentials (``redis://10.0.0.5:6379/0``).
        why: What went wrong, without credentials (``ConnectionError: ...``).
    """
    return RateDecision(
        False,
        0,
        STORE_RETRY_SECONDS,
        f"Rate limit for '{key}' not checked: the shared rate-limit store at {store} cannot be "
        f"reached ({why}), so nothing ran; try again in {STORE_RETRY_SECONDS:.0f}s.",
        store,
    )


class InMemoryRateLimiter:
    """A fixed-window limiter in this process's memory.

    Each key gets ``max_tokens`` per ``window_seconds``; the window restarts when it has fully
    elapsed. Workers do not share it: with N workers a key can spend up to N budgets (a fleet
    shares :class:`~lockgate.redis_ratelimit.RedisRateLimiter`'s).
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
        """See :class:`RateLimiter`: answers at once, never an awaitable."""
        now = self._clock()
        with self._lock:
            started, used = self._buckets.get(key, (now, 0))
            if now - started >= self.window_seconds:
                started, used = now, 0
            if used + cost > self.max_tokens:
                self._buckets[key] = (started, used)
                retry_after = max(0.0, self.window_seconds - (now - started))
                return over_budget(key, self.max_tokens, self.window_seconds, used, retry_after)
            used += cost
            self._buckets[key] = (started, used)
            return RateDecision(True, self.max_tokens - used)

"""A rate limiter every worker of a fleet shares: budgets counted in Redis, by one Lua script.

:class:`~lockgate.InMemoryRateLimiter` counts in one process, so three workers give a caller
three budgets. :class:`RedisRateLimiter` keeps each ``channel:principal:tool`` budget in Redis,
so the fleet spends one. Needs the ``redis`` extra (``pip install 'lockgate[redis]'``).

Example::

    limiter = RedisRateLimiter("redis://10.0.0.5:6379/0", max_tokens=100, window_seconds=60)
    plugin = LockgatePlugin(tools=[refund], secret=secret, rate_limiter=limiter)

or ``lockgate worker --rate-limit redis://10.0.0.5:6379/0`` on every worker.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any
from urllib.parse import urlsplit

from lockgate.tools._ratelimit import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_WINDOW_SECONDS,
    RateDecision,
    over_budget,
    store_unavailable,
)

try:
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.commands.core import AsyncScript
    from redis.exceptions import RedisError
except ImportError as error:  # pragma: no cover - the extra is installed wherever tests run
    raise ImportError(
        "lockgate.redis_ratelimit needs the Redis client: pip install 'lockgate[redis]'"
    ) from error

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "RedisRateLimiter"]

DEFAULT_TIMEOUT_SECONDS = 0.5
"""How long a call waits for the store, to connect and then to answer, before it is refused."""

_SPEND = """
-- KEYS[1] the budget; ARGV: max tokens, window (ms), cost. Returns {allowed, used, retry ms}.
-- Redis runs a script alone, so reading the budget and writing it back is one step: two
-- workers can never both spend its last tokens. The clock is the store's own (TIME), the same
-- for every worker whatever their clocks say; TIME before a write needs effects replication,
-- the default from Redis 5 (asked for explicitly on older servers).
if redis.replicate_commands then redis.replicate_commands() end
local max_tokens = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'started', 'used')
local started = tonumber(state[1])
local used = tonumber(state[2]) or 0
-- A window that has fully elapsed (or a store clock set back past its start) starts afresh.
if started == nil or now - started >= window or now < started then
  started = now
  used = 0
end
local left = window - (now - started)
if used + cost > max_tokens then
  return {0, used, left}
end
used = used + cost
redis.call('HSET', KEYS[1], 'started', string.format('%d', started), 'used', used)
-- The budget disappears with its window: a key nobody calls again takes no memory.
redis.call('PEXPIRE', KEYS[1], left)
return {1, used, 0}
"""


def store_address(url: str) -> str:
    """``url`` as it may be shown: scheme, host, port and database, never a user or password.

    Example:
        >>> store_address("redis://:s3cret@cache.internal:6380/2?password=s3cret")
        'redis://cache.internal:6380/2'
    """
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return f"unix://{parts.path}"
    host = parts.hostname or "localhost"
    if ":" in host:  # an IPv6 address goes back in brackets
        host = f"[{host}]"
    try:
        port = parts.port or 6379
    except ValueError:
        port = 6379
    database = parts.path.lstrip("/") or "0"
    return f"{parts.scheme}://{host}:{port}/{database}"


class RedisRateLimiter:
    """Fixed-window budgets per ``channel:principal:tool``, shared by every worker through Redis.

    The same rule as :class:`~lockgate.InMemoryRateLimiter` (``max_tokens`` per
    ``window_seconds``, a window starting at a key's first call; a mutating call costs 5, a read
    1), counted in one place:

    - **Atomic.** One Lua script reads a budget and spends from it; no two workers can both
      spend its last tokens.
    - **One clock.** The window is measured with the Redis server's own ``TIME``, so workers
      whose clocks disagree still share one window.
    - **Keys expire** with their window.
    - **Fails closed.** When the store cannot be reached, or does not answer within
      ``timeout_seconds``, the call is refused (``RATE_LIMITED``, with
      ``meta["rate_limit_store_unavailable"]`` naming the store) and nothing runs: a limit
      that lets everything through whenever its store is down would be no limit while it
      matters most (a burst that overloads the store). ``RATE_LIMITED`` rather than a code of
      its own: callers already back off on it (``retry_after_seconds``), and on Temporal it is
      a caller's refusal, never retried by the activity against a store that is down.
    - **One key per budget.** A key is :func:`~lockgate.tools._ratelimit.rate_key`'s, the
      channel and the principal escaped, after ``prefix``: a name holding ``:`` never reaches
      another caller's budget.
    - **No secrets shown.** A password in ``url`` is used to connect, never logged or put in a
      sentence: the store is named by scheme, host, port and database only.

    Args:
        url: The store (``redis://[[user]:password@]host:port/db``, ``rediss://`` for TLS,
            ``unix:///path.sock``).
        max_tokens: Tokens per key per window.
        window_seconds: The window's length.
        timeout_seconds: How long to wait to connect, and then for an answer.
        prefix: What every Redis key begins with (give deployments sharing one store their own).
    """

    def __init__(
        self,
        url: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        prefix: str = "lockgate:rate:",
    ) -> None:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ValueError(
                "RedisRateLimiter: url must be redis://HOST:PORT/DB (rediss:// for TLS, or "
                f"unix:///path), and it got {type(url).__name__} "
                f"{store_address(url) if isinstance(url, str) else url!r}."
            )
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(
                f"RedisRateLimiter: max_tokens must be a whole number of at least 1, and it got "
                f"{max_tokens!r}."
            )
        if isinstance(window_seconds, bool) or not (
            isinstance(window_seconds, (int, float)) and window_seconds >= 0.001
        ):
            raise ValueError(
                "RedisRateLimiter: window_seconds must be a number of at least 0.001, and it got "
                f"{window_seconds!r}."
            )
        self.max_tokens = max_tokens
        self.window_seconds = float(window_seconds)
        self.timeout_seconds = timeout_seconds
        self.prefix = prefix
        self.address = store_address(url)
        """The store, as it may be shown (no credentials)."""
        self._url = url
        self._window_ms = max(1, math.ceil(self.window_seconds * 1000))
        # A Redis client's connections belong to the event loop that opened them; a registry
        # called from several loops (``call_sync`` runs one per call) gets a client per loop.
        self._scripts: dict[asyncio.AbstractEventLoop, AsyncScript] = {}

    def __repr__(self) -> str:
        return (
            f"RedisRateLimiter({self.address!r}, max_tokens={self.max_tokens}, "
            f"window_seconds={self.window_seconds:g})"
        )

    def _script(self) -> AsyncScript:
        """The spending script on this event loop's client (sent once, then run by its hash)."""
        loop = asyncio.get_running_loop()
        script = self._scripts.get(loop)
        if script is None:
            for old in [each for each in self._scripts if each.is_closed()]:
                del self._scripts[old]
            client = Redis.from_url(
                self._url,
                socket_timeout=self.timeout_seconds,
                socket_connect_timeout=self.timeout_seconds,
                # No retries: a store that did not answer in time is refused at once, not asked
                # again while the call waits.
                retry=Retry(NoBackoff(), 0),
            )
            script = self._scripts[loop] = client.register_script(_SPEND)
        return script

    async def consume(self, key: str, cost: int = 1) -> RateDecision:
        """Spends ``cost`` tokens from ``key``'s budget in Redis, or refuses without spending.

        Never raises for the store: one that cannot be reached, does not answer in time or
        answers with an error refuses the call (see the class's *Fails closed*).
        """
        try:
            answer: Any = await asyncio.wait_for(
                self._script()(
                    keys=[self.prefix + key], args=[self.max_tokens, self._window_ms, cost]
                ),
                # The socket timeouts bound each step; this bounds the whole call.
                timeout=2 * self.timeout_seconds,
            )
        except (RedisError, OSError, asyncio.TimeoutError) as error:
            return store_unavailable(key, self.address, self._why(error))
        allowed, used, left_ms = (int(each) for each in answer)
        if allowed:
            return RateDecision(True, self.max_tokens - used)
        return over_budget(key, self.max_tokens, self.window_seconds, used, left_ms / 1000)

    def _why(self, error: BaseException) -> str:
        if isinstance(error, asyncio.TimeoutError):
            return f"no answer within {2 * self.timeout_seconds:g}s"
        said = (str(error) or "no detail").rstrip(".")
        password = urlsplit(self._url).password
        if password:
            said = said.replace(password, "***")
        return f"{type(error).__name__}: {said}"

    async def aclose(self) -> None:
        """Closes the connections this event loop opened (the limiter may still be used)."""
        script = self._scripts.pop(asyncio.get_running_loop(), None)
        if script is not None:
            await script.registered_client.aclose()

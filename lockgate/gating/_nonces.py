"""Nonce ledgers: where a proof is spent, so that it answers one thing once.

A proof for a start or a tool call names the act, not the execution that performs it (the
execution does not exist yet when the proof is signed), so a copy read from history could be sent
again under a new execution. A ledger remembers which *use* (a holder: one execution, or one
activity) spent each nonce until the proof expires, and refuses it to any other use. A retry of
the same use (an activity retried, a local activity re-run after a crash) passes the same holder
and is accepted.

:class:`InMemoryNonceLedger` holds for one process. Workers of a deployment share lockgate's
Temporal-backed ledger (``lockgate.workflows.TemporalNonceLedger``), which the plugin installs.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["InMemoryNonceLedger", "NonceLedger"]


class NonceLedger(Protocol):
    """Remembers which proofs have been spent, and by which use, until they expire."""

    async def claim(self, nonce: str, holder: str, expires_at: float) -> bool:
        """Spends ``nonce`` for ``holder``.

        Args:
            nonce: The proof's nonce.
            holder: The use it is spent on. A retry of the same use passes the same holder.
            expires_at: Unix seconds after which the proof is refused as expired anyway, so the
                ledger may forget the nonce; it must remember it at least until then.

        Returns:
            True if the nonce was unspent or already spent by ``holder``; False if another use
            spent it (or the ledger cannot tell: a ledger refuses when in doubt).
        """
        ...


class InMemoryNonceLedger:
    """A :class:`NonceLedger` in this process's memory; thread-safe.

    Good for one process and for tests. Several workers need a shared ledger, or a proof could be
    spent once on each of them.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        """Makes an empty ledger.

        Args:
            clock: Returns unix seconds; injectable for tests.
        """
        self._clock = clock
        self._lock = threading.Lock()
        self._claims: dict[str, tuple[str, float]] = {}
        self._expiries: list[tuple[float, str]] = []

    async def claim(self, nonce: str, holder: str, expires_at: float) -> bool:
        """Spends ``nonce`` for ``holder``; see :meth:`NonceLedger.claim`."""
        return self.claim_now(nonce, holder, expires_at)

    def claim_now(self, nonce: str, holder: str, expires_at: float) -> bool:
        """:meth:`claim` for callers without an event loop."""
        with self._lock:
            self._forget_expired(self._clock())
            claimed = self._claims.get(nonce)
            if claimed is None:
                self._claims[nonce] = (holder, expires_at)
                heapq.heappush(self._expiries, (expires_at, nonce))
                return True
            claimed_by, claimed_until = claimed
            if claimed_by != holder:
                return False
            if expires_at > claimed_until:
                self._claims[nonce] = (holder, expires_at)
                heapq.heappush(self._expiries, (expires_at, nonce))
            return True

    def __len__(self) -> int:
        """Returns how many nonces are remembered."""
        with self._lock:
            return len(self._claims)

    def _forget_expired(self, now: float) -> None:
        # A proof is still accepted at the very second it expires, so its nonce is kept until
        # strictly after.
        while self._expiries and self._expiries[0][0] < now:
            expires_at, nonce = heapq.heappop(self._expiries)
            claimed = self._claims.get(nonce)
            # A later claim by the same holder may have extended the nonce; only the heap entry
            # matching the current expiry removes it.
            if claimed is not None and claimed[1] == expires_at:
                del self._claims[nonce]

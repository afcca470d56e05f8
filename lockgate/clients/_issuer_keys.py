"""Fetching the trusted issuers' signing keys, outside any workflow.

Judging an answer happens in an update validator, which may do no I/O, so it reads the keys from
an :class:`~lockgate.identity._issuers.IssuerKeyring` in memory. An :class:`IssuerKeyFetcher`
fills that keyring while the worker runs: for each issuer the Directory trusts (without a pinned
JWKS) it reads the discovery document (``ISSUER/.well-known/openid-configuration``), checks that
it names the same issuer, and fetches its ``jwks_uri``. It fetches again every
``refresh_seconds``, and as soon as a validator meets a key it does not hold (a rotation) -- at
most once per ``min_interval_seconds`` per issuer, so tokens naming unknown keys cannot make the
worker hammer the provider. A provider that cannot be reached leaves the keys fetched last in
place until they expire (``cache_seconds`` after they were fetched); the failure is logged on the
``lockgate.identity`` logger.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import urllib.request
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from lockgate.identity._directory import Directory
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._issuers import IssuerKeyring, TrustedIssuer

__all__ = ["IssuerKeyFetcher", "discovery_document", "read_json"]

_logger = logging.getLogger("lockgate.identity")
_MAX_DOCUMENT_BYTES = 1_000_000


@dataclass
class IssuerKeyFetcher:
    """Keeps an :class:`IssuerKeyring` filled with the Directory's issuers' keys.

    Args:
        directory: Names the trusted issuers (re-read each round, so a watched file's new
            issuer is fetched too).
        keyring: Where the keys go; the worker's verifier reads it.
        refresh_seconds: How often each issuer's keys are fetched again.
        cache_seconds: How long keys fetched stay good if the issuer cannot be reached.
        min_interval_seconds: The least time between two fetches for one issuer.
        timeout_seconds: How long one request may take.
        clock: Unix seconds.
    """

    directory: Directory
    keyring: IssuerKeyring
    _: KW_ONLY
    refresh_seconds: float = 300
    cache_seconds: float = 86_400
    min_interval_seconds: float = 10
    timeout_seconds: float = 5
    clock: Callable[[], float] = time.time
    fetches: int = field(default=0, init=False)
    """How many rounds of fetching one issuer's keys were made (for tests and operators)."""
    _fetched_at: dict[str, float] = field(default_factory=dict, init=False, repr=False)

    def fetched(self) -> dict[str, float]:
        """When each issuer's keys were last fetched (successfully or not)."""
        return dict(self._fetched_at)

    async def run(self) -> None:
        """Fetches until cancelled: each issuer when due, or as soon as its keys are wanted."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def wanted(_: str) -> None:
            # Called from a validator's thread: it only wakes this loop, never blocks.
            loop.call_soon_threadsafe(wake.set)

        self.keyring.on_want = wanted
        try:
            while True:
                wake.clear()
                next_due = await self.fetch_due()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=max(0.05, next_due))
        finally:
            self.keyring.on_want = None

    async def fetch_due(self) -> float:
        """Fetches every issuer whose keys are due or wanted; returns seconds until the next."""
        now = self.clock()
        wanted = self.keyring.wanted()
        next_due = self.refresh_seconds
        for issuer in self.directory.issuers():
            if issuer.jwks is not None:
                continue
            last = self._fetched_at.get(issuer.issuer)
            since = now - last if last is not None else float("inf")
            due = since >= self.refresh_seconds or (
                (issuer.issuer in wanted or not self.keyring.holds(issuer.issuer))
                and since >= self.min_interval_seconds
            )
            if due:
                await self.fetch(issuer)
                continue
            still_wanted = issuer.issuer in wanted or not self.keyring.holds(issuer.issuer)
            wait = (self.min_interval_seconds if still_wanted else self.refresh_seconds) - since
            next_due = min(next_due, wait)
        return next_due

    async def fetch(self, issuer: TrustedIssuer) -> bool:
        """Fetches ``issuer``'s discovery document and JWKS into the keyring; whether it could."""
        self._fetched_at[issuer.issuer] = self.clock()
        self.fetches += 1
        try:
            jwks = await asyncio.to_thread(self._read_keys, issuer.issuer)
            self.keyring.install(issuer.issuer, jwks, self.clock() + self.cache_seconds)
        except (OSError, ValueError, IdentityError) as error:
            _logger.warning(
                "Could not fetch the signing keys of %s (%s: %s); the keys fetched last verify "
                "until they expire.",
                issuer.issuer,
                type(error).__name__,
                error,
            )
            return False
        return True

    def _read_keys(self, issuer: str) -> dict[str, Any]:
        jwks_uri = discovery_document(issuer, self.timeout_seconds).get("jwks_uri")
        if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
            raise ValueError("the discovery document names no jwks_uri")
        return read_json(urllib.request.Request(jwks_uri), self.timeout_seconds)


def discovery_document(issuer: str, timeout_seconds: float) -> dict[str, Any]:
    """``issuer``'s discovery document (``ISSUER/.well-known/openid-configuration``), checked
    to name that same issuer.

    Raises:
        OSError: The provider cannot be reached, or answered an HTTP error.
        ValueError: It did not answer a JSON object, or named another issuer.
    """
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    discovery = read_json(urllib.request.Request(url), timeout_seconds)
    if discovery.get("issuer") != issuer:
        raise ValueError(
            f"the discovery document names the issuer {discovery.get('issuer')!r}, not {issuer!r}"
        )
    return discovery


def read_json(request: urllib.request.Request, timeout_seconds: float) -> dict[str, Any]:
    """The JSON object a provider answers ``request`` with (at most a megabyte is read).

    Raises:
        OSError: The provider cannot be reached, or answered an HTTP error.
        ValueError: It did not answer a JSON object.
    """
    request.add_header("Accept", "application/json")
    with urllib.request.urlopen(request, timeout=timeout_seconds) as response:
        document = json.loads(response.read(_MAX_DOCUMENT_BYTES))
    if not isinstance(document, dict):
        raise ValueError(f"{request.full_url} did not answer a JSON object")
    return document

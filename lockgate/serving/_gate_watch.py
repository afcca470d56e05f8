"""Open gates as MCP resources, and the notifications when one opens, changes or closes.

Each open gate is the resource ``lockgate://gates/{run_id}`` (:data:`GATE_URI_TEMPLATE`, an
RFC 6570 template, which ``resources/templates/list`` serves); ``lockgate://gates`` lists them
all. A watcher asks for the open gates every ``poll_seconds`` (one visibility query; no run is
touched) and, when the set or a gate changes, tells the clients that asked: ``list_changed`` for
the set, ``updated`` for a subscribed gate. Clients of the 2026 protocol hear it on their
``subscriptions/listen`` stream; clients of the handshake protocol (Claude's hosts today) on
their connection, which is remembered weakly, only for as long as it is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mcp import UriTemplate
from mcp.server.connection import Connection
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ResourcesListChanged,
    ResourceUpdated,
)

from lockgate._polling import keep_looking

__all__ = ["GATES_URI", "GATE_URI_TEMPLATE", "GateWatch", "gate_uri", "run_of_uri"]

logger = logging.getLogger("lockgate.mcp")

GATES_URI = "lockgate://gates"
"""The resource listing every open gate."""


GATE_URI_TEMPLATE = GATES_URI + "/{run_id}"
"""The resource of the gate open on a run, as an RFC 6570 template: the run id is
percent-encoded into one path segment."""

_GATE_URI = UriTemplate.parse(GATE_URI_TEMPLATE)


def gate_uri(run_id: str) -> str:
    """The resource of the gate open on ``run_id``."""
    return _GATE_URI.expand({"run_id": run_id})


def run_of_uri(uri: str) -> str | None:
    """The run a gate resource names, or None for another URI."""
    matched = _GATE_URI.match(uri)
    run = matched.get("run_id") if matched is not None else None
    return run if isinstance(run, str) and run else None


def _digest(row: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(row, sort_keys=True, default=str).encode()).hexdigest()


class GateWatch:
    """Watches the open gates of one task queue and tells subscribed clients of each change.

    Args:
        open_gates: Returns the open gates now (``Operations.pending``'s rows).
        poll_seconds: How often to ask.
    """

    def __init__(
        self,
        open_gates: Callable[[], Awaitable[list[dict[str, Any]]]],
        poll_seconds: float = 1.0,
    ) -> None:
        self.open_gates = open_gates
        self.poll_seconds = poll_seconds
        self.bus = InMemorySubscriptionBus()
        # The value must not hold the connection, or the entry never dies with it.
        self._handshake_clients: weakref.WeakKeyDictionary[Connection, set[str]] = (
            weakref.WeakKeyDictionary()
        )
        self._seen: dict[str, str] | None = None
        self._users = 0
        self._task: asyncio.Task[None] | None = None

    def remember(self, connection: Connection) -> None:
        """Tells ``connection`` (a handshake-era client) when the set of gates changes."""
        self._handshake_clients.setdefault(connection, set())

    def subscribe(self, connection: Connection, uri: str) -> None:
        """Tells ``connection`` when ``uri`` changes."""
        self._handshake_clients.setdefault(connection, set()).add(uri)

    def unsubscribe(self, connection: Connection, uri: str) -> None:
        """Stops telling ``connection`` about ``uri``."""
        self._handshake_clients.get(connection, set()).discard(uri)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Watches while at least one server connection (or the HTTP app) is inside."""
        self._users += 1
        if self._task is None:
            self._task = asyncio.create_task(self._watch(), name="lockgate gate watch")
        try:
            yield
        finally:
            self._users -= 1
            if self._users == 0 and self._task is not None:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
                self._task = None

    async def _watch(self) -> None:
        await keep_looking(
            self.refresh, self.poll_seconds, logger, "lockgate mcp: could not list the open gates"
        )

    async def refresh(self) -> None:
        """Asks for the open gates once and announces what changed since the last time."""
        rows = await self.open_gates()
        now = {gate_uri(str(row["run_id"])): _digest(row) for row in rows}
        before, self._seen = self._seen, now
        if before is None:
            return  # the first look: nothing was announced yet, so nothing changed
        changed = {uri for uri in now.keys() | before.keys() if now.get(uri) != before.get(uri)}
        if not changed:
            return
        if now.keys() != before.keys():
            await self._announce_list_changed()
        for uri in sorted(changed | {GATES_URI}):
            await self._announce_updated(uri)

    async def _announce_list_changed(self) -> None:
        await self.bus.publish(ResourcesListChanged())
        for connection in list(self._handshake_clients.keys()):
            with contextlib.suppress(Exception):  # a client that just left
                await connection.send_resource_list_changed()

    async def _announce_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))
        for connection, uris in list(self._handshake_clients.items()):
            if uri in uris:
                with contextlib.suppress(Exception):
                    await connection.send_resource_updated(uri)

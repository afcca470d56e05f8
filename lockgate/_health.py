"""Whether a worker is alive and ready, answered over HTTP for an orchestrator's probes.

``GET /livez`` answers 200 while the process runs (and its event loop turns); ``GET /readyz``
answers 200 only once every condition of :class:`WorkerHealth` holds, and 503 with a JSON reason
before that and once the worker drains. A small asyncio server, so that a worker needs no web
framework (the inbox's extra) to be probed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

__all__ = ["READINESS_CONDITIONS", "WorkerHealth", "serve_health"]

_log = logging.getLogger("lockgate.worker")

READINESS_CONDITIONS = ("directory", "worker secret", "namespace", "polling")
"""What a worker waits for before it is ready, in the order it gets them."""


class WorkerHealth:
    """What a worker has done towards serving, for ``/readyz``.

    :func:`lockgate.worker.run_worker` marks each of :data:`READINESS_CONDITIONS` as it gets
    there (the Directory and the worker secret its plugin holds, the namespace checked, the
    worker polling) and marks it draining when it is told to stop. ``lockgate worker`` serves
    it from before it loads anything, so a probe hears why it is not ready yet.
    """

    def __init__(self) -> None:
        self._done: set[str] = set()
        self.draining = False
        """True once the worker was told to stop: it takes no new work, and is never ready again."""

    def mark(self, condition: str) -> None:
        """Notes that ``condition`` (one of :data:`READINESS_CONDITIONS`) now holds."""
        if condition not in READINESS_CONDITIONS:
            raise ValueError(f"{condition!r} is not one of {READINESS_CONDITIONS}")
        self._done.add(condition)

    def drain(self) -> None:
        """Notes that the worker stopped polling and finishes what it holds."""
        self.draining = True

    @property
    def waiting_for(self) -> list[str]:
        """The conditions that do not hold yet, in order."""
        return [condition for condition in READINESS_CONDITIONS if condition not in self._done]

    @property
    def ready(self) -> bool:
        """Whether the worker takes work: every condition holds and it is not draining."""
        return not self.draining and not self.waiting_for

    def readiness(self) -> tuple[int, dict[str, object]]:
        """The status and JSON body ``/readyz`` answers."""
        if self.draining:
            return 503, {"ready": False, "reason": "draining: finishing the work it holds"}
        waiting = self.waiting_for
        if waiting:
            return 503, {
                "ready": False,
                "reason": f"waiting for: {', '.join(waiting)}",
                "waiting_for": waiting,
            }
        return 200, {"ready": True}


async def serve_health(health: WorkerHealth, host: str, port: int) -> asyncio.Server:
    """Starts answering ``/livez`` and ``/readyz`` for ``health`` on ``host:port``; close the
    server it returns to stop.

    Raises:
        OSError: The address cannot be bound (the port is taken, say).
    """

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            # The headers are read and ignored: a probe's request carries nothing we use.
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request.decode("latin-1").split()
            method, path = (parts[0], parts[1].split("?", 1)[0]) if len(parts) >= 2 else ("", "")
            body: dict[str, object]
            if method not in ("GET", "HEAD"):
                status, body = 405, {"error": "only GET and HEAD"}
            elif path == "/livez":
                status, body = 200, {"alive": True}
            elif path == "/readyz":
                status, body = health.readiness()
            else:
                status, body = 404, {"error": "not found: try /livez or /readyz"}
            payload = json.dumps(body).encode()
            writer.write(
                f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n"
                "Cache-Control: no-store\r\n"
                "Connection: close\r\n\r\n".encode()
                + (payload if method != "HEAD" else b"")
            )
            await writer.drain()
        except (asyncio.TimeoutError, ConnectionError, UnicodeDecodeError):
            pass  # a probe that hung up or sent nothing: nobody is waiting for an answer
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    server = await asyncio.start_server(answer, host, port)
    _log.info("lockgate worker health on http://%s:%d/livez and /readyz", host, port)
    return server


_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}

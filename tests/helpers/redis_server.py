"""A real Redis for the shared rate limit's tests: Debian's ``redis-server``, never a fake.

Each server runs on a free port of 127.0.0.1 in a temporary folder, keeps nothing on disk
(``--save '' --appendonly no``), and is ready once it answers PING. Where ``redis-server`` is
missing the tests that need it are skipped, with the command that installs it; with ``CI`` set
they fail instead. A test module imports the fixtures it uses from here.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from lockgate.devserver import free_port
from tests.helpers.support import require_installed

REDIS_SERVER = shutil.which("redis-server")

require_installed(
    REDIS_SERVER is None, "redis-server", "`apt-get install redis-server` (or `make redis`)"
)


class RedisServer:
    """One ``redis-server`` process this test run started, and how to reach and stop it."""

    def __init__(self, folder: Path) -> None:
        assert REDIS_SERVER is not None
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._log = (folder / "redis.log").open("wb")
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(folder),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    async def ping(self) -> bool:
        """Whether the server answers PING now."""
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            return False
        try:
            writer.write(b"PING\r\n")
            await writer.drain()
            return await asyncio.wait_for(reader.readline(), 5) == b"+PONG\r\n"
        except (OSError, asyncio.TimeoutError):
            return False
        finally:
            writer.close()

    async def ready(self, timeout: float = 30) -> RedisServer:
        """Waits until the server answers PING; fails if it exits or never does."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not await self.ping():
            assert self.process.poll() is None, "redis-server exited as it started"
            assert asyncio.get_running_loop().time() < deadline, "redis-server never answered"
            await asyncio.sleep(0.05)
        return self

    def stop(self) -> None:
        """Kills the server at once (SIGKILL: a store that dies, not one that says goodbye)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self._log.close()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def redis_url() -> AsyncIterator[str]:
    """A Redis server for the whole session; each test uses keys of its own."""
    with tempfile.TemporaryDirectory(prefix="lockgate-redis-") as folder:
        server = RedisServer(Path(folder))
        try:
            await server.ready()
            yield server.url
        finally:
            server.stop()


@pytest_asyncio.fixture(loop_scope="session")
async def own_redis(tmp_path: Path) -> AsyncIterator[RedisServer]:
    """A Redis server of this test's own, which it may stop."""
    server = RedisServer(tmp_path)
    try:
        yield await server.ready()
    finally:
        server.stop()

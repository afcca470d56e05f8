"""`lockgate dev` (what `make dev` runs): server, worker, demo people, next steps, clean stop.

Each runs the command in an empty folder, as after a `pip install`: the example graphs come from
the package, and the state it makes lands in that folder's `.lockgate/`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lockgate.cli._dev import activate_line
from lockgate.devserver import free_port
from tests.helpers.graphs import eventually
from tests.helpers.support import REPOSITORY


async def _run(cwd: Path, environment: dict[str, str], *arguments: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        *arguments,
        cwd=cwd,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_lockgate_dev_serves_the_examples_to_demo_people_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    port, inbox_port = free_port(), free_port()
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPOSITORY),
        "TEMPORAL_ADDRESS": f"127.0.0.1:{port}",
        # As `make dev` runs it: this Python's environment not activated.
        "PATH": _without_this_environment(os.environ.get("PATH", "")),
    }
    dev = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "dev",
        "--port",
        str(port),
        "--headless",
        "--inbox-port",
        str(inbox_port),
        cwd=tmp_path,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert dev.stdout is not None
    printed: list[str] = []
    while not any("Ctrl-C stops" in line for line in printed):
        line = await asyncio.wait_for(dev.stdout.readline(), 60)
        assert line, f"lockgate dev exited before it was up: {await _said(dev, printed)}"
        printed.append(line.decode())
    called = await _run(
        tmp_path,
        environment,
        "tools",
        "call",
        "essay:publish",
        "--as",
        "ed",
        "--args",
        '{"title": "Tides", "draft": "d"}',
    )
    inbox_page = await asyncio.to_thread(_get, f"http://localhost:{inbox_port}/")
    dev.send_signal(signal.SIGINT)
    status = await asyncio.wait_for(dev.wait(), 30)
    last_words = (await dev.stdout.read()).decode()

    next_steps = "".join(printed)
    assert last_words.splitlines()[-1] == (
        "lockgate dev stopped (SIGINT): the worker, the inbox and the Temporal server are down; "
        "runs are kept in .lockgate/temporal.db"
    )
    assert f"Inbox:            http://localhost:{inbox_port}" in next_steps
    assert "Open gates" in inbox_page
    assert f"export TEMPORAL_ADDRESS=127.0.0.1:{port}" in next_steps
    assert "lockgate start essay:review --as ada" in next_steps
    assert "lockgate decide <run-id> publish_as_is --as ed" in next_steps
    if sys.prefix != sys.base_prefix:  # the suite runs in a virtual environment, as make's does
        activate = Path(sys.prefix) / "bin" / "activate"
        assert (
            "In another terminal, in this folder:\n"
            f"  source {activate}    # puts this Python's `lockgate` on PATH\n"
            "  export TEMPORAL_ADDRESS="
        ) in next_steps
    assert called[0] == 0, called[2]
    assert "https://essays.example/tides" in called[1]
    directory = (tmp_path / ".lockgate" / "directory.toml").read_text()
    for principal in ("ada", "ed", "clerk", "rod"):
        assert f"[principals.{principal}]" in directory
        assert (tmp_path / ".lockgate" / "keys" / f"{principal}.key").exists()
    assert status == 0
    assert not _accepts_connections(port)  # the server is gone with it
    assert not _accepts_connections(inbox_port)


def _without_this_environment(path: str) -> str:
    """``path`` without this Python's virtual environment's ``bin``."""
    here = (Path(sys.prefix) / "bin").resolve()
    return os.pathsep.join(
        entry for entry in path.split(os.pathsep) if entry and Path(entry).resolve() != here
    )


def _environment(tmp_path: Path) -> Path:
    """A virtual environment's shape in ``tmp_path/.venv``: its activate script and a
    ``lockgate`` command."""
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "activate").write_text("# activate\n")
    (bin_ / "lockgate").write_text("#!/bin/sh\n")
    (bin_ / "lockgate").chmod(0o755)
    return tmp_path / ".venv"


def test_the_banner_says_to_activate_the_environment_whose_lockgate_is_not_on_path(
    tmp_path: Path,
) -> None:
    venv = _environment(tmp_path)

    line = activate_line(venv, "/usr", path="/usr/bin:/bin", cwd=tmp_path)

    assert line == "  source .venv/bin/activate    # puts this Python's `lockgate` on PATH\n"


def test_the_banner_names_an_environment_outside_this_folder_by_its_whole_path(
    tmp_path: Path,
) -> None:
    venv = _environment(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    line = activate_line(venv, "/usr", path="/usr/bin", cwd=elsewhere)

    assert line.startswith(f"  source {venv / 'bin' / 'activate'}    #")


def test_the_banner_says_nothing_of_activating_once_its_lockgate_is_on_path(
    tmp_path: Path,
) -> None:
    venv = _environment(tmp_path)

    assert activate_line(venv, "/usr", path=f"/usr/bin:{venv / 'bin'}", cwd=tmp_path) == ""


def test_the_banner_says_nothing_of_activating_outside_a_virtual_environment(
    tmp_path: Path,
) -> None:
    assert activate_line("/usr", "/usr", path="/bin", cwd=tmp_path) == ""


async def test_closing_the_terminal_ends_lockgate_dev_and_its_server(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    dev = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "dev",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--no-inbox",
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert dev.stdout is not None
    printed: list[str] = []
    while not any("Ctrl-C stops" in line for line in printed):
        line = await asyncio.wait_for(dev.stdout.readline(), 60)
        assert line, f"lockgate dev exited before it was up: {await _said(dev, printed)}"
        printed.append(line.decode())
    ui_was_served = _accepts_connections(ui_port)

    dev.send_signal(signal.SIGHUP)
    status = await asyncio.wait_for(dev.wait(), 30)

    assert f"Temporal Web UI:  http://127.0.0.1:{ui_port}" in "".join(printed)
    assert ui_was_served
    assert status == 0
    assert not _accepts_connections(port)
    assert not _accepts_connections(ui_port)


def _post_empty_payloads(endpoint: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        f"{endpoint}/decode",
        data=b'{"payloads": []}',
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status: int = answer.status
            return status
    except urllib.error.HTTPError as error:
        return error.code


async def _said(dev: asyncio.subprocess.Process, printed: list[str]) -> str:
    """What a ``lockgate dev`` that ended early printed, on both streams."""
    errors = (await dev.stderr.read()).decode(errors="replace") if dev.stderr else ""
    return f"stdout {''.join(printed)!r}, stderr {errors[-3000:]!r}"


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def _accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


async def test_lockgate_dev_with_payload_keys_points_its_ui_at_a_codec_server(
    tmp_path: Path,
) -> None:
    from lockgate.encryption import PayloadKeys

    keys_file = PayloadKeys.generate("k1").write(tmp_path / "payload.keys")
    port, ui_port, inbox_port = free_port(), free_port(), free_port()
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPOSITORY),
        "LOCKGATE_PAYLOAD_KEYS_FILE": str(keys_file),
    }
    dev = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "dev",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--inbox-port",
        str(inbox_port),
        cwd=tmp_path,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert dev.stdout is not None
    printed: list[str] = []
    try:
        while not any("Ctrl-C stops" in line for line in printed):
            line = await asyncio.wait_for(dev.stdout.readline(), 60)
            assert line, f"lockgate dev exited before it was up: {await _said(dev, printed)}"
            printed.append(line.decode())
        settings = await asyncio.to_thread(_ui_settings, ui_port)
        endpoint = settings["Codec"]["Endpoint"]
        # Its codec server runs in the local mode: the UI's origin without a token, nobody else.
        from_ui = await asyncio.to_thread(
            _post_empty_payloads, endpoint, {"Origin": f"http://localhost:{ui_port}"}
        )
        from_nobody = await asyncio.to_thread(_post_empty_payloads, endpoint, {})
        called = await _run(
            tmp_path,
            {**environment, "TEMPORAL_ADDRESS": f"127.0.0.1:{port}"},
            "tools",
            "call",
            "essay:publish",
            "--as",
            "ed",
            "--args",
            '{"title": "Tides", "draft": "d"}',
        )
        started = await _run(
            tmp_path,
            {**environment, "TEMPORAL_ADDRESS": f"127.0.0.1:{port}"},
            "start",
            "essay:review",
            "--as",
            "ada",
            "--json",
            "--inputs",
            '{"title": "Tides", "rubric": "gravity, moon, salt, wind, orbit"}',
        )
        run_id = json.loads(started[1])["run_id"]
        # The gate's memo is encrypted with the run: the inbox reads it with the keys.
        inbox_page = await eventually(
            lambda: asyncio.to_thread(_get, f"http://localhost:{inbox_port}/"),
            lambda page: run_id in page,
            what="the gate in the inbox (visibility catches up)",
        )
    finally:
        dev.send_signal(signal.SIGINT)
        status = await asyncio.wait_for(dev.wait(), 30)

    assert run_id in inbox_page
    note = "".join(printed)
    assert endpoint.startswith("http://127.0.0.1:")
    assert f"through the codec server at {endpoint}" in note
    assert "answers the UI's origin without a token (local mode" in note
    assert (from_ui, from_nobody) == (200, 401)
    assert called[0] == 0, called[2]
    assert status == 0
    assert not _accepts_connections(int(endpoint.rsplit(":", 1)[1]))


def _ui_settings(ui_port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/api/v1/settings", timeout=10) as got:
        settings: dict[str, Any] = json.load(got)
    return settings


async def test_a_taken_inbox_port_is_said_at_once_with_the_flags_that_move_it(
    tmp_path: Path,
) -> None:
    port, inbox_port = free_port(), free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", inbox_port))
        taken.listen()
        status, _, err = await _run(
            tmp_path,
            {**os.environ, "PYTHONPATH": str(REPOSITORY)},
            "dev",
            "--port",
            str(port),
            "--headless",
            "--inbox-port",
            str(inbox_port),
        )

    assert status == 2
    assert err.startswith(f"lockgate: The inbox cannot listen on 127.0.0.1:{inbox_port}")
    assert "--inbox-port N" in err
    assert "--no-inbox" in err
    assert "Traceback" not in err
    assert not _accepts_connections(port)  # said before the server started


async def test_a_second_lockgate_dev_says_every_taken_port_at_once(tmp_path: Path) -> None:
    port, ui_port, inbox_port = free_port(), free_port(), free_port()
    with contextlib.ExitStack() as held:
        for taken_port in (port, ui_port, inbox_port):
            taken = held.enter_context(socket.socket())
            taken.bind(("127.0.0.1", taken_port))
            taken.listen()
        status, _, err = await _run(
            tmp_path,
            {**os.environ, "PYTHONPATH": str(REPOSITORY)},
            "dev",
            "--port",
            str(port),
            "--ui-port",
            str(ui_port),
            "--inbox-port",
            str(inbox_port),
        )

    lines = err.splitlines()
    assert status == 2
    assert lines[0] == "lockgate: lockgate dev needs 3 ports that are taken:"
    assert lines[1].startswith(f"  - Port {port} on 127.0.0.1 is already in use.")
    assert lines[1].endswith("(`lockgate dev --port N`).")
    assert lines[2].startswith(f"  - Web UI port {ui_port} on 127.0.0.1 is already in use.")
    assert "(`lockgate dev --ui-port N`)" in lines[2]
    assert lines[3].startswith(f"  - The inbox cannot listen on 127.0.0.1:{inbox_port}")
    assert lines[3].endswith("`--no-inbox`.")
    assert len(lines) == 4


async def _start_dev(tmp_path: Path, port: int) -> asyncio.subprocess.Process:
    dev = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "dev",
        "--port",
        str(port),
        "--headless",
        "--no-inbox",
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    return dev


async def _banner(dev: asyncio.subprocess.Process) -> str:
    assert dev.stdout is not None
    printed: list[str] = []
    while not any("Ctrl-C stops" in line for line in printed):
        line = await asyncio.wait_for(dev.stdout.readline(), 60)
        assert line, f"lockgate dev exited before it was up: {await _said(dev, printed)}"
        printed.append(line.decode())
    return "".join(printed)


def _children(pid: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                # The parent's pid is the 2nd field after the parenthesised command name.
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.append(int(entry.name))
    return children


def _is_running(pid: int) -> bool:
    """Whether ``pid`` is a live process: gone, or dead and not yet reaped (a zombie), is not."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="the parent-death signal is Linux's; elsewhere a SIGKILL orphans the server",
)
async def test_a_sigkilled_lockgate_dev_takes_its_temporal_server_with_it(
    tmp_path: Path,
) -> None:
    port = free_port()
    dev = await _start_dev(tmp_path, port)
    await _banner(dev)
    (server,) = _children(dev.pid)
    assert _is_running(server) and _accepts_connections(port)

    dev.send_signal(signal.SIGKILL)
    await asyncio.wait_for(dev.wait(), 30)
    deadline = asyncio.get_running_loop().time() + 30
    while _is_running(server) or _accepts_connections(port):
        assert asyncio.get_running_loop().time() < deadline, "the server outlived lockgate dev"
        await asyncio.sleep(0.1)


async def test_the_servers_log_goes_to_the_file_the_banner_names_not_the_terminal(
    tmp_path: Path,
) -> None:
    dev = await _start_dev(tmp_path, free_port())
    banner = await _banner(dev)
    dev.send_signal(signal.SIGINT)
    _, terminal = await asyncio.wait_for(dev.communicate(), 30)

    assert "the server's in .lockgate/temporal.log" in banner
    assert "Temporal Server:" in (tmp_path / ".lockgate" / "temporal.log").read_text()
    assert "level=" not in terminal.decode()  # the server's lines
    assert dev.returncode == 0


_LOGGED_BY_THE_DEV_STACK = """
import logging, sys
from pathlib import Path
from lockgate.cli._logs import log_the_dev_stack

log_the_dev_stack(Path(sys.argv[1]))
try:
    raise ValueError("a bug in the graph")
except ValueError:
    logging.getLogger("temporalio.worker").warning(
        "Failed activation on workflow essay:review\\nmore detail", exc_info=True
    )
logging.getLogger("lockgate.audit").warning("[lockgate.audit] tool.call refused")
logging.getLogger("lockgate.worker").info("lockgate worker serving task queue")
"""


def test_the_dev_terminal_shows_a_warning_in_one_line_and_the_log_file_all_of_it(
    tmp_path: Path,
) -> None:
    log_file = tmp_path / "worker.log"

    ran = subprocess.run(
        [sys.executable, "-c", _LOGGED_BY_THE_DEV_STACK, str(log_file)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPOSITORY,
    )

    assert ran.stderr.splitlines() == [
        "lockgate dev: warning from temporalio.worker: Failed activation on workflow "
        f"essay:review (the whole record is in {log_file})"
    ]
    logged = log_file.read_text()
    assert "ValueError: a bug in the graph" in logged
    assert "[lockgate.audit] tool.call refused" in logged
    assert "lockgate worker serving task queue" in logged

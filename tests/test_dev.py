"""`lockgate dev` (what `make dev` runs): server, worker, demo people, next steps, clean stop."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import sys
from pathlib import Path

from tests.support import REPOSITORY, free_port


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
    shutil.copytree(REPOSITORY / "examples", tmp_path / "examples")
    port = free_port()
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPOSITORY),
        "TEMPORAL_ADDRESS": f"127.0.0.1:{port}",
    }
    dev = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "dev",
        "--port",
        str(port),
        "--headless",
        cwd=tmp_path,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert dev.stdout is not None
    printed: list[str] = []
    while not any("Ctrl-C stops" in line for line in printed):
        line = await asyncio.wait_for(dev.stdout.readline(), 60)
        assert line, "lockgate dev exited before it was up"
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
    dev.send_signal(signal.SIGINT)
    status = await asyncio.wait_for(dev.wait(), 30)

    next_steps = "".join(printed)
    assert "lockgate start essay:review --as ada" in next_steps
    assert "lockgate decide <run-id> publish_as_is --as ed" in next_steps
    assert called[0] == 0, called[2]
    assert "https://essays.example/tides" in called[1]
    directory = (tmp_path / ".lockgate" / "directory.toml").read_text()
    for principal in ("ada", "ed", "clerk", "rod"):
        assert f"[principals.{principal}]" in directory
        assert (tmp_path / ".lockgate" / "keys" / f"{principal}.key").exists()
    assert status == 0
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))  # the server is gone: its port is free again

"""The `lockgate` command run as people run it, a subprocess in a folder of its own, and the
fixture that gives a test one with keys for ada, ed and clerk and a worker secret."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.helpers.support import REPOSITORY

PEOPLE = {
    "ada": ([], []),
    "ed": (["editor"], ["essay:publish"]),
    "clerk": (["editor"], []),
}


@dataclass
class Ran:
    status: int
    out: str
    err: str


@dataclass
class Command:
    """Runs `lockgate ...` in a working directory with its own .lockgate/ state."""

    cwd: Path
    address: str | None
    task_queue: str
    extra_environment: dict[str, str] | None = None
    pass_task_queue: bool = True
    """Add ``--task-queue`` to every command that takes one (off: the command's default
    applies, as in a terminal where nobody typed it)."""

    async def __call__(self, *arguments: str, timeout: float = 60) -> Ran:
        process = await self.spawn(*arguments)
        out, err = await asyncio.wait_for(process.communicate(), timeout)
        assert process.returncode is not None
        return Ran(process.returncode, out.decode(), err.decode())

    async def spawn(self, *arguments: str) -> asyncio.subprocess.Process:
        """Starts `lockgate ...` and returns the running process (its stdout and stderr piped),
        for a test that acts while the command waits (a sign-in in the browser)."""
        environment = {
            **os.environ,
            "PYTHONPATH": str(REPOSITORY),
            # `lockgate login`'s file is per user: each test's folder is its user's.
            "XDG_CONFIG_HOME": str(self.cwd / ".config"),
            **(self.extra_environment or {}),
        }
        environment.pop("TEMPORAL_ADDRESS", None)
        if self.address is not None:
            environment["TEMPORAL_ADDRESS"] = self.address
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "lockgate.cli",
            *arguments,
            *(
                ("--task-queue", self.task_queue)
                if self.pass_task_queue and _takes_task_queue(arguments)
                else ()
            ),
            cwd=self.cwd,
            env=environment,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )


def _takes_task_queue(arguments: tuple[str, ...]) -> bool:
    return bool(arguments) and arguments[0] not in ("keys", "secret")


@pytest.fixture
async def lockgate_command(
    tmp_path: Path, temporal_client: Client, task_queue: str
) -> AsyncIterator[Command]:
    command = Command(tmp_path, temporal_client.service_client.config.target_host, task_queue)
    entries = []
    for principal, (roles, scopes) in PEOPLE.items():
        made = await command("keys", "new", principal)
        assert made.status == 0, made.err
        entries.append(
            made.out.replace("roles = []", f"roles = {json.dumps(roles)}").replace(
                "scopes = []", f"scopes = {json.dumps(scopes)}"
            )
        )
    (tmp_path / ".lockgate" / "directory.toml").write_text("\n".join(entries))
    secret = await command("secret", "new", "--secret-file", ".lockgate/worker.secret")
    assert secret.status == 0, secret.err
    yield command

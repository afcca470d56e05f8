"""`lockgate schedule create`: a Temporal Schedule whose runs start as `--as`, driven with the
`temporal` CLI as any schedule is."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone
from uuid import uuid4

from temporalio.client import Client, ScheduleActionExecutionStartWorkflow

from lockgate import Directory
from lockgate.devserver import temporal_binary
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import WorkerFactory
from tests.helpers.command_line import Command, Ran, lockgate_command
from tests.helpers.graphs import ALWAYS_FAILS, eventually

__all__ = ["lockgate_command"]  # the fixture the tests here use


async def temporal(client: Client, *arguments: str) -> Ran:
    """The `temporal` CLI, against the test's server."""
    process = await asyncio.create_subprocess_exec(
        str(temporal_binary()),
        *arguments,
        "--address",
        client.service_client.config.target_host,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), err.decode())


async def test_schedule_create_makes_a_schedule_whose_triggered_run_starts_as_its_owner(
    lockgate_command: Command, lockgate_worker: WorkerFactory, temporal_client: Client
) -> None:
    directory = Directory.load(lockgate_command.cwd / ".lockgate" / "directory.toml")
    schedule_id = f"essays-{uuid4().hex[:8]}"
    until = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    async with lockgate_worker(graphs=[EssayReview], directory=directory):
        created = await lockgate_command(
            "schedule", "create", "essay:review", "--as", "ada", "--cron", "0 0 1 1 *",
            "--until", until, "--inputs", json.dumps(ALWAYS_FAILS),
            "--schedule-id", schedule_id, "--json",
        )  # fmt: skip
        assert created.status == 0, created.err
        triggered = await temporal(
            temporal_client, "schedule", "trigger", "--schedule-id", schedule_id
        )
        described = await eventually(
            temporal_client.get_schedule_handle(schedule_id).describe,
            lambda described: bool(described.info.running_actions),
            what="the triggered run",
        )
        (run,) = described.info.running_actions
        assert isinstance(run, ScheduleActionExecutionStartWorkflow)
        shown = await eventually(
            lambda: lockgate_command("show", run.workflow_id, "--json"),
            lambda shown: json.loads(shown.out or "{}").get("status") == "waiting",
            what="the run at its gate",
        )
        deleted = await temporal(
            temporal_client, "schedule", "delete", "--schedule-id", schedule_id
        )

    result = json.loads(created.out)
    assert result["ok"] is True and result["owner"] == "ada"
    assert result["schedule_id"] == schedule_id and result["not_after"] == until
    assert triggered.status == 0, triggered.err
    view = json.loads(shown.out)
    assert view["requester"]["principal"] == "ada" and view["requester"]["verified"] is True
    assert deleted.status == 0, deleted.err


async def test_schedule_create_without_as_or_a_cadence_is_refused(
    lockgate_command: Command,
) -> None:
    unsigned = await lockgate_command(
        "schedule", "create", "essay:review", "--interval", "1h", "--until", "2099-01-01"
    )
    no_cadence = await lockgate_command(
        "schedule", "create", "essay:review", "--as", "ada", "--until", "2099-01-01"
    )
    bad_until = await lockgate_command(
        "schedule", "create", "essay:review", "--as", "ada", "--interval", "1h",
        "--until", "next week",
    )  # fmt: skip

    assert unsigned.status != 0 and "needs --as PRINCIPAL" in unsigned.err
    assert no_cadence.status != 0 and "--cron" in no_cadence.err
    assert bad_until.status != 0 and "`until` is when the grant ends" in bad_until.err

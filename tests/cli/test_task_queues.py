"""Task queues stop tripping people: LOCKGATE_TASK_QUEUE sets the commands' default, every hint
names the queue it is for, and `pending --all-queues` looks across the queues lockgate serves."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any
from uuid import uuid4

import pytest
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from lockgate import Directory, GraphClient, Signer
from lockgate._defaults import DEFAULT_TASK_QUEUE, TASK_QUEUE_ENV, task_queue_flag
from lockgate.cli import _parser
from lockgate.cli._runs import _print_next_step
from lockgate.contracts import RunView
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import WorkerFactory
from lockgate.workflows._search_attributes import LOCKGATE_GRAPH, LOCKGATE_STATE
from tests.helpers.command_line import Command, lockgate_command  # noqa: F401 (a fixture)
from tests.helpers.graphs import ALWAYS_FAILS, eventually

pytestmark = pytest.mark.timeout(120)


def _directory(command: Command) -> Directory:
    return Directory.load(command.cwd / ".lockgate" / "directory.toml")


def _in_a_terminal(command: Command, **environment: str) -> Command:
    """The same folder and server, as a person types the commands: no --task-queue given."""
    return Command(
        command.cwd,
        command.address,
        command.task_queue,
        extra_environment=environment,
        pass_task_queue=False,
    )


def test_lockgate_task_queue_sets_every_commands_default_and_the_flag_still_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TASK_QUEUE_ENV, "refunds")

    assert _parser().parse_args(["pending"]).task_queue == "refunds"
    assert _parser().parse_args(["worker"]).task_queue == "refunds"
    assert _parser().parse_args(["pending", "--task-queue", "other"]).task_queue == "other"
    monkeypatch.delenv(TASK_QUEUE_ENV)
    assert _parser().parse_args(["pending"]).task_queue == DEFAULT_TASK_QUEUE


def test_a_hint_names_the_queue_unless_a_command_reaches_it_without() -> None:
    assert task_queue_flag(DEFAULT_TASK_QUEUE) == ""
    assert task_queue_flag(DEFAULT_TASK_QUEUE, {TASK_QUEUE_ENV: DEFAULT_TASK_QUEUE}) == ""
    assert task_queue_flag("refunds") == " --task-queue refunds"
    assert task_queue_flag("refunds", {TASK_QUEUE_ENV: "refunds"}) == " --task-queue refunds"
    # The reader's terminal defaults to another queue: the default one must be named too.
    assert task_queue_flag(DEFAULT_TASK_QUEUE, {TASK_QUEUE_ENV: "refunds"}) == (
        " --task-queue lockgate"
    )
    assert task_queue_flag("shop refunds") == " --task-queue 'shop refunds'"


def test_a_parked_run_prints_how_to_resume_it_on_its_queue(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TASK_QUEUE_ENV, raising=False)
    parked: dict[str, Any] = {
        "ok": True,
        "run_id": "essay:review-1",
        "awaiting": None,
        "parked": {
            "graph": "essay:review",
            "run_id": "essay:review-1",
            "node": "publish",
            "operation": "essay:publish",
            "needs": ["essay:publish"],
            "parking": 1,
        },
    }
    arguments = argparse.Namespace(task_queue="essays")

    _print_next_step(RunView(**parked), arguments)  # type: ignore[typeddict-item]

    assert capsys.readouterr().out.strip() == (
        "resume it: lockgate resume essay:review-1 --as <someone who may run essay:publish> "
        "--task-queue essays"
    )


async def test_a_run_started_on_the_environments_queue_prints_a_hint_that_reaches_it(
    lockgate_command: Command,  # noqa: F811
    lockgate_worker: WorkerFactory,
) -> None:
    queue = lockgate_command.task_queue
    terminal = _in_a_terminal(lockgate_command, **{TASK_QUEUE_ENV: queue})
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        started = await terminal(
            "start", "essay:review", "--inputs", json.dumps(ALWAYS_FAILS), "--as", "ada"
        )
        hint = re.search(r"^answer it: (lockgate decide .*)$", started.out, flags=re.MULTILINE)
        assert hint is not None, started.out + started.err
        # The hint, typed in a terminal that has no LOCKGATE_TASK_QUEUE.
        words = hint.group(1).split()[1:]
        words[words.index("<an")] = "ed"
        words.remove("approver>")
        answered = await _in_a_terminal(lockgate_command)(*words)

    assert started.status == 0, started.err
    assert hint.group(1).endswith(f"--as <an approver> --task-queue {queue}")
    assert answered.status == 0, answered.err
    assert "status finished" in answered.out


async def test_pending_all_queues_lists_the_gates_of_every_queue_lockgate_serves(
    lockgate_command: Command,  # noqa: F811
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
) -> None:
    """A stranger's look-alike run (a graph's name, search attributes saying it waits) on a
    queue no lockgate worker serves is not listed: that queue never answers the catalogue."""
    queue = lockgate_command.task_queue
    stranger_queue = f"stranger-{uuid4().hex[:8]}"
    stopped_queue = f"stopped-{uuid4().hex[:8]}"
    ada = Signer.from_keys_dir("ada", lockgate_command.cwd / ".lockgate" / "keys")
    async with lockgate_worker(
        graphs=[EssayReview], directory=_directory(lockgate_command), task_queue=stopped_queue
    ):
        left = await GraphClient(temporal_client, stopped_queue, ada).start(
            EssayReview, ALWAYS_FAILS
        )
    assert left["status"] == "waiting"  # and its worker has stopped since
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        started = await lockgate_command(
            "start", "essay:review", "--inputs", json.dumps(ALWAYS_FAILS), "--as", "ada", "--json"
        )
        run = json.loads(started.out)["run_id"]
        look_alike = await temporal_client.start_workflow(
            "essay:review",
            id=f"essay:review-{uuid4().hex[:8]}",
            task_queue=stranger_queue,
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(LOCKGATE_GRAPH, "essay:review"),
                    SearchAttributePair(LOCKGATE_STATE, "waiting"),
                ]
            ),
        )
        listed = f"TaskQueue = '{stranger_queue}' AND {LOCKGATE_STATE.name} = 'waiting'"
        await eventually(
            lambda: temporal_client.count_workflows(listed),
            lambda counted: counted.count == 1,
            what="the look-alike in visibility",
        )
        # From the default queue, where nothing of this test runs.
        on_the_default = await _in_a_terminal(lockgate_command)("pending", "--of", "editor")
        across = await _in_a_terminal(lockgate_command)(
            "pending", "--of", "editor", "--all-queues", "--as", "ed"
        )
        queues = await GraphClient(temporal_client, DEFAULT_TASK_QUEUE).served_queues("editor")
        await look_alike.terminate("a look-alike")

    assert run not in on_the_default.out
    assert across.status == 0, across.err
    assert f"{run}  essay:review  gate editor_call#1  for editor  task queue {queue}" in across.out
    assert "✓ you may" in across.out
    assert queue in queues and stranger_queue not in queues and stopped_queue not in queues
    assert left["run_id"] not in across.out

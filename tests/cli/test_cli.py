"""The `lockgate` command against a real dev server, run as people run it: a subprocess."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from lockgate import (
    Directory,
    InMemoryRateLimiter,
    LockgatePlugin,
    Signer,
    ToolClient,
    WorkerSecret,
)
from lockgate.authorization import ChannelPolicy
from lockgate.cli._loop import event_loop_name, run_on_the_fastest_loop
from lockgate.cli._output import CommandError
from lockgate.cli._worker import channel_policies_of, rate_limiter_of, unsealed_runs_before
from lockgate.devserver import free_port, temporal_binary
from lockgate.errors import WorkerSecretError
from lockgate.examples.essay_review import EssayReview
from lockgate.namespace import check_search_attributes
from lockgate.testing import WorkerFactory
from lockgate.worker import load_components
from lockgate.workflows._graph_inputs import StartGraphInput
from tests.helpers.command_line import Command, Ran, lockgate_command
from tests.helpers.graphs import ALWAYS_FAILS, PASSES_FIRST_TIME, ReviewedEssay, eventually
from tests.helpers.support import REPOSITORY

__all__ = ["lockgate_command"]  # the fixture the tests here use


def _directory(command: Command) -> Directory:
    return Directory.load(command.cwd / ".lockgate" / "directory.toml")


async def test_keys_new_writes_an_owner_only_key_and_prints_its_directory_entry(
    lockgate_command: Command,
) -> None:
    made = await lockgate_command("keys", "new", "zoe")

    key_file = lockgate_command.cwd / ".lockgate" / "keys" / "zoe.key"
    assert made.status == 0
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert "[principals.zoe]" in made.out and 'public_key = "ed25519:' in made.out
    assert "PRIVATE" not in made.out


async def test_keys_new_refuses_to_overwrite_an_identity(lockgate_command: Command) -> None:
    again = await lockgate_command("keys", "new", "ed")

    assert again.status == 2
    assert "already exists" in again.err


DIRECTORY_WITH_COMMENTS = """\
# The people of the essay desk.
[principals.ada]  # the author
public_key = "ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
roles = []
"""


async def test_keys_new_with_a_directory_writes_the_entry_there_keeping_the_rest_of_the_file(
    tmp_path: Path,
) -> None:
    command = Command(tmp_path, None, "unused")
    (tmp_path / "directory.toml").write_text(DIRECTORY_WITH_COMMENTS)

    made = await command(
        "keys", "new", "zoe", "--role", "editor", "--scope", "essay:publish",
        "--scope", "essay:grade", "--directory", "directory.toml",
    )  # fmt: skip

    text = (tmp_path / "directory.toml").read_text()
    directory = Directory.load(tmp_path / "directory.toml")
    key = (tmp_path / ".lockgate" / "keys" / "zoe.key").read_bytes()
    assert made.status == 0, made.err
    assert text.startswith(DIRECTORY_WITH_COMMENTS + "\n[principals.zoe]\n")
    assert directory.roles_of("zoe") == {"editor"}
    assert directory.scopes_of("zoe") == {"essay:publish", "essay:grade"}
    assert directory.public_key_of("zoe") is not None
    assert directory.principals() == ("ada", "zoe")
    assert b"PRIVATE KEY" in key and "PRIVATE" not in text
    assert "[principals.zoe]" not in made.out  # written, not printed
    assert "zoe added to the Directory directory.toml" in made.out


async def test_keys_new_with_a_directory_that_is_missing_creates_it(tmp_path: Path) -> None:
    command = Command(tmp_path, None, "unused")

    made = await command("keys", "new", "zoe", "--role", "editor", "--directory", "people.toml")

    assert made.status == 0, made.err
    assert Directory.load(tmp_path / "people.toml").roles_of("zoe") == {"editor"}


async def test_keys_new_refuses_a_principal_the_directory_lists_and_changes_nothing(
    tmp_path: Path,
) -> None:
    command = Command(tmp_path, None, "unused")
    (tmp_path / "directory.toml").write_text(DIRECTORY_WITH_COMMENTS)

    again = await command("keys", "new", "ada", "--role", "admin", "--directory", "directory.toml")

    assert again.status == 2
    assert again.err.strip() == (
        "lockgate: directory.toml already lists the principal 'ada'; nothing was written (an "
        "entry is changed by editing the file, never replaced)."
    )
    assert (tmp_path / "directory.toml").read_text() == DIRECTORY_WITH_COMMENTS
    assert not (tmp_path / ".lockgate" / "keys" / "ada.key").exists()


async def test_keys_new_refuses_to_add_to_a_file_that_is_not_a_directory(tmp_path: Path) -> None:
    command = Command(tmp_path, None, "unused")
    (tmp_path / "directory.toml").write_text("[principals.ada\n")

    refused = await command("keys", "new", "zoe", "--directory", "directory.toml")

    assert refused.status == 2
    assert "lockgate: directory.toml is not valid TOML" in refused.err
    assert (tmp_path / "directory.toml").read_text() == "[principals.ada\n"
    assert not (tmp_path / ".lockgate" / "keys" / "zoe.key").exists()


async def test_as_a_principal_without_a_key_lists_the_keys_there_are(tmp_path: Path) -> None:
    command = Command(tmp_path, None, "unused")
    for principal in ("ada", "ed"):
        assert (await command("keys", "new", principal)).status == 0

    mistyped = await command("decide", "essay:review-1", "publish_as_is", "--as", "adda")

    assert mistyped.status == 2
    assert mistyped.err.strip() == (
        "lockgate: No private key for 'adda' in .lockgate/keys: the keys there are ada, ed (did "
        "you mean ada?). Run `lockgate keys new adda` to make one, or point to the keys "
        "directory that holds it."
    )


async def test_a_server_that_is_not_there_is_said_in_one_sentence_without_the_transport_dump(
    tmp_path: Path,
) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    command = Command(tmp_path, None, "unused")

    listed = await command("list", "--address", address)
    as_json = await command("list", "--address", address, "--json")

    sentence = (
        f"Cannot reach Temporal at {address}: nothing listens there (connection refused). Check "
        "the address (--address, TEMPORAL_ADDRESS or the profile's) and that a server runs "
        "there: `lockgate dev` (or `make dev`) starts one here."
    )
    assert (listed.status, listed.out, listed.err) == (2, "", f"lockgate: {sentence}\n")
    assert as_json.status == 2 and as_json.err == ""
    assert json.loads(as_json.out) == {
        "ok": False,
        "error": {"code": "UNAVAILABLE", "message": sentence},
    }


async def test_tools_list_shows_the_workers_tools_through_temporal(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        listed = await lockgate_command("tools", "list", "--json")

    names = [tool["name"] for tool in json.loads(listed.out)["tools"]]
    assert listed.status == 0
    assert names == ["essay:write", "essay:grade", "essay:publish", "essay:abandon"]


async def test_tools_call_prints_the_result_and_exits_zero(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        called = await lockgate_command(
            "tools", "call", "essay:grade", "--args", '{"rubric": "tides", "draft": "Tides."}'
        )

    assert called.status == 0, called.err
    assert json.loads(called.out) == {"feedback": "Covers the rubric.", "verdict": "PASSED"}


async def test_tools_call_of_a_caller_mistake_prints_its_sentence_and_exits_one(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        unsigned = await lockgate_command(
            "tools", "call", "essay:publish", "--args", '{"title": "x", "draft": "y"}'
        )

    assert unsigned.status == 1
    assert "refused [FORBIDDEN]" in unsigned.err
    assert "Need one of: essay:publish" in unsigned.err


async def test_tools_call_as_a_principal_signs_the_call_and_gets_their_scopes(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        signed = await lockgate_command(
            "tools",
            "call",
            "essay:publish",
            "--args",
            '{"title": "Tides", "draft": "y"}',
            "--as",
            "ed",
            "--json",
        )

    result = json.loads(signed.out)
    assert signed.status == 0, signed.err
    assert result["data"] == {"url": "https://essays.example/tides"}
    assert result["meta"]["principal"] == "ed"


async def test_a_newcomer_runs_an_essay_to_its_gate_and_an_editor_answers_from_the_cli(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        started = await lockgate_command(
            "start", "essay:review", "--inputs", json.dumps(ALWAYS_FAILS), "--as", "ada", "--json"
        )
        run = json.loads(started.out)["run_id"]
        pending = await lockgate_command("pending", "--of", "editor", "--as", "clerk")
        clerk = await lockgate_command("decide", run, "publish_as_is", "--as", "clerk")
        editor = await lockgate_command(
            "decide", run, "publish_as_is", "--as", "ed", "--comment", "Short, but it will do."
        )
        shown = await lockgate_command("show", run)
        as_json = json.loads((await lockgate_command("show", run, "--json")).out)

    answered = [row for row in as_json["trail"] if row["outcome"] == "answered"]
    assert [row.get("comment") for row in answered] == ["Short, but it will do."]
    assert started.status == 0 and json.loads(started.out)["status"] == "waiting"
    assert run in pending.out and "which clerk does not hold" in pending.out
    assert clerk.status == 1 and "refused [FORBIDDEN]" in clerk.err
    assert editor.status == 0, editor.err
    assert "status finished" in shown.out
    assert "answered  editor_call (ask:editor) by ed → publish_as_is" in shown.out
    assert "ran  publish (essay:publish) by ed" in shown.out


async def test_a_parked_run_prints_how_to_resume_it_where_it_starts_and_where_it_is_shown(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    """ada may not publish: the essay that passes at once parks before its publish node."""
    queue = lockgate_command.task_queue
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        started = await lockgate_command(
            "start", "essay:review", "--inputs", json.dumps(PASSES_FIRST_TIME), "--as", "ada"
        )
        run = started.out.split()[1]
        shown = await lockgate_command("show", run)

    hint = (
        f"resume it: lockgate resume {run} --as <someone who may run essay:publish> "
        f"--task-queue {queue}"
    )
    assert started.status == 0, started.err
    assert "parked at node publish (essay:publish)" in started.out
    assert hint in started.out.splitlines()
    assert shown.status == 0, shown.err
    assert hint in shown.out.splitlines()


async def test_list_shows_runs_newest_first_whether_they_are_running_or_closed(
    lockgate_command: Command, lockgate_worker: WorkerFactory, temporal_client: Client
) -> None:
    """The oldest run still waits at its gate, the two newer ones finished: visibility puts
    running runs before closed ones, and `list` still shows the newest first."""
    queue = lockgate_command.task_queue
    started = []
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        for inputs in (ALWAYS_FAILS, PASSES_FIRST_TIME, PASSES_FIRST_TIME):
            ran = await lockgate_command(
                "start", "essay:review", "--inputs", json.dumps(inputs), "--as", "ed", "--json"
            )
            started.append(json.loads(ran.out)["run_id"])
        await eventually(
            lambda: temporal_client.count_workflows(
                f"TaskQueue = '{queue}' AND LockgateGraph = 'essay:review' "
                "AND ExecutionStatus = 'Completed'"
            ),
            lambda counted: counted.count == 2,
            what="the two finished runs in visibility",
        )
        listed = await lockgate_command("list", "--json")

    assert listed.status == 0, listed.err
    rows = json.loads(listed.out)["runs"]
    assert [row["run_id"] for row in rows] == started[::-1]
    assert [row["status"] for row in rows] == ["finished", "finished", "waiting"]


async def test_a_published_and_an_abandoned_run_print_different_statuses_in_list_and_show(
    lockgate_command: Command, lockgate_worker: WorkerFactory, temporal_client: Client
) -> None:
    """Abandoning is the gate's rejection, as `graphs` says: that run reads declined, the
    published one finished, as people read them and under --json."""
    queue = lockgate_command.task_queue
    runs = {}
    async with lockgate_worker(graphs=[ReviewedEssay], directory=_directory(lockgate_command)):
        catalogue = await lockgate_command("graphs")
        catalogue_json = await lockgate_command("graphs", "--json")
        for option in ("publish_as_is", "abandon"):
            started = await lockgate_command(
                "start", "essay:reviewed", "--inputs", '{"title": "Tides"}', "--as", "ada",
                "--json",
            )  # fmt: skip
            runs[option] = json.loads(started.out)["run_id"]
            decided = await lockgate_command("decide", runs[option], option, "--as", "ed")
            assert decided.status == 0, decided.err
        await eventually(
            lambda: temporal_client.count_workflows(
                f"TaskQueue = '{queue}' AND LockgateGraph = 'essay:reviewed' "
                "AND ExecutionStatus = 'Completed'"
            ),
            lambda counted: counted.count == 2,
            what="both runs closed in visibility",
        )
        listed = await lockgate_command("list")
        listed_json = await lockgate_command("list", "--json")
        shown = {option: await lockgate_command("show", run) for option, run in runs.items()}
        shown_json = {
            option: await lockgate_command("show", run, "--json") for option, run in runs.items()
        }

    assert (
        "    editor_call: asks role editor; options publish_as_is, one_more_round, abandon"
        " (abandon says no)"
    ) in catalogue.out.splitlines()
    assert json.loads(catalogue_json.out)["graphs"][0]["gates"][0]["rejection"] == "abandon"
    lines = listed.out.splitlines()
    assert any(
        line.startswith(f"{runs['publish_as_is']}  essay:reviewed  finished") for line in lines
    )
    assert any(line.startswith(f"{runs['abandon']}  essay:reviewed  declined") for line in lines)
    statuses = {row["run_id"]: row["status"] for row in json.loads(listed_json.out)["runs"]}
    assert statuses == {runs["publish_as_is"]: "finished", runs["abandon"]: "declined"}
    assert "status finished" in shown["publish_as_is"].out.splitlines()[0]
    assert "status declined" in shown["abandon"].out.splitlines()[0]
    assert json.loads(shown_json["publish_as_is"].out)["status"] == "finished"
    assert json.loads(shown_json["abandon"].out)["status"] == "declined"


async def test_show_of_a_running_run_no_worker_serves_says_to_start_one(
    lockgate_command: Command, temporal_client: Client
) -> None:
    """A run started where no worker ever polled: its `show` query goes unanswered."""
    queue = f"unserved-{uuid.uuid4().hex[:8]}"
    run = f"essay:review-{uuid.uuid4().hex[:12]}"
    await temporal_client.start_workflow(
        "essay:review", StartGraphInput(inputs=dict(ALWAYS_FAILS)), id=run, task_queue=queue
    )
    on_its_queue = Command(lockgate_command.cwd, lockgate_command.address, queue)

    shown = await on_its_queue("show", run)
    as_json = await on_its_queue("show", run, "--json")

    sentence = (
        f"Run '{run}' is running, and no worker polls its task queue '{queue}' to show it: "
        f"start one with `lockgate worker --task-queue {queue} --graphs MODULE` (the modules "
        "that serve essay:review)."
    )
    assert (shown.status, shown.out) == (1, "")
    assert shown.err.strip() == f"refused [UNAVAILABLE]: {sentence}"
    assert as_json.status == 1
    assert json.loads(as_json.out) == {
        "ok": False,
        "error": {"code": "UNAVAILABLE", "message": sentence},
        "run_id": run,
        "graph": "essay:review",
        "status": "running",
        "task_queue": queue,
    }


async def test_every_listing_under_json_prints_one_object_as_a_refusal_does(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    listings = {
        ("graphs",): "graphs",
        ("list",): "runs",
        ("pending",): "pending",
        ("tools", "list"): "tools",
    }
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        printed = {
            key: await lockgate_command(*command, "--json") for command, key in listings.items()
        }

    for key, ran in printed.items():
        assert ran.status == 0, ran.err
        listed = json.loads(ran.out)
        assert set(listed) == {"ok", "count", key} and listed["ok"] is True
        assert listed["count"] == len(listed[key])


async def test_graphs_lists_each_graph_with_its_inputs_gates_and_roles(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        shown = await lockgate_command("graphs")
        as_json = await lockgate_command("graphs", "--json")

    assert shown.status == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0] == (
        "essay:review  (v1)  Draft an essay against a rubric until it passes, then publish it."
    )
    assert (
        "    title     string                           required  The essay being written" in lines
    )
    assert "    drafts    list of string                   default: []" in lines
    assert "    verdict   Verdict: PASSED | FAILED | null  default: null" in lines
    assert (
        "    editor_call: asks role editor; options publish_as_is, one_more_round, abandon"
    ) in lines
    # The line reaches the queue it was listed from (the test's, not the default one).
    assert (
        "  start: lockgate start essay:review --as YOU --inputs '{...}' "
        f"--task-queue {lockgate_command.task_queue}"
    ) in lines
    graphs = json.loads(as_json.out)["graphs"]
    assert [graph["name"] for graph in graphs] == ["essay:review"]
    assert graphs[0]["versions"] == [1]
    assert graphs[0]["inputs"][0] == {
        "name": "title",
        "type": "string",
        "required": True,
        "description": "The essay being written",
    }
    assert graphs[0]["gates"] == [
        {
            "gate": "editor_call",
            "role": "editor",
            "because": "Three drafts in a row failed the rubric.",
            "options": ["publish_as_is", "one_more_round", "abandon"],
        }
    ]


async def test_start_of_a_mistyped_graph_is_refused_at_once_naming_the_served_ones(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        started = await lockgate_command("start", "nope:graph", "--as", "ada")

    assert started.status == 1
    assert started.err.strip() == (
        f"refused [NOT_FOUND]: No graph named 'nope:graph' on task queue "
        f"'{lockgate_command.task_queue}'; served: essay:review. Nothing was started "
        "(`lockgate graphs` lists them with their inputs)."
    )


async def test_start_with_a_mistyped_input_is_refused_naming_the_inputs_the_graph_takes(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    mistyped = json.dumps({"titel": "Tides", "rubric": "gravity"})
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        started = await lockgate_command(
            "start", "essay:review", "--inputs", mistyped, "--as", "ada"
        )

    assert started.status == 1
    assert started.err.strip() == (
        "refused [VALIDATION_ERROR]: 'essay:review' takes no input 'titel' (did you mean "
        "'title'?): the inputs it takes are title, rubric, draft, feedback, drafts, verdict, url. "
        "Nothing was run."
    )


async def test_cancel_ends_a_run_for_its_requester_and_refuses_anyone_else(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        started = await lockgate_command(
            "start", "essay:review", "--inputs", json.dumps(ALWAYS_FAILS), "--as", "ada", "--json"
        )
        run = json.loads(started.out)["run_id"]
        by_ed = await lockgate_command("cancel", run, "--as", "ed")
        unsigned = await lockgate_command("cancel", run)
        by_ada = await lockgate_command("cancel", run, "--as", "ada", "--reason", "wrong rubric")

    assert by_ed.status == 1
    assert by_ed.err.strip() == (
        f"refused [FORBIDDEN]: ed may not cancel run '{run}': only its requester, ada, may."
    )
    assert unsigned.status == 2 and "cancel needs --as PRINCIPAL" in unsigned.err
    assert by_ada.status == 0, by_ada.err
    assert "status cancelled" in by_ada.out
    assert "cancelled  editor_call (cancel) by ada" in by_ada.out
    assert "wrong rubric" in by_ada.out


async def test_sign_decide_prints_a_proof_the_workflow_accepts_as_an_update(
    lockgate_command: Command, lockgate_worker: WorkerFactory, temporal_client: Client
) -> None:
    directory = _directory(lockgate_command)
    async with lockgate_worker(graphs=[EssayReview], directory=directory):
        started = await lockgate_command(
            "start", "essay:review", "--inputs", json.dumps(ALWAYS_FAILS), "--as", "ada", "--json"
        )
        run = json.loads(started.out)["run_id"]
        signed = await lockgate_command(
            "sign", "decide", run, "abandon", "--as", "ed", "--comment", "Off topic."
        )
        proof = json.loads(signed.out)
        answered = await temporal_client.get_workflow_handle(run).execute_update(
            "decide", proof, result_type=dict
        )

    assert signed.status == 0
    assert {
        key: proof["authorizes"][key] for key in ("kind", "graph", "run", "gate", "choice")
    } == {
        "kind": "decide",
        "graph": "essay:review",
        "run": run,
        "gate": "editor_call#1",
        "choice": "abandon",
    }
    assert proof["authorizes"]["comment"] == "Off topic."
    assert [row.get("comment") for row in answered["trail"] if row["outcome"] == "answered"] == [
        "Off topic."
    ]
    assert proof["authorizes"]["execution"] and proof["authorizes"]["subject"].startswith("sha256:")
    assert "Send an Update" in signed.err
    assert answered["status"] == "finished"
    assert answered["trail"][-1]["node"] == "abandon"


async def test_a_run_started_with_the_temporal_cli_as_signed_takes_the_proof_sign_start_prints(
    lockgate_command: Command, lockgate_worker: WorkerFactory, temporal_client: Client
) -> None:
    """For people on the `temporal` CLI: start the run as signed, then sign the execution the
    server started (`lockgate sign start RUN`) and send it as the run's `start` update."""
    directory = _directory(lockgate_command)
    run = f"essay:review-cli-{os.getpid()}-{id(directory)}"
    address = temporal_client.service_client.config.target_host
    temporal = (str(temporal_binary()), "--address", address, "--namespace", "default")
    async with lockgate_worker(graphs=[EssayReview], directory=directory):
        started = await _subprocess(
            *temporal, "workflow", "start", "--type", "essay:review",
            "--task-queue", lockgate_command.task_queue, "--workflow-id", run,
            "--input", json.dumps({"inputs": ALWAYS_FAILS, "signed": True}),
        )  # fmt: skip
        signed = await lockgate_command("sign", "start", run, "--as", "ada")
        assert signed.status == 0, (signed.out, signed.err)
        proof = json.loads(signed.out)
        answered = await _subprocess(
            *temporal, "workflow", "update", "execute", "--workflow-id", run,
            "--name", "start", "--input", signed.out.strip(), "-o", "json",
        )  # fmt: skip
        shown = await lockgate_command("show", run, "--json")

    assert started.status == 0, started.err
    assert signed.status == 0, signed.err
    assert proof["authorizes"]["kind"] == "start" and proof["authorizes"]["run"] == run
    assert proof["authorizes"]["execution"]  # the execution the server started
    assert f"Signs the start of {run} with" in signed.err and "Tides" in signed.err
    assert "--name start" in signed.err
    assert answered.status == 0, answered.err
    view = json.loads(shown.out)
    assert view["status"] == "waiting"
    assert view["requester"]["principal"] == "ada"


async def _subprocess(*command: str) -> Ran:
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), err.decode())


async def test_the_commands_a_missing_secret_names_make_the_secret(
    lockgate_command: Command, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOCKGATE_WORKER_SECRET", raising=False)
    monkeypatch.delenv("LOCKGATE_WORKER_SECRET_FILE", raising=False)
    secret_file = lockgate_command.cwd / "elsewhere.secret"
    told = []
    for refuse in (lambda: WorkerSecret.load(secret_file), lambda: LockgatePlugin()):
        with pytest.raises(WorkerSecretError) as refused:
            refuse()
        named = re.search(r"`lockgate (secret new [^`]*)`", str(refused.value))
        assert named is not None, refused.value
        told.append(named.group(1).split())

    ran = [await lockgate_command(*command) for command in told]

    assert [r.status for r in ran] == [0, 0], [r.err for r in ran]
    assert len(WorkerSecret.load(secret_file).key_ids) == 1
    assert len(WorkerSecret.load(lockgate_command.cwd / "worker.secret").key_ids) == 1


async def test_setup_says_the_namespace_already_has_the_search_attributes(
    lockgate_command: Command,
) -> None:
    ran = await lockgate_command("setup")

    assert ran.status == 0
    assert "has lockgate's search attributes" in ran.out


async def test_the_worker_command_serves_tools_and_stops_cleanly_on_sigterm(
    lockgate_command: Command, temporal_client: Client, task_queue: str
) -> None:
    assert lockgate_command.address is not None
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "worker",
        "--tools",
        "lockgate.examples.essay_review",
        "--allow-examples",
        "--task-queue",
        task_queue,
        cwd=lockgate_command.cwd,
        env={
            **os.environ,
            "TEMPORAL_ADDRESS": lockgate_command.address,
            "PYTHONPATH": str(REPOSITORY),
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    ready = await asyncio.wait_for(process.stdout.readline(), 60)
    ed = Signer.from_keys_dir("ed", lockgate_command.cwd / ".lockgate" / "keys")
    result = await ToolClient(temporal_client, task_queue, signer=ed).call(
        "essay:publish", {"title": "Tides", "draft": "y"}
    )
    process.send_signal(signal.SIGTERM)
    status = await asyncio.wait_for(process.wait(), 30)
    last_words = (await process.stdout.read()).decode()

    assert last_words == (
        f"lockgate worker stopped (SIGTERM): task queue '{task_queue}' is no longer served by "
        "this process\n"
    )
    assert b"worker ready" in ready
    assert b"on uvloop" in ready  # the `dev` extra installs the `uvloop` one
    assert result["data"] == {"url": "https://essays.example/tides"}
    assert status == 0


def test_a_serving_command_runs_on_uvloop_where_it_is_installed() -> None:
    async def loop_module() -> int:
        return 1 if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else 0

    assert event_loop_name() == "uvloop"
    assert run_on_the_fastest_loop(loop_module()) == 1


async def test_setup_registers_the_search_attributes_on_a_namespace_without_them(
    tmp_path: Path,
) -> None:
    bare = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()), ui=False
    )
    try:
        command = Command(tmp_path, bare.client.service_client.config.target_host, "unused")
        before = await check_search_attributes(bare.client)
        ran = await command("setup")
        after = await check_search_attributes(bare.client)
    finally:
        await bare.shutdown()

    assert before.missing == ("LockgateGraph", "LockgateState", "LockgateAwaiting")
    assert ran.status == 0, ran.err
    assert "added to namespace 'default'" in ran.out
    assert after.ok


async def test_a_temporal_env_config_profile_chooses_the_server(
    lockgate_command: Command, lockgate_worker: WorkerFactory
) -> None:
    config = lockgate_command.cwd / "temporal.toml"
    config.write_text(f'[profile.review]\naddress = "{lockgate_command.address}"\n')
    profiled = Command(
        lockgate_command.cwd,
        None,
        lockgate_command.task_queue,
        {"TEMPORAL_CONFIG_FILE": str(config)},
    )
    async with lockgate_worker(graphs=[EssayReview], directory=_directory(lockgate_command)):
        listed = await profiled("tools", "list", "--profile", "review", "--json")

    assert listed.status == 0, listed.err
    assert "essay:grade" in listed.out


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path) -> None:
    # `lockgate ... | head`: the reader is gone before the command prints.
    reading, writing = os.pipe()
    os.close(reading)
    try:
        ended = subprocess.run(
            [sys.executable, "-m", "lockgate.cli", "secret", "new"],
            stdout=writing,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
            timeout=60,
        )
    finally:
        os.close(writing)

    assert ended.stderr == ""
    assert ended.returncode == 141


SHOP = """
from lockgate.examples.essay_review import EssayReview, grade, write

REVIEWS = [EssayReview]
"""


async def test_a_worker_named_a_module_without_lists_says_what_it_looked_for_and_found(
    tmp_path: Path,
) -> None:
    (tmp_path / "shop.py").write_text(SHOP)
    command = Command(tmp_path, "127.0.0.1:1", "unused")

    ran = await command("worker", "--graphs", "shop")

    assert ran.status == 2
    assert "looked for module-level TOOLS and GRAPHS lists in shop" in ran.err
    assert "graph EssayReview (--graphs shop:EssayReview)" in ran.err
    assert "tools grade, write (--tools shop:grade)" in ran.err


@pytest.mark.parametrize(
    "reference", ["lockgate.examples", "lockgate.examples.essay_review:EssayReview"]
)
async def test_a_worker_refuses_lockgates_examples_unless_asked_to_serve_them(
    tmp_path: Path, reference: str
) -> None:
    command = Command(tmp_path, "127.0.0.1:1", "unused")

    ran = await command("worker", "--graphs", "shop.graphs", reference)

    assert ran.status == 2
    assert ran.err.startswith(
        f"lockgate: lockgate worker was asked to serve lockgate's examples ({reference})"
    )
    assert "name your own modules with --tools/--graphs" in ran.err
    assert "add --allow-examples to serve the examples on purpose" in ran.err


def test_a_worker_serves_a_graph_class_or_a_list_named_module_colon_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shop_by_name.py").write_text(SHOP)
    monkeypatch.syspath_prepend(str(tmp_path))

    one = load_components(["shop_by_name:EssayReview", "shop_by_name:grade"])
    listed = load_components(["shop_by_name:REVIEWS"])

    assert [graph.__name__ for graph in one[1]] == ["EssayReview"]
    assert [tool.__name__ for tool in one[0]] == ["grade"]
    assert listed == ([], [EssayReview])


async def test_a_taken_inbox_port_names_the_inbox_and_the_flag_that_moves_it(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = await Command(tmp_path, "127.0.0.1:1", "unused")("inbox", "--port", str(port))

    assert ran.status == 2
    assert ran.err.startswith(f"lockgate: The inbox cannot listen on 127.0.0.1:{port}")
    assert "lockgate inbox --port N" in ran.err


def _worker_arguments(*flags: str) -> argparse.Namespace:
    from lockgate.cli._arguments import build_parser

    return build_parser().parse_args(["worker", "--tools", "x", *flags])


def test_unsealed_runs_before_takes_an_iso_time_with_its_zone() -> None:
    moment = unsealed_runs_before(
        _worker_arguments("--unsealed-runs-before", "2026-12-04T12:00:00Z")
    )

    assert moment == datetime(2026, 12, 4, 12, tzinfo=timezone.utc)
    assert unsealed_runs_before(_worker_arguments()) is None


@pytest.mark.parametrize("given", ["yesterday", "2026-12-04T12:00:00"])
def test_unsealed_runs_before_without_a_time_zone_or_a_time_is_refused(given: str) -> None:
    with pytest.raises(CommandError, match="takes an ISO 8601 time with a time zone"):
        unsealed_runs_before(_worker_arguments("--unsealed-runs-before", given))


def test_channel_gives_a_channel_of_ones_own_its_policy_by_flags() -> None:
    policies = channel_policies_of(
        _worker_arguments(
            "--channel", "slack=require_auth,block_mutating,no_signature_is_consent",
            "--channel", "kiosk=",
        )
    )  # fmt: skip

    assert policies == {
        "slack": ChannelPolicy(require_auth=True, block_mutating=True, signature_is_consent=False),
        "kiosk": ChannelPolicy(),
    }
    assert channel_policies_of(_worker_arguments()) == {}


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("slack", "--channel slack: give NAME=FLAGS, e.g. slack=require_auth"),
        ("=require_auth", "give NAME=FLAGS"),
        ("slack=require_auht", "'require_auht' is not a channel policy flag: name any of "
         "allow_all, require_auth, block_mutating"),
        ("slack=require_auth,require_auth", "The flag 'require_auth' is named twice."),
        ("sl ack=require_auth", "'sl ack' is not a channel name"),
        ("(deadline)=allow_all", "'(deadline)' is not a channel name"),
    ],
)  # fmt: skip
def test_channel_refuses_what_would_govern_nobody_or_mean_something_else(
    given: str, said: str
) -> None:
    with pytest.raises(CommandError, match=re.escape(said)):
        channel_policies_of(_worker_arguments("--channel", given))


def test_channel_naming_one_channel_twice_is_refused() -> None:
    with pytest.raises(CommandError, match="--channel names 'slack' twice"):
        channel_policies_of(
            _worker_arguments("--channel", "slack=", "--channel", "slack=require_auth")
        )


def test_a_worker_without_rate_limit_limits_nothing() -> None:
    assert rate_limiter_of(_worker_arguments()) is None


def test_rate_limit_memory_gives_each_worker_process_its_own_budget() -> None:
    limiter = rate_limiter_of(
        _worker_arguments("--rate-limit", "memory", "--rate-limit-tokens", "7")
    )

    assert isinstance(limiter, InMemoryRateLimiter)
    assert (limiter.max_tokens, limiter.window_seconds) == (7, 60.0)


def test_rate_limit_with_a_redis_url_shares_the_budget_through_that_store() -> None:
    from lockgate.redis_ratelimit import RedisRateLimiter

    limiter = rate_limiter_of(
        _worker_arguments(
            "--rate-limit", "redis://:hunter2@cache:6380/2", "--rate-limit-window", "30"
        )
    )

    assert isinstance(limiter, RedisRateLimiter)
    assert (limiter.address, limiter.max_tokens, limiter.window_seconds) == (
        "redis://cache:6380/2",
        100,
        30.0,
    )


def test_rate_limit_naming_no_store_is_refused_without_echoing_it() -> None:
    with pytest.raises(CommandError) as refused:
        rate_limiter_of(_worker_arguments("--rate-limit", "cache:6379?password=hunter2"))

    assert "--rate-limit takes memory" in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_an_answer_without_trail_rows_says_where_the_trail_is() -> None:
    from lockgate.cli._runs import _run_as_text

    started = {"run_id": "essay:review-1", "graph": "essay:review", "version": 1,
               "status": "finished", "trail": [], "trail_from": 3, "trail_total": 3}  # fmt: skip

    assert "trail: 3 rows (lockgate show essay:review-1)" in _run_as_text(started)  # type: ignore[arg-type]

"""The documentation stays true: the README's landing page, and on every page of the site (and
the README) its Python examples, run by the tests named after them or type-checked, and its
commands, each parsed by the `lockgate` command's own parser."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import re
import shlex
import subprocess
import sys
import types
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client, ScheduleActionStartWorkflow

from lockgate import ErrorCode, GraphClient, WorkerSecret
from lockgate.cli import _parser
from lockgate.devserver import free_port
from lockgate.identity._keys import new_identity
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.docs import (
    DOCS,
    README,
    SHELL_LANGUAGES,
    Block,
    blocks,
    code_containing,
    documentation,
    pages,
)
from tests.helpers.graphs import eventually
from tests.helpers.support import REPOSITORY, temporal_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # tomllib is the standard library's from 3.11
    import tomli as tomllib


def _blocks(language: str) -> list[str]:
    return [block.code for block in blocks(language)]


_block_containing = code_containing


def test_the_readme_opens_with_the_two_commands() -> None:
    first_lines = "\n".join(README.read_text().splitlines()[:8])

    assert "make dev" in first_lines
    assert "make test" in first_lines


def test_the_tools_example_runs_and_its_assertions_hold(capsys: pytest.CaptureFixture[str]) -> None:
    example = _block_containing("python", "ToolRegistry()")

    exec(compile(example, "docs", "exec"), {"__name__": "readme_tools"})

    assert "Missing required scope for tool 'notes:list'" in capsys.readouterr().out


async def test_the_idempotent_tool_example_passes_its_own_check() -> None:
    example = _block_containing("python", "assert_honours_idempotency_key(refund")
    namespace: dict[str, Any] = {"__name__": "readme_idempotency"}
    exec(compile(example, "docs", "exec"), namespace)

    await namespace["test_a_refund_is_paid_once_per_key"]()

    assert len(namespace["REFUNDS"]) == 1


def test_the_channel_policy_example_blocks_a_mutating_tool_on_the_kiosk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = _block_containing("python", 'set_channel_policy("kiosk"')

    exec(compile(example, "docs", "exec"), {"__name__": "docs_channel_policy"})

    assert "Mutating tool 'notes:delete' is blocked on channel 'kiosk'" in capsys.readouterr().out


def test_the_rate_limit_example_refuses_the_third_call_naming_its_key(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = _block_containing("python", "InMemoryRateLimiter(max_tokens=2")

    exec(compile(example, "docs", "exec"), {"__name__": "readme_rate_limits"})

    assert "Rate limit exceeded for 'web:agent-7:notes:search'" in capsys.readouterr().out


def test_the_graph_example_is_the_declaration_in_examples_essay_review() -> None:
    example = _block_containing("python", '@graph(\n    "essay:review"')
    source = (REPOSITORY / "lockgate" / "examples" / "essay_review.py").read_text()

    assert example.strip() in source


async def test_the_first_graph_walkthrough_asks_the_lead_and_pays_as_the_lead(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    refunds = types.ModuleType("refunds")
    sys.modules["refunds"] = refunds
    try:
        exec(
            compile(_block_containing("python", "TOOLS = [quote, pay]"), "docs", "exec"),
            vars(refunds),
        )
        people = Identities(
            {"sam": {}, "lee": {"roles": ["support_lead"], "scopes": ["refund:pay"]}}
        )
        async with lockgate_worker(
            tools=refunds.TOOLS, graphs=refunds.GRAPHS, directory=people.directory
        ):
            sam = GraphClient(temporal_client, task_queue, signer=people.signer("sam"))
            lee = GraphClient(temporal_client, task_queue, signer=people.signer("lee"))
            asked = await sam.start("refund:request", {"order": "A-1"})
            by_sam = await sam.decide(asked["run_id"], "approve")
            by_lee = await lee.decide(asked["run_id"], "approve")
    finally:
        del sys.modules["refunds"]
    walkthrough = _block_containing("sh", "lockgate decide <run-id> approve --as lee")

    assert asked["status"] == "waiting"
    assert asked["awaiting"] is not None and asked["awaiting"]["gate"] == "decision#1"
    assert "gate decision#1" in walkthrough
    assert by_sam["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert by_lee["status"] == "finished"
    assert by_lee["fields"]["outcome"] == "paid 500 cents for A-1"
    assert "paid 500 cents for A-1" in walkthrough
    assert by_lee["trail"][-1]["by"]["actor"] == "lee"


async def test_the_first_graph_walkthrough_ends_the_run_when_the_lead_declines(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    refunds = types.ModuleType("refunds")
    sys.modules["refunds"] = refunds
    try:
        exec(
            compile(_block_containing("python", "TOOLS = [quote, pay]"), "docs", "exec"),
            vars(refunds),
        )
        people = Identities({"sam": {}, "lee": {"roles": ["support_lead"]}})
        async with lockgate_worker(
            tools=refunds.TOOLS, graphs=refunds.GRAPHS, directory=people.directory
        ):
            sam = GraphClient(temporal_client, task_queue, signer=people.signer("sam"))
            lee = GraphClient(temporal_client, task_queue, signer=people.signer("lee"))
            asked = await sam.start("refund:request", {"order": "A-2"})
            by_lee = await lee.decide(asked["run_id"], "decline")
    finally:
        del sys.modules["refunds"]

    assert "Had `lee` answered `decline`, the run would have finished there" in documentation()
    assert by_lee["status"] == "finished"
    assert by_lee["fields"]["outcome"] == ""
    # The answer's result carries the rows it added: its own, the trail's last.
    assert [row["outcome"] for row in by_lee["trail"]] == ["answered"]
    assert (by_lee["trail_from"], by_lee["trail_total"]) == (1, 2)
    assert (by_lee["trail"][-1]["answer"], by_lee["trail"][-1]["by"]["actor"]) == ("decline", "lee")


async def test_the_schedule_example_creates_a_schedule_whose_action_carries_adas_grant(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    temporal_client: Client,
    capsys: pytest.CaptureFixture[str],
) -> None:
    new_identity("ada", tmp_path / ".lockgate" / "keys", [], [])
    monkeypatch.chdir(tmp_path)
    example = _block_containing("python", "async def schedule_tides()")
    address = temporal_client.service_client.config.target_host
    schedule_id = f"tides-{tmp_path.name}"
    namespace: dict[str, Any] = {"__name__": "readme_schedules"}
    source = example.replace("localhost:7233", address).replace("tides-weekly", schedule_id)

    exec(compile(source, "docs", "exec"), namespace)
    await namespace["schedule_tides"]()
    handle = temporal_client.get_schedule_handle(schedule_id)
    action = (await handle.describe()).schedule.action
    await handle.delete()

    assert capsys.readouterr().out.splitlines() == [f"{schedule_id} starts runs as ada"]
    assert isinstance(action, ScheduleActionStartWorkflow)
    (start,) = action.args
    carried = temporal_client.data_converter.payload_converter.from_payload(start)
    assert carried["scheduled"]["principal"] == "ada"
    assert carried["scheduled"]["authorizes"]["schedule"] == schedule_id


async def test_the_own_worker_example_serves_and_finishes_a_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    temporal_client: Client,
    capsys: pytest.CaptureFixture[str],
) -> None:
    made = new_identity("ed", tmp_path / ".lockgate" / "keys", ["editor"], ["essay:publish"])
    (tmp_path / ".lockgate" / "directory.toml").write_text(made.directory_entry_toml)
    WorkerSecret.generate().write(tmp_path / ".lockgate" / "worker.secret")
    monkeypatch.chdir(tmp_path)
    example = _block_containing("python", "async def serve()")
    address = temporal_client.service_client.config.target_host
    namespace: dict[str, Any] = {"__name__": "readme_worker"}

    exec(compile(example.replace("localhost:7233", address), "docs", "exec"), namespace)
    await namespace["serve"]()

    assert capsys.readouterr().out.splitlines() == [
        "finished https://essays.example/tides",
        "GATE_NOT_PENDING",
    ]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="LangGraph's interrupts need 3.11+")
async def test_the_framework_example_refunds_once_a_lead_who_is_not_the_agent_approves(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    temporal_client: Client,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("temporalio.langgraph")
    keys = tmp_path / ".lockgate" / "keys"
    agent = new_identity("agent-7", keys, [], ["tickets:read", "refunds:issue"])
    lead = new_identity("lena", keys, ["support-lead"], ["refunds:issue"])
    (tmp_path / ".lockgate" / "directory.toml").write_text(
        agent.directory_entry_toml + "\n" + lead.directory_entry_toml
    )
    WorkerSecret.generate().write(tmp_path / ".lockgate" / "worker.secret")
    monkeypatch.chdir(tmp_path)
    example = _block_containing("python", "async def refund()")
    address = temporal_client.service_client.config.target_host
    namespace: dict[str, Any] = {"__name__": "readme_framework"}

    exec(compile(example.replace("localhost:7233", address), "docs", "exec"), namespace)
    await namespace["refund"]()

    assert capsys.readouterr().out.splitlines() == ["SELF_APPROVAL_FORBIDDEN", "True", "refunded"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="LangGraph's interrupts need 3.11+")
async def test_the_client_plugin_example_starts_the_services_run_signed_with_its_own_call(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    temporal_client: Client,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("temporalio.langgraph")
    keys = tmp_path / ".lockgate" / "keys"
    agent = new_identity("agent-7", keys, [], ["tickets:read", "refunds:issue"])
    (tmp_path / ".lockgate" / "directory.toml").write_text(agent.directory_entry_toml)
    WorkerSecret.generate().write(tmp_path / ".lockgate" / "worker.secret")
    monkeypatch.chdir(tmp_path)
    example = _block_containing("python", "async def start_as_the_service()")
    address = temporal_client.service_client.config.target_host
    namespace: dict[str, Any] = {"__name__": "readme_client_plugin"}

    exec(compile(example.replace("localhost:7233", address), "docs", "exec"), namespace)
    await namespace["start_as_the_service"]()
    history = await temporal_client.get_workflow_handle("refund-7").fetch_history()

    # Refunded: read and refunded as agent-7 (an unsigned caller may read no ticket).
    assert capsys.readouterr().out.splitlines() == ["refunded"]
    accepted = [
        event.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
        for event in history.events
        if event.HasField("workflow_execution_update_accepted_event_attributes")
    ]
    assert accepted == ["lockgate.start"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Pydantic AI needs Python 3.11+")
def test_the_agent_step_example_declares_a_graph_a_worker_serves() -> None:
    pytest.importorskip("pydantic_ai")
    example = _block_containing("python", "AgentStep(")
    namespace: dict[str, Any] = {"__name__": "readme_agent_step"}

    exec(compile(example, "docs", "exec"), namespace)

    served = [compiled.name for compiled in namespace["plugin"].graphs]
    assert served == ["desk:support"]


_ENVIRONMENT = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=(?:\$\(.*\)|\S+)\s+)+")
"""Variables set for one command (``TOKEN=$(...) lockgate mcp``), taken off before it."""


def _command_lines(program: str) -> list[str]:
    """Every line of a shell block, on any page, that runs ``program`` (a console block's
    ``$ `` prompt and any variables set for the command taken off, continued lines joined,
    comments dropped)."""
    found: list[str] = []
    for language in SHELL_LANGUAGES:
        for block in _blocks(language):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" #", 1)[0].strip().removeprefix("$ ")
                line = _ENVIRONMENT.sub("", line)
                if line.startswith(f"{program} "):
                    found.append(line)
    return found


def _commands() -> list[str]:
    found = _command_lines("lockgate")
    for page in pages():
        for inline in re.findall(r"`(lockgate [^`]+)`", page.read_text()):
            found.append(inline)
    return found


@pytest.mark.parametrize("command", _commands())
def test_every_lockgate_command_in_the_docs_parses(command: str) -> None:
    words = shlex.split(command.replace("<json>", json.dumps({})))[1:]
    words = [word for word in words if word != "..."]

    arguments = _parser().parse_args(words)

    assert arguments.command == words[0]


def test_the_docs_run_lockgate_commands_in_shell_blocks_and_name_them_inline() -> None:
    """The parser check above reads both places: a pattern that stopped matching would leave
    it checking nothing."""
    assert len(_command_lines("lockgate")) >= 30
    assert len(_commands()) >= 100


@pytest.mark.parametrize("command", sorted(set(_command_lines("make"))))
def test_every_make_command_in_the_docs_is_a_target_of_the_makefile(command: str) -> None:
    phony = re.search(r"^\.PHONY:(.*)$", (REPOSITORY / "Makefile").read_text(), re.M)
    assert phony is not None

    (target, *settings) = shlex.split(command)[1:]

    assert target in phony.group(1).split()
    assert all(re.fullmatch(r"[A-Z_]+=\S*", setting) for setting in settings)


def test_the_mcp_host_configuration_runs_a_lockgate_mcp_command() -> None:
    (block,) = [block for block in _blocks("json") if "mcpServers" in block]
    server = json.loads(block)["mcpServers"]["lockgate"]

    arguments = _parser().parse_args(server["args"])

    assert server["command"] == "lockgate"
    assert (arguments.command, arguments.as_principal, arguments.http) == ("mcp", "ada", False)
    assert "TEMPORAL_ADDRESS" in server["env"]


async def test_the_testing_example_runs_with_the_fixtures_it_names(
    lockgate_worker: Any, temporal_client: Client, task_queue: str
) -> None:
    from lockgate.examples.essay_review import publish

    example = _block_containing("python", "async def test_publishing_needs_the_scope")
    namespace: dict[str, Any] = {"__name__": "readme_testing", "publish": publish}
    exec(compile(example, "docs", "exec"), namespace)

    await namespace["test_publishing_needs_the_scope"](lockgate_worker, temporal_client, task_queue)


def test_the_gate_rules_example_is_the_declaration_in_examples_payment_release() -> None:
    example = _block_containing("python", "policy=DUAL")
    source = (REPOSITORY / "lockgate" / "examples" / "payment_release.py").read_text()
    code = [line.strip() for line in source.splitlines()]
    shown = [line.strip() for line in example.strip().splitlines()]

    starts = [index for index, line in enumerate(code) if line == shown[0]]
    assert any(code[start : start + len(shown)] == shown for start in starts)


async def test_the_gate_rules_example_runs_with_the_fixtures_it_names(
    lockgate_worker: Any, temporal_client: Client, task_queue: str
) -> None:
    example = _block_containing("python", "async def test_two_officers_release_a_large_payment")
    namespace: dict[str, Any] = {"__name__": "readme_gates"}
    exec(compile(example, "docs", "exec"), namespace)

    await namespace["test_two_officers_release_a_large_payment"](
        lockgate_worker, temporal_client, task_queue
    )


async def test_the_watched_worker_example_encrypts_audits_and_traces(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    temporal_client: Client,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lockgate.encryption import PayloadKeys

    made = new_identity("ed", tmp_path / ".lockgate" / "keys", ["editor"], ["essay:publish"])
    (tmp_path / ".lockgate" / "directory.toml").write_text(made.directory_entry_toml)
    WorkerSecret.generate().write(tmp_path / ".lockgate" / "worker.secret")
    PayloadKeys.generate().write(tmp_path / ".lockgate" / "payload.keys")
    monkeypatch.chdir(tmp_path)
    example = _block_containing("python", "async def serve_watched()")
    address = temporal_client.service_client.config.target_host
    namespace: dict[str, Any] = {"__name__": "readme_watched"}

    exec(compile(example.replace("localhost:7233", address), "docs", "exec"), namespace)
    await namespace["serve_watched"]()

    printed = capsys.readouterr().out
    # The console exporters print to the sys.stdout of when OpenTelemetry was first imported,
    # which a test session has replaced since; test_telemetry.py reads the spans and metrics.
    assert "finished" in printed.splitlines()
    records = [
        json.loads(line)
        for line in (tmp_path / ".lockgate" / "audit.jsonl").read_text().splitlines()
    ]
    tools = {record["tool"] for record in records if record["event"] == "tool.call"}
    assert {"essay:write", "essay:grade", "essay:publish"} <= tools
    query = "TaskQueue = 'essays-watched' AND WorkflowType = 'essay:review'"

    async def listed() -> list[str]:
        return [run.id async for run in temporal_client.list_workflows(query)]

    # Visibility catches up with a finished run a moment later.
    runs = await eventually(listed, bool, what="the essay in visibility")
    history = await temporal_client.get_workflow_handle(runs[0]).fetch_history()
    assert b"Tides" not in b"".join(event.SerializeToString() for event in history.events)


async def test_the_metrics_example_serves_prometheus_on_the_port_it_names(
    temporal_client: Client,
) -> None:
    example = _block_containing("python", "def prometheus_runtime")
    namespace: dict[str, Any] = {"__name__": "readme_metrics"}
    exec(compile(example, "docs", "exec"), namespace)
    port = free_port()

    client = await namespace["connect_counted"](
        temporal_client.service_client.config.target_host, port
    )
    await client.workflow_service.get_system_info(GetSystemInfoRequest())
    scraped = await asyncio.to_thread(
        lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    )

    assert b"temporal_request" in scraped


async def test_the_versioned_worker_example_makes_a_worker_the_sdk_accepts(
    temporal_client: Client,
) -> None:
    """The SDK refuses, as it builds the worker, a versioned worker with any workflow type that
    carries no versioning behaviour; the plugin's types all carry one."""
    from lockgate import LockgatePlugin
    from lockgate.examples.essay_review import EssayReview

    example = _block_containing("python", "def versioned_worker")
    namespace: dict[str, Any] = {"__name__": "readme_versioned_worker"}
    exec(compile(example, "docs", "exec"), namespace)
    people = Identities({"ed": {"roles": ["editor"], "scopes": ["essay:publish"]}})
    plugin = LockgatePlugin(graphs=[EssayReview], directory=people.directory, secret=people.secret)

    worker = namespace["versioned_worker"](temporal_client, plugin, "2025-06-02")

    deployment = worker.config(active_config=True).get("deployment_config")
    assert deployment is not None and deployment.version.build_id == "2025-06-02"


def test_the_typescript_example_is_the_example_service_s_own_code() -> None:
    """The README's TypeScript lines are a slice of the example service the TypeScript signer's
    end-to-end test runs (tests/clients/test_typescript_signer.py), never a copy that drifts."""
    source = (REPOSITORY / "signers" / "typescript" / "examples" / "lockgate.ts").read_text()
    code = [line.strip() for line in source.splitlines()]
    (example,) = _blocks("ts")
    shown = [line.strip() for line in example.splitlines()]
    starts = [index for index, line in enumerate(code) if line == shown[0]]
    assert any(code[start : start + len(shown)] == shown for start in starts)


def test_the_sso_directory_example_trusts_its_issuer_and_maps_its_group() -> None:
    from lockgate import Directory

    example = _block_containing("toml", "[issuers.corp]")
    directory = Directory.from_toml(example, source="README.md")

    (issuer,) = directory.issuers()
    assert issuer.issuer == "https://login.example.com/realms/corp"
    assert issuer.audience == "lockgate"
    held = issuer.holdings({"groups": ["payments-officers", "someone-elses"]})
    assert held.roles == {"officer"} and held.scopes == {"payment:send"}


def test_the_sso_signer_example_makes_a_proof_carrying_the_token() -> None:
    example = _block_containing("python", "Signer.from_identity_provider(")

    exec(compile(example, "docs", "exec"), {"__name__": "readme_sso"})


def _needles_of_the_tests_that_run_python_blocks() -> set[str]:
    """The needles this file's tests find their ```python blocks by: each such block is run (or
    compared with the code it quotes) by the test that names it."""
    tree = ast.parse(Path(__file__).read_text())
    needles: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("_block_containing", "code_containing")
            and len(node.args) == 2
            and all(isinstance(argument, ast.Constant) for argument in node.args)
        ):
            language, needle = (argument.value for argument in node.args)  # type: ignore[attr-defined]
            if language == "python":
                needles.add(needle)
    return needles


@pytest.mark.parametrize("block", blocks("toml"), ids=lambda block: block.page)
def test_every_toml_block_parses(block: Block) -> None:
    assert tomllib.loads(block.code)


@pytest.mark.parametrize("block", blocks("json"), ids=lambda block: block.page)
def test_every_json_block_parses(block: Block) -> None:
    assert json.loads(block.code)


def test_every_python_block_compiles() -> None:
    for block in blocks("python"):
        compile(block.code, block.page, "exec")


def test_every_python_block_not_run_by_a_named_test_type_checks(tmp_path: Path) -> None:
    """A block no test runs is checked by mypy as it stands: its imports resolve, and every
    name and call it makes exists with the types lockgate declares."""
    needles = _needles_of_the_tests_that_run_python_blocks()
    run = [block for block in blocks("python") if any(needle in block.code for needle in needles)]
    # A block quoted verbatim from one a test runs (the README's example) is checked with it.
    unrun = [
        block
        for block in blocks("python")
        if block not in run and not any(block.code.strip() in done.code for done in run)
    ]
    files = []
    for number, block in enumerate(unrun):
        path = tmp_path / f"block_{number}.py"
        path.write_text(block.code)
        files.append(str(path))
    if not files:
        return
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "",
            "--python-version",
            "3.11",
            "--cache-dir",
            str(REPOSITORY / ".mypy_cache" / "docs"),
            "--ignore-missing-imports",
            *files,
        ],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        timeout=280,
    )
    where = {f"block_{number}.py": block.page for number, block in enumerate(unrun)}
    assert checked.returncode == 0, f"{where}\n{checked.stdout}{checked.stderr}"


def test_the_readmes_example_is_a_slice_of_the_first_graph_the_docs_run() -> None:
    (example,) = [block.code for block in blocks("python") if block.page == "README.md"]

    assert len(example.splitlines()) <= 10
    assert example.strip() in code_containing("python", "TOOLS = [quote, pay]")


def test_the_readme_is_a_landing_page_of_at_most_250_lines_linking_the_site() -> None:
    text = README.read_text()

    assert len(text.splitlines()) <= 250
    for page in ("getting-started/tour", "guides/", "concepts/", "proofs", "performance"):
        assert f"docs/{page}" in text


def test_the_tour_puts_the_lockgate_command_on_path() -> None:
    tour = (DOCS / "getting-started" / "tour.md").read_text()

    assert "source .venv/bin/activate" in code_containing("sh", "source .venv/bin/activate")
    assert "source .venv/bin/activate" in tour


def test_the_api_reference_documents_every_public_module() -> None:
    from tests.test_public_surface import PUBLIC_SUBPACKAGES

    hooks = _docs_hooks()

    assert set(hooks.API_MODULES) == {"lockgate", *PUBLIC_SUBPACKAGES}


def test_the_refusal_codes_page_gives_every_code_a_meaning() -> None:
    hooks = _docs_hooks()

    meanings = hooks.error_meanings()
    page = hooks.errors_page()

    assert set(meanings) == {code.name for code in ErrorCode}
    assert all(meanings.values())
    assert all(f"`{code.value}`" in page for code in ErrorCode)


def test_the_troubleshooting_guide_names_only_real_codes_and_every_common_one() -> None:
    guide = (DOCS / "guides" / "troubleshooting.md").read_text()
    named = set(re.findall(r"^## `([A-Z_]+)`", guide, re.M))

    assert named <= {code.value for code in ErrorCode}
    assert {"FORBIDDEN", "SELF_APPROVAL_FORBIDDEN", "UNVERIFIED_APPROVER"} <= named


def test_the_performance_page_says_what_every_benchmark_measures() -> None:
    page = (DOCS / "performance.md").read_text()
    scripts = sorted((REPOSITORY / "bench").glob("[!_]*.py"))

    assert scripts
    for script in scripts:
        assert f"- `bench/{script.name}`: " in page


def test_the_cli_reference_names_every_command() -> None:
    page = _docs_hooks().cli_page()

    for command in ("dev", "worker", "decide", "keys new", "tools call", "schedule create"):
        assert f"## `lockgate {command}`" in page


def _docs_hooks() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        "docs_generated_pages", DOCS / "_hooks" / "generated_pages.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_own_workflow_example_reads_as_sam_and_refunds_once_lee_approves(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    temporal_client: Client,
    capsys: pytest.CaptureFixture[str],
) -> None:
    keys = tmp_path / ".lockgate" / "keys"
    sam = new_identity("sam", keys, [], ["tickets:read"])
    lee = new_identity("lee", keys, ["support-lead"], ["refunds:issue"])
    (tmp_path / "directory.toml").write_text(
        sam.directory_entry_toml + "\n" + lee.directory_entry_toml
    )
    WorkerSecret.generate().write(tmp_path / "worker.secret")
    # The workflow is a module of its own, as in the guide: the sandbox imports it again.
    workflow_module = _block_containing("python", '@workflow.defn(name="shop:refund")')
    (tmp_path / "refund_workflow.py").write_text(workflow_module)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    example = _block_containing("python", "RefundWorkflow.run, RefundRequest(ticket=42")
    address = temporal_client.service_client.config.target_host
    source = (
        example.replace("localhost:7233", address)
        .replace('"refund-42"', f'"refund-{tmp_path.name}"')
        .replace('"refunds"', f'"refunds-{tmp_path.name}"')
    )
    namespace: dict[str, Any] = {"__name__": "docs_own_workflow"}
    try:
        exec(compile(source, "docs", "exec"), namespace)
        await namespace["main"]()
    finally:
        sys.modules.pop("refund_workflow", None)
    history = await temporal_client.get_workflow_handle(f"refund-{tmp_path.name}").fetch_history()

    assert capsys.readouterr().out.splitlines() == ["SELF_APPROVAL_FORBIDDEN", "True", "lee"]
    (result,) = [
        event.workflow_execution_completed_event_attributes.result
        for event in history.events
        if event.HasField("workflow_execution_completed_event_attributes")
    ]
    completed = temporal_client.data_converter.payload_converter.from_payload(result.payloads[0])
    assert completed == {"outcome": "refunded", "approved_by": "lee"}
    commands = _command_lines("lockgate")
    assert "lockgate decide refund-42 issue --as lee --task-queue refunds" in commands


async def test_the_waiting_runs_query_lists_a_run_at_an_open_gate_and_not_one_answered(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    """The Temporal UI / `temporal workflow list` filter the docs give, run as they give it
    against the dev server. A run answered and finished keeps naming its last gate in its
    search attributes, so the filter needs ExecutionStatus: without it, that run is listed."""
    from lockgate.examples.essay_review import EssayReview

    command = _command_lines("temporal")
    (listing,) = [line for line in command if "workflow list --query" in line]
    query = shlex.split(listing)[4]
    assert shlex.split(listing)[:4] == ["temporal", "workflow", "list", "--query"]
    people = Identities({"ada": {}, "ed": {"roles": ["editor"], "scopes": ["essay:publish"]}})
    hard = {"title": "Tides", "rubric": "gravity, moon, salt, wind, orbit"}
    async with lockgate_worker(graphs=[EssayReview], directory=people.directory):
        ada = GraphClient(temporal_client, task_queue, signer=people.signer("ada"))
        ed = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
        waiting = await ada.start("essay:review", hard)
        answered = await ada.start("essay:review", hard)
        done = await ed.decide(answered["run_id"], "publish_as_is")
    assert waiting["status"] == "waiting" and done["status"] == "finished"
    ours = f"TaskQueue = '{task_queue}'"

    async def listed(where: str) -> set[str]:
        out = await temporal_cli(
            temporal_client, "workflow", "list", "--query", f"{where} AND {ours}", "-o", "json"
        )
        return {run["execution"]["workflowId"] for run in json.loads(out or "[]")}

    # Visibility catches up with the runs a moment later: until it lists the waiting run alone.
    found = await eventually(
        lambda: listed(query), lambda ids: ids == {waiting["run_id"]}, what="the waiting run"
    )
    without_status = await listed("LockgateState = 'waiting'")

    assert found == {waiting["run_id"]}
    assert without_status == {waiting["run_id"], answered["run_id"]}

"""One door: every surface (the CLI, MCP, the HTTP API, the inbox) reaches runs, gates and tools
through ``lockgate.operations``, never through the clients behind it or a Temporal client of its
own; and one function, :func:`lockgate.contracts.refusal`, writes a refusal.

A new surface is then one module that calls the door: these tests say so from the syntax trees,
as ``tests/test_layers.py`` holds the layers."""

from __future__ import annotations

import ast
from typing import TypeGuard

from lockgate.contracts import refusal
from lockgate.tools._tool_result import ErrorCode
from tests.helpers.modules import imports, modules, within
from tests.helpers.support import REPOSITORY
from tests.test_layers import LAYERS

SURFACES = [*dict(LAYERS)["surfaces"], "lockgate.cli"]
"""What people and agents meet (the surfaces layer, and the ``lockgate`` command): each reaches
lockgate's runs only through the door. A surface added to the layer is held to it too."""

CLIENTS = ["lockgate.clients"]
"""What stands behind the door: ``GraphClient``, ``ToolClient`` and what they share."""

BEHIND_THE_DOOR = {"GraphClient", "ToolClient"}

RUN_CALLS = {
    "count_workflows",
    "execute_update_with_start_workflow",
    "execute_workflow",
    "get_workflow_handle",
    "get_workflow_handle_for",
    "list_workflows",
    "start_update_with_start_workflow",
    "start_workflow",
}
"""What a Temporal client reaches a run with: a surface never calls these itself."""


def _surface_modules() -> dict[str, ast.Module]:
    return {
        module: ast.parse(path.read_text(), str(path))
        for module, path in modules().items()
        if within(module, SURFACES)
    }


def test_no_surface_imports_a_client_behind_the_door() -> None:
    known = modules()

    reaching = [
        f"{path.relative_to(REPOSITORY)}:{line} imports {found}"
        for module, path in known.items()
        if within(module, SURFACES)
        for line, found in imports(path, known)
        if within(found, CLIENTS)
    ]

    assert reaching == []


def test_no_surface_names_graph_client_or_tool_client() -> None:
    named = [
        f"{module}:{node.lineno} imports {alias.name}"
        for module, tree in _surface_modules().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name in BEHIND_THE_DOOR
    ]

    assert named == []


def test_no_surface_reaches_a_run_with_a_temporal_client_of_its_own() -> None:
    calls = [
        f"{module}:{node.lineno} calls {node.func.attr}"
        for module, tree in _surface_modules().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in RUN_CALLS
    ]

    assert calls == []


def _writes_a_refusal(node: ast.AST) -> TypeGuard[ast.Dict | ast.Call]:
    """Whether ``node`` is a dict literal (or ``dict(...)`` call) with ``ok: False`` and an
    ``error``: a refusal written by hand."""
    if isinstance(node, ast.Dict):
        pairs = {
            key.value: value
            for key, value in zip(node.keys, node.values, strict=True)
            if isinstance(key, ast.Constant)
        }
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        pairs = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
    else:
        return False
    ok = pairs.get("ok")
    return isinstance(ok, ast.Constant) and ok.value is False and "error" in pairs


def test_only_contracts_refusal_writes_a_refusal() -> None:
    writers = []
    for path in modules().values():
        tree = ast.parse(path.read_text(), str(path))
        functions = [
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        for node in ast.walk(tree):
            if _writes_a_refusal(node):
                inside = [
                    function.name
                    for function in functions
                    if function.lineno <= node.lineno <= (function.end_lineno or 0)
                ]
                writers.append(f"{path.relative_to(REPOSITORY)}: {'.'.join(inside)}")

    assert writers == ["lockgate/contracts.py: refusal"]


def test_the_refusal_finder_finds_a_refusal_written_by_hand() -> None:
    """The check above can fail: the shapes it looks for are found."""
    written = ast.parse(
        'a = {"ok": False, "error": {"code": "NOT_FOUND", "message": "No run."}}\n'
        'b = dict(ok=False, error={"code": "NOT_FOUND", "message": "No run."})\n'
        'c = {"ok": False, "reason": "a verdict, not a refusal"}\n'
    )

    found = [node.lineno for node in ast.walk(written) if _writes_a_refusal(node)]

    assert sorted(found) == [1, 2]


def test_a_refusal_is_ok_false_with_its_code_and_sentence_and_facts_beside() -> None:
    refused = refusal(ErrorCode.NOT_FOUND, "No run 'essay-1'.", run_id="essay-1")

    assert refused == {
        "ok": False,
        "error": {"code": "NOT_FOUND", "message": "No run 'essay-1'."},
        "run_id": "essay-1",
    }

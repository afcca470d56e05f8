"""The layers: every module of lockgate imports only its own layer and the layers below, no import
goes round in a circle (not through ``TYPE_CHECKING``, not through a lazy face), and the pure
layers never reach temporalio."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.helpers.modules import imports, modules
from tests.helpers.support import REPOSITORY

LAYERS: list[tuple[str, list[str]]] = [
    (
        "foundations",
        [
            "lockgate._errors",
            "lockgate._defaults",
            "lockgate._bodies",
            "lockgate._health",
            "lockgate._lazy",
            "lockgate._polling",
            "lockgate._version",
            "lockgate.contracts",
        ],
    ),
    ("identity", ["lockgate.identity"]),
    (
        "tools",
        [
            "lockgate.tools",
            "lockgate.authorization",
            "lockgate.tool_runtime",
            "lockgate.redis_ratelimit",
            "lockgate.telemetry",
        ],
    ),
    ("gates", ["lockgate.gates"]),
    ("graphs", ["lockgate.graphs"]),
    ("activities", ["lockgate.activities"]),
    ("workflows", ["lockgate.workflows"]),
    (
        "clients",
        [
            "lockgate.clients",
            "lockgate.encryption",
            "lockgate.namespace",
            "lockgate.devserver",
            "lockgate.sso",
        ],
    ),
    ("worker", ["lockgate.worker"]),
    ("operations", ["lockgate.operations"]),
    ("surfaces", ["lockgate.serving", "lockgate.inbox", "lockgate.adapters"]),
    ("commands", ["lockgate.cli", "lockgate.testing", "lockgate.pytest_plugin"]),
    ("faces", ["lockgate", "lockgate.errors", "lockgate.examples"]),
]
"""Every module of lockgate, by layer, bottom first: a module may import its own layer's modules
and those of the layers below it, never one above. A layer is named by its packages and modules;
a package holds every module under it. The faces are what a program imports: nothing of
lockgate imports them (the examples are written as a user writes them, through them)."""

PURE = ["lockgate.identity", "lockgate.tools", "lockgate.gates", "lockgate.graphs"]
"""The layers that run in process, inside activities and inside the workflow sandbox alike."""


def _owner(module: str) -> str:
    """The entry of :data:`LAYERS` that holds ``module``: the longest that names it or a package
    above it."""
    entries = [entry for _, entries in LAYERS for entry in entries]
    holding = [e for e in entries if module == e or module.startswith(e + ".")]
    assert holding, f"{module} is in no layer: add it to LAYERS"
    return max(holding, key=len)


def _rank(module: str) -> int:
    owner = _owner(module)
    return next(index for index, (_, entries) in enumerate(LAYERS) if owner in entries)


def _graph() -> dict[str, set[str]]:
    known = modules()
    return {
        module: {found for _, found in imports(path, known) if found != module}
        for module, path in known.items()
    }


def test_every_module_of_lockgate_is_in_a_layer() -> None:
    unplaced = []
    for module in modules():
        try:
            _owner(module)
        except AssertionError as missing:
            unplaced.append(str(missing))

    assert unplaced == []


def test_no_module_imports_a_module_of_a_layer_above_its_own() -> None:
    known = modules()

    upward = [
        f"{path.relative_to(REPOSITORY)}:{line} imports {found} "
        f"({LAYERS[_rank(module)][0]} -> {LAYERS[_rank(found)][0]})"
        for module, path in known.items()
        for line, found in imports(path, known)
        if _rank(found) > _rank(module)
    ]

    assert upward == []


def test_no_module_of_lockgate_imports_a_face_but_the_examples() -> None:
    faces = {"lockgate", "lockgate.errors"}
    known = modules()

    through = [
        f"{path.relative_to(REPOSITORY)}:{line} imports {found}"
        for module, path in known.items()
        if module not in faces and not module.startswith("lockgate.examples")
        for line, found in imports(path, known)
        if found in faces
    ]

    assert through == []


def test_no_import_goes_round_in_a_circle() -> None:
    graph = _graph()
    circles = _strongly_connected(graph)

    assert [sorted(circle) for circle in circles if len(circle) > 1] == []


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of ``graph``, iteratively (the package is deep enough to matter)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    found.append(component)
    return found


def test_the_circle_finder_finds_a_circle() -> None:
    """The check above can fail: a made-up graph with a circle is found to have one."""
    circles = _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})

    assert [sorted(circle) for circle in circles if len(circle) > 1] == [["a", "b", "c"]]


@pytest.mark.parametrize("layer", PURE)
def test_a_pure_layer_imports_no_temporalio(layer: str) -> None:
    names = [module for module in modules() if module.startswith(layer + ".")]
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'temporalio'))\n"
    )

    shown = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPOSITORY,
        timeout=60,
    )

    assert names
    assert shown.stdout.splitlines()[-1] == "[]"

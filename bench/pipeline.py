"""Calls per second of ``ToolRegistry.call`` against the bare function and ``validate_call``.

One 3-argument typed tool, three ways, measured side by side in one run: interleaved batches,
so that a noisy neighbour slows all three alike. Prints one JSON line per figure.

A fourth way is the same call through the ``tollgate`` package's enforcement path, in process:
``ControlTower.execute_async`` (async only, so driven like the registry) with a YAML policy
that allows the tool, a manifest (``ToolRegistry``) that gives its effect and a typed
``params_schema`` for the three arguments, and an audit sink that drops its events (lockgate's
audit logger is disabled here too: nothing configures logging). Each call resolves the tool in
the manifest and builds its ``ToolRequest``, as tollgate's MCP integration does.

    python bench/pipeline.py [--batches 41] [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from pydantic import validate_call

from lockgate import ToolRegistry, tool

TARGET_RATIO = 2.0


def bare_add(a: int, b: int, label: str) -> dict[str, Any]:
    return {"sum": a + b, "label": label}


@tool("bench:add", "Add two numbers and label the sum.")
def governed_add(a: int, b: int, label: str) -> dict[str, Any]:
    return {"sum": a + b, "label": label}


validated_add = validate_call(bare_add)

TOLLGATE_MANIFEST = """
version: "1"
tools:
  "bench:add":
    effect: read
    resource_type: numbers
    params_schema:
      type: object
      required: [a, b, label]
      properties:
        a: {type: integer}
        b: {type: integer}
        label: {type: string}
"""

TOLLGATE_POLICY = """
version: "1"
rules:
  - id: allow-bench-add
    tool: "bench:add"
    action: add
    decision: ALLOW
    reason: The benchmark's tool may always run.
"""


class _DroppedAudit:
    """An audit sink that drops every event (tollgate still builds each one)."""

    def emit(self, event: Any) -> None:
        return None


class TollgateAdd:
    """``bench:add`` through tollgate's ControlTower, configured to allow it."""

    def __init__(self, directory: Path) -> None:
        import tollgate

        (directory / "manifest.yaml").write_text(TOLLGATE_MANIFEST)
        (directory / "policy.yaml").write_text(TOLLGATE_POLICY)
        self.tollgate = tollgate
        self.registry = tollgate.ToolRegistry(directory / "manifest.yaml")
        self.tower = tollgate.ControlTower(
            policy=tollgate.YamlPolicyEvaluator(directory / "policy.yaml"),
            approver=tollgate.AutoApprover(),
            audit=_DroppedAudit(),
            registry=self.registry,
        )
        self.agent = tollgate.AgentContext(agent_id="bench", version="1", owner="bench")
        self.intent = tollgate.Intent(action="add", reason="benchmark")

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        effect, resource_type, manifest_version = self.registry.resolve_tool(name)
        request = self.tollgate.ToolRequest(
            tool=name,
            action="add",
            resource_type=resource_type,
            effect=effect,
            params=arguments,
            manifest_version=manifest_version,
        )

        async def execute() -> dict[str, Any]:
            return bare_add(**arguments)

        return await self.tower.execute_async(self.agent, self.intent, request, execute)


def emit(metric: str, value: float, unit: str, target: float | None = None) -> None:
    line = {"bench": "pipeline", "metric": metric, "value": round(value, 3), "target": target}
    line["unit"] = unit
    print(json.dumps(line), flush=True)


def time_sync(function: Callable[..., Any], calls: int) -> float:
    arguments = {"a": 1, "b": 2, "label": "x"}
    started = time.perf_counter()
    for _ in range(calls):
        function(**arguments)
    return time.perf_counter() - started


async def time_registry(
    call: Callable[[str, dict[str, Any]], Coroutine[Any, Any, Any]], calls: int
) -> float:
    arguments = {"a": 1, "b": 2, "label": "x"}
    started = time.perf_counter()
    for _ in range(calls):
        await call("bench:add", arguments)
    return time.perf_counter() - started


async def main(batches: int, calls: int) -> None:
    registry = ToolRegistry()
    registry.register(governed_add)
    check = await registry.call("bench:add", {"a": 1, "b": 2, "label": "x"})
    assert check.success and check.data == {"sum": 3, "label": "x"}, check
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as scratch:
        tollgate_add = TollgateAdd(Path(scratch))
    answer = await tollgate_add.call("bench:add", {"a": 1, "b": 2, "label": "x"})
    assert answer == {"sum": 3, "label": "x"}, answer

    registry_seconds: list[float] = []
    validate_seconds: list[float] = []
    bare_seconds: list[float] = []
    tollgate_seconds: list[float] = []
    ratios: list[float] = []
    tollgate_ratios: list[float] = []
    for _ in range(batches):
        seconds_registry = await time_registry(registry.call, calls)
        seconds_validate = time_sync(validated_add, calls)
        seconds_bare = time_sync(bare_add, calls)
        seconds_tollgate = await time_registry(tollgate_add.call, calls)
        registry_seconds.append(seconds_registry)
        validate_seconds.append(seconds_validate)
        bare_seconds.append(seconds_bare)
        tollgate_seconds.append(seconds_tollgate)
        ratios.append(seconds_registry / seconds_validate)
        # registry/tollgate in calls per second: how many registry calls per tollgate call.
        tollgate_ratios.append(seconds_tollgate / seconds_registry)

    emit("registry_calls_per_second", calls / statistics.median(registry_seconds), "calls/s")
    emit("validate_call_calls_per_second", calls / statistics.median(validate_seconds), "calls/s")
    emit("bare_calls_per_second", calls / statistics.median(bare_seconds), "calls/s")
    emit("registry_over_validate_call", statistics.median(ratios), "ratio", TARGET_RATIO)
    emit(
        "registry_over_bare",
        statistics.median(registry_seconds) / statistics.median(bare_seconds),
        "ratio",
    )
    emit("tollgate_calls_per_second", calls / statistics.median(tollgate_seconds), "calls/s")
    emit("registry_over_tollgate_calls_per_second", statistics.median(tollgate_ratios), "ratio")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=41)
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()
    asyncio.run(main(options.batches, options.calls))

"""Calls per second of ``ToolRegistry.call`` against the bare function and ``validate_call``.

One 3-argument typed tool, three ways, measured side by side in one run: interleaved batches,
so that a noisy neighbour slows all three alike. Prints one JSON line per figure.

    python bench/pipeline.py [--batches 41] [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable, Coroutine
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

    registry_seconds: list[float] = []
    validate_seconds: list[float] = []
    bare_seconds: list[float] = []
    ratios: list[float] = []
    for _ in range(batches):
        seconds_registry = await time_registry(registry.call, calls)
        seconds_validate = time_sync(validated_add, calls)
        seconds_bare = time_sync(bare_add, calls)
        registry_seconds.append(seconds_registry)
        validate_seconds.append(seconds_validate)
        bare_seconds.append(seconds_bare)
        ratios.append(seconds_registry / seconds_validate)

    emit("registry_calls_per_second", calls / statistics.median(registry_seconds), "calls/s")
    emit("validate_call_calls_per_second", calls / statistics.median(validate_seconds), "calls/s")
    emit("bare_calls_per_second", calls / statistics.median(bare_seconds), "calls/s")
    emit("registry_over_validate_call", statistics.median(ratios), "ratio", TARGET_RATIO)
    emit(
        "registry_over_bare",
        statistics.median(registry_seconds) / statistics.median(bare_seconds),
        "ratio",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=41)
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()
    asyncio.run(main(options.batches, options.calls))

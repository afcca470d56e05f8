"""History bytes of an essay run: lockgate against the hand-written floor.

What a run writes to its history is what a shop stores, and sends on every read of it (each
worker that replays the run, the Temporal UI, an export); Temporal Cloud bills storage on it.
This script weighs the two flows of ``bench/actions.py``, run the same way (each run on a fresh
task queue and worker in this process, every run of the flow found as that script finds them):

- ``gated_essay``: ``examples/essay_review.py``'s graph started signed by ``ada`` with a rubric
  no draft meets, so it parks at the editor gate after four rounds of write and grade; ``ed``
  answers ``publish_as_is`` through ``GraphClient.decide``. The floor is the hand-written
  ``HandEssay`` of ``bench._workloads`` with write and grade as local activities, started
  eagerly, its ``decide`` update sent at once (the handler waits for the gate): the same work
  with the fewest events a hand-written app of this shape writes, and no checks at all.
- ``passing_essay``: the same, with a rubric the first draft meets (no gate).

The bytes counted (``bench/_histories.py``): the **history bytes**, the size of every run's
events serialized as a ``temporal.api.history.v1.History`` message, summed over the flow's
runs. That is the measure a shop pays for (storage and egress), and it is the figure with the
target: ``gated_essay_bytes_over_floor`` (target 2.0), the median over ``--repeats`` of each
repeat's lockgate bytes over its floor bytes (the two sides run back to back). For information,
the **payload bytes** (the sum of ``Payload.ByteSize()`` over every payload in those events:
what the application chose to write, and what a payload codec encrypts) and each side's bytes by
event type, which say where a difference comes from.

    python bench/history.py [--repeats 3]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import functools
import statistics
import uuid
from datetime import datetime, timezone

from temporalio.client import Client

from bench._exit import leave
from bench._histories import Weight, weigh
from bench._workloads import dev_server, emit, median_ratio
from bench.actions import FLOWS, PEOPLE, counting_client, flow_runs, worker_for
from lockgate.testing import Identities

BENCH = "history"
TARGET_GATED_ESSAY_BYTES_OVER_FLOOR = 2.0
FIGURES = {"gated_essay": "gate_flow", "passing_essay": "pass_flow"}
"""Each figure's flow, as ``bench/actions.py`` names it."""
SIDES = ("lockgate", "floor")


async def weigh_flow(client: Client, flow: str, side: str, people: Identities) -> Weight:
    """One run of ``flow`` on ``side`` (a fresh task queue and worker): its histories' weight."""
    task_queue = f"bench-history-{flow}-{side}-{uuid.uuid4().hex[:8]}"
    counted, calls = counting_client(client)
    async with worker_for(side, counted, task_queue, people):
        began = datetime.now(timezone.utc)
        await FLOWS[flow][side](counted, task_queue, people)
        runs, _ = await flow_runs(client, task_queue, calls.started, began)
    return functools.reduce(Weight.__add__, (weigh(run.events) for run in runs), Weight())


async def main(repeats: int) -> None:
    people = Identities(PEOPLE)
    weights: dict[tuple[str, str], list[Weight]] = {
        (figure, side): [] for figure in FIGURES for side in SIDES
    }
    async with dev_server() as environment:
        for repeat in range(repeats):
            for figure, flow in FIGURES.items():
                for side in SIDES if repeat % 2 == 0 else SIDES[::-1]:
                    weights[figure, side].append(
                        await weigh_flow(environment.client, flow, side, people)
                    )
    for (figure, side), measured in weights.items():
        sizes = [weight.history_bytes for weight in measured]
        shown = measured[sizes.index(statistics.median_low(sizes))]
        emit(
            BENCH,
            f"{figure}_history_bytes_{side}",
            statistics.median(sizes),
            "bytes",
            payload_bytes=shown.payload_bytes,
            events=shown.events,
            runs=sizes,
            **shown.breakdown(),
        )
    for figure in FIGURES:
        lockgate, floor = weights[figure, "lockgate"], weights[figure, "floor"]
        emit(
            BENCH,
            f"{figure}_bytes_over_floor",
            median_ratio([w.history_bytes for w in lockgate], [w.history_bytes for w in floor]),
            "ratio",
            TARGET_GATED_ESSAY_BYTES_OVER_FLOOR if figure == "gated_essay" else None,
            measured="serialized History message of every run of the flow, fetch_history()",
            repeats=repeats,
        )
        emit(
            BENCH,
            f"{figure}_payload_bytes_over_floor",
            median_ratio([w.payload_bytes for w in lockgate], [w.payload_bytes for w in floor]),
            "ratio",
            measured="sum of Payload.ByteSize() over those events",
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each flow on each side")
    options = parser.parse_args()
    asyncio.run(main(options.repeats))
    leave()

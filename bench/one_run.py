"""Where one run's time goes: an essay run on `lockgate dev`'s own server, read from its history.

A profile of a single run, as the server saw it. After a few warm-up runs, one signed
``essay:review`` run that passes first time (write, grade, publish) is started beside its
worker, and its history's event times are split into what waited and what worked:

- ``workflow_task_ms``: workflow tasks, from started to completed — the worker running the
  graph's interpreter, including the local activities it runs inside a task (lockgate's own
  checks, and the tools declared ``local=True``);
- ``workflow_task_queue_ms``: workflow tasks, from scheduled to started — waiting to be handed
  to the worker (zero when it comes back eagerly in a reply);
- ``activity_ms``: regular activities (tools that mutate), from started to completed;
- ``activity_queue_ms``: regular activities, from scheduled to started;
- ``server_ms``: the rest of the run's span — the server between one event and the next.

Each figure is the median over ``--repeats`` runs, with the run's end-to-end span beside them
and the share each takes of it; ``run_ms`` also counts the run's workflow tasks, regular
activities and markers (local activities, and the version's patch marker).

    python bench/one_run.py [--repeats 9]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import statistics
import tempfile
from collections.abc import Sequence

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.worker import Worker

from bench._exit import leave
from bench._workloads import emit, stdout_to_stderr
from lockgate import GraphClient, LockgatePlugin
from lockgate.devserver import DevServer, free_port
from lockgate.examples.essay_review import EssayReview
from lockgate.testing import Identities

BENCH = "one_run"
PASSES_FIRST_TIME = {"title": "Tides and the moon", "rubric": "tides, moon"}

_STARTS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED: "workflow_task",
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: "activity",
}


def _ms(event: HistoryEvent) -> float:
    return event.event_time.seconds * 1000 + event.event_time.nanos / 1e6


def spans(events: Sequence[HistoryEvent]) -> dict[str, float]:
    """Milliseconds of the run spent in each kind of span (see the module's docstring)."""
    found = {
        "workflow_task_queue": 0.0,
        "workflow_task": 0.0,
        "activity_queue": 0.0,
        "activity": 0.0,
    }
    scheduled_at: dict[int, tuple[str, float]] = {}
    started_at: dict[int, tuple[str, float]] = {}
    for event in events:
        kind = _STARTS.get(event.event_type)
        if kind is not None:
            scheduled_at[event.event_id] = (kind, _ms(event))
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            scheduled = event.workflow_task_started_event_attributes.scheduled_event_id
            kind, at = scheduled_at[scheduled]
            found["workflow_task_queue"] += _ms(event) - at
            started_at[event.event_id] = (kind, _ms(event))
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            scheduled = event.activity_task_started_event_attributes.scheduled_event_id
            kind, at = scheduled_at[scheduled]
            found["activity_queue"] += _ms(event) - at
            started_at[event.event_id] = (kind, _ms(event))
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            started = event.workflow_task_completed_event_attributes.started_event_id
            found["workflow_task"] += _ms(event) - started_at[started][1]
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            started = event.activity_task_completed_event_attributes.started_event_id
            found["activity"] += _ms(event) - started_at[started][1]
    found["run"] = _ms(events[-1]) - _ms(events[0])
    found["workflow_tasks"] = sum(
        event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for event in events
    )
    found["activities"] = sum(
        event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED for event in events
    )
    found["markers"] = sum(
        event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED for event in events
    )
    found["server"] = found["run"] - sum(
        found[key] for key in ("workflow_task_queue", "workflow_task", "activity_queue", "activity")
    )
    return found


async def one_run(runs: GraphClient) -> list[HistoryEvent]:
    run = await runs.start(EssayReview, PASSES_FIRST_TIME)
    assert run["status"] == "finished", run
    history = await runs.client.get_workflow_handle(run["run_id"]).fetch_history()
    return list(history.events)


async def main(repeats: int, warmup: int) -> None:
    people = Identities({"wren": {"scopes": ["essay:publish"]}})
    with tempfile.TemporaryDirectory() as scratch:
        server = DevServer(port=free_port(), ui=False, db_file=Path(scratch) / "temporal.db")
        with stdout_to_stderr():  # the server prints a banner on the descriptor it inherits
            await server.start()
        try:
            client = server.client
            plugin = LockgatePlugin(
                graphs=[EssayReview], directory=people.directory, secret=people.secret
            )
            async with Worker(client, task_queue="bench-one-run", plugins=[plugin]):
                runs = GraphClient(client, "bench-one-run", signer=people.signer("wren"))
                for _ in range(warmup):
                    await one_run(runs)
                measured = [spans(await one_run(runs)) for _ in range(repeats)]
        finally:
            await server.stop()
    kinds = {name: statistics.median(span[name] for span in measured) for name in measured[0]}
    whole = kinds["run"]
    counts = {name: int(kinds[name]) for name in ("workflow_tasks", "activities", "markers")}
    emit(BENCH, "run_ms", whole, "ms", repeats=repeats, **counts)
    for name in ("workflow_task", "workflow_task_queue", "activity", "activity_queue", "server"):
        emit(BENCH, f"{name}_ms", kinds[name], "ms", share=round(kinds[name] / whole, 3))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=3)
    options = parser.parse_args()
    asyncio.run(main(options.repeats, options.warmup))
    leave()

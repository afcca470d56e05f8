"""Graphs the reliability tests run, importable by worker subprocesses
(`tests.helpers.reliability_graphs`).

- ``loop:count`` counts to a target, one node step per count: a long run without a human.
- ``job:slow`` runs one node that waits for a release file, recording who started it with which
  idempotency key and each side effect it had: for killing workers and restarting servers.
- ``doc:review`` in two versions whose approve routes differ: for graph evolution and rolling
  upgrades (``ROLL_OLD_*`` serve version 1, ``ROLL_NEW_*`` both).
- ``relay:local`` runs two local tools, a mutating one that waits for a release file, and a slow
  local one that waits for another: for killing a worker while a local activity runs. Each tool
  writes a line per run to ``runs`` in the run's folder, with its idempotency key and process.
"""

from __future__ import annotations

import asyncio
import os
from enum import Enum
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel

from lockgate import Ask, Edge, Route, Target, ToolContext, graph, tool


class Progress(str, Enum):
    AGAIN = "AGAIN"
    DONE = "DONE"


class Overrun(str, Enum):
    STOP = "stop"


class Counted(BaseModel):
    counter: int
    progress: Progress


class Finished(BaseModel):
    finished: bool


@tool("loop:count", "Count one more.")
async def count(counter: int, target: int) -> Counted:
    counter += 1
    return Counted(counter=counter, progress=Progress.DONE if counter >= target else Progress.AGAIN)


@tool("loop:finish", "Say it is done.")
async def finish() -> Finished:
    return Finished(finished=True)


@graph(
    "loop:count",
    "Count to a target, one node step per count.",
    start=count,
    routes=[
        Route(Progress.AGAIN, to=count, at_most=1_000_000, then_ask=Overrun),
        Route(Progress.DONE, to=finish),
        Route(Overrun.STOP, to=finish),
    ],
    asks=[Ask(Overrun, of="operator", because="The count ran past its budget.")],
    # Its gate only catches a runaway count; there is no work anyone approves.
    allow_unsigned_start=True,
)
class CountTo(BaseModel):
    target: Annotated[int, Target()]
    counter: int = 0
    progress: Progress | None = None
    finished: bool = False


class Worked(BaseModel):
    result: str


@tool(
    "job:work", "Wait for the release file, then do the work once more.", heartbeat=1.0, timeout=120
)
async def work(job: str, release_dir: str, ctx: ToolContext) -> Worked:
    folder = Path(release_dir)
    key = str(ctx.extra.get("idempotency_key"))
    with (folder / "started").open("a") as started:
        started.write(f"{job} {key} {os.getpid()}\n")
    while not (folder / "release").exists():
        await asyncio.sleep(0.05)
    with (folder / "effects").open("a") as effects:
        effects.write(f"{job} {key}\n")
    return Worked(result=f"{job} done")


@graph("job:slow", "One slow node that waits for a release file.", start=work)
class SlowJob(BaseModel):
    job: Annotated[str, Target()]
    release_dir: str
    result: str = ""


class Review(str, Enum):
    APPROVE = "approve"
    REJECT = "reject"


class Drafted(BaseModel):
    text: str


class Outcome(BaseModel):
    outcome: str


@tool("doc:draft", "Draft the document.")
async def draft(title: str) -> Drafted:
    return Drafted(text=f"{title}, drafted")


@tool("doc:publish", "Publish the document.")
async def publish(text: str) -> Outcome:
    return Outcome(outcome="published")


@tool("doc:archive", "Archive the document unpublished.")
async def archive(text: str) -> Outcome:
    return Outcome(outcome="archived")


@graph(
    "doc:review",
    "Draft, review, publish (version 1).",
    start=draft,
    edges=[Edge(draft, Review)],
    routes=[Route(Review.APPROVE, to=publish), Route(Review.REJECT, to=archive)],
    asks=[Ask(Review, of="editor", because="A document goes out only once reviewed.")],
    version=1,
)
class DocReviewV1(BaseModel):
    title: Annotated[str, Target()]
    text: str = ""
    outcome: str = ""


@graph(
    "doc:review",
    "Draft, review, archive (version 2: approval now archives).",
    start=draft,
    edges=[Edge(draft, Review)],
    routes=[Route(Review.APPROVE, to=archive), Route(Review.REJECT, to=archive)],
    asks=[Ask(Review, of="editor", because="A document goes out only once reviewed.")],
    version=2,
)
class DocReviewV2(BaseModel):
    title: Annotated[str, Target()]
    text: str = ""
    outcome: str = ""


TOOLS = [count, finish, work, draft, publish, archive]
GRAPHS = [CountTo, SlowJob]

ROLL_OLD_TOOLS = [count, finish, draft, publish, archive]
ROLL_OLD_GRAPHS = [CountTo, DocReviewV1]
"""What the workers serve before a rolling upgrade: ``doc:review`` version 1."""

ROLL_NEW_TOOLS = ROLL_OLD_TOOLS
ROLL_NEW_GRAPHS = [CountTo, DocReviewV1, DocReviewV2]
"""What the workers serve after it: ``doc:review`` version 2, and version 1 for the runs on it."""


def _record(folder: str, tool: str, event: str, ctx: ToolContext) -> None:
    with (Path(folder) / "runs").open("a") as runs:
        runs.write(f"{tool} {event} {ctx.extra.get('idempotency_key')} {os.getpid()}\n")


async def _released(folder: str, name: str) -> None:
    while not (Path(folder) / name).exists():
        await asyncio.sleep(0.05)


class Gathered(BaseModel):
    gathered: bool


class Checked(BaseModel):
    checked: bool


class Committed(BaseModel):
    committed: bool


class Tallied(BaseModel):
    tallied: bool


@tool("relay:gather", "Gather what the run needs (local).", local=True)
async def gather(folder: str, ctx: ToolContext) -> Gathered:
    _record(folder, "gather", "ran", ctx)
    return Gathered(gathered=True)


@tool("relay:check", "Check it (local).", local=True)
async def check(folder: str, ctx: ToolContext) -> Checked:
    _record(folder, "check", "ran", ctx)
    return Checked(checked=True)


@tool("relay:commit", "Commit it, once the commit-release file exists.", mutating=True)
async def commit(folder: str, ctx: ToolContext) -> Committed:
    _record(folder, "commit", "started", ctx)
    await _released(folder, "commit-release")
    _record(folder, "commit", "done", ctx)
    return Committed(committed=True)


@tool(
    "relay:tally", "Tally up (local), once the tally-release file exists.", local=True, timeout=60
)
async def tally(folder: str, ctx: ToolContext) -> Tallied:
    _record(folder, "tally", "started", ctx)
    await _released(folder, "tally-release")
    _record(folder, "tally", "done", ctx)
    return Tallied(tallied=True)


@graph(
    "relay:local",
    "Gather and check (local), commit (mutating, regular), tally (local, slow).",
    start=gather,
    edges=[Edge(gather, check), Edge(check, commit), Edge(commit, tally)],
)
class LocalRelay(BaseModel):
    folder: Annotated[str, Target()]
    gathered: bool = False
    checked: bool = False
    committed: bool = False
    tallied: bool = False


RELAY_TOOLS = [gather, check, commit, tally]
RELAY_GRAPHS = [LocalRelay]

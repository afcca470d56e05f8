"""Clear a memo for release: prepare it, check it, and release it only when it is clean.

A memo that still reads dirty after one more preparation goes to an officer, who releases it as
it is or shelves it. Releasing needs the scope ``memo:release``.

- ``memo="Quarterly numbers. TODO: round them"``: prepared, checked clean, released.
- ``memo="Merger talks (classified)"``: prepared and checked twice, still dirty, the officer
  decides.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated

from pydantic import BaseModel

from lockgate import Ask, Because, Edge, Route, Target, graph, tool


class Scan(str, Enum):
    CLEAN = "CLEAN"
    DIRTY = "DIRTY"


class Signoff(str, Enum):
    RELEASE = "release"
    SHELVE = "shelve"


class Prepared(BaseModel):
    memo: str


class CheckReport(BaseModel):
    findings: str
    scan: Scan


class Released(BaseModel):
    released: bool


# Preparing and checking change nothing: local activities (releasing and shelving stay regular).
@tool("memo:prepare", "Tidy the memo: drop notes to self.", local=True)
async def prepare(memo: str) -> Prepared:
    kept = [line for line in memo.split(". ") if not line.startswith("TODO")]
    return Prepared(memo=". ".join(kept))


@tool("memo:check", "Look for anything that may not leave the building.", local=True)
async def check(memo: str) -> CheckReport:
    if "classified" in memo.lower():
        return CheckReport(findings="Mentions classified material.", scan=Scan.DIRTY)
    return CheckReport(findings="Nothing to hold it back.", scan=Scan.CLEAN)


@tool("memo:release", "Release the memo.", scopes=["memo:release"], mutating=True)
async def release(memo: str) -> Released:
    return Released(released=True)


@tool("memo:shelve", "Shelve the memo unreleased.", mutating=True)
async def shelve(memo: str) -> None:
    return None


@graph(
    "memo:clearance",
    "Prepare a memo, check it, and release it once it is clean.",
    start=prepare,
    edges=[Edge(prepare, check)],
    routes=[
        Route(Scan.CLEAN, to=release),
        Route(Scan.DIRTY, to=prepare, at_most=1, then_ask=Signoff),
        Route(Signoff.RELEASE, to=release),
        Route(Signoff.SHELVE, to=shelve),
    ],
    asks=[
        Ask(
            Signoff,
            of="officer",
            because="The memo still reads dirty after a second pass.",
            rejection=Signoff.SHELVE,
        )
    ],
)
class MemoClearance(BaseModel):
    memo: Annotated[str, Target(), Because("The memo to clear")]
    findings: str = ""
    scan: Scan | None = None
    released: bool = False


TOOLS = [prepare, check, release, shelve]
GRAPHS = [MemoClearance]

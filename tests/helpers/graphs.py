"""Graphs the graph tests declare, and the few helpers those tests share.

Well-formed graphs (``Ledger``, ``Launch``) run on the dev server to pin authority per node. The
malformed ones each break exactly one rule of the compiler, one per refusal of behaviour.md §2.3
(rows 1–19) plus the extra refusals lockgate adds; their names follow the seed's fixtures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from enum import Enum
from typing import Annotated, Any, TypeVar
from uuid import uuid4

from pydantic import BaseModel, ConfigDict, Field
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from lockgate import Appends, Ask, Because, Edge, Route, Signer, Target, graph, tool
from lockgate.examples import essay_review as essay
from lockgate.identity._bindings import answer_binding, resume_binding
from lockgate.testing import Identities

# --- Inputs of the three measured paths of the orchestrator README (examples/essay_review.py) ---

PASSES_FIRST_TIME = {"title": "Tides and the moon", "rubric": "tides, moon"}
FAILS_ONCE = {"title": "Tides", "rubric": "tides, gravity"}
ALWAYS_FAILS = {"title": "Tides", "rubric": "gravity, moon, salt, wind, orbit"}
DIRTY_MEMO = {"memo": "Merger talks (classified)"}

TRAIL_ROW_KEYS = frozenset(
    {"node", "operation", "outcome", "by", "at", "needs", "answer", "why", "code"}
)
ACTOR_KEYS = frozenset({"actor", "verified", "channel", "principal", "authorization"})


# --- Enums and results ---------------------------------------------------------------------------


class Verdict(str, Enum):
    PASSED = "PASSED"
    FAILED = "FAILED"


class Mood(str, Enum):
    CALM = "calm"
    CROSS = "cross"


class Choice(str, Enum):
    GO = "go"
    STOP = "stop"


class Spare(str, Enum):
    KEEP = "keep"
    DROP = "drop"


class Go(str, Enum):
    PROCEED = "proceed"
    HALT = "halt"


class Draft(BaseModel):
    draft: str


class Graded(BaseModel):
    verdict: Verdict


class GradedWithMood(BaseModel):
    verdict: Verdict
    mood: Mood


class Published(BaseModel):
    url: str


# --- Tools the malformed graphs name -------------------------------------------------------------


@tool("test:write", "Write a draft.")
async def write(title: str) -> Draft:
    return Draft(draft=title)


@tool("other:write", "Write a draft too, under a name that ends like test:write.")
async def write_again(title: str) -> Draft:
    return Draft(draft=title)


@tool("test:second", "A node that follows write.")
async def second(title: str) -> None:
    return None


@tool("test:grade", "Grade the draft.")
async def grade(draft: str) -> Graded:
    return Graded(verdict=Verdict.PASSED)


@tool("test:regrade", "Grade the draft a second way.")
async def regrade(draft: str) -> Graded:
    return Graded(verdict=Verdict.PASSED)


@tool("test:judge", "Grade the draft and say how it felt.")
async def judge(draft: str) -> GradedWithMood:
    return GradedWithMood(verdict=Verdict.PASSED, mood=Mood.CALM)


@tool("test:publish", "Publish.", scopes=["test:publish"])
async def publish(title: str) -> Published:
    return Published(url=f"https://example.test/{title}")


@tool("test:abandon", "Abandon.")
async def abandon(title: str) -> None:
    return None


@tool("test:stranger", "Reads a field nobody declared.")
async def stranger(title: str, colour: str) -> None:
    return None


@tool("test:risky", "Asks for a confirmation on every call.", confirm=True)
async def risky(title: str) -> None:
    return None


async def not_a_tool(title: str) -> None:
    """A plain coroutine function: no @tool, so not a usable node."""


class Fields(BaseModel):
    """The fields most malformed graphs share."""

    title: str
    draft: str = ""
    verdict: Verdict | None = None
    url: str | None = None


# --- Malformed declarations: behaviour.md §2.3 rows 1–19 ----------------------------------------

MISSING_CLASS = "tests.helpers.graphs:Missing"  # row 1


class Writer(BaseModel):  # row 2: no @graph
    title: str


@graph("test:no-start", "No start.", edges=[Edge(write, second)])
class NoStart(Fields):  # row 3
    pass


@graph("test:duplicate-states", "Two writes.", start=write, edges=[Edge(write, write_again)])
class DuplicateStates(Fields):  # row 4
    pass


@graph("test:stranger-field", "Reads a stranger.", start=stranger)
class StrangerField(Fields):  # row 5
    pass


@graph("test:stateless", "Not a model.", start=write)
class Stateless:  # row 6
    pass


@graph("test:fieldless", "No fields.", start=write)
class Fieldless(BaseModel):  # row 7
    pass


@graph("test:reserved", "Declares _taken.", start=write)
class ReservedField(Fields):  # row 8
    _taken: dict[str, int] = {}


@graph("test:mute", "A plain function as a node.", start=not_a_tool)
class Mute(Fields):  # row 9
    pass


@graph(
    "test:zero-budget",
    "at_most=0.",
    start=write,
    edges=[Edge(write, grade)],
    routes=[
        Route(Verdict.PASSED, to=publish),
        Route(Verdict.FAILED, to=write, at_most=0, then_ask=Choice),
        Route(Choice.GO, to=publish),
        Route(Choice.STOP, to=abandon),
    ],
    asks=[Ask(Choice, of="editor")],
)
class ZeroBudget(Fields):  # row 10
    pass


@graph(
    "test:budget-without-ask",
    "at_most without then_ask.",
    start=write,
    edges=[Edge(write, grade)],
    routes=[Route(Verdict.PASSED, to=publish), Route(Verdict.FAILED, to=write, at_most=3)],
)
class BudgetWithoutAsk(Fields):  # row 11
    pass


@graph(
    "test:unbudgeted",
    "write → second → write, forever.",
    start=write,
    edges=[Edge(write, second), Edge(second, write)],
)
class Unbudgeted(Fields):  # row 12
    pass


@graph(
    "test:partial",
    "Only PASSED is routed.",
    start=write,
    edges=[Edge(write, grade)],
    routes=[Route(Verdict.PASSED, to=publish)],
)
class Partial(Fields):  # row 13
    pass


@graph(
    "test:two-enums",
    "judge routes on Verdict and on Mood.",
    start=write,
    edges=[Edge(write, judge)],
    routes=[
        Route(Verdict.PASSED, to=publish),
        Route(Verdict.FAILED, to=abandon),
        Route(Mood.CALM, to=publish),
        Route(Mood.CROSS, to=abandon),
    ],
)
class TwoEnums(Fields):  # row 14
    mood: Mood | None = None


@graph(
    "test:not-an-enum",
    "Asks with a str.",
    start=write,
    edges=[Edge(write, publish)],
    asks=[Ask(str, of="editor")],  # type: ignore[arg-type]
)
class NotAnEnum(Fields):  # row 15
    pass


@graph(
    "test:orphan",
    "Routes on Mood, which nobody produces.",
    start=write,
    edges=[Edge(write, grade)],
    routes=[
        Route(Verdict.PASSED, to=publish),
        Route(Verdict.FAILED, to=abandon),
        Route(Mood.CALM, to=publish),
    ],
)
class Orphan(Fields):  # row 16
    pass


@graph(
    "test:stranger-origin",
    "from_ is a plain function.",
    start=write,
    edges=[Edge(write, grade)],
    routes=[
        Route(Verdict.PASSED, to=publish, from_=not_a_tool),
        Route(Verdict.FAILED, to=abandon, from_=not_a_tool),
    ],
)
class StrangerOrigin(Fields):  # row 17
    pass


@graph(
    "test:ambiguous",
    "grade and regrade both return a Verdict.",
    start=write,
    edges=[Edge(write, grade), Edge(grade, regrade)],
    routes=[Route(Verdict.PASSED, to=publish), Route(Verdict.FAILED, to=abandon)],
)
class Ambiguous(Fields):  # row 18
    pass


@graph("test:risky-graph", "A confirm=True node.", start=write, edges=[Edge(write, risky)])
class RiskyGraph(Fields):  # row 19
    pass


# --- Malformed declarations lockgate refuses besides the seed's rows -----------------------------


@graph("test:twin", "One of two graphs with one name.", start=write)
class TwinOne(Fields):
    pass


@graph("test:twin", "The other of two graphs with one name.", start=write)
class TwinTwo(Fields):
    pass


@graph(
    "test:edge-and-routes",
    "grade has an edge and routes.",
    start=write,
    edges=[Edge(write, grade), Edge(grade, publish)],
    routes=[Route(Verdict.PASSED, to=publish), Route(Verdict.FAILED, to=abandon)],
)
class EdgeAndRoutes(Fields):
    pass


@graph(
    "test:unreached-ask",
    "Nothing leads to the Spare gate.",
    start=write,
    edges=[Edge(write, grade)],
    routes=[
        Route(Verdict.PASSED, to=publish),
        Route(Verdict.FAILED, to=abandon),
        Route(Spare.KEEP, to=publish),
        Route(Spare.DROP, to=abandon),
    ],
    asks=[Ask(Spare, of="editor")],
)
class UnreachedAsk(Fields):
    pass


@graph(
    "test:then-ask-without-budget",
    "then_ask without at_most.",
    start=write,
    edges=[Edge(write, grade)],
    routes=[
        Route(Verdict.PASSED, to=publish),
        Route(Verdict.FAILED, to=write, then_ask=Choice),
        Route(Choice.GO, to=publish),
        Route(Choice.STOP, to=abandon),
    ],
    asks=[Ask(Choice, of="editor")],
)
class ThenAskWithoutBudget(Fields):
    pass


# --- Well-formed graphs that run ------------------------------------------------------------------


class Entry(BaseModel):
    entry: str


class Posted(BaseModel):
    posted: bool


class Filed(BaseModel):
    filed: bool


@tool("ledger:draft", "Draft the entry.")
async def draft_entry(entry: str) -> Entry:
    return Entry(entry=entry.strip())


@tool("ledger:post", "Post the entry to the ledger.", scopes=["ledger:post"], mutating=True)
async def post_entry(entry: str) -> Posted:
    return Posted(posted=True)


@tool("ledger:file", "File the posted entry.")
async def file_entry(entry: str) -> Filed:
    return Filed(filed=True)


@graph(
    "ledger:entry",
    "Draft an entry, post it (needs ledger:post), file it. No gate: whoever starts drives.",
    start=draft_entry,
    edges=[Edge(draft_entry, post_entry), Edge(post_entry, file_entry)],
)
class Ledger(BaseModel):
    entry: Annotated[str, Target(), Because("The ledger entry")]
    posted: bool = False
    filed: bool = False


class Staged(BaseModel):
    staged: bool


class Fired(BaseModel):
    fired: bool


@tool("launch:intake", "Take the request in.")
async def intake(mission: str) -> None:
    return None


@tool("launch:stage", "Stage the rocket (anyone may).")
async def stage(mission: str) -> Staged:
    return Staged(staged=True)


@tool("launch:fire", "Fire it.", scopes=["launch:fire"], mutating=True)
async def fire(mission: str) -> Fired:
    return Fired(fired=True)


@tool("launch:scrub", "Scrub the launch.")
async def scrub(mission: str) -> None:
    return None


@graph(
    "launch:mission",
    "Intake, a controller's go, stage, fire. Only the first node after the gate is judged "
    "before the answer is recorded.",
    start=intake,
    edges=[Edge(intake, Go), Edge(stage, fire)],
    routes=[Route(Go.PROCEED, to=stage), Route(Go.HALT, to=scrub)],
    asks=[Ask(Go, of="controller", because="A human says go.")],
)
class Launch(BaseModel):
    mission: Annotated[str, Target(), Because("The mission")]
    staged: bool = False
    fired: bool = False
    log: Annotated[list[bool], Appends("staged")] = []


def _essay_routes(at_most: int) -> list[Route]:
    """essay:review's routes (examples/essay_review.py), with a loop budget of ``at_most``."""
    return [
        Route(essay.Verdict.PASSED, to=essay.publish),
        Route(essay.Verdict.FAILED, to=essay.write, at_most=at_most, then_ask=essay.EditorCall),
        Route(essay.EditorCall.PUBLISH_AS_IS, to=essay.publish),
        Route(essay.EditorCall.ONE_MORE_ROUND, to=essay.write),
        Route(essay.EditorCall.ABANDON, to=essay.abandon),
    ]


@graph(
    "essay:open",
    "essay:review as a graph anyone may start unsigned: its gate keeps only makers out.",
    start=essay.write,
    edges=[Edge(essay.write, essay.grade)],
    routes=_essay_routes(at_most=3),
    asks=[Ask(essay.EditorCall, of="editor", because="Three drafts in a row failed the rubric.")],
    allow_unsigned_start=True,
)
class OpenEssay(essay.EssayReview):
    pass


@graph(
    "test:essay-taking-more",
    'essay:review whose model declares extra="allow": inputs beyond its fields are dropped.',
    start=essay.write,
    edges=[Edge(essay.write, essay.grade)],
    routes=_essay_routes(at_most=3),
    asks=[Ask(essay.EditorCall, of="editor", because="Three drafts in a row failed the rubric.")],
)
class EssayTakingMore(essay.EssayReview):
    model_config = ConfigDict(extra="allow")


@graph(
    "essay:reviewed",
    "Draft an essay once; an editor publishes it, asks for another round, or abandons it (no).",
    start=essay.write,
    edges=[Edge(essay.write, essay.EditorCall)],
    routes=[
        Route(essay.EditorCall.PUBLISH_AS_IS, to=essay.publish),
        Route(essay.EditorCall.ONE_MORE_ROUND, to=essay.write),
        Route(essay.EditorCall.ABANDON, to=essay.abandon),
    ],
    asks=[
        Ask(
            essay.EditorCall,
            of="editor",
            because="Every draft is read before it goes out.",
            rejection=essay.EditorCall.ABANDON,
        )
    ],
)
class ReviewedEssay(BaseModel):
    """An essay whose every draft an editor reads; abandoning it is the gate's rejection, so a
    run abandoned ends ``declined`` and one published ``finished``."""

    title: Annotated[str, Target()]
    rubric: str = ""
    draft: str = ""
    feedback: str = ""
    url: str | None = None


# --- Helpers the graph tests share ---------------------------------------------------------------


def signed_answer(signer: Signer, run: Mapping[str, Any], choice: str) -> dict[str, Any]:
    """``signer``'s proof answering ``choice`` to the gate ``run`` (a start or show) shows."""
    return signer.sign(answer_binding(run["awaiting"], choice))


def signed_resume(signer: Signer, run: Mapping[str, Any]) -> dict[str, Any]:
    """``signer``'s proof resuming ``run`` (a start or show result) at the node it is parked at."""
    return signer.sign(
        resume_binding(run["graph"], run["run_id"], run["execution"], run["parked"]["node"])
    )


_T = TypeVar("_T")


def essay_people(**extra: Mapping[str, Any]) -> Identities:
    """ada writes (no role, no scope), ed edits and publishes, clerk edits but may not publish."""
    return Identities(
        {
            "ada": {},
            "ed": {"roles": ["editor"], "scopes": ["essay:publish"]},
            "clerk": {"roles": ["editor"]},
            **extra,
        }
    )


def trail_of(run: Mapping[str, Any]) -> list[tuple[str, str, str | None]]:
    """Each trail row as (node, outcome, actor)."""
    return [
        (row["node"], row["outcome"], (row.get("by") or {}).get("actor")) for row in run["trail"]
    ]


async def eventually(
    probe: Callable[[], Awaitable[_T]],
    condition: Callable[[_T], bool],
    *,
    seconds: float = 15.0,
    what: str = "the condition",
) -> _T:
    """Polls ``probe`` until ``condition`` holds on what it returns; fails after ``seconds``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        value = await probe()
        if condition(value):
            return value
        if loop.time() > deadline:
            raise AssertionError(f"{what} did not hold within {seconds}s; last seen: {value!r}")
        await asyncio.sleep(0.05)


async def event_types(client: Client, run_id: str) -> list[str]:
    """The names of the events in a run's history, in order."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    return [EventType.Name(event.event_type) for event in history.events]


def keys_of(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every key any row uses."""
    return {key for row in rows for key in row}


# --- A reshaped essay:review, for showing that replay notices a changed graph ---------------------


@graph(
    "essay:review",
    "EssayReview with a budget of two: histories of the real one must fail to replay on it.",
    start=essay.write,
    edges=[Edge(essay.write, essay.grade)],
    routes=_essay_routes(at_most=2),
    asks=[Ask(essay.EditorCall, of="editor", because="Two drafts in a row failed the rubric.")],
)
class EssayReviewReshaped(essay.EssayReview):
    pass


# --- A field whose default is made per run --------------------------------------------------------


class Docket(str, Enum):
    FILED = "filed"


class Ticketed(BaseModel):
    ticket: str
    state: Docket


@tool("ticket:file", "File the request under its ticket.")
async def file_ticket(ticket: str) -> Ticketed:
    return Ticketed(ticket=ticket, state=Docket.FILED)


@tool("ticket:close", "Close the ticket.")
async def close_ticket(ticket: str) -> None:
    return None


class TicketCall(str, Enum):
    CLOSE = "close"


def ticket_desk(name: str, description: str) -> Callable[[type[BaseModel]], type[BaseModel]]:
    """The ticket desk's graph: file the request under its ticket, then a clerk closes it."""
    return graph(
        name,
        description,
        start=file_ticket,
        routes=[Route(Docket.FILED, to=TicketCall), Route(TicketCall.CLOSE, to=close_ticket)],
        asks=[Ask(TicketCall, of="clerk", because="A clerk closes each ticket.")],
        allow_unsigned_start=True,
    )


@ticket_desk(
    "ticket:desk", "File a request under a fresh ticket, then wait for a clerk to close it."
)
class TicketDesk(BaseModel):
    # Made per run, when the run's start is checked on the worker, and recorded there.
    ticket: Annotated[str, Target()] = Field(default_factory=lambda: uuid4().hex)
    state: Docket | None = None


def _ticket_clock_that_always_breaks() -> str:
    raise RuntimeError("the ticket clock is broken")


def _clock_breaking_on_the_worker() -> str:
    # Works when the worker starts (the compiler makes one to check it is JSON data), then
    # breaks when a run's start is checked, in lockgate.open_start: a clock that went away.
    if activity.in_activity():
        raise RuntimeError("the ticket clock went away")
    return uuid4().hex


@ticket_desk(
    "ticket:unstartable-desk",
    "TicketDesk, whose ticket factory (the graph author's code) always raises.",
)
class UnstartableDesk(BaseModel):
    ticket: Annotated[str, Target()] = Field(default_factory=_ticket_clock_that_always_breaks)
    state: Docket | None = None


@ticket_desk("ticket:broken-clock-desk", "TicketDesk, whose ticket factory breaks once runs start.")
class BrokenClockDesk(BaseModel):
    ticket: Annotated[str, Target()] = Field(default_factory=_clock_breaking_on_the_worker)
    state: Docket | None = None

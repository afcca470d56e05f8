"""Draft an essay against a rubric until it passes, then publish it (or ask an editor).

The writer and the grader are deterministic stand-ins for model calls, so every path through the
graph can be reproduced: the rubric is a comma-separated list of words the essay must mention;
the grader lists the ones missing, and the writer works one of them into each new draft.

- ``title="Tides and the moon", rubric="tides, moon"``: passes the first time.
- ``title="Tides", rubric="tides, gravity"``: fails once, is revised, passes.
- ``title="Tides", rubric="gravity, moon, salt, wind, orbit"``: fails three times, then the
  fourth failure asks an editor (``publish_as_is``, ``one_more_round`` or ``abandon``).
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated

from pydantic import BaseModel

from lockgate import Appends, Ask, Because, Edge, Route, Target, graph, tool


class Verdict(str, Enum):
    PASSED = "PASSED"
    FAILED = "FAILED"


class EditorCall(str, Enum):
    PUBLISH_AS_IS = "publish_as_is"
    ONE_MORE_ROUND = "one_more_round"
    ABANDON = "abandon"


class Draft(BaseModel):
    draft: str


class GradeReport(BaseModel):
    feedback: str
    verdict: Verdict


class Publication(BaseModel):
    url: str


def _required_words(rubric: str) -> list[str]:
    return [word.strip().lower() for word in rubric.split(",") if word.strip()]


def _missing(rubric: str, draft: str) -> list[str]:
    text = draft.lower()
    return [word for word in _required_words(rubric) if word not in text]


# Writing and grading change nothing and cost little: local activities, run in the workflow's own
# worker without a round trip through the server (a crash may run them again, harmlessly).
@tool(
    "essay:write",
    "Write the next draft of the essay, working in the grader's feedback.",
    local=True,
)
async def write(title: str, rubric: str, draft: str, feedback: str) -> Draft:
    if not draft:
        return Draft(draft=f"{title}.")
    wanted = feedback.removeprefix("Mention: ").split(", ")[0] if feedback else ""
    return Draft(draft=f"{draft} It is also about {wanted}." if wanted else draft)


@tool("essay:grade", "Judge the draft against the rubric.", local=True)
async def grade(rubric: str, draft: str) -> GradeReport:
    missing = _missing(rubric, draft)
    if missing:
        return GradeReport(feedback="Mention: " + ", ".join(missing), verdict=Verdict.FAILED)
    return GradeReport(feedback="Covers the rubric.", verdict=Verdict.PASSED)


@tool(
    "essay:publish",
    "Publish the essay and return where it lives.",
    scopes=["essay:publish"],
    mutating=True,
)
async def publish(title: str, draft: str) -> Publication:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "essay"
    return Publication(url=f"https://essays.example/{slug}")


@tool("essay:abandon", "Close the essay without publishing it.", mutating=True)
async def abandon(title: str) -> None:
    return None


@graph(
    "essay:review",
    "Draft an essay against a rubric until it passes, then publish it.",
    start=write,
    edges=[Edge(write, grade)],
    routes=[
        Route(Verdict.PASSED, to=publish),
        Route(Verdict.FAILED, to=write, at_most=3, then_ask=EditorCall),
        Route(EditorCall.PUBLISH_AS_IS, to=publish),
        Route(EditorCall.ONE_MORE_ROUND, to=write),
        Route(EditorCall.ABANDON, to=abandon),
    ],
    asks=[Ask(EditorCall, of="editor", because="Three drafts in a row failed the rubric.")],
)
class EssayReview(BaseModel):
    title: Annotated[str, Target(), Because("The essay being written")]
    rubric: Annotated[str, Because("The rubric every draft is graded against")]
    draft: str = ""
    feedback: str = ""
    drafts: Annotated[list[str], Appends("draft")] = []
    verdict: Verdict | None = None
    url: str | None = None


TOOLS = [write, grade, publish, abandon]
GRAPHS = [EssayReview]

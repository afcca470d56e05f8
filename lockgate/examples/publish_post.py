"""Draft a post, have an editor review it, publish it: the seed's draft → review → published.

The review gate offers ``approve`` (publish) and ``reject`` (draft again, then review again).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated

from pydantic import BaseModel

from lockgate import Ask, Because, Edge, Route, Target, graph, tool


class Review(str, Enum):
    APPROVE = "approve"
    REJECT = "reject"


class PostDraft(BaseModel):
    body: str
    revision: int


class PostPublished(BaseModel):
    url: str


# Drafting changes nothing: a local activity (publishing stays regular).
@tool("post:draft", "Write (or rewrite) the post.", local=True)
async def draft(topic: str, revision: int) -> PostDraft:
    return PostDraft(body=f"{topic} (revision {revision + 1})", revision=revision + 1)


@tool("post:publish", "Publish the post.", scopes=["post:publish"], mutating=True)
async def publish_post(topic: str, body: str) -> PostPublished:
    return PostPublished(url=f"https://blog.example/{topic.lower().replace(' ', '-')}")


@graph(
    "post:publish",
    "Draft a post, have an editor review it, publish it.",
    start=draft,
    edges=[Edge(draft, Review)],
    routes=[Route(Review.APPROVE, to=publish_post), Route(Review.REJECT, to=draft)],
    asks=[Ask(Review, of="editor", because="A post goes out only after an editor has read it.")],
)
class PublishPost(BaseModel):
    topic: Annotated[str, Target(), Because("What the post is about")]
    body: str = ""
    revision: int = 0
    url: str | None = None


TOOLS = [draft, publish_post]
GRAPHS = [PublishPost]

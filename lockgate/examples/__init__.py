"""The example graphs and tools that ship with lockgate and that ``lockgate dev`` serves.

- ``essay:review`` (:mod:`.essay_review`): draft against a rubric, an editor's call when three
  drafts in a row fail, publish.
- ``memo:clearance`` (:mod:`.memo_clearance`): prepare, check, release; an officer's signoff when
  it stays dirty.
- ``post:publish`` (:mod:`.publish_post`): draft, an editor's review, publish.

Not served by ``lockgate dev`` (its demo people hold no officer or finance lead to staff it):
``payment:release`` (:mod:`.payment_release`): two officers with evidence above a threshold, a
finance lead after 48 hours, the transfer a sub-graph (``payment:execute``); and
``support:agent`` (:mod:`.support_agent`, the ``langgraph`` extra): a LangGraph graph on
Temporal's LangGraph plugin that reads a ticket and refunds it, a support lead's verified
approval above a threshold. Import it yourself; this package does not, so it needs no extra.
"""

from lockgate.examples import essay_review, memo_clearance, publish_post

__all__ = ["GRAPHS", "TOOLS", "essay_review", "memo_clearance", "publish_post"]

TOOLS = [*essay_review.TOOLS, *memo_clearance.TOOLS, *publish_post.TOOLS]
"""Every example tool."""

GRAPHS = [*essay_review.GRAPHS, *memo_clearance.GRAPHS, *publish_post.GRAPHS]
"""Every example graph."""

"""The documentation as the tests read it: the README and every page of the site (docs/), their
code blocks, and the one block that holds a needle."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.support import REPOSITORY

README = REPOSITORY / "README.md"
DOCS = REPOSITORY / "docs"

SHELL_LANGUAGES = ("sh", "bash", "console")
"""The fences whose lines are commands to run, each checked against the parser."""


def pages() -> list[Path]:
    """The README and every Markdown page of the site, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def documentation() -> str:
    """Every page's text, one after another: for facts that must hold wherever they are said."""
    return "\n".join(page.read_text() for page in pages())


@dataclass(frozen=True)
class Block:
    """One fenced code block: the page it is on (relative to the repository), its language and
    its code, dedented (a block inside a list item is indented with it)."""

    page: str
    language: str
    code: str


_FENCE = re.compile(r"^([ \t]*)```([\w+-]*)[^\n]*\n(.*?)^\1```[ \t]*$", re.DOTALL | re.MULTILINE)


def blocks(language: str | None = None) -> list[Block]:
    """Every fenced block on every page (of ``language`` only, when given)."""
    found: list[Block] = []
    for page in pages():
        relative = str(page.relative_to(REPOSITORY))
        for match in _FENCE.finditer(page.read_text()):
            if language is None or match.group(2) == language:
                found.append(Block(relative, match.group(2), textwrap.dedent(match.group(3))))
    return found


def block_containing(language: str, needle: str) -> Block:
    """The one block of ``language`` that holds ``needle``; the test fails if none does, or
    more than one (each example has one home)."""
    matching = [block for block in blocks(language) if needle in block.code]
    assert len(matching) == 1, (
        f"{len(matching)} ```{language} blocks hold {needle!r}: "
        f"{[block.page for block in matching]}"
    )
    return matching[0]


def code_containing(language: str, needle: str) -> str:
    """The code of :func:`block_containing`."""
    return block_containing(language, needle).code

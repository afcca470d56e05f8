"""How the inbox's pages say things: times, roles, options and values in a person's words.

Jinja filters, registered on the inbox's page environment. Each takes what a run or a gate holds
(an ISO time, a role, an option's name, a channel's value) and returns what a person reads; none
of them decides anything.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

from lockgate.gates._gates import ENDS_RUN
from lockgate.identity._quoting import a_role, label

__all__ = ["FILTERS", "excerpt", "leads_to", "shown_value", "when"]

_EXCERPT_CHARS = 240


def when(moment: object) -> str:
    """An ISO time as a person reads it: ``2 Dec 2026, 12:04 UTC``; anything else as it is."""
    if not isinstance(moment, str) or not moment:
        return ""
    try:
        parsed = datetime.datetime.fromisoformat(moment.replace("Z", "+00:00"))
    except ValueError:
        return moment
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(datetime.timezone.utc)
    return f"{parsed.day} {parsed:%b %Y, %H:%M} UTC"


def shown_value(value: Any) -> str:
    """A channel's value as text: a string as it is, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def excerpt(fields: Mapping[str, Any] | None, target: Mapping[str, Any] | None) -> str:
    """A short excerpt of the work a gate judges: its longest text channel that is not the
    gate's subject, cut at a word near :data:`_EXCERPT_CHARS` characters."""
    texts = [
        value
        for name, value in (fields or {}).items()
        if isinstance(value, str) and name not in (target or {})
    ]
    if not texts:
        return ""
    text = " ".join(max(texts, key=len).split())
    if len(text) <= _EXCERPT_CHARS:
        return text
    return text[:_EXCERPT_CHARS].rsplit(" ", 1)[0] + "…"


def leads_to(choice: Mapping[str, Any]) -> str:
    """Where a gate's option leads: its node, the end of the run, or another gate."""
    if choice.get("leads_to"):
        return str(choice["leads_to"])
    return "ends the run" if choice.get("operation") == ENDS_RUN else "a gate"


FILTERS = {
    "when": when,
    "label": label,
    "leads_to": leads_to,
    "a_role": a_role,
    "shown_value": shown_value,
}
"""The filters the inbox's templates use, by name."""

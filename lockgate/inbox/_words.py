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

__all__ = [
    "FILTERS",
    "WORDS",
    "ago",
    "excerpt",
    "initials",
    "leads_to",
    "next_step",
    "person",
    "shown_value",
    "status_words",
    "step_words",
    "subject_of",
    "when",
]

_EXCERPT_CHARS = 240
_SUBJECT_CHARS = 120
_TITLE_FIELDS = ("title", "subject", "name", "summary", "payee", "entry", "mission")

WORDS = {
    "needs_you": "Needs you",
    "all_open": "All open",
    "open_gates": "Open gates",
    "paused": "Paused",
    "none_need_you": "Nothing needs you right now.",
    "none_open": "No gate is open.",
    "none_paused": "No run is paused.",
    "fields": "Details",
    "history": "History",
    "comment": "Add a comment (kept with your answer)",
    "resume": "Resume",
    "cancel": "Cancel the run",
    "forget": "Forget who I am on this browser",
}
"""The inbox's fixed words, by what they stand for: one home, so a page never says an
internal name where a person reads."""


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


def _parsed(moment: object) -> datetime.datetime | None:
    if not isinstance(moment, str) or not moment:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(moment.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=datetime.timezone.utc)


def ago(moment: object, now: datetime.datetime | None = None) -> str:
    """An ISO time as how long ago it was: ``just now``, ``5 min ago``, ``3 h ago``,
    ``2 days ago``; older than a week, its date (``2 Dec 2026``)."""
    parsed = _parsed(moment)
    if parsed is None:
        return moment if isinstance(moment, str) else ""
    seconds = ((now or datetime.datetime.now(datetime.timezone.utc)) - parsed).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 7 * 86400:
        days = int(seconds // 86400)
        return "yesterday" if days == 1 else f"{days} days ago"
    return f"{parsed.day} {parsed:%b %Y}"


def initials(name: object) -> str:
    """The initials of a person's name for their avatar: ``ada`` is ``A``, ``ada.lovelace``
    ``AL``; someone unverified is ``?``."""
    text = str(name or "")
    if not text or text.startswith("unverified:"):
        return "?"
    parts = [part for part in text.replace(".", " ").replace("_", " ").replace("-", " ").split()]
    return "".join(part[0] for part in parts[:2]).upper() or "?"


def person(who: object) -> str:
    """Who did something, as a trail row's ``by`` or a requester has it, in words: their name,
    or ``someone unverified (temporal)`` for a caller nobody proved."""
    actor = who.get("actor") if isinstance(who, Mapping) else who
    text = str(actor or "")
    if not text:
        return "someone"
    if text.startswith("unverified:"):
        return f"someone unverified ({text.removeprefix('unverified:')})"
    return text


def subject_of(run: Mapping[str, Any]) -> str:
    """What a run is about, for its page's title: the target its gate shows, else a title-like
    field of its inputs (``title``, ``subject``, ``name``...), else its graph's name."""
    gate = run.get("awaiting")
    target = gate.get("target") if isinstance(gate, Mapping) else None
    values = [value for value in (target or {}).values() if isinstance(value, str) and value]
    fields = run.get("fields") or {}
    if not values:
        values = [fields[name] for name in _TITLE_FIELDS if isinstance(fields.get(name), str)][:1]
    text = " · ".join(" ".join(value.split()) for value in values if value.strip())
    if not text:
        return str(run.get("graph") or run.get("run_id") or "")
    return text if len(text) <= _SUBJECT_CHARS else text[:_SUBJECT_CHARS].rsplit(" ", 1)[0] + "…"


def next_step(choice: Mapping[str, Any]) -> str:
    """What happens after an option, in words: ``Next: Publish``, ``Ends the run``, ``Asks
    again``."""
    if choice.get("leads_to"):
        return f"Next: {label(choice['leads_to'])}"
    return "Ends the run" if choice.get("operation") == ENDS_RUN else "Asks again"


_STATUSES = {
    "waiting": "Waiting for a decision",
    "parked": "Paused",
    "running": "Running",
    "finished": "Finished",
    "cancelled": "Cancelled",
    "refused": "Refused",
    "failed": "Failed",
    "terminated": "Stopped",
    "timed_out": "Timed out",
}


def status_words(status: object) -> str:
    """A run's status as a person reads it: ``parked`` is ``Paused``."""
    return _STATUSES.get(str(status), label(status))


_STEPS = {
    "ran": "ran {node}",
    "refused": "was not allowed to run {node}",
    "failed": "{node} failed",
    "answered": "answered {answer}",
    "waived": "waived the review, taking {answer}",
    "timed_out": "the deadline passed, taking {answer}",
    "escalated": "the review went to someone else",
    "resumed": "resumed {node}",
    "cancelled": "cancelled the run",
    "budget_spent": "used up its rounds",
}


def step_words(row: Mapping[str, Any]) -> str:
    """A trail row's step in words: ``ran Write``, ``answered “Publish as is”``."""
    node = label(row.get("node") or row.get("gate") or row.get("operation") or "a step")
    answer = f"“{label(row.get('answer'))}”" if row.get("answer") else "an answer"
    template = _STEPS.get(str(row.get("outcome")), "{outcome} {node}")
    return template.format(node=node, answer=answer, outcome=row.get("outcome"))


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
    "ago": ago,
    "initials": initials,
    "person": person,
    "next_step": next_step,
    "status_words": status_words,
    "step_words": step_words,
    "subject_of": subject_of,
    "label": label,
    "leads_to": leads_to,
    "a_role": a_role,
    "shown_value": shown_value,
}
"""The filters the inbox's templates use, by name."""

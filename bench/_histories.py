"""What a run's history weighs: its events, its serialized size and its payloads.

Two measures of bytes, both read from ``fetch_history()`` and both exact (nothing is sampled):

- **history bytes**: the size of the events as a serialized ``temporal.api.history.v1.History``
  message. This is what the server stores for the run and sends whenever the history is read
  (every worker that replays the run, the Temporal UI, an export), and what Temporal Cloud's
  storage is billed on: what a shop pays for in storage and egress.
- **payload bytes**: the sum of ``Payload.ByteSize()`` over every ``temporal.api.common.v1.Payload``
  in the events, wherever it sits (inputs, results, update arguments and answers, markers,
  memo, search attributes, failure details, headers). This is the part of the history the
  application chose to write, and the part a payload codec encrypts or compresses.

A run's weight is also split by event type, so a difference between two runs names the events
that make it.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History

__all__ = ["Weight", "event_kind", "history_bytes", "payload_bytes", "weigh"]


def event_kind(event: Any) -> str:
    """An event's type in lower case, without its prefix (``workflow_task_completed``)."""
    return str(EventType.Name(event.event_type)).removeprefix("EVENT_TYPE_").lower()


def history_bytes(events: Sequence[Any]) -> int:
    """The size of ``events`` serialized as one ``History`` message."""
    return History(events=list(events)).ByteSize()


def payload_bytes(message: Message) -> int:
    """The sum of ``Payload.ByteSize()`` over every payload ``message`` holds, at any depth."""
    if isinstance(message, Payload):
        return message.ByteSize()
    total = 0
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        if descriptor.message_type.GetOptions().map_entry:
            values: Iterable[Any] = value.values()
        elif descriptor.is_repeated:
            values = value
        else:
            values = (value,)
        total += sum(payload_bytes(item) for item in values if isinstance(item, Message))
    return total


@dataclass
class Weight:
    """The events of one run (or of a stretch of one, or of several runs added up)."""

    events: int = 0
    history_bytes: int = 0
    payload_bytes: int = 0
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    """How many events of each type."""
    history_bytes_by_kind: collections.Counter[str] = field(default_factory=collections.Counter)
    payload_bytes_by_kind: collections.Counter[str] = field(default_factory=collections.Counter)

    def __add__(self, other: Weight) -> Weight:
        return Weight(
            self.events + other.events,
            self.history_bytes + other.history_bytes,
            self.payload_bytes + other.payload_bytes,
            self.kinds + other.kinds,
            self.history_bytes_by_kind + other.history_bytes_by_kind,
            self.payload_bytes_by_kind + other.payload_bytes_by_kind,
        )

    def breakdown(self) -> dict[str, dict[str, int]]:
        """The weight by event type, largest first, for a JSON line."""
        return {
            "events_by_type": dict(self.kinds.most_common()),
            "history_bytes_by_type": dict(self.history_bytes_by_kind.most_common()),
            "payload_bytes_by_type": dict(self.payload_bytes_by_kind.most_common()),
        }


def weigh(events: Sequence[Any]) -> Weight:
    """The weight of ``events`` (a whole history, or the events one operation appended)."""
    weight = Weight(events=len(events), history_bytes=history_bytes(events))
    for event in events:
        kind = event_kind(event)
        weight.kinds[kind] += 1
        # An event's share of the History message: its own size and its field's framing.
        weight.history_bytes_by_kind[kind] += history_bytes([event])
        carried = payload_bytes(event)
        weight.payload_bytes += carried
        if carried:
            weight.payload_bytes_by_kind[kind] += carried
    return weight

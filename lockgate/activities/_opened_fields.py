"""How a graph run's start check records the fields the run opens with: by name where the start's
inputs already hold them as they are, by value otherwise.

The start check (``lockgate.open_start``) validates the starting fields with the graph's own
model: what the model makes of them (a default, a value its validators changed) is known only
there, so the run's history keeps it, in the check's sealed result. A value the model kept as
the start's input sent it is in the history already, in the run's started event, which the
server writes from the start request (and the start proof names its digest): the result names
it instead of copying it (``same_as_inputs``), and the run reads it back from its start input.
A history recorded before holds every value in ``fields``, and is read as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["SAME_AS_INPUTS", "opened_fields", "recorded_fields"]

SAME_AS_INPUTS = "same_as_inputs"
"""The key, in a start check's result, of the fields the start's inputs hold as they are."""


def recorded_fields(opened: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``opened`` (a start check's verdict) as its result records it: its ``fields`` holding
    only the values the start's ``inputs`` do not hold as they are (as JSON writes them), and
    :data:`SAME_AS_INPUTS` naming the rest. A refusal (no fields) is recorded as it is."""
    fields = opened.get("fields")
    if not isinstance(fields, dict):
        return dict(opened)
    same = sorted(
        name for name, value in fields.items() if name in inputs and _same(value, inputs[name])
    )
    if not same:
        return dict(opened)
    kept = {name: value for name, value in fields.items() if name not in same}
    return {**opened, "fields": kept, SAME_AS_INPUTS: same}


def opened_fields(
    fields: dict[str, Any], same: object, inputs: Mapping[str, Any]
) -> dict[str, Any]:
    """The fields a run opens with: those its start check's result recorded by value
    (``fields``) and those it named (``same``, its :data:`SAME_AS_INPUTS`), read from the
    start's ``inputs``; in the order of their names, as a result that copies them all reads
    back. A result that names none (recorded before, or where the model changed every value)
    is read as it is."""
    if not isinstance(same, list) or not same:
        return fields
    # As a recorded copy reads back: JSON written with its keys in order, then read.
    merged = {name: json.loads(json.dumps(inputs[name], sort_keys=True)) for name in same}
    merged.update(fields)
    return dict(sorted(merged.items()))


def _same(value: Any, sent: Any) -> bool:
    """Whether ``value`` is ``sent`` exactly, as JSON writes them (``1`` is not ``1.0`` nor
    ``true``)."""
    try:
        return json.dumps(value, sort_keys=True) == json.dumps(sent, sort_keys=True)
    except (TypeError, ValueError):
        return False

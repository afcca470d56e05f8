"""A start check records the fields a run opens with by name where the start's inputs hold them
as they are, and by value otherwise; the run reads back exactly what a full copy gave it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lockgate.activities._opened_fields import SAME_AS_INPUTS, opened_fields, recorded_fields


def read_back(recorded: dict[str, Any]) -> dict[str, Any]:
    """What a run reads of a check's result: the result after Temporal's JSON round trip."""
    value: dict[str, Any] = json.loads(json.dumps(recorded, sort_keys=True))
    return value


CASES: list[Any] = [
    pytest.param(
        {"title": "Tides", "rubric": "moon"},
        {"draft": "", "drafts": [], "rubric": "moon", "title": "Tides"},
        id="defaults-added",
    ),
    pytest.param(
        {"count": True, "ratio": 1, "label": 7},
        {"count": 1, "ratio": 1.0, "label": "7"},
        id="values-the-model-changed",
    ),
    pytest.param(
        {"doc": {"b": [1, {"d": 2, "c": 3}], "a": None}, "unknown": "x"},
        {"doc": {"a": None, "b": [1, {"c": 3, "d": 2}]}},
        id="nested-and-ignored",
    ),
]


@pytest.mark.parametrize(("inputs", "fields"), CASES)
def test_a_run_reads_back_the_fields_a_full_copy_would_have_given_it(
    inputs: dict[str, Any], fields: dict[str, Any]
) -> None:
    full = read_back({"fields": fields, "code": None})
    named = read_back(recorded_fields({"fields": fields, "code": None}, inputs))

    opened = opened_fields(named["fields"], named.get(SAME_AS_INPUTS), inputs)

    assert opened == full["fields"]
    assert list(opened) == list(full["fields"])
    assert json.dumps(opened) == json.dumps(full["fields"])


def test_only_values_the_inputs_hold_as_they_are_are_named_and_not_copied() -> None:
    inputs = {"title": "Tides", "count": True}
    fields = {"title": "Tides", "count": 1, "draft": ""}

    recorded = recorded_fields({"fields": fields, "code": None}, inputs)

    assert recorded["fields"] == {"count": 1, "draft": ""}
    assert recorded[SAME_AS_INPUTS] == ["title"]


def test_a_refused_start_and_a_result_recorded_with_every_value_are_read_as_they_are() -> None:
    refused = {"fields": None, "code": "VALIDATION_ERROR", "reason": "no"}
    assert recorded_fields(refused, {"title": "x"}) == refused
    every = {"title": "x", "draft": ""}

    assert opened_fields(every, None, {"title": "y"}) is every

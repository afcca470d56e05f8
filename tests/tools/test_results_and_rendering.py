"""ToolResult: factories, wire shape, round trip; renderers per channel."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lockgate import ErrorCode, ToolContext, ToolResult
from lockgate.tool_runtime import CliRenderer, DefaultRenderer, RendererRegistry
from lockgate.tools._tool_result import ToolError

# Factories ----------------------------------------------------------------------------------------


def test_success_builds_a_successful_result() -> None:
    result = ToolResult.ok({"id": 1}, "Found it.", {"source": "cache"})

    assert (result.success, result.data, result.message, result.error, result.meta) == (
        True,
        {"id": 1},
        "Found it.",
        None,
        {"source": "cache"},
    )


def test_success_and_error_are_plain_fields_and_ok_and_failed_build_results() -> None:
    done = ToolResult.ok({"id": 1})
    refused = ToolResult.failed(ErrorCode.NOT_FOUND, "Note 7 does not exist.")

    assert (done.success, done.data, done.error) == (True, {"id": 1}, None)
    assert refused.success is False
    assert refused.error == ToolError("NOT_FOUND", "Note 7 does not exist.")


def test_error_builds_a_failure_with_code_message_and_error_type() -> None:
    result = ToolResult.failed(ErrorCode.NOT_FOUND, "Note 7 does not exist.", meta={"id": 7})

    assert (result.success, result.code, result.type, result.meta["id"]) == (
        False,
        "NOT_FOUND",
        "error",
        7,
    )


def test_an_error_code_reads_as_its_value() -> None:
    assert str(ErrorCode.RATE_LIMITED) == "RATE_LIMITED"
    assert ErrorCode.RATE_LIMITED == "RATE_LIMITED"


def test_a_successful_result_has_no_code() -> None:
    assert ToolResult.ok().code is None


@pytest.mark.parametrize(
    ("page", "total_items", "limit", "expected"),
    [
        (1, 42, 10, {"total_pages": 5, "has_prev": False, "has_next": True}),
        (3, 42, 10, {"total_pages": 5, "has_prev": True, "has_next": True}),
        (5, 42, 10, {"total_pages": 5, "has_prev": True, "has_next": False}),
        (1, 40, 10, {"total_pages": 4, "has_prev": False, "has_next": True}),
        (1, 0, 10, {"total_pages": 0, "has_prev": False, "has_next": False}),
        (1, 5, 0, {"total_pages": 0, "has_prev": False, "has_next": False}),
    ],
)
def test_paginated_computes_the_pagination(
    page: int, total_items: int, limit: int, expected: dict[str, object]
) -> None:
    result = ToolResult.paginated([], page=page, total_items=total_items, limit=limit)

    assert result.meta["pagination"] == {
        "page": page,
        "total_items": total_items,
        "limit": limit,
        **expected,
    }


def test_paginated_is_a_successful_list_with_the_items_as_data() -> None:
    result = ToolResult.paginated([{"id": 1}], page=1, total_items=1, limit=10, meta={"q": "x"})

    assert (result.success, result.type, result.data, result.meta["q"]) == (
        True,
        "list",
        [{"id": 1}],
        "x",
    )


def test_detail_describes_one_entity_and_its_actions() -> None:
    result = ToolResult.detail({"id": 7}, "note", "Note 7.", ["edit", "delete"])

    assert (result.data, result.message, result.meta) == (
        {"id": 7},
        "Note 7.",
        {"type": "detail", "entity": "note", "actions": ["edit", "delete"]},
    )


def test_detail_without_actions_has_an_empty_list() -> None:
    assert ToolResult.detail({}, "note").meta["actions"] == []


def test_confirmation_is_a_success_asking_to_confirm() -> None:
    result = ToolResult.confirmation(
        "Delete note 7?", {"id": 7}, action="delete", target="note", target_id="7"
    )

    assert (result.success, result.data, result.message) == (True, {"id": 7}, "Delete note 7?")
    assert result.meta == {
        "type": "confirmation",
        "requires_confirmation": True,
        "action": "delete",
        "target": "note",
        "target_id": "7",
    }


def test_blocked_is_a_forbidden_failure_with_a_suggestion() -> None:
    result = ToolResult.blocked("Writes are paused.", "Try after 18:00.")

    assert result.error is not None
    assert (result.success, result.code, result.error.message, result.is_blocked) == (
        False,
        "FORBIDDEN",
        "Writes are paused.",
        True,
    )
    assert result.meta == {
        "type": "blocked",
        "blocked_by_rule": True,
        "suggestion": "Try after 18:00.",
    }


def test_a_result_without_a_type_is_generic() -> None:
    assert ToolResult(True).type == "generic"


def test_with_meta_adds_to_a_copy() -> None:
    original = ToolResult.ok(1, meta={"a": 1})

    copy = original.with_meta(b=2)

    assert (original.meta, copy.meta) == ({"a": 1}, {"a": 1, "b": 2})


def test_confirm_token_reads_the_token_from_the_data() -> None:
    assert ToolResult.ok({"confirm_token": "abc"}).confirm_token == "abc"
    assert ToolResult.ok(["abc"]).confirm_token is None
    assert ToolResult.ok({"confirm_token": 5}).confirm_token is None


# Wire shape ---------------------------------------------------------------------------------------


def test_to_json_of_a_success_has_a_null_error() -> None:
    wire = json.loads(ToolResult.ok({"n": 1}, "Done.").to_json())

    assert wire == {
        "success": True,
        "data": {"n": 1},
        "message": "Done.",
        "error": None,
        "meta": {},
    }


def test_to_json_of_a_failure_has_an_error_object_with_code_and_message() -> None:
    wire = json.loads(ToolResult.failed(ErrorCode.TIMEOUT, "Too slow.").to_json())

    assert wire == {
        "success": False,
        "data": None,
        "message": None,
        "error": {"code": "TIMEOUT", "message": "Too slow."},
        "meta": {"type": "error"},
    }


def test_to_json_keeps_non_ascii_text_readable() -> None:
    assert "café" in ToolResult.ok("café").to_json()


def test_to_dict_turns_tuples_and_sets_into_lists() -> None:
    wire = ToolResult.ok({"pair": (1, 2), "tags": {"b", "a"}}).to_dict()

    assert wire["data"] == {"pair": [1, 2], "tags": ["a", "b"]}


@pytest.mark.parametrize(
    "result",
    [
        ToolResult.ok({"id": 1}, "Done.", {"k": "v"}),
        ToolResult.failed(ErrorCode.NOT_FOUND, "Missing."),
        ToolResult.paginated([1, 2], page=1, total_items=2, limit=10),
        ToolResult.blocked("No.", "Later."),
        ToolResult.confirmation("Sure?", {"x": 1}),
    ],
)
def test_from_dict_rebuilds_what_to_dict_wrote(result: ToolResult) -> None:
    rebuilt = ToolResult.from_dict(json.loads(result.to_json()))

    assert rebuilt == result
    assert (rebuilt.success, rebuilt.code) == (result.success, result.code)


@pytest.mark.parametrize(
    ("result", "compact"),
    [
        (ToolResult.ok({"id": 1}, "Done.", {"k": "v"}), {"success": True, "data": {"id": 1}}),
        (ToolResult.ok(), {"success": True}),
        (
            ToolResult.failed(ErrorCode.NOT_FOUND, "Missing."),
            {"success": False, "error": {"code": "NOT_FOUND", "message": "Missing."}},
        ),
    ],
)
def test_the_compact_wire_shape_keeps_success_data_and_error_and_reads_back(
    result: ToolResult, compact: dict[str, Any]
) -> None:
    rebuilt = ToolResult.from_dict(result.to_compact_dict())

    assert result.to_compact_dict() == compact
    assert (rebuilt.success, rebuilt.data, rebuilt.code) == (
        result.success,
        result.data,
        result.code,
    )
    assert rebuilt.error == result.error and rebuilt.meta == {} and rebuilt.message is None


def test_results_with_different_data_are_not_equal() -> None:
    assert ToolResult.ok(1) != ToolResult.ok(2)


# Renderers ----------------------------------------------------------------------------------------


def test_the_default_renderer_lists_items_and_the_page() -> None:
    result = ToolResult.paginated(
        [{"id": 3, "name": "Groceries"}, {"id": 4, "title": "Taxes"}, {"id": 5}],
        page=1,
        total_items=12,
        limit=3,
        message="Your notes.",
    )

    assert DefaultRenderer().render(result) == (
        "Your notes.\n#3: Groceries\n#4: Taxes\n#5: N/A\nPage 1 of 4 (12 items total)"
    )


def test_the_default_renderer_shows_detail_lines_with_readable_labels() -> None:
    result = ToolResult.ok({"full_name": "Ada", "tags": ["a"]})

    assert DefaultRenderer().render(result) == (
        'Operation completed successfully.\n- Full name: Ada\n- Tags: ["a"]'
    )


def test_the_default_renderer_shows_an_error() -> None:
    result = ToolResult.failed(ErrorCode.NOT_FOUND, "Note 7 does not exist.")

    assert DefaultRenderer().render(result) == "Error: Note 7 does not exist."


def test_the_default_renderer_shows_a_blocked_calls_suggestion() -> None:
    result = ToolResult.blocked("Writes are paused.", "Try after 18:00.")

    assert DefaultRenderer().render(result) == (
        "Error: Writes are paused.\n\nSuggestion: Try after 18:00."
    )


def test_the_cli_renderer_marks_an_error_with_its_code() -> None:
    result = ToolResult.failed(ErrorCode.NOT_FOUND, "Note 7 does not exist.")

    assert CliRenderer().render(result) == "✗ Error [NOT_FOUND]: Note 7 does not exist."


def test_the_cli_renderer_shows_a_confirmation_and_its_token() -> None:
    result = ToolResult(
        True,
        {"confirm_token": "abc"},
        "Delete note 7?",
        None,
        {"type": "confirmation", "requires_confirmation": True},
    )

    assert CliRenderer().render(result) == "? Confirm: Delete note 7?\n  confirm_token: abc"


def test_the_cli_renderer_shows_a_block_and_its_suggestion() -> None:
    result = ToolResult.blocked("Writes are paused.", "Try after 18:00.")

    assert (
        CliRenderer().render(result)
        == "⊘ Blocked: Writes are paused.\n  Suggestion: Try after 18:00."
    )


def test_the_cli_renderer_marks_a_success() -> None:
    assert CliRenderer().render(ToolResult.ok(None, "Saved.")) == "✓ Saved."


def test_the_cli_renderer_supports_only_cli() -> None:
    assert [CliRenderer().supports(c) for c in ("cli", "web", "tui")] == [True, False, False]


def test_the_registry_uses_the_first_renderer_that_supports_the_channel() -> None:
    registry = RendererRegistry(CliRenderer(), DefaultRenderer())
    result = ToolResult.ok(None, "Saved.")

    assert registry.render(result, ToolContext.cli()) == "✓ Saved."
    assert registry.render(result, ToolContext.web("ada", [])) == "Saved."


def test_the_registry_falls_back_to_its_default_renderer() -> None:
    registry = RendererRegistry(CliRenderer(), default=DefaultRenderer())

    assert registry.render(ToolResult.ok(None, "Saved."), ToolContext.web("a", [])) == "Saved."


def test_the_registry_falls_back_to_json_when_no_renderer_supports_the_channel() -> None:
    registry = RendererRegistry(CliRenderer())
    result = ToolResult.ok({"n": 1}, "Saved.")

    assert registry.render(result, ToolContext.web("ada", [])) == result.to_json()


def test_a_renderer_added_later_is_consulted() -> None:
    registry = RendererRegistry()
    registry.add(CliRenderer())

    assert registry.render(ToolResult.ok(None, "Saved."), ToolContext.cli()) == "✓ Saved."


def test_the_registry_renders_for_the_default_channel_without_a_context() -> None:
    registry = RendererRegistry(CliRenderer())
    result = ToolResult.ok(None, "Saved.")

    assert registry.render(result) == result.to_json()

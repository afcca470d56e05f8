"""Compiling declared graphs: what is derived from EssayReview, and every declaration refused."""

from __future__ import annotations

import pytest

from lockgate.errors import GraphDeclarationError
from lockgate.examples.essay_review import EssayReview
from lockgate.graphs._compile import compile_graph
from lockgate.graphs._compiled import CompiledGraph
from lockgate.graphs._graph_registry import GraphRegistry
from tests.helpers import graphs as g


@pytest.fixture(scope="module")
def essay() -> CompiledGraph:
    return compile_graph(EssayReview)


def test_essay_review_compiles_to_its_four_nodes_in_declaration_order(essay: CompiledGraph) -> None:
    assert list(essay.nodes) == ["write", "grade", "publish", "abandon"]


def test_essay_review_fields_are_the_fields_of_its_model(essay: CompiledGraph) -> None:
    assert list(essay.fields) == [
        "title",
        "rubric",
        "draft",
        "feedback",
        "drafts",
        "verdict",
        "url",
    ]


def test_essay_review_starts_at_write(essay: CompiledGraph) -> None:
    assert essay.start == "write"


def test_the_drafts_channel_appends_every_draft(essay: CompiledGraph) -> None:
    assert dict(essay.appends) == {"drafts": "draft"}


def test_the_title_is_the_target_a_run_is_named_by(essay: CompiledGraph) -> None:
    assert essay.target == "title"


def test_grade_leaves_by_its_verdicts_and_the_escape_of_its_budget(essay: CompiledGraph) -> None:
    assert [t.code for t in essay.transitions_from("grade")] == ["PASSED", "FAILED", "editor_call"]


def test_the_editor_gate_leaves_by_its_three_options(essay: CompiledGraph) -> None:
    assert [t.code for t in essay.transitions_from("editor_call")] == [
        "publish_as_is",
        "one_more_round",
        "abandon",
    ]


def test_publish_and_abandon_are_the_terminals(essay: CompiledGraph) -> None:
    assert essay.terminals == {"publish", "abandon"}
    assert essay.is_terminal("publish") and essay.is_terminal("abandon")
    assert not essay.is_terminal("grade")


def test_the_failed_route_carries_a_budget_of_three(essay: CompiledGraph) -> None:
    assert dict(essay.budgets) == {"FAILED": 3}


def test_grade_decides_from_a_table_of_its_enum_values_not_by_calling_the_enum(
    essay: CompiledGraph,
) -> None:
    # The workflow looks a decision up here: no enum (user code) runs inside the workflow.
    grade = essay.nodes["grade"]
    assert dict(grade.route_cases) == {"PASSED": "PASSED", "FAILED": "FAILED"}
    assert essay.nodes["write"].route_cases == {}


# --- Refusals: behaviour.md §2.3 rows 1–19, as lockgate words them ------------------------------

REFUSALS = [
    pytest.param(g.MISSING_CLASS, "tests.helpers.graphs:Missing", "the class does not exist",
                 id="row-01-the-class-does-not-exist"),
    pytest.param(g.Writer, "Writer", "is not a declared graph: add @graph(",
                 id="row-02-no-graph-decorator"),
    pytest.param(g.NoStart, "NoStart", "declares no start: name the node it begins at",
                 id="row-03-no-start"),
    pytest.param(g.DuplicateStates, "DuplicateStates",
                 "two nodes compile to the same state 'write'",
                 id="row-04-two-nodes-one-state"),
    pytest.param(g.StrangerField, "StrangerField",
                 "reads `colour`, which is not a field of this graph. Declare it",
                 id="row-05-node-reads-a-stranger"),
    pytest.param(g.Stateless, "Stateless", "is not a pydantic model",
                 id="row-06-not-a-pydantic-model"),
    pytest.param(g.Fieldless, "Fieldless", "declares no fields",
                 id="row-07-no-fields"),
    pytest.param(g.ReservedField, "ReservedField",
                 "declares the field '_taken', a name kept for what the engine writes: a "
                 "leading underscore is the engine's",
                 id="row-08-reserved-underscore-field"),
    pytest.param(g.Mute, "Mute", "start not_a_tool is not a usable tool: decorate it with @tool",
                 id="row-09-node-not-a-tool"),
    pytest.param(g.ZeroBudget, "ZeroBudget", "A budget of zero is not a loop",
                 id="row-10-zero-budget"),
    pytest.param(g.BudgetWithoutAsk, "BudgetWithoutAsk",
                 "declares at_most=3 but no then_ask. A budget that simply stops",
                 id="row-11-budget-without-then-ask"),
    pytest.param(g.Unbudgeted, "Unbudgeted",
                 "does not compile: it contains a cycle of ungated transitions revisiting "
                 "state 'write'",
                 id="row-12-ungated-cycle"),
    pytest.param(g.Partial, "Partial", "routes on Verdict but declares no Route for case FAILED",
                 id="row-13-case-without-route"),
    pytest.param(g.TwoEnums, "TwoEnums", "routes on two different enums (Verdict and Mood)",
                 id="row-14-one-state-two-enums"),
    pytest.param(g.NotAnEnum, "NotAnEnum", "Ask names str, which is not an enum",
                 id="row-15-ask-options-not-an-enum"),
    pytest.param(g.Orphan, "Orphan", "Route(when=Mood.CALM) has no origin",
                 id="row-16-route-enum-nobody-produces"),
    pytest.param(g.StrangerOrigin, "StrangerOrigin",
                 "route origin (from_) not_a_tool is not a usable tool",
                 id="row-17-from-not-a-tool"),
    pytest.param(g.Ambiguous, "Ambiguous",
                 "Verdict is returned by more than one node (grade, regrade), so the origin of "
                 "its routes cannot be derived. Write from_=",
                 id="row-18-ambiguous-origin"),
    pytest.param(g.RiskyGraph, "RiskyGraph",
                 "node 'risky' declares confirm=True, and this compiler cannot yet insert the "
                 "consent pause",
                 id="row-19-confirm-node"),
    pytest.param(g.EdgeAndRoutes, "EdgeAndRoutes", "node 'grade' has an edge and routes",
                 id="extra-edge-and-routes"),
    pytest.param(g.UnreachedAsk, "UnreachedAsk",
                 "Ask(Spare) is declared, but no edge, route or budget leads to it",
                 id="extra-ask-nobody-leads-to"),
    pytest.param(g.ThenAskWithoutBudget, "ThenAskWithoutBudget",
                 "declares then_ask but no at_most",
                 id="extra-then-ask-without-at-most"),
]  # fmt: skip


@pytest.mark.parametrize(("declaration", "class_name", "phrase"), REFUSALS)
def test_a_malformed_declaration_is_refused_naming_the_class_and_what_to_declare(
    declaration: type, class_name: str, phrase: str
) -> None:
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(declaration)
    message = str(refused.value)
    assert phrase in message
    assert class_name in message


def test_a_refused_declaration_names_the_class_at_the_start_of_its_sentence() -> None:
    with pytest.raises(GraphDeclarationError, match=r"^Graph Unbudgeted does not compile"):
        compile_graph(g.Unbudgeted)


def test_a_channel_with_a_leading_underscore_is_refused_as_the_engines() -> None:
    with pytest.raises(GraphDeclarationError, match="underscore"):
        compile_graph(g.ReservedField)


def test_a_default_factory_that_raises_is_refused_naming_the_channel() -> None:
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(g.UnstartableDesk)

    assert "the default_factory of field 'ticket' raised RuntimeError: the ticket clock is " in (
        str(refused.value)
    )
    assert "so no run could start" in str(refused.value)


def test_two_graphs_with_one_name_and_version_are_refused_by_the_registry() -> None:
    with pytest.raises(GraphDeclarationError) as refused:
        GraphRegistry([g.TwinOne, g.TwinTwo])
    message = str(refused.value)
    assert "Two graphs both call themselves 'test:twin' (version 1)" in message
    assert "TwinOne" in message and "TwinTwo" in message


def test_registering_one_graph_twice_is_not_a_clash() -> None:
    registry = GraphRegistry([EssayReview, EssayReview])
    assert registry.names() == ["essay:review"]


def test_the_registry_names_what_it_serves_when_asked_for_an_unknown_graph() -> None:
    registry = GraphRegistry([EssayReview])
    with pytest.raises(KeyError, match=r"No graph named 'nope'\. Declared: essay:review\."):
        registry.get("nope")

"""The compiler refuses each doubtful sub-graph: one that includes itself, nests more than ten
deep, routes on an outcome that is not one enum field, or is not a graph at all."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

from lockgate import Directory, LockgatePlugin, Subgraph, WorkerSecret, graph
from lockgate.activities._activity_inputs import OpenStartInput, handover_binding
from lockgate.activities._handover import open_handover
from lockgate.errors import GraphDeclarationError
from lockgate.gates._authority import Authority
from lockgate.graphs._compile import compile_graph
from tests.helpers.subgraph_graphs import PaymentExecute, ReleasedPayment, chase


class Payee(BaseModel):
    payee: str


def nested(depth: int) -> type[Payee]:
    """A graph running a graph running ... ``depth`` levels of sub-graphs above one node."""

    @graph("nest:0", start=chase)
    class Innermost(Payee):
        pass

    current: type[Payee] = Innermost
    for level in range(1, depth + 1):

        @graph(f"nest:{level}", start=Subgraph(current))
        class Level(Payee):
            pass

        Level.__name__ = Level.__qualname__ = f"Level{level}"
        current = Level
    return current


def test_a_sub_graph_compiles_with_its_child_and_the_worker_serves_both() -> None:
    compiled = compile_graph(ReleasedPayment)
    node = compiled.nodes["execute"]
    assert node.subgraph is not None and node.subgraph.name == "payment:execute"
    assert node.decides_on == "outcome"
    assert compiled.nesting == 1
    plugin = LockgatePlugin(graphs=[ReleasedPayment], secret=WorkerSecret.generate("test"))
    assert plugin.graphs.names() == ["pay:released", "payment:execute"]


def test_a_graph_that_includes_itself_is_refused() -> None:
    class Loop(Payee):
        pass

    graph("test:loop", start=Subgraph(Loop))(Loop)
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(Loop)
    assert str(refused.value) == (
        "Graph Loop includes itself (Loop → Loop): a graph that runs itself as a sub-graph "
        "never ends. Break the cycle."
    )


def test_a_graph_that_includes_itself_through_another_is_refused() -> None:
    class Ping(Payee):
        pass

    @graph("test:pong", start=Subgraph(Ping))
    class Pong(Payee):
        pass

    graph("test:ping", start=Subgraph(Pong))(Ping)
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(Ping)
    assert "includes itself (Ping → Pong → Ping)" in str(refused.value)


def test_ten_levels_of_sub_graphs_compile_and_eleven_are_refused() -> None:
    assert compile_graph(nested(10)).nesting == 10
    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(nested(11))
    assert "sub-graphs nest at most 10 levels" in str(refused.value)


def test_an_outcome_that_is_not_a_channel_of_the_child_is_refused() -> None:
    @graph("test:no-outcome", start=Subgraph(PaymentExecute, outcome="verdict"))
    class NoOutcome(Payee):
        pass

    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(NoOutcome)
    assert "outcome='verdict') names a field PaymentExecute does not declare" in str(refused.value)


def test_an_outcome_not_typed_by_one_enum_is_refused() -> None:
    @graph("test:memo-outcome", start=Subgraph(PaymentExecute, outcome="memo"))
    class MemoOutcome(Payee):
        pass

    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(MemoOutcome)
    assert "that field is not typed by one enum" in str(refused.value)


def test_a_sub_graph_needing_a_channel_its_parent_lacks_is_refused() -> None:
    class Nameless(BaseModel):
        amount: int

    @graph("test:nameless", start=Subgraph(PaymentExecute))
    class NamelessRelease(Nameless):
        pass

    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(NamelessRelease)
    assert "Subgraph(PaymentExecute) needs the field(s) payee to start" in str(refused.value)


def test_a_sub_graph_that_is_no_graph_is_refused() -> None:
    @graph("test:not-a-graph", start=Subgraph(Payee))
    class NotAGraph(Payee):
        pass

    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(NotAGraph)
    assert "Subgraph('Payee') names no declared graph" in str(refused.value)


def test_every_outcome_of_a_sub_graph_must_be_routed() -> None:
    @graph("test:unrouted", start=Subgraph(PaymentExecute, outcome="outcome"))
    class Unrouted(Payee):
        pass

    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(Unrouted)
    assert str(refused.value) == (
        "Graph Unrouted: the sub-graph 'execute' (payment:execute) declares an outcome, "
        "Executed, that no Route takes: route each of its cases, or drop outcome=."
    )


def sealed_start(secret: WorkerSecret, depth: int) -> OpenStartInput:
    """A sub-graph start as a parent run ``p`` hands it over, ``depth`` levels deep, sealed."""
    handed = {
        "actor": {
            "actor": "olga",
            "verified": True,
            "channel": "cli",
            "principal": "olga",
            "authorization": "n1",
        },
        "depth": depth,
        "parent": {"graph": "nest:parent", "run_id": "p", "execution": "e"},
    }
    return OpenStartInput(
        graph="nest:child",
        version=1,
        run="p/child:1",
        execution="x",
        inputs={},
        handed=handed,
        seal=secret.seal("handover", handover_binding("p/child:1", "p", "p-run", handed)),
        parent_id="p",
        parent_run="p-run",
    )


def test_a_sealed_handover_is_believed_up_to_ten_levels_and_refused_deeper() -> None:
    secret = WorkerSecret.generate("test")
    authority = Authority(Directory.empty(), secret=secret)

    believed = open_handover(authority, sealed_start(secret, 10), {"fields": {}})
    too_deep = open_handover(authority, sealed_start(secret, 11), {"fields": {}})

    assert believed["actor"]["actor"] == "olga"
    assert believed["depth"] == 10
    assert too_deep["code"] == "VALIDATION_ERROR"
    assert "sub-graphs nest at most 10 levels" in too_deep["reason"]


def test_a_handover_changed_after_sealing_or_from_another_parent_is_refused() -> None:
    secret = WorkerSecret.generate("test")
    authority = Authority(Directory.empty(), secret=secret)
    start = sealed_start(secret, 1)
    promoted = dataclasses.replace(
        start, handed={**start.handed, "actor": {**start.handed["actor"], "actor": "tess"}}
    )
    elsewhere = dataclasses.replace(start, parent_run="another-run")

    for forged in (promoted, elsewhere):
        refused = open_handover(authority, forged, {"fields": {}})
        assert refused["code"] == "UNAUTHORIZED"
        assert "no seal of this deployment's workers for this handover" in refused["reason"]

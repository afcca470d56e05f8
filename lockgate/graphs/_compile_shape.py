"""The compiler's checks of a graph's shape as a whole: every routed case goes somewhere, and
no cycle runs without a budget or a gate."""

from __future__ import annotations

import enum
from collections.abc import Mapping

from lockgate.graphs._compiled import CompiledAsk, Transition
from lockgate.graphs._declare import GraphDeclarationError

__all__ = ["check_every_case_routed", "check_no_ungated_cycle"]


def check_every_case_routed(
    where: str,
    route_enums: Mapping[str, type[enum.Enum]],
    routes: Mapping[str, Mapping[str, Transition]],
) -> None:
    """Refuses a state that routes on an enum but leaves one of its cases nowhere to go."""
    for state, enum_type in route_enums.items():
        for case in enum_type:
            if str(case.value) not in routes[state]:
                raise GraphDeclarationError(
                    f"{where}: state '{state}' routes on {enum_type.__name__} but declares no "
                    f"Route for case {case.name}. Every case must have somewhere to go, or a run "
                    "reaches it at 2am and stops nowhere."
                )


def check_no_ungated_cycle(
    where: str,
    edges: Mapping[str, Transition],
    routes: Mapping[str, Mapping[str, Transition]],
    asks: Mapping[str, CompiledAsk],
) -> None:
    """Refuses a cycle of transitions that neither a budget nor a gate interrupts."""
    following: dict[str, list[str]] = {}
    for state, transition in edges.items():
        following.setdefault(state, []).append(transition.to)
    for state, table in routes.items():
        if state in asks:
            continue  # leaving a gate takes a human
        for transition in table.values():
            if transition.at_most is None:
                following.setdefault(state, []).append(transition.to)
    visiting: list[str] = []
    done: set[str] = set()

    def visit(state: str) -> None:
        if state in asks or state in done:
            return
        if state in visiting:
            loop = [*visiting[visiting.index(state) :], state]
            raise GraphDeclarationError(
                f"{where} does not compile: it contains a cycle of ungated transitions "
                f"revisiting state '{state}' ({' → '.join(loop)}). Put a budget (at_most, "
                "then_ask) on a route of the cycle, or a gate in it."
            )
        visiting.append(state)
        for after in following.get(state, []):
            visit(after)
        visiting.pop()
        done.add(state)

    for state in list(following):
        visit(state)

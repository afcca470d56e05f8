"""Compiling what a gate declares (its options, role, approval policy, evidence, waiver and
deadline), for a graph and for a workflow of your own alike; and checking, at a worker's start,
that its Directory can staff the gates.

Each refusal is a :class:`GraphDeclarationError` naming the graph, the gate and what to declare.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from lockgate.gates._approval_policies import CompiledApprovalPolicy, GateDeadline
from lockgate.gates._authority import needed_phrase
from lockgate.graphs._compiled import (
    CompiledAsk,
    CompiledGraph,
    CompiledNode,
    Transition,
    case_code,
)
from lockgate.graphs._declare import ApprovalPolicy, Ask, Deadline, GraphDeclarationError
from lockgate.identity._directory import Directory
from lockgate.tools._configuration import check_flag

__all__ = [
    "check_deadline_takes",
    "check_staffing",
    "compile_ask",
]


def _fail(graph: str, sentence: str) -> GraphDeclarationError:
    return GraphDeclarationError(f"{graph}{sentence}")


def compile_ask(graph: str, ask: Ask, fields: Mapping[str, object]) -> CompiledAsk:
    """The gate ``ask`` declares, compiled: its state (its options enum's name in snake case),
    role, reason and options, and its approval policy, evidence, waiver and deadline, each
    refused as declared wrong.

    Args:
        graph: ``Graph <class name>`` (or ``Workflow <type>``), which every refusal starts with.
        ask: The declared gate, whose options are an enum.
        fields: The fields evidence may be written to (a workflow of your own has none).
    """
    options = ask.options
    evidence, evidence_into = _ask_evidence(graph, ask, fields)
    return CompiledAsk(
        state=re.sub(r"(?<!^)(?=[A-Z])", "_", options.__name__).lower(),
        options_enum=options,
        role=ask.of,
        because=ask.because,
        options=tuple(case_code(case) for case in options),
        policy=_ask_policy(graph, ask),
        evidence=evidence,
        evidence_into=evidence_into,
        waivable_by=_ask_waiver(graph, ask),
        deadline=_ask_deadline(graph, ask),
        sign_in=_ask_sign_in(graph, ask),
    )


def _ask_sign_in(graph: str, ask: Ask) -> dict[str, Any] | None:
    """What an answer an identity provider signs must show at this gate, or None."""
    mfa, within = ask.mfa, ask.signed_in_within
    where = f"{graph}: Ask({ask.options.__name__})"
    if isinstance(mfa, str) or not all(isinstance(each, str) and each for each in mfa):
        raise GraphDeclarationError(
            f"{where} declares mfa={mfa!r}; name the acr or amr values as a tuple of strings, "
            "such as mfa=('mfa',)."
        )
    if within is not None and not (isinstance(within, timedelta) and within.total_seconds() > 0):
        raise GraphDeclarationError(
            f"{where} declares signed_in_within={within!r}; give a positive timedelta."
        )
    if not mfa and within is None:
        return None
    shown: dict[str, Any] = {}
    if mfa:
        shown["mfa"] = sorted(set(mfa))
    if within is not None:
        shown["within_seconds"] = within.total_seconds()
    return shown


def _ask_policy(graph: str, ask: Ask) -> CompiledApprovalPolicy:
    """The gate's approval policy, refused where it could never decide or says nothing.

    Args:
        graph: ``Graph <class name>``, which every refusal starts with.
        ask: The declared gate.
    """
    declared, options = ask.policy, ask.options
    where = f": Ask({options.__name__}) declares a {getattr(declared, 'name', '?')} policy"
    if not isinstance(declared, ApprovalPolicy):
        raise _fail(
            graph,
            f": Ask({options.__name__}) declares policy={declared!r}; use SINGLE, DUAL, "
            "Dual(...) or Quorum(m, of_n, ...).",
        )
    check_flag(
        f"{graph}: Ask({options.__name__})'s policy",
        "any_rejection_rejects",
        declared.any_rejection_rejects,
        error=GraphDeclarationError,
    )
    m, n = declared.approvals, declared.panel
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise _fail(graph, f"{where} of {m!r} approvals; it needs 1 or more, as a count.")
    if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < m):
        raise _fail(
            graph,
            f"{where} of {m} of {n!r}: a quorum larger than its panel can never be reached. "
            f"Declare a panel (of_n) of at least {m}.",
        )
    rejection = _ask_rejection(graph, ask)
    if declared.any_rejection_rejects and rejection is None:
        raise _fail(
            graph,
            f"{where} where any rejection rejects, but names no rejection: say which "
            f"option of {options.__name__} is the no (rejection=...).",
        )
    if n is not None and m > 1 and rejection is None:
        raise _fail(
            graph,
            f"{where} of {m} of {n}: its panel can disagree so that no option reaches {m}, "
            "and nothing says what then happens. Name the option taken then (rejection=...).",
        )
    return CompiledApprovalPolicy(
        name=declared.name,
        approvals=m,
        panel=n,
        rejection=str(rejection.value) if rejection is not None else None,
        any_rejection_rejects=declared.any_rejection_rejects,
    )


def _ask_rejection(graph: str, ask: Ask) -> enum.Enum | None:
    """The option that says no at this gate, as the gate or its policy names it; refused where
    it is not an option of the gate, or the two name different ones."""
    options = ask.options
    named = [
        (whose, rejection)
        for whose, rejection in (
            (f"Ask({options.__name__})", ask.rejection),
            (
                f"Ask({options.__name__}) declares a {getattr(ask.policy, 'name', '?')} policy",
                ask.policy.rejection,
            ),
        )
        if rejection is not None
    ]
    for whose, rejection in named:
        if not (isinstance(rejection, enum.Enum) and type(rejection) is options):
            raise _fail(
                graph,
                f": {whose} whose rejection {rejection!r} is not an option of "
                f"{options.__name__}; name one of its cases.",
            )
    if len(named) == 2 and named[0][1] is not named[1][1]:
        raise _fail(
            graph,
            f": Ask({options.__name__}) names the rejection {named[0][1]!r} and its policy "
            f"{named[1][1]!r}: a gate has one option that says no. Name it once (rejection=).",
        )
    return named[0][1] if named else None


def _ask_evidence(
    graph: str, ask: Ask, fields: Mapping[str, object]
) -> tuple[dict[str, type[BaseModel]], str | None]:
    """The evidence model of each option that needs one, and the field it is written to;
    refused where an option does not exist, a model is not one, or nobody would receive it."""
    options, declared, into = ask.options, ask.evidence, ask.evidence_into
    where = f": Ask({options.__name__})"
    if declared is None:
        if into is not None:
            raise _fail(
                graph,
                f"{where} writes evidence into '{into}' but asks for none; declare evidence=.",
            )
        return {}, None
    per_option: dict[str, type[BaseModel]] = {}
    if isinstance(declared, Mapping):
        for case, model in declared.items():
            if not (isinstance(case, enum.Enum) and type(case) is options):
                raise _fail(
                    graph,
                    f"{where} asks for evidence on {case!r}, which is not an option of "
                    f"{options.__name__}: key evidence= by its cases "
                    f"({', '.join(member.name for member in options)}).",
                )
            per_option[str(case.value)] = _evidence_model(graph, where, model)
    else:
        model = _evidence_model(graph, where, declared)
        per_option = {str(case.value): model for case in options}
    if into is None:
        raise _fail(
            graph,
            f"{where} asks for evidence and names no field it goes to: declare "
            "evidence_into='<field>', or the node the answer leads to never sees it.",
        )
    if into not in fields:
        raise _fail(
            graph,
            f"{where} writes evidence into '{into}', which is not a field of this graph; "
            "declare it (a list).",
        )
    return per_option, into


def _evidence_model(graph: str, where: str, model: object) -> type[BaseModel]:
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise _fail(
            graph,
            f"{where} asks for evidence {model!r}, which is not a pydantic model: declare the "
            "fields an approver must give as a BaseModel.",
        )
    return model


def _ask_waiver(graph: str, ask: Ask) -> str | None:
    """The role that may waive the gate, refused where it names nobody or the approvers' own."""
    role = ask.waivable_by
    if role is None:
        return None
    where = f": Ask({ask.options.__name__})"
    if not isinstance(role, str) or not role.strip():
        raise _fail(
            graph, f"{where} declares waivable_by={role!r}; name the role that may waive it."
        )
    if role == ask.of:
        raise _fail(
            graph,
            f"{where} may be waived by '{role}', the role that answers it: a waiver is a higher "
            "role's, or its approvers could skip its policy alone. Name another role.",
        )
    return role


def _ask_deadline(graph: str, ask: Ask) -> GateDeadline | None:
    """How long the gate waits and what then happens; refused where it is not a wait, says
    both or neither of what happens, takes an option that does not exist, or escalates to the
    role that already answers."""
    declared = ask.deadline
    if declared is None:
        return None
    where = f": Ask({ask.options.__name__})"
    if not isinstance(declared, Deadline):
        raise _fail(graph, f"{where} declares deadline={declared!r}; use Deadline(after, ...).")
    after = declared.after
    if not isinstance(after, timedelta) or after <= timedelta(0):
        raise _fail(
            graph,
            f"{where} declares a deadline after {after!r}; give a positive timedelta.",
        )
    escalate_to, take = declared.escalate_to, declared.take
    if (escalate_to is None) == (take is None):
        raise _fail(
            graph,
            f"{where} declares a deadline that says {'both' if escalate_to else 'neither'} what "
            "then happens: give exactly one of escalate_to='<role>' or take=<an option>.",
        )
    if take is not None and not (isinstance(take, enum.Enum) and type(take) is ask.options):
        raise _fail(
            graph,
            f"{where} declares a deadline that takes {take!r}, which is not an option of "
            f"{ask.options.__name__}.",
        )
    if escalate_to is not None and (not isinstance(escalate_to, str) or not escalate_to.strip()):
        raise _fail(
            graph, f"{where} declares a deadline escalating to {escalate_to!r}; name a role."
        )
    if escalate_to == ask.of:
        raise _fail(
            graph,
            f"{where} escalates at its deadline to '{escalate_to}', the role it already asks: "
            "escalate to another role, or take an option.",
        )
    return GateDeadline(
        after.total_seconds(), escalate_to, str(take.value) if take is not None else None
    )


def check_deadline_takes(
    graph: str,
    asks: Mapping[str, CompiledAsk],
    routes: Mapping[str, Mapping[str, Transition]],
    nodes: Mapping[str, CompiledNode],
) -> None:
    """Refuses a deadline that takes an option leading to a node that needs scopes: the option
    is taken as the deadline's, which holds nothing, so the run would park there at once."""
    for ask in asks.values():
        take = ask.deadline.take if ask.deadline is not None else None
        if take is None:
            continue
        node = nodes.get(routes[ask.state][take].to)
        if node is not None and node.needs:
            raise _fail(
                graph,
                f": Ask({ask.options_enum.__name__})'s deadline takes '{take}', which leads to "
                f"the node '{node.state}' ({node.tool}), and that needs "
                f"{needed_phrase(node.needs)}: an option taken by a deadline runs as nobody. "
                "Take an option whose node needs nothing, or escalate to a role.",
            )


def check_staffing(graph: CompiledGraph, directory: Directory) -> None:
    """Refuses a graph whose gates its Directory cannot staff, as far as a worker can see at its
    start: a policy needing more distinct approvers than hold the gate's role, a waiver by a
    role nobody holds, an escalation to a role nobody holds.

    A Directory with nobody in it (a replayer, a worker that judges nothing) is not looked at:
    it says nothing about who will answer. Single-approval gates are not looked at either: who
    holds a role may change while the worker runs, and one holder may be added at any time.

    Raises:
        GraphDeclarationError: Naming the graph, the gate, and how many hold the role.
    """
    principals = directory.principals()
    if not principals:
        return
    # A role a trusted issuer's group grants is held by however many people the identity
    # provider puts in the group: a worker cannot count them, so it takes such a role as staffed.
    granted = {
        role
        for issuer in directory.issuers()
        for grant in issuer.groups.values()
        for role in grant.roles
    }
    for ask in graph.asks.values():
        if (
            ask.waivable_by is not None
            and ask.waivable_by not in granted
            and not any(ask.waivable_by in directory.roles_of(who) for who in principals)
        ):
            raise GraphDeclarationError(
                f"Graph '{graph.name}': its gate '{ask.state}' may be waived by the role "
                f"'{ask.waivable_by}', which nobody in the Directory holds. Give someone the "
                "role, or drop waivable_by."
            )
        escalate_to = ask.deadline.escalate_to if ask.deadline is not None else None
        if (
            escalate_to is not None
            and escalate_to not in granted
            and not any(escalate_to in directory.roles_of(who) for who in principals)
        ):
            raise GraphDeclarationError(
                f"Graph '{graph.name}': its gate '{ask.state}' escalates at its deadline to the "
                f"role '{escalate_to}', which nobody in the Directory holds. Give someone the "
                "role, or escalate to another."
            )
        if ask.policy.single or ask.role in granted:
            continue
        holders = [who for who in principals if ask.role in directory.roles_of(who)]
        if len(holders) < ask.policy.approvals:
            raise GraphDeclarationError(
                f"Graph '{graph.name}': its gate '{ask.state}' needs {ask.policy.approvals} "
                f"distinct approvers of the role '{ask.role}' ({ask.policy.name}), and the "
                f"Directory lists {len(holders)} who hold it, so the gate could never be decided. "
                "Give the role to more people, or lower the quorum."
            )

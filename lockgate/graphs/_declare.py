"""Declaring a graph: ``@graph`` on a pydantic model, with edges, routes, asks and fields."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, TypeVar, final

from pydantic import BaseModel

from lockgate._errors import DeclarationError
from lockgate.graphs._declare_agents import AgentStep

__all__ = [
    "DUAL",
    "END",
    "SINGLE",
    "Appends",
    "ApprovalPolicy",
    "Ask",
    "Because",
    "Deadline",
    "Dual",
    "Edge",
    "EndOfRun",
    "GraphDeclarationError",
    "GraphSpec",
    "Quorum",
    "Route",
    "Subgraph",
    "Target",
    "graph",
    "graph_spec",
]

_Class = TypeVar("_Class", bound=type)

_SPEC_ATTRIBUTE = "__lockgate_graph__"


class GraphDeclarationError(DeclarationError):
    """A graph cannot be compiled as declared; the message names the class and what to declare."""


@final
class EndOfRun:
    """The type of :data:`END`, its one instance."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "END"


END: Final = EndOfRun()
"""Where a :class:`Route` leads when its case ends the run (LangGraph's name for it).

A gate whose "no" only ends the run routes it here, and needs no tool that does nothing::

    routes=[Route(Decision.APPROVE, to=pay), Route(Decision.DECLINE, to=END)]

Answering an ending option records the answer in the trail and finishes the run; a node's
result routed here finishes it after that node. A run cannot start at END, and an
``Edge(node, END)`` is refused: a node with no edge out already ends the run.
"""


@dataclass(frozen=True, slots=True)
class Edge:
    """An unconditional edge: after ``source`` runs, ``target`` comes next.

    ``target`` is a node, or an options enum that an :class:`Ask` offers (a review gate).
    """

    source: Node
    target: Node | type[enum.Enum]


@dataclass(frozen=True, slots=True)
class Route:
    """A conditional edge named by an enum case.

    The case is what a node returned (a grader's verdict) or what a person picked at a gate.

    Attributes:
        when: The enum case that takes this route.
        to: The node (or gate options enum) it leads to, or :data:`END` to end the run.
        from_: The node the case comes from, when more than one node returns that enum.
        at_most: A loop budget: the route is taken at most this many times in a run...
        then_ask: ...and the next time, this gate (an options enum with an :class:`Ask`) opens.
    """

    when: enum.Enum
    to: Node | type[enum.Enum] | EndOfRun
    from_: Node | None = None
    at_most: int | None = None
    then_ask: type[enum.Enum] | None = None


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """How many distinct approvers a gate needs, and what their answers decide.

    Use :data:`SINGLE`, :data:`DUAL`, :func:`Dual` or :func:`Quorum` rather than this class.
    Every approver is judged by every rule a single answer is (verified, neither the requester
    nor a maker of the work, holds the role, may run what the answer leads to), and counts once.

    Attributes:
        name: ``single``, ``dual`` or ``quorum``.
        approvals: How many distinct approvers must give the same answer (m).
        panel: At most how many distinct approvers answer (n); None: anyone of the role, until
            one answer has ``approvals``.
        rejection: The option that says no (an enum case of the gate's options).
        any_rejection_rejects: One approver answering ``rejection`` decides the gate alone.
    """

    name: str = "single"
    approvals: int = 1
    panel: int | None = None
    rejection: enum.Enum | None = None
    any_rejection_rejects: bool = False


SINGLE = ApprovalPolicy()
"""One verified approver of the role decides (the default)."""


def Dual(
    rejection: enum.Enum | None = None, *, any_rejection_rejects: bool = False
) -> ApprovalPolicy:
    """Two different verified approvers must give the same answer.

    Args:
        rejection: The option that says no.
        any_rejection_rejects: One approver answering ``rejection`` decides the gate alone.
    """
    return ApprovalPolicy("dual", 2, None, rejection, any_rejection_rejects)


DUAL = Dual()
"""Two different verified approvers must give the same answer; a disagreement waits for a
third who agrees with one of them."""


def Quorum(
    approvals: int,
    of_n: int | None = None,
    *,
    rejection: enum.Enum | None = None,
    any_rejection_rejects: bool = False,
) -> ApprovalPolicy:
    """``approvals`` (m) distinct approvers of the role must give the same answer.

    Args:
        approvals: m, the matching answers that decide.
        of_n: n, the panel: at most this many distinct approvers answer. Once their answers can
            no longer reach m for any option, ``rejection`` is taken (so a panel needs one).
        rejection: The option that says no.
        any_rejection_rejects: One approver answering ``rejection`` decides the gate alone.
    """
    return ApprovalPolicy("quorum", approvals, of_n, rejection, any_rejection_rejects)


@dataclass(frozen=True, slots=True)
class Deadline:
    """How long a gate waits for its decision, and what then happens: exactly one of
    ``escalate_to`` (a new opening of the gate asks that role, alone) or ``take`` (the gate takes
    that option, recorded as the deadline's, never as a person's).

    The wait is a durable Temporal timer: it survives worker and server restarts, and a run
    that moves to a new history keeps its due time.

    Example::

        Ask(Release, of="officer", policy=DUAL,
            deadline=Deadline(timedelta(hours=48), escalate_to="finance_lead"))
    """

    after: timedelta
    escalate_to: str | None = None
    take: enum.Enum | None = None


@dataclass(frozen=True, slots=True)
class Ask:
    """A human gate: its options are the cases of ``options``; ``of`` is the approver's role.

    An answer is accepted only from a verified approver who holds ``of``, is not who opened the
    gate nor drove the work it reviews, and may run the first node the answer leads to.
    ``policy`` says how many such approvers the gate needs (:data:`SINGLE` by default).

    ``evidence`` is a pydantic model every answer must carry, signed with it (or a mapping from
    the options that need one to their model); it is validated before the answer is accepted,
    recorded in the trail, and the evidence of the answers that decided the gate is written to
    the field ``evidence_into`` (a list of ``{by, answer, evidence}``), where the node the
    answer leads to reads it.

    ``waivable_by`` names a higher role whose holder may waive the gate: decide it alone,
    whatever its policy and evidence, giving a reason (a trail row of its own, ``waived``). A
    gate without it refuses waivers (``NOT_WAIVABLE``).

    ``deadline`` (a :class:`Deadline`) says how long the gate waits and what then happens.

    ``mfa`` and ``signed_in_within`` tighten what an answer an identity provider signs must
    show: one of these ``acr`` or ``amr`` values (``("mfa", "otp")``), and a sign-in no older
    than this (within the issuer's own window). Answers signed with a key or passkey are not
    affected.

    ``rejection`` names the option that says no, whatever the policy (a policy that names one
    too must name the same). A run that ran to its end after its last gate decided it reads
    ``declined`` instead of ``finished``: in ``show``, ``list``, ``--json`` and its memo
    (``lockgate_status``). It may be declared on a graph with runs in flight::

        Ask(Decision, of="support_lead", rejection=Decision.DECLINE)
    """

    options: type[enum.Enum]
    of: str
    because: str = ""
    policy: ApprovalPolicy = SINGLE
    evidence: type[BaseModel] | Mapping[enum.Enum, type[BaseModel]] | None = None
    evidence_into: str | None = None
    waivable_by: str | None = None
    deadline: Deadline | None = None
    mfa: tuple[str, ...] = ()
    signed_in_within: timedelta | None = None
    rejection: enum.Enum | None = None


@dataclass(frozen=True, slots=True)
class Subgraph:
    """A node that runs another declared graph as a child workflow, and waits for it.

    The child starts with the parent's fields it also declares, driven (and requested) by
    whoever drives the parent there: authority passes down, never up. Its gates appear in
    ``pending`` naming the parent. When it ends, its fields that the parent also declares
    land in the parent, and the enum in its ``outcome`` field picks the parent's
    :class:`Route`. Cancelling the parent cancels the child. A graph may not include itself,
    and sub-graphs nest at most ten deep.

    Example::

        execute = Subgraph(PaymentExecute, outcome="outcome")
        @graph(..., routes=[Route(Release.RELEASE, to=execute),
                            Route(Outcome.SENT, to=notify), Route(Outcome.BOUNCED, to=chase)])
    """

    graph: type
    outcome: str | None = None


Node = Callable[..., Any] | Subgraph | AgentStep
"""A node is a ``@tool`` function, a :class:`Subgraph`, or an :class:`AgentStep`."""


@dataclass(frozen=True, slots=True)
class Appends:
    """Marks a list field that accumulates every value written to field ``of``."""

    of: str


@dataclass(frozen=True, slots=True)
class Target:
    """Marks the one field a person names the run by (an essay's title)."""


@dataclass(frozen=True, slots=True)
class Because:
    """Says what a field is for; it becomes the field's description."""

    purpose: str


@dataclass(frozen=True, slots=True)
class GraphSpec:
    """What ``@graph`` recorded on a class, before compilation."""

    name: str
    description: str
    start: Node | type[enum.Enum] | None
    edges: tuple[Edge, ...]
    routes: tuple[Route, ...]
    asks: tuple[Ask, ...]
    version: int
    allow_unsigned_start: bool = False


def graph(
    name: str,
    description: str = "",
    *,
    start: Node | type[enum.Enum] | None = None,
    edges: Iterable[Edge] = (),
    routes: Iterable[Route] = (),
    asks: Iterable[Ask] = (),
    version: int = 1,
    allow_unsigned_start: bool = False,
) -> Callable[[_Class], _Class]:
    """Declares a graph of tools on a pydantic model: its fields are the graph's fields.

    Nodes are ``@tool`` functions: a node's parameters read fields of the same name, the fields
    of its return model land in fields of the same name, and an enum field of its return value
    picks the outgoing :class:`Route`. A node with no outgoing edge ends the run after it runs, as
    does a route to :data:`END`.

    Example::

        @graph("essay:review", "Draft until it passes, then publish.", start=write,
               edges=[Edge(write, grade)],
               routes=[Route(Verdict.PASSED, to=publish),
                       Route(Verdict.FAILED, to=write, at_most=3, then_ask=EditorCall), ...],
               asks=[Ask(EditorCall, of="editor", because="Three drafts failed.")])
        class EssayReview(BaseModel):
            title: Annotated[str, Target(), Because("The essay being written")]
            ...

    Args:
        name: The graph's name; also its Temporal workflow type.
        description: What a run does.
        start: The node (or gate) a run begins at.
        edges: Unconditional edges.
        routes: Edges named by enum cases.
        asks: Human gates.
        version: Runs are pinned to the version they started with; bump it when the graph's
            shape changes and keep serving the old class until its runs finish. New runs always
            start on the newest version served.
        allow_unsigned_start: A graph with gates starts only from a signed start, so that four
            eyes can tell who asked for the work; set this to let unsigned callers start it
            (its gates then only keep the makers of the work from approving it).
    """

    def decorate(cls: _Class) -> _Class:
        setattr(
            cls,
            _SPEC_ATTRIBUTE,
            GraphSpec(
                name=name,
                description=description,
                start=start,
                edges=tuple(edges),
                routes=tuple(routes),
                asks=tuple(asks),
                version=version,
                allow_unsigned_start=allow_unsigned_start,
            ),
        )
        return cls

    return decorate


def graph_spec(candidate: object) -> GraphSpec | None:
    """The :class:`GraphSpec` ``@graph`` put on ``candidate`` itself (not inherited)."""
    if not isinstance(candidate, type):
        return None
    spec = candidate.__dict__.get(_SPEC_ATTRIBUTE)
    return spec if isinstance(spec, GraphSpec) else None

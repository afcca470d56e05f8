"""What lockgate's clients return, and what the CLI's ``--json`` prints: one JSON form each.

Every result is plain JSON data, a ``dict`` a caller indexes, prints or sends on; these types
name its keys, so a type checker catches a misspelt key or a key that is not there. Every
refusal and failure says what went wrong the same way: ``error: {code, message}``, where
``code`` is an :class:`~lockgate.ErrorCode` value and ``message`` the sentence for a person.

- A graph call (:class:`~lockgate.GraphClient`) returns a :class:`RunView`: ``ok`` says whether
  the call was accepted; a refusal has ``ok: False`` and ``error``.
- A tool call (:class:`~lockgate.ToolClient`) returns a :class:`ToolCallResult`, the seeds'
  ``{success, data, error, meta}``.
- ``pending`` returns :class:`PendingGate` rows: the open gate as a run shows it
  (:class:`GateView`) with when it opened and, for whoever is looking, which options they may
  take.
- A refusal, whoever says it (a client, the CLI, MCP, the HTTP API, the inbox), is made by
  :func:`refusal`, the one function that writes ``{ok: False, error: {code, message}}``.

A run and a gate are named by ``run_id`` (the workflow id) and ``execution`` (its first run id)
everywhere; the role a gate asks for is its ``role``.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

__all__ = [
    "ActorView",
    "AnswerView",
    "Budget",
    "ChoiceView",
    "DeadlineView",
    "ErrorDetail",
    "EvidenceView",
    "GateView",
    "ParkedView",
    "PendingGate",
    "PolicyView",
    "RunRef",
    "RunView",
    "ToolCallResult",
    "TrailRow",
    "ViewerView",
    "refusal",
]


class ErrorDetail(TypedDict):
    """What went wrong: the one error shape of every refusal and failure."""

    code: str
    message: str


class ActorView(TypedDict):
    """Who did something, as the trail records it: never what they held."""

    actor: str
    verified: bool
    channel: str
    principal: str | None
    authorization: str | None


class _ChoiceViewRequired(TypedDict):
    option: str
    leads_to: str | None
    operation: str | None
    needs: list[str]


class ChoiceView(_ChoiceViewRequired, total=False):
    """One option of a gate: the node it leads to (``leads_to``), the ``operation`` there and
    what running it ``needs``. An option leading to another gate has no ``leads_to`` nor
    ``operation``; one that ends the run (a route to ``END``) has no ``leads_to``, the
    ``operation`` ``"end"`` and needs nothing. In ``pending``, also whether the viewer ``may``
    take it, ``because`` (a short reason key) and ``why_not``."""

    may: bool
    because: str | None
    why_not: str | None


class PolicyView(TypedDict):
    """How a gate is decided: ``approvals`` (m) distinct approvers giving the same answer, of a
    ``panel`` (n, or None: anyone of the role); ``rejection`` is the option that says no, and
    with ``any_rejection_rejects`` one approver taking it decides alone."""

    name: str
    approvals: int
    panel: int | None
    rejection: str | None
    any_rejection_rejects: bool


class _AnswerViewRequired(TypedDict):
    principal: str
    option: str


class AnswerView(_AnswerViewRequired, total=False):
    """One approver's answer counted so far at a gate that needs several."""

    evidence: dict[str, Any]


class RunRef(TypedDict, total=False):
    """Another run, named: a sub-graph's ``parent``, or the ``child`` a run waits for or ran
    (with its ``status`` and ``outcome`` once it ended)."""

    graph: str
    run_id: str
    execution: str
    status: str | None
    outcome: Any


class DeadlineView(TypedDict):
    """How long a gate waits (``seconds`` from its opening), and what then happens: it
    ``escalate_to`` a role, or it ``take`` s an option (the other is None)."""

    seconds: float
    escalate_to: str | None
    take: str | None


class EvidenceView(TypedDict):
    """What evidence an option of a gate needs: its ``model``'s name, its ``fields`` (each with
    its description) and which are ``required``."""

    model: str
    fields: dict[str, str]
    required: list[str]


class _GateViewRequired(TypedDict):
    graph: str
    run_id: str
    execution: str
    gate: str
    ask: str
    role: str
    because: str
    requester: str
    choices: list[ChoiceView]
    subject: str
    makers: list[str]


class GateView(_GateViewRequired, total=False):
    """An open gate: what it asks (``ask``, ``because``), of whom (``role``), about what
    (``target``: the field it reviews), and where each option leads.

    ``requester`` opened it and ``makers`` drove the work it reviews; none of them may answer.
    A proof answering it names ``graph``, ``run_id``, ``execution``, ``gate`` and ``subject``.
    A gate that needs several approvers also has its ``policy`` and the ``answers`` so far;
    one that asks for evidence has, per option that needs it, its ``evidence``; one that may be
    waived names the role that may, ``waivable_by``; one with a deadline has its ``deadline``
    and when it passes, ``due_at``; one opened by an escalation names the role it asked
    before, ``escalated_from``; a sub-graph's gate names its ``parent`` run. One that asks more
    of an answer an identity provider signs has its ``sign_in`` (``{mfa, within_seconds}``).
    """

    options: list[str]
    target: dict[str, Any] | None
    policy: PolicyView
    answers: list[AnswerView]
    evidence: dict[str, EvidenceView]
    waivable_by: str
    deadline: DeadlineView
    due_at: str | None
    escalated_from: str
    parent: RunRef
    sign_in: dict[str, Any]


class ParkedView(TypedDict):
    """A run parked at a node it was refused (or could not finish), until someone resumes it."""

    graph: str
    run_id: str
    node: str
    operation: str
    needs: list[str]
    parking: int


class Budget(TypedDict):
    """A loop budget: how often its outcome was taken, of at most how often."""

    taken: int
    at_most: int


class _TrailRowRequired(TypedDict):
    operation: str
    outcome: str
    by: ActorView


class _TrailRowDetails(TypedDict, total=False):
    at: str
    answer: str | None
    needs: list[str]
    code: str | None
    why: str
    counts: dict[str, int]
    needed: int
    decided: str
    evidence: dict[str, Any]
    comment: str
    child: RunRef
    usage: dict[str, int]
    asked_by: str
    gate: str


class TrailRow(_TrailRowRequired, _TrailRowDetails, total=False):
    """One step of a run: a node that ``ran``, a gate ``answered`` or ``waived`` (its reason in
    ``why``), a deadline that ``escalated`` a gate or ``timed_out`` taking an option (by
    ``unverified:deadline``, never a person), a park ``resumed``, a node ``parked``, or a signal
    ``refused`` (with its ``code`` and ``why``). A sub-graph node that ran names its ``child``
    run.

    An answer at a gate of several approvers also has the answers ``counts`` per option so far,
    the ``needed`` matching answers, ``why`` it stands as it does, and, once the gate is
    decided, the option ``decided``. An answer given with evidence carries its ``evidence``; one
    signed with a comment, its ``comment`` (what the approver said; it decides nothing).

    An agent step's rows: each model request (``operation`` ``model:<name>``) with its
    ``usage``; each tool call the model asked for, ``asked_by`` ``model:<name>``; a spent
    budget (``budget_spent``, the gate it opens in ``why``); and the step's own row, with the
    step's whole ``usage``.

    A graph run's rows name their ``node``; a workflow of your own's name the ``gate``. Each
    says when it happened, ``at`` (ISO 8601 in UTC, to the second, by the run's clock); a row
    carried from a run of an older lockgate may have none.
    """

    node: str


class _RunViewRequired(TypedDict):
    ok: bool


class RunView(_RunViewRequired, total=False):
    """A run, or a refusal of what was asked of it.

    A refusal has ``ok: False`` and ``error``; a run refused at its start shows itself with
    ``status: "refused"``. A run not yet settled when the client stopped waiting has
    ``status: "started"`` and a ``note``. While an agent step waits (at its budget's gate),
    ``conversations`` says what each has used: ``{messages, requests, input_tokens,
    output_tokens}``.
    """

    error: ErrorDetail
    run_id: str
    execution: str
    graph: str | None
    version: int
    status: str
    state: str | None
    requester: ActorView
    awaiting: GateView | None
    parked: ParkedView | None
    fields: dict[str, Any]
    budgets: dict[str, Budget]
    trail: list[TrailRow]
    trail_from: int
    trail_total: int
    settles: int
    refused_signals_not_kept: int
    ignored_inputs: list[str]
    note: str
    parent: RunRef
    child: RunRef
    conversations: dict[str, dict[str, int]]


class ViewerView(TypedDict):
    """In ``pending``: who is looking, and what stands in their way whatever they choose.

    ``verified`` says whether the Directory could verify a proof of theirs (it lists a public key
    or passkey for the name); the name itself is proven by nothing.
    """

    principal: str
    is_requester: bool
    made_the_work: bool
    verified: bool


class PendingGate(GateView, total=False):
    """A row of ``pending``: an open gate, when it opened, and what the viewer may take (and,
    looking across task queues, the queue of its run)."""

    opened_at: str | None
    viewer: ViewerView
    task_queue: str


class ToolCallResult(TypedDict):
    """A tool call's result: ``data`` on success, ``error`` otherwise; ``message`` a sentence
    for a person; ``meta`` says more (whether the call needs confirming, the request id)."""

    success: bool
    data: Any
    message: str | None
    error: ErrorDetail | None
    meta: dict[str, Any]


def refusal(code: str, message: str, **facts: Any) -> RunView:
    """A refusal: ``{"ok": False, "error": {"code": code, "message": message}}`` plus ``facts``.

    The one place this shape is written: every client and surface refuses with it, so a program
    reads every refusal the same way. ``code`` is an :class:`~lockgate.ErrorCode` (or its value);
    ``message`` is the sentence that names what is wrong.

    Typed as a :class:`RunView`, which a refusal of something asked of a run is (its facts are
    a run's keys, such as ``run_id``). Where it stands for an answer of another shape, the
    caller takes it as a plain ``dict``.

    Example::

        refusal(ErrorCode.NOT_FOUND, "No run 'essay-1'.", run_id="essay-1")
        # {"ok": False, "error": {"code": "NOT_FOUND", "message": "No run 'essay-1'."},
        #  "run_id": "essay-1"}
    """
    refused: dict[str, Any] = {"ok": False, "error": {"code": str(code), "message": message}}
    return cast(RunView, refused | facts)

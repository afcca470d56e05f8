"""Judgements: whether a start, a durable call, an answer to a gate, a resume of a parked run, a
cancel of a run, or a viewer's option stands.

Each is judged before anything about it is written, against the worker's :class:`Authority`
(:mod:`lockgate.gates._authority`) and the gate records (:mod:`lockgate.gates._gates`).
Judgements return sentences, never scopes: a refusal names what was missing, not what anyone holds.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from lockgate.gates._authority import Authority, answer_refusal_sentence, why_node_refuses
from lockgate.gates._evidence import comment_problem, evidence_problem
from lockgate.gates._gate_engine import four_eyes
from lockgate.gates._gates import OpenGate, ParkedNode
from lockgate.gates._limits import shorten
from lockgate.identity._actors import Actor
from lockgate.identity._canonical import digest
from lockgate.identity._identity_errors import ProofRefused
from lockgate.identity._proofs import Proof
from lockgate.identity._verifier import utc_moment
from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "ENDED_STATUSES",
    "MAX_CANCEL_REASON_CHARS",
    "Judgement",
    "ViewerChoice",
    "judge_answer",
    "judge_call",
    "judge_cancel",
    "judge_resume",
    "judge_scheduled_start",
    "judge_start",
    "judge_start_inputs",
    "judge_viewer",
    "schedule_of_grant",
    "unknown_inputs",
]

_UNVERIFIED_ANSWER = (
    "A gate is answered by a verified actor, a signed call, and this answer carries no valid "
    "proof: {why}"
)


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on a start, call, answer, resume or cancel: allowed (with who), or a code and
    a sentence (a :class:`~lockgate.tools._verdict.Verdict`)."""

    allowed: bool
    actor: Actor | None = None
    choice: str | None = None
    code: str | None = None
    reason: str | None = None
    needs: tuple[str, ...] = ()
    leads_to: str | None = None
    operation: str | None = None
    evidence: Any = None
    waiver: str | None = None
    comment: str | None = None

    @classmethod
    def refuse(cls, code: ErrorCode, reason: str, **facts: Any) -> Judgement:
        """A refusal."""
        return cls(False, code=code.value, reason=reason, **facts)

    def to_dict(self) -> dict[str, Any]:
        """As JSON data (an activity result).

        ``allowed`` is written under its first name, ``accepted``: saved histories hold that
        key, and a worker of the release before reads only it.
        """
        return {
            "accepted": self.allowed,
            "actor": self.actor.to_dict() if self.actor else None,
            "choice": self.choice,
            "code": self.code,
            "reason": self.reason,
            "needs": list(self.needs),
            "leads_to": self.leads_to,
            "operation": self.operation,
            **({"evidence": self.evidence} if self.evidence is not None else {}),
            **({"waiver": self.waiver} if self.waiver is not None else {}),
            **({"comment": self.comment} if self.comment is not None else {}),
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Judgement:
        """Reads :meth:`to_dict` output."""
        actor = value.get("actor")
        return cls(
            bool(value["accepted"]),
            Actor.from_dict(actor) if actor else None,
            value.get("choice"),
            value.get("code"),
            value.get("reason"),
            tuple(value.get("needs") or ()),
            value.get("leads_to"),
            value.get("operation"),
            value.get("evidence"),
            value.get("waiver"),
            value.get("comment"),
        )


def _claimed(value: object, key: str) -> object:
    """What an answer claims, signed or not (for the refusal's record, never for judging)."""
    if isinstance(value, Mapping):
        authorizes = value.get("authorizes")
        if isinstance(authorizes, Mapping):
            return authorizes.get(key)
        return value.get(key)
    return None


def _verify(
    authority: Authority,
    value: object,
    kind: str,
    run: str,
    spent_nonces: Collection[str],
) -> Proof | ProofRefused:
    """The proof, verified and bound to ``kind`` on ``run`` and not spent in it, or why not."""
    try:
        proof = authority.verifier.verify_proof(value, {"kind": kind, "run": run})
    except ProofRefused as refused:
        return refused
    if proof.nonce in spent_nonces:
        return ProofRefused(
            "replayed",
            "The proof's nonce was already spent on this run: a proof is good for one use.",
        )
    return proof


def judge_start(
    authority: Authority,
    value: object,
    *,
    graph: str,
    run: str,
    execution: str,
    version: int | None,
    inputs: Mapping[str, Any] | None,
) -> Judgement:
    """Judges the proof that says who started a run, before anything about it is written.

    The proof must be valid and name exactly this run: its graph (or workflow type), its
    workflow id, its execution (the first run id the server gave it), the version it runs (or
    none, for the newest its workers serve) and the digest of its inputs. Every refusal is
    ``UNAUTHORIZED`` with a sentence naming what differs.

    Args:
        authority: The worker's Directory and verifier.
        value: The proof as received; anything.
        graph: The run's graph, or the type of a workflow of your own.
        run: The run's workflow id.
        execution: Its first run id.
        version: The graph version the run follows (None for a workflow of your own).
        inputs: The inputs it started with (``{"args": [...]}`` for a workflow of your own), or
            None where they are not known yet; the run then checks their digest itself.
    """
    proof = _proof_for(authority, value, "start", "run", run)
    if isinstance(proof, Judgement):
        return proof
    actor = Actor.of_proof(proof)
    act = proof.authorizes
    if act.get("graph") != graph:
        return _unauthorized(
            f"The proof starts a run of '{act.get('graph')}', and run '{run}' is a run of "
            f"'{graph}': a start proof starts only the graph it names.",
            actor,
        )
    if act.get("execution") != execution:
        return _unauthorized(
            f"The proof starts another execution of '{run}' than this one (an execution that "
            "ended, or was started again under the same id): a start proof names the execution "
            "the server started, and is good for that one only.",
            actor,
        )
    other_version = _other_version(
        act, version, actor, says="The proof starts", graph=graph, run="this run"
    )
    if other_version is not None:
        return other_version
    if inputs is not None:
        return judge_start_inputs(proof, run, inputs)
    return Judgement(True, actor=actor)


def judge_start_inputs(
    proof: Proof, run: str, inputs: Mapping[str, Any], *, what: str = "inputs"
) -> Judgement:
    """Judges whether a start proof names exactly the inputs its run started with (the part of
    :func:`judge_start` a run that learns its inputs only after the proof makes itself).

    Args:
        proof: The start proof, already judged for everything else.
        run: The run's workflow id.
        inputs: What it started with (``{"args": [...]}`` for a workflow of your own).
        what: How a refusal calls them (``inputs``, ``arguments``).
    """
    actor = Actor.of_proof(proof)
    refused = _not_named(
        proof.authorizes.get("inputs"),
        inputs,
        actor,
        whose=f"The {what} of run '{run}'",
        differs=f"The proof starts run '{run}' with other {what} than the ones it was started "
        "with: a start proof names exactly what it starts.",
    )
    return refused or Judgement(True, actor=actor)


def unknown_inputs(graph: str, given: Collection[str], model: type[BaseModel]) -> str | None:
    """The sentence that refuses a start of ``graph`` with inputs its ``model`` does not take:
    each one named, with the field it is close to ("did you mean"), and the fields it takes;
    None when every one of ``given`` is taken.

    A model that declares ``extra="allow"`` takes more than its fields, so nothing is refused
    (its start drops the others and lists them in ``ignored_inputs``).
    """
    if model.model_config.get("extra") == "allow":
        return None
    takes = list(model.model_fields)
    unknown = sorted(str(name) for name in given if name not in takes)
    if not unknown:
        return None
    named = []
    for name in unknown[:10]:
        close = difflib.get_close_matches(name, list(takes), n=1)
        named.append(shorten(repr(name), 66) + (f" (did you mean '{close[0]}'?)" if close else ""))
    more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
    inputs = "input" if len(unknown) == 1 else "inputs"
    return (
        f"'{graph}' takes no {inputs} {', '.join(named)}{more}: the inputs it takes are "
        f"{', '.join(takes) or 'none'}. Nothing was run."
    )


def schedule_of_grant(value: object) -> str | None:
    """The schedule a schedule grant says it is for, unverified: which schedule to ask the
    server about before the grant is judged (:func:`judge_scheduled_start`); None for anything
    that names none."""
    schedule = _claimed(value, "schedule")
    return schedule if isinstance(schedule, str) and 0 < len(schedule) <= 1000 else None


def judge_scheduled_start(
    authority: Authority,
    value: object,
    *,
    graph: str,
    run: str,
    version: int,
    inputs: Mapping[str, Any],
    started_by_schedule: bool,
    started_at: float,
) -> Judgement:
    """Judges the schedule grant a scheduled run carries, and whether this run is one it grants.

    The grant must be a valid proof of kind ``schedule``
    (:func:`~lockgate.identity._bindings.schedule_binding`) naming this run's graph, its version
    (or none) and the digest of its inputs; the schedule it names must be the one that started
    this run, as the server lists that schedule's actions (``started_by_schedule``, read by the
    caller); and the run must have started inside the grant's window. Every refusal is
    ``UNAUTHORIZED`` with a sentence naming what differs.

    Args:
        authority: The worker's Directory and verifier.
        value: The grant as the run carries it; anything.
        graph: The run's graph.
        run: The run's workflow id.
        version: The graph version it follows.
        inputs: The inputs it started with.
        started_by_schedule: Whether the server lists this execution among the actions of the
            schedule the grant names.
        started_at: When the server started this execution, in unix seconds.
    """
    try:
        proof = authority.verifier.verify_grant(value, {"kind": "schedule", "graph": graph})
    except ProofRefused as refused:
        return Judgement.refuse(
            ErrorCode.UNAUTHORIZED,
            f"Run '{run}' carries a schedule grant that is refused: {refused.sentence}",
        )
    actor = Actor.of_proof(proof)
    act = proof.authorizes
    other_version = _other_version(
        act,
        version,
        actor,
        says="The schedule grant runs",
        graph=graph,
        run=f"run '{run}'",
    )
    if other_version is not None:
        return other_version
    other_inputs = _not_named(
        act.get("inputs"),
        inputs,
        actor,
        whose=f"The inputs of run '{run}'",
        differs=f"Run '{run}' was started with other inputs than the ones its schedule grant "
        f"names: {actor.actor} granted exactly the inputs they signed.",
    )
    if other_inputs is not None:
        return other_inputs
    schedule = act.get("schedule")
    if not started_by_schedule:
        return _unauthorized(
            f"Run '{run}' carries {actor.actor}'s grant for schedule {schedule!r}, and that "
            "schedule did not start it (the server lists no such action of it): only runs the "
            "granted schedule starts run as its owner.",
            actor,
        )
    not_before, not_after = act.get("not_before"), act.get("not_after")
    if not (_whole(not_before) and _whole(not_after)):
        return _unauthorized("The schedule grant names no window of unix seconds.", actor)
    assert isinstance(not_before, int) and isinstance(not_after, int)
    if not not_before <= started_at <= not_after:
        return _unauthorized(
            f"Run '{run}' started at {utc_moment(started_at)}, outside the window of "
            f"{actor.actor}'s grant for schedule {schedule!r} ({utc_moment(not_before)} to "
            f"{utc_moment(not_after)}): a grant runs nothing before or after its window.",
            actor,
        )
    return Judgement(True, actor=actor)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def judge_call(
    authority: Authority,
    value: object,
    *,
    tool: str,
    arguments: Mapping[str, Any],
    request: str,
    execution: str,
) -> Judgement:
    """Judges the proof of a durable tool call, before anything about it is written.

    The proof must be valid and name exactly this call: its request id, its execution (the
    call's first run id), the tool and the digest of its arguments. Every refusal is
    ``UNAUTHORIZED`` with a sentence naming what differs.
    """
    proof = _proof_for(authority, value, "tool", "request", request)
    if isinstance(proof, Judgement):
        return proof
    actor = Actor.of_proof(proof)
    act = proof.authorizes
    if act.get("execution") != execution:
        return _unauthorized(
            f"The proof makes another execution of call '{request}' than this one (one that "
            "ended, or was started again under the same id): a call's proof names the execution "
            "the server started, and is good for that one only.",
            actor,
        )
    if act.get("tool") != tool:
        return _unauthorized(
            f"The proof calls '{act.get('tool')}', and call '{request}' is a call of '{tool}'.",
            actor,
        )
    refused = _not_named(
        act.get("arguments"),
        arguments,
        actor,
        whose=f"The arguments of '{tool}'",
        differs=f"The proof calls '{tool}' with other arguments than call '{request}' was made "
        "with: a request id names one call, with the arguments it was first made with.",
    )
    return refused or Judgement(True, actor=actor)


def _proof_for(
    authority: Authority, value: object, kind: str, key: str, name: str
) -> Proof | Judgement:
    """The proof, valid and of ``kind`` for ``key`` ``name``; or its refusal."""
    try:
        return authority.verifier.verify_proof(value, {"kind": kind, key: name})
    except ProofRefused as refused:
        return Judgement.refuse(ErrorCode.UNAUTHORIZED, refused.sentence)


def _unauthorized(sentence: str, actor: Actor) -> Judgement:
    return Judgement.refuse(ErrorCode.UNAUTHORIZED, sentence, actor=actor)


def _not_named(
    signed: object, values: Mapping[str, Any], actor: Actor, *, whose: str, differs: str
) -> Judgement | None:
    """Why a proof signed by ``actor`` does not name exactly ``values`` by the digest it signed
    (``signed``): a ``VALIDATION_ERROR`` for values canonical JSON refuses (NaN, infinity, an
    unpaired surrogate), which no proof can name (``whose`` says whose they are), else
    ``UNAUTHORIZED`` saying ``differs`` for a digest of other values; None when it names them."""
    try:
        named = digest(dict(values))
    except (TypeError, ValueError):
        return Judgement.refuse(
            ErrorCode.VALIDATION_ERROR,
            f"{whose} are not JSON data a proof can name (NaN, infinity or an unpaired "
            "surrogate); send plain JSON.",
            actor=actor,
        )
    if signed != named:
        return _unauthorized(differs, actor)
    return None


def _other_version(
    act: Mapping[str, Any], version: int | None, actor: Actor, *, says: str, graph: str, run: str
) -> Judgement | None:
    """Why a proof whose act names a version of ``graph`` other than ``version`` (the one
    ``run`` follows) is refused, in a sentence that opens with what the proof ``says`` it does;
    None when it names no version, or that one."""
    signed_version = act.get("version")
    if signed_version is None or signed_version == version:
        return None
    return _unauthorized(
        f"{says} version {signed_version!r} of '{graph}', and {run} follows version {version!r}.",
        actor,
    )


def judge_answer(
    authority: Authority,
    value: object,
    *,
    graph: str,
    run: str,
    gate: OpenGate | None,
    spent_nonces: Collection[str] = (),
    evidence_models: Mapping[str, type[BaseModel]] | None = None,
) -> Judgement:
    """Judges an answer to a gate, before anything about it is written.

    In order: the answer carries a valid proof bound to this run (``UNVERIFIED_APPROVER``), the
    proof names this graph (``NOT_FOUND``), the run waits for an answer (``GATE_NOT_PENDING``) in
    the execution, at the gate opening and showing the subject the proof names
    (``GATE_NOT_PENDING``), the option is offered (``INVALID_DECISION``), the approver neither
    opened the gate nor drove the work it reviews (``SELF_APPROVAL_FORBIDDEN``), has not already
    answered this opening of a gate that needs several approvers (``ALREADY_ANSWERED``), holds
    the gate's role (``FORBIDDEN``), may run the first node the answer leads to
    (``FORBIDDEN``), and signed the evidence the gate asks for with that option, valid by its
    model (``INVALID_EVIDENCE``, naming each field that failed). A comment signed with the
    answer must be text of 1 to 2,000 characters (``VALIDATION_ERROR``); it is kept with the
    answer and decides nothing.

    A waiver (an answer naming a ``waiver`` reason) is judged the same way, except that the gate
    must be waivable (``NOT_WAIVABLE``), the reason given (``VALIDATION_ERROR``), the role held
    is the one the gate may be waived by, and no evidence is asked: it decides the gate alone.

    Args:
        authority: The worker's Directory and verifier.
        value: The answer as received: a signed proof of :func:`decide_binding`, or anything
            else (which is refused).
        graph: The graph of the run being answered.
        run: The run being answered.
        gate: The gate waiting, or None.
        spent_nonces: Nonces this run already accepted.
        evidence_models: The evidence model each option of ``gate`` requires; an option the
            gate says requires evidence but that has no model here is refused (unchecked
            evidence is never accepted).
    """
    proof = _verify(authority, value, "decide", run, spent_nonces)
    if isinstance(proof, ProofRefused):
        return Judgement.refuse(
            ErrorCode.UNVERIFIED_APPROVER,
            _UNVERIFIED_ANSWER.format(why=_lower_first(proof.sentence)),
            choice=_text_or_none(_claimed(value, "choice")),
        )
    actor = Actor.of_proof(proof)
    act = proof.authorizes
    choice = act.get("choice")
    other = _of_another_graph(act, run, graph, "answers", actor)
    if other is not None:
        return other
    if gate is None:
        return Judgement.refuse(
            ErrorCode.GATE_NOT_PENDING,
            f"Run '{run}' is not waiting for a decision.",
            actor=actor,
        )
    if act.get("execution") != gate.execution:
        return Judgement.refuse(
            ErrorCode.GATE_NOT_PENDING,
            f"The proof answers another execution of '{run}' than the one waiting now (a run "
            "that ended, or one started again under the same id): sign an answer to this one.",
            actor=actor,
        )
    if act.get("gate") != gate.gate:
        return Judgement.refuse(
            ErrorCode.GATE_NOT_PENDING,
            f"The proof answers gate '{act.get('gate')}', which is not the gate waiting on run "
            f"'{run}' ('{gate.gate}'); sign an answer to '{gate.gate}'.",
            actor=actor,
        )
    if act.get("subject") != gate.subject:
        return Judgement.refuse(
            ErrorCode.GATE_NOT_PENDING,
            f"The proof approves something other than what gate '{gate.gate}' shows (its target "
            "or its options differ from what the signer was shown); look at the run again and "
            "sign an answer to what it shows.",
            actor=actor,
        )
    chosen = gate.choice(choice) if isinstance(choice, str) else None
    if chosen is None:
        return Judgement.refuse(
            ErrorCode.INVALID_DECISION,
            f"{shorten(repr(choice))} is not an option of gate '{gate.gate}' (expected one of: "
            f"{', '.join(gate.options)}).",
            actor=actor,
        )
    comment = act.get("comment")
    unkept = comment_problem(comment)
    if unkept is not None:
        return Judgement.refuse(
            ErrorCode.VALIDATION_ERROR, unkept, actor=actor, choice=chosen.option
        )
    waiver = act.get("waiver")
    if waiver is not None:
        refused = _not_a_waiver(waiver, gate, act.get("evidence"))
        if refused is not None:
            return dataclasses.replace(refused, actor=actor, choice=chosen.option)
    conflict = four_eyes(actor, gate)
    if conflict is not None:
        return Judgement.refuse(
            ErrorCode.SELF_APPROVAL_FORBIDDEN, conflict + ".", actor=actor, choice=chosen.option
        )
    counted = _counted_already(actor, gate)
    if counted is not None:
        return Judgement.refuse(
            ErrorCode.ALREADY_ANSWERED, counted + ".", actor=actor, choice=chosen.option
        )
    unfit = _sign_in_refusal(actor, gate, authority.now())
    if unfit is not None:
        return Judgement.refuse(ErrorCode.FORBIDDEN, unfit, actor=actor, choice=chosen.option)
    role = gate.role if waiver is None else gate.waivable_by
    if role not in authority.roles_of(actor):
        asks = "asks for" if waiver is None else "may be waived by"
        return Judgement.refuse(
            ErrorCode.FORBIDDEN,
            f"{actor.actor} does not hold the role '{role}' that gate '{gate.gate}' {asks}, so "
            f"the {'answer' if waiver is None else 'waiver'} was not recorded. The gate is still "
            "waiting.",
            actor=actor,
            choice=chosen.option,
        )
    why = why_node_refuses(actor, authority.scopes_of(actor), chosen.needs)
    if why is not None and chosen.leads_to is not None and chosen.operation is not None:
        return Judgement.refuse(
            ErrorCode.FORBIDDEN,
            answer_refusal_sentence(chosen.option, chosen.leads_to, chosen.operation, why),
            actor=actor,
            choice=chosen.option,
            needs=chosen.needs,
            leads_to=chosen.leads_to,
            operation=chosen.operation,
        )
    if waiver is not None:
        return Judgement(True, actor=actor, choice=chosen.option, waiver=waiver, comment=comment)
    models = evidence_models or {}
    if chosen.option in gate.evidence and chosen.option not in models:
        return Judgement.refuse(
            ErrorCode.INTERNAL_ERROR,
            f"Gate '{gate.gate}' asks for evidence with '{chosen.option}', and this worker has no "
            "model to check it by, so the answer was not recorded.",
            actor=actor,
            choice=chosen.option,
        )
    evidence = act.get("evidence")
    problem = evidence_problem(models, chosen.option, evidence)
    if problem is not None:
        return Judgement.refuse(
            ErrorCode.INVALID_EVIDENCE, problem, actor=actor, choice=chosen.option
        )
    return Judgement(True, actor=actor, choice=chosen.option, evidence=evidence, comment=comment)


def _sign_in_refusal(actor: Actor, gate: OpenGate, now: float) -> str | None:
    """Why an answer an identity provider signed does not show the sign-in ``gate`` asks for
    (``mfa`` values, a sign-in within so many seconds), or None. Keys and passkeys: None."""
    held, asked = actor.held, gate.sign_in
    if held is None or not asked:
        return None
    mfa = set(asked.get("mfa") or ())
    if mfa and not mfa & held.methods:
        return (
            f"Gate '{gate.gate}' asks for a sign-in with {', '.join(sorted(mfa))}, and "
            f"{actor.actor}'s token shows {', '.join(sorted(held.methods)) or 'no method'}: sign "
            "in again with it (step-up). The gate is still waiting."
        )
    within = asked.get("within_seconds")
    if isinstance(within, (int, float)) and (
        held.authenticated_at is None or now - held.authenticated_at > within
    ):
        return (
            f"Gate '{gate.gate}' asks for a sign-in within {within:g} seconds, and "
            f"{actor.actor} signed in earlier: sign in again and answer. The gate is still "
            "waiting."
        )
    return None


MAX_WAIVER_REASON_CHARS = 2000
"""The longest reason a waiver may give."""


def _not_a_waiver(waiver: object, gate: OpenGate, evidence: object) -> Judgement | None:
    """Why an answer that says it waives ``gate`` cannot: the gate is not waivable, or the
    waiver gives no reason (or evidence, which a waiver replaces by its reason)."""
    if gate.waivable_by is None:
        return Judgement.refuse(
            ErrorCode.NOT_WAIVABLE,
            f"Gate '{gate.gate}' is not waivable: only its approvers' answers decide it.",
        )
    if not isinstance(waiver, str) or not waiver.strip() or len(waiver) > MAX_WAIVER_REASON_CHARS:
        return Judgement.refuse(
            ErrorCode.VALIDATION_ERROR,
            f"A waiver of gate '{gate.gate}' gives its reason, as text of 1 to "
            f"{MAX_WAIVER_REASON_CHARS} characters; this one gives none.",
        )
    if evidence is not None:
        return Judgement.refuse(
            ErrorCode.INVALID_EVIDENCE,
            "A waiver carries its reason, not evidence; sign it without evidence.",
        )
    return None


def _counted_already(actor: Actor, gate: OpenGate) -> str | None:
    """Why ``actor``'s answer cannot count at ``gate``: they already answered this opening."""
    earlier = gate.answered_by(actor.principal) if actor.principal is not None else None
    if earlier is None:
        return None
    return (
        f"{actor.actor} already answered '{earlier.option}' at gate '{gate.gate}', and each "
        f"approver counts once: its {gate.policy.name} policy needs {gate.policy.approvals} "
        "different people"
    )


def _of_another_graph(
    act: Mapping[str, Any], run: str, graph: str, verb: str, actor: Actor
) -> Judgement | None:
    """The refusal of a proof that names another graph than the run's, else None."""
    if act.get("graph") == graph:
        return None
    return Judgement.refuse(
        ErrorCode.NOT_FOUND,
        f"Run '{run}' is not a run of '{act.get('graph')}': it is a run of '{graph}', and a "
        f"proof {verb} only the graph it names.",
        actor=actor,
    )


def judge_resume(
    authority: Authority,
    value: object,
    *,
    graph: str,
    run: str,
    execution: str,
    status: str,
    parked: ParkedNode | None,
    spent_nonces: Collection[str] = (),
) -> Judgement:
    """Judges a resume of a parked run, before anything about it is written.

    In order: a valid proof of :func:`resume_binding` bound to this run (``UNAUTHORIZED``),
    naming this graph (``NOT_FOUND``) and this execution (``NOTHING_TO_RESUME``), a run parked at
    that node (``NOTHING_TO_RESUME``), and a resumer who may run it (``FORBIDDEN``).
    """
    proof = _verify(authority, value, "resume", run, spent_nonces)
    if isinstance(proof, ProofRefused):
        return Judgement.refuse(
            ErrorCode.UNAUTHORIZED,
            "A run is resumed by a verified actor, a signed call, and this resume carries no "
            f"valid proof: {_lower_first(proof.sentence)}",
        )
    actor = Actor.of_proof(proof)
    other = _of_another_graph(proof.authorizes, run, graph, "resumes", actor)
    if other is not None:
        return other
    if proof.authorizes.get("execution") != execution:
        return Judgement.refuse(
            ErrorCode.NOTHING_TO_RESUME,
            f"The proof resumes another execution of '{run}' than the one running now (a run "
            "that ended, or one started again under the same id): sign a resume of this one.",
            actor=actor,
        )
    if parked is None:
        if status == "finished":
            reason = f"Run '{run}' has finished: there is nothing to resume."
        elif status == "declined":
            reason = f"Run '{run}' has ended (declined): there is nothing to resume."
        elif status == "waiting":
            reason = (
                f"Run '{run}' is waiting for a decision: answer it with decide. Resuming a run "
                "answers nothing."
            )
        else:
            reason = (
                f"Run '{run}' is not parked by a refused node: resume carries on only a run "
                "whose next node its caller was not allowed to run."
            )
        return Judgement.refuse(ErrorCode.NOTHING_TO_RESUME, reason, actor=actor)
    if proof.authorizes.get("node") != parked.node:
        return Judgement.refuse(
            ErrorCode.NOTHING_TO_RESUME,
            f"The proof resumes the node '{proof.authorizes.get('node')}', but run '{run}' is "
            f"parked at '{parked.node}'.",
            actor=actor,
        )
    why = why_node_refuses(actor, authority.scopes_of(actor), parked.needs)
    if why is not None:
        return Judgement.refuse(
            ErrorCode.FORBIDDEN,
            f"The resume was not recorded: the node '{parked.node}' ({parked.operation}) is "
            f"still parked, because {why}.",
            actor=actor,
            needs=parked.needs,
            leads_to=parked.node,
            operation=parked.operation,
        )
    return Judgement(True, actor=actor)


MAX_CANCEL_REASON_CHARS = 500
"""The longest reason a cancel may give (it is shown in the run's trail)."""

ENDED_STATUSES = ("finished", "declined", "refused", "cancelled")
"""The statuses of a run that has ended: nothing is left to resume or cancel. ``finished``: it
ran to its end; ``declined``: it ran to its end after its last gate took the option that gate
names as its rejection; ``refused``: its start was refused; ``cancelled``: its requester
cancelled it."""


def judge_cancel(
    authority: Authority,
    value: object,
    *,
    graph: str,
    run: str,
    execution: str,
    status: str,
    requester: Actor,
    spent_nonces: Collection[str] = (),
) -> Judgement:
    """Judges a cancel of a run, before anything about it is written.

    In order: a valid proof of :func:`cancel_binding` bound to this run (``UNAUTHORIZED``),
    naming this graph (``NOT_FOUND``) and this execution (``NOTHING_TO_CANCEL``), a run that has
    not ended (``NOTHING_TO_CANCEL``), a reason that is text of at most
    :data:`MAX_CANCEL_REASON_CHARS` (``VALIDATION_ERROR``), and a canceller who is the run's
    verified requester (``FORBIDDEN``): the person who asked for the work may withdraw it;
    nobody else may end it through lockgate (an operator ends any run with Temporal's own
    terminate, which the run's history records).
    """
    proof = _verify(authority, value, "cancel", run, spent_nonces)
    if isinstance(proof, ProofRefused):
        return Judgement.refuse(
            ErrorCode.UNAUTHORIZED,
            "A run is cancelled by a verified actor, a signed call, and this cancel carries no "
            f"valid proof: {_lower_first(proof.sentence)}",
        )
    actor = Actor.of_proof(proof)
    act = proof.authorizes
    other = _of_another_graph(act, run, graph, "cancels", actor)
    if other is not None:
        return other
    if act.get("execution") != execution:
        return Judgement.refuse(
            ErrorCode.NOTHING_TO_CANCEL,
            f"The proof cancels another execution of '{run}' than the one running now (a run "
            "that ended, or one started again under the same id): sign a cancel of this one.",
            actor=actor,
        )
    if status in ENDED_STATUSES:
        return Judgement.refuse(
            ErrorCode.NOTHING_TO_CANCEL,
            f"Run '{run}' has ended ({status}): there is nothing to cancel.",
            actor=actor,
        )
    reason = act.get("reason")
    if reason is not None and (
        not isinstance(reason, str) or len(reason) > MAX_CANCEL_REASON_CHARS
    ):
        return Judgement.refuse(
            ErrorCode.VALIDATION_ERROR,
            f"A cancel's reason is text of at most {MAX_CANCEL_REASON_CHARS} characters.",
            actor=actor,
        )
    if not requester.verified:
        return Judgement.refuse(
            ErrorCode.FORBIDDEN,
            f"Run '{run}' was started unsigned ({requester.actor}), so nobody can cancel it "
            "through lockgate: an operator ends it with `temporal workflow terminate`.",
            actor=actor,
        )
    if requester.principal != actor.principal:
        return Judgement.refuse(
            ErrorCode.FORBIDDEN,
            f"{actor.actor} may not cancel run '{run}': only its requester, "
            f"{requester.actor}, may.",
            actor=actor,
        )
    return Judgement(True, actor=actor)


@dataclass(frozen=True, slots=True)
class ViewerChoice:
    """Whether a viewer may take one option, and if not, why (a
    :class:`~lockgate.tools._verdict.Verdict`).

    Attributes:
        option: The gate's option.
        allowed: Whether the viewer, once they sign, may take it.
        code: Why not, as a key: ``unverified``, ``requester``, ``maker``, ``answered``,
            ``role`` or ``needs``.
        reason: Why not, as a sentence.
        extra: More facts about the option, for whoever shows it.
    """

    option: str
    allowed: bool
    code: str | None = None
    reason: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def judge_viewer(
    authority: Authority, viewer: str, gate: OpenGate
) -> tuple[dict[str, Any], list[ViewerChoice]]:
    """For a pending list: may ``viewer`` take each option? Writes nothing, echoes no holdings.

    ``viewer`` is a name someone says is theirs, proven by nothing: the list says what they could
    take once they sign. They count as verified only when the Directory could verify a proof of
    theirs (it lists a public key or passkey for them); for anyone else every option is refused
    as unverified. Then judged in the order :func:`judge_answer` judges: neither the requester
    nor a maker of the work, holds the role, may run the first node.
    """
    verifiable = authority.directory.can_verify(viewer)
    summary = {
        "is_requester": viewer == gate.requester,
        "made_the_work": viewer in gate.makers,
        "verified": verifiable,
    }
    if not verifiable:
        why_not = (
            "a gate is answered by a verified actor, a signed call, and the Directory holds no "
            f"key or passkey for {viewer}, so nobody can sign as them"
        )
        return summary, [
            ViewerChoice(choice.option, False, "unverified", why_not) for choice in gate.choices
        ]
    # The viewer as they would be once they sign: the rules below judge who, never how.
    actor = Actor(viewer, True, "viewing", viewer, "viewing")
    verdicts: list[ViewerChoice] = []
    roles = authority.roles_of(actor)
    holds = authority.scopes_of(actor)
    for choice in gate.choices:
        conflict = four_eyes(actor, gate)
        if conflict is not None:
            because = "requester" if actor.actor == gate.requester else "maker"
            verdicts.append(ViewerChoice(choice.option, False, because, conflict))
            continue
        counted = _counted_already(actor, gate)
        if counted is not None:
            verdicts.append(ViewerChoice(choice.option, False, "answered", counted))
            continue
        if gate.role not in roles:
            verdicts.append(
                ViewerChoice(
                    choice.option,
                    False,
                    "role",
                    f"{viewer} does not hold the role '{gate.role}' this gate asks for",
                )
            )
            continue
        why = why_node_refuses(actor, holds, choice.needs)
        if why is not None and choice.leads_to is not None:
            verdicts.append(
                ViewerChoice(
                    choice.option,
                    False,
                    "needs",
                    f"it leads to the node '{choice.leads_to}' ({choice.operation}), and {why}",
                )
            )
            continue
        verdicts.append(ViewerChoice(choice.option, True))
    return summary, verdicts


def _lower_first(sentence: str) -> str:
    return sentence[:1].lower() + sentence[1:] if sentence else sentence


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None

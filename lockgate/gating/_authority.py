"""Authority: what a proven actor holds, looked up at the moment of judgement, and the gate rules.

Who a caller is comes from a verified proof (:mod:`lockgate.gating._verifier`); what they hold
comes from the worker's :class:`Directory`, here, each time they are judged. Nothing in this
module writes what anyone holds anywhere: judgements return sentences, never scopes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.gating._actors import Actor
from lockgate.gating._audit import AuditLogger
from lockgate.gating._context import ToolContext
from lockgate.gating._directory import Directory
from lockgate.gating._identity_errors import ProofRefused
from lockgate.gating._limits import shorten
from lockgate.gating._nonces import InMemoryNonceLedger, NonceLedger
from lockgate.gating._policy import PRIVATE_HOLDINGS
from lockgate.gating._proofs import Proof
from lockgate.gating._result import ErrorCode
from lockgate.gating._seals import WorkerSecret, WorkerSecretError
from lockgate.gating._verifier import Verifier

__all__ = [
    "MADE_THE_WORK",
    "OWN_GATE",
    "Authority",
    "GateChoice",
    "Judgement",
    "OpenGate",
    "ParkedNode",
    "ViewerChoice",
    "answer_refusal_sentence",
    "judge_answer",
    "judge_resume",
    "judge_viewer",
    "needed_phrase",
    "node_refusal_sentence",
    "why_node_refuses",
]

OWN_GATE = (
    "{actor} opened this gate, so it cannot approve it: the work and its approval need two "
    "different people"
)
MADE_THE_WORK = (
    "{actor} drove work this gate reviews, so it cannot approve it: the work and its approval "
    "need two different people"
)
_UNVERIFIED_ANSWER = (
    "A gate is answered by a verified actor, a signed call, and this answer carries no valid "
    "proof: {why}"
)


class Authority:
    """The worker's judge of callers: its Directory, its proof verifier, its ledger, its secret.

    Args:
        directory: Principals, their public keys, roles and scopes.
        secret: The deployment's worker secret, which seals what workers hand each other (None
            where nothing is sealed, as in a client judging ``pending`` viewers).
        ledger: Where single-use nonces of start and tool-call proofs are spent (in this process
            by default; the plugin gives its workers lockgate's Temporal-backed ledger).
        window_seconds: How long a proof is good after it was signed.
        audit: Where judgements are recorded.
        clock: Unix seconds; real time, because judgements are made live, never replayed.
    """

    def __init__(
        self,
        directory: Directory,
        *,
        secret: WorkerSecret | None = None,
        ledger: NonceLedger | None = None,
        window_seconds: float = 300,
        audit: AuditLogger | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.directory = directory
        self.secret = secret
        self.window_seconds = window_seconds
        self.audit = audit or AuditLogger()
        self.ledger: NonceLedger = ledger if ledger is not None else InMemoryNonceLedger(clock)
        self.verifier = Verifier(directory, window_seconds=window_seconds, clock=clock)

    @property
    def sealer(self) -> WorkerSecret:
        """The worker secret; a worker without one cannot vouch for anything it hands over."""
        if self.secret is None:
            raise WorkerSecretError(
                "This worker has no worker secret, so it can neither seal nor open what lockgate "
                "hands over between workers: give LockgatePlugin a secret."
            )
        return self.secret

    async def verify_once(self, value: object, expected: Mapping[str, Any], holder: str) -> Actor:
        """Verifies a proof and spends it for ``holder`` in the ledger (a retry by the same
        holder passes; any other use is refused as replayed).

        Raises:
            ProofRefused: The proof does not authorize this act, or another use spent it.
        """
        proof = self.verifier.verify_proof(value, expected)
        if not await self.ledger.claim(proof.nonce, holder, proof.issued_at + self.window_seconds):
            raise ProofRefused(
                "replayed",
                f"The proof {proof.nonce} has already been used: a proof is good for one act, "
                "once; sign a fresh one.",
            )
        return Actor.of_proof(proof)

    def scopes_of(self, actor: Actor) -> frozenset[str]:
        """What ``actor`` holds now: nothing unless verified and listed in the Directory."""
        if not actor.verified:
            return frozenset()
        return frozenset(self.directory.scopes_of(actor.principal))

    def roles_of(self, actor: Actor) -> frozenset[str]:
        """The roles ``actor`` holds now: none unless verified."""
        if not actor.verified:
            return frozenset()
        return frozenset(self.directory.roles_of(actor.principal))

    def context_for(
        self, actor: Actor, *, request_id: str | None = None, **extra: Any
    ) -> ToolContext:
        """The tool context of ``actor``: principal and channel from the proof, scopes from here.

        A verified actor's signature counts as consent on channels that take consent as a
        signature (its proof names the call it authorizes). Refusals made in this context never
        list what the actor holds: on Temporal they are written to history, which others read.
        """
        marks: dict[str, Any] = {
            "actor": actor.actor,
            "verified": actor.verified,
            PRIVATE_HOLDINGS: True,
            **extra,
        }
        if actor.verified:
            marks["signer"] = actor.principal
        return ToolContext(
            actor.principal, actor.channel, self.scopes_of(actor), request_id, "execute", marks
        )


# --- Nodes ---------------------------------------------------------------------------------------


def needed_phrase(needs: Collection[str]) -> str:
    """``"the scope a"`` or ``"one of the scopes a, b"``."""
    ordered = sorted(needs)
    if len(ordered) == 1:
        return f"the scope {ordered[0]}"
    return f"one of the scopes {', '.join(ordered)}"


def why_node_refuses(actor: Actor, holds: Collection[str], needs: Collection[str]) -> str | None:
    """Why ``actor`` may not run a node needing ``needs`` (scopes are alternatives), or None.

    A node that needs nothing runs for anyone; ``*`` holds everything.
    """
    if not needs:
        return None
    if actor.principal is None:
        return (
            f"it needs {needed_phrase(needs)}, and this call names nobody its authority could be "
            f"judged for ({actor.actor} is not a verified caller)"
        )
    if "*" in holds or not set(needs).isdisjoint(holds):
        return None
    if len(needs) == 1:
        return f"it needs {needed_phrase(needs)}, which {actor.actor} does not hold"
    return f"it needs {needed_phrase(needs)}, and {actor.actor} holds none of them"


def node_refusal_sentence(node: str, operation: str, why: str) -> str:
    """The sentence of a node that did not run."""
    return (
        f"The node '{node}' ({operation}) did not run: {why}. The run is parked there and "
        "nothing after it ran."
    )


def answer_refusal_sentence(answer: str, node: str, operation: str, why: str) -> str:
    """The sentence of an answer refused because of the first node it leads to."""
    return (
        f"The answer '{answer}' was not recorded: it leads to the node '{node}' ({operation}), "
        f"and {why}. The gate is still waiting."
    )


# --- Gates ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GateChoice:
    """One option of a gate: where it leads and what that first node needs."""

    option: str
    leads_to: str | None
    operation: str | None
    needs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """As JSON data (for the memo and ``pending``)."""
        return {
            "option": self.option,
            "leads_to": self.leads_to,
            "operation": self.operation,
            "needs": list(self.needs),
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> GateChoice:
        """Reads :meth:`to_dict` output."""
        return cls(
            str(value["option"]),
            value.get("leads_to"),
            value.get("operation"),
            tuple(value.get("needs") or ()),
        )


@dataclass(frozen=True, slots=True)
class OpenGate:
    """A gate waiting for an answer, as the rules need to see it.

    Attributes:
        graph: The graph the run belongs to.
        run: The run (workflow id).
        gate: This opening's key (``editor_call#2``): a proof answers one opening only.
        ask: The gate's state (``editor_call``).
        role: The role an approver must hold.
        because: Why a human is asked.
        requester: Who opened it (the run's requester); they may not answer it.
        choices: The options.
        execution: The run's first run id: a proof answers one execution of a workflow id.
        subject: :func:`gate_subject` of what the gate shows (its target channel, its options):
            a proof answers what its signer was shown, nothing else.
        makers: The verified principals who drove the work this gate reviews: the nodes run
            since the run started or the previous gate was answered. None of them may approve it.
    """

    graph: str
    run: str
    gate: str
    ask: str
    role: str
    because: str
    requester: str
    choices: tuple[GateChoice, ...]
    execution: str = ""
    subject: str = ""
    makers: tuple[str, ...] = ()

    def choice(self, option: str) -> GateChoice | None:
        """The choice named ``option``."""
        return next((choice for choice in self.choices if choice.option == option), None)

    @property
    def options(self) -> list[str]:
        """The option names, in declaration order."""
        return [choice.option for choice in self.choices]

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {
            "graph": self.graph,
            "run_id": self.run,
            "gate": self.gate,
            "ask": self.ask,
            "role": self.role,
            "because": self.because,
            "requester": self.requester,
            "choices": [choice.to_dict() for choice in self.choices],
            "execution": self.execution,
            "subject": self.subject,
            "makers": list(self.makers),
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> OpenGate:
        """Reads :meth:`to_dict` output (also a memo written before the key was ``run_id``)."""
        return cls(
            graph=str(value["graph"]),
            run=str(value["run_id"] if "run_id" in value else value["run"]),
            gate=str(value["gate"]),
            ask=str(value["ask"]),
            role=str(value["role"]),
            because=str(value.get("because") or ""),
            requester=str(value["requester"]),
            choices=tuple(GateChoice.from_dict(choice) for choice in value["choices"]),
            execution=str(value.get("execution") or ""),
            subject=str(value.get("subject") or ""),
            makers=tuple(str(maker) for maker in value.get("makers") or ()),
        )


@dataclass(frozen=True, slots=True)
class ParkedNode:
    """A run parked at a node it was refused (or could not finish)."""

    graph: str
    run: str
    node: str
    operation: str
    needs: tuple[str, ...] = ()
    parking: int = 1

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {
            "graph": self.graph,
            "run_id": self.run,
            "node": self.node,
            "operation": self.operation,
            "needs": list(self.needs),
            "parking": self.parking,
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> ParkedNode:
        """Reads :meth:`to_dict` output (also one written before the key was ``run_id``)."""
        return cls(
            graph=str(value["graph"]),
            run=str(value["run_id"] if "run_id" in value else value["run"]),
            node=str(value["node"]),
            operation=str(value["operation"]),
            needs=tuple(str(need) for need in value.get("needs") or ()),
            parking=int(value.get("parking") or 1),
        )


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict on an answer or resume: accepted (with who), or a code and a sentence."""

    accepted: bool
    actor: Actor | None = None
    choice: str | None = None
    code: str | None = None
    reason: str | None = None
    needs: tuple[str, ...] = ()
    leads_to: str | None = None
    operation: str | None = None

    @classmethod
    def refuse(cls, code: ErrorCode, reason: str, **facts: Any) -> Judgement:
        """A refusal."""
        return cls(False, code=code.value, reason=reason, **facts)

    def to_dict(self) -> dict[str, Any]:
        """As JSON data (an activity result)."""
        return {
            "accepted": self.accepted,
            "actor": self.actor.to_dict() if self.actor else None,
            "choice": self.choice,
            "code": self.code,
            "reason": self.reason,
            "needs": list(self.needs),
            "leads_to": self.leads_to,
            "operation": self.operation,
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


def judge_answer(
    authority: Authority,
    value: object,
    *,
    graph: str,
    run: str,
    gate: OpenGate | None,
    spent_nonces: Collection[str] = (),
) -> Judgement:
    """Judges an answer to a gate, before anything about it is written.

    In order: the answer carries a valid proof bound to this run (``UNVERIFIED_APPROVER``), the
    proof names this graph (``NOT_FOUND``), the run waits for an answer (``GATE_NOT_PENDING``) in
    the execution, at the gate opening and showing the subject the proof names
    (``GATE_NOT_PENDING``), the option is offered (``INVALID_DECISION``), the approver neither
    opened the gate nor drove the work it reviews (``SELF_APPROVAL_FORBIDDEN``), holds the gate's
    role (``FORBIDDEN``), and may run the first node the answer leads to (``FORBIDDEN``).

    Args:
        authority: The worker's Directory and verifier.
        value: The answer as received: a signed proof of :func:`decide_binding`, or anything
            else (which is refused).
        graph: The graph of the run being answered.
        run: The run being answered.
        gate: The gate waiting, or None.
        spent_nonces: Nonces this run already accepted.
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
    if act.get("graph") != graph:
        return Judgement.refuse(
            ErrorCode.NOT_FOUND,
            f"Run '{run}' is not a run of '{act.get('graph')}': it is a run of '{graph}', and a "
            "proof answers only the graph it names.",
            actor=actor,
        )
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
    conflict = _four_eyes(actor, gate)
    if conflict is not None:
        return Judgement.refuse(
            ErrorCode.SELF_APPROVAL_FORBIDDEN, conflict + ".", actor=actor, choice=chosen.option
        )
    if gate.role not in authority.roles_of(actor):
        return Judgement.refuse(
            ErrorCode.FORBIDDEN,
            f"{actor.actor} does not hold the role '{gate.role}' that gate '{gate.gate}' asks "
            "for, so the answer was not recorded. The gate is still waiting.",
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
    return Judgement(True, actor=actor, choice=chosen.option)


def _four_eyes(actor: Actor, gate: OpenGate) -> str | None:
    """Why ``actor`` may not approve the work behind ``gate`` (made it, or asked for it)."""
    if actor.actor == gate.requester:
        return OWN_GATE.format(actor=actor.actor)
    if actor.principal is not None and actor.principal in gate.makers:
        return MADE_THE_WORK.format(actor=actor.actor)
    return None


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
    if proof.authorizes.get("graph") != graph:
        return Judgement.refuse(
            ErrorCode.NOT_FOUND,
            f"Run '{run}' is not a run of '{proof.authorizes.get('graph')}': it is a run of "
            f"'{graph}'.",
            actor=actor,
        )
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


@dataclass(frozen=True, slots=True)
class ViewerChoice:
    """Whether a viewer may take one option, and if not, why."""

    option: str
    may: bool
    because: str | None = None
    why_not: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def judge_viewer(
    authority: Authority, viewer: Actor, gate: OpenGate
) -> tuple[dict[str, Any], list[ViewerChoice]]:
    """For a pending list: may ``viewer`` take each option? Writes nothing, echoes no holdings.

    Judged in the order :func:`judge_answer` judges: verified, neither the requester nor a maker
    of the work, holds the role, may run the first node.
    """
    summary = {
        "is_requester": viewer.actor == gate.requester,
        "made_the_work": viewer.principal in gate.makers,
        "verified": viewer.verified,
    }
    verdicts: list[ViewerChoice] = []
    roles = authority.roles_of(viewer)
    holds = authority.scopes_of(viewer)
    for choice in gate.choices:
        if not viewer.verified:
            verdicts.append(
                ViewerChoice(
                    choice.option,
                    False,
                    "unverified",
                    "a gate is answered by a verified actor, a signed call, and whoever is "
                    "looking is not one",
                )
            )
            continue
        conflict = _four_eyes(viewer, gate)
        if conflict is not None:
            because = "requester" if viewer.actor == gate.requester else "maker"
            verdicts.append(ViewerChoice(choice.option, False, because, conflict))
            continue
        if gate.role not in roles:
            verdicts.append(
                ViewerChoice(
                    choice.option,
                    False,
                    "role",
                    f"{viewer.actor} does not hold the role '{gate.role}' this gate asks for",
                )
            )
            continue
        why = why_node_refuses(viewer, holds, choice.needs)
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

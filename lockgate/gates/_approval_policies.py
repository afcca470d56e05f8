"""Approval policies: how many distinct approvers a gate needs, and what their answers decide.

A gate's policy is data (it travels in the gate's memo, ``pending`` and the signals' judge), and
what a set of answers decides is a pure function of it: the run, the judge and every viewer read
the same tally. Who may give an answer is judged elsewhere (:mod:`._judgements`), by the same
rules for every approver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SINGLE_POLICY",
    "CompiledApprovalPolicy",
    "GateAnswer",
    "GateDeadline",
    "PolicyOutcome",
    "duration_in_words",
    "tally",
]


@dataclass(frozen=True, slots=True)
class CompiledApprovalPolicy:
    """How a gate is decided: a declared :class:`~lockgate.graphs._declare.ApprovalPolicy`
    (``SINGLE``, ``DUAL``, ``Quorum``...) as the compiler checked it, in JSON-ready form.

    Attributes:
        name: ``single``, ``dual`` or ``quorum`` (what the declaration called it).
        approvals: How many distinct approvers must give the same answer (m).
        panel: At most how many distinct approvers answer (n), or None: anyone of the role may,
            until some answer has ``approvals``.
        rejection: The option that says no, or None.
        any_rejection_rejects: One approver answering ``rejection`` decides the gate alone.
    """

    name: str = "single"
    approvals: int = 1
    panel: int | None = None
    rejection: str | None = None
    any_rejection_rejects: bool = False

    @property
    def single(self) -> bool:
        """Whether one answer decides (the gate of every graph before policies existed)."""
        return self.approvals == 1

    def declines(self, option: str) -> bool:
        """Whether deciding ``option`` says no: it is the gate's declared ``rejection``. A run
        whose last gate decided so ends ``declined``."""
        return self.rejection is not None and option == self.rejection

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {
            "name": self.name,
            "approvals": self.approvals,
            "panel": self.panel,
            "rejection": self.rejection,
            "any_rejection_rejects": self.any_rejection_rejects,
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | None) -> CompiledApprovalPolicy:
        """Reads :meth:`to_dict` output; nothing is a single approval."""
        if not value:
            return SINGLE_POLICY
        panel = value.get("panel")
        rejection = value.get("rejection")
        return cls(
            name=str(value.get("name") or "single"),
            approvals=int(value.get("approvals") or 1),
            panel=int(panel) if panel is not None else None,
            rejection=str(rejection) if rejection is not None else None,
            any_rejection_rejects=bool(value.get("any_rejection_rejects")),
        )


SINGLE_POLICY = CompiledApprovalPolicy()
"""One verified approver of the role decides."""


@dataclass(frozen=True, slots=True)
class GateDeadline:
    """How long a gate waits, and what then happens: it escalates to another role (a new
    opening asks that role alone), or it takes a declared option as the system.

    Attributes:
        seconds: How long it waits from its opening.
        escalate_to: The role a new opening asks, or None.
        take: The option taken, or None.
    """

    seconds: float
    escalate_to: str | None = None
    take: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {"seconds": self.seconds, "escalate_to": self.escalate_to, "take": self.take}

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | None) -> GateDeadline | None:
        """Reads :meth:`to_dict` output; nothing is no deadline."""
        if not value:
            return None
        escalate_to, take = value.get("escalate_to"), value.get("take")
        return cls(
            float(value["seconds"]),
            str(escalate_to) if escalate_to is not None else None,
            str(take) if take is not None else None,
        )

    def wait_in_words(self) -> str:
        """How long the gate waits: ``48 hours`` and the like."""
        return duration_in_words(self.seconds)


def duration_in_words(seconds: float) -> str:
    """A duration in the largest whole unit it fills: ``48 hours``, ``3 days``, ``90 seconds``."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    count_seconds = int(seconds) if float(seconds).is_integer() else seconds
    return f"{count_seconds} second{'s' if count_seconds != 1 else ''}"


@dataclass(frozen=True, slots=True)
class GateAnswer:
    """One approver's answer, counted towards a gate that needs more than one.

    Attributes:
        principal: Who answered (verified).
        option: What they answered.
        evidence: The evidence they gave with it (validated), if the gate asks for any.
    """

    principal: str
    option: str
    evidence: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        shown: dict[str, Any] = {"principal": self.principal, "option": self.option}
        if self.evidence is not None:
            shown["evidence"] = dict(self.evidence)
        return shown

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> GateAnswer:
        """Reads :meth:`to_dict` output."""
        evidence = value.get("evidence")
        return cls(
            str(value["principal"]),
            str(value["option"]),
            dict(evidence) if isinstance(evidence, Mapping) else None,
        )


@dataclass(frozen=True, slots=True)
class PolicyOutcome:
    """What the answers so far decide: an option (and why), or nothing yet.

    Attributes:
        option: The option decided, or None while the gate waits for more answers.
        why: How it was decided, a sentence for the trail.
        counts: Answers per option so far.
    """

    option: str | None
    why: str
    counts: Mapping[str, int]


def tally(
    policy: CompiledApprovalPolicy, answers: Sequence[GateAnswer], options: Sequence[str]
) -> PolicyOutcome:
    """What ``answers`` (each from a distinct approver, in the order given) decide.

    In order: one answer decides a single gate; an answer of ``rejection`` decides alone when
    any rejection rejects; the first option to reach ``approvals`` answers decides; with a panel,
    once no option can reach ``approvals`` in the seats left, ``rejection`` decides (the
    compiler requires one for such a panel). Otherwise the gate waits.
    """
    counts = {option: 0 for option in options}
    for answer in answers:
        counts[answer.option] = counts.get(answer.option, 0) + 1
    if not answers:
        return PolicyOutcome(None, "no answer yet", counts)
    last = answers[-1]
    needed = policy.approvals
    if policy.single:
        return PolicyOutcome(last.option, "one approver decides this gate", counts)
    if policy.any_rejection_rejects and last.option == policy.rejection:
        return PolicyOutcome(
            last.option,
            f"{last.principal} answered '{last.option}', and any rejection rejects at this gate",
            counts,
        )
    if counts[last.option] >= needed:
        return PolicyOutcome(
            last.option,
            f"{counts[last.option]} distinct approvers answered '{last.option}', as the "
            f"{policy.name} policy needs",
            counts,
        )
    if policy.panel is not None and policy.rejection is not None:
        seats_left = policy.panel - len(answers)
        if all(count + seats_left < needed for count in counts.values()):
            return PolicyOutcome(
                policy.rejection,
                f"the panel of {policy.panel} can no longer give {needed} matching answers "
                f"({_counted(counts)}), so its disagreement takes '{policy.rejection}'",
                counts,
            )
    return PolicyOutcome(None, f"{_counted(counts)}; it needs {needed} matching answers", counts)


def _counted(counts: Mapping[str, int]) -> str:
    given = [f"{count} × {option}" for option, count in counts.items() if count]
    return ", ".join(given) if given else "no answers"

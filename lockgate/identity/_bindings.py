"""What each kind of proof authorizes: one definition for the signer and the verifier.

A proof is good only for the exact act its ``authorizes`` names, and every act names the execution
it acts on: the workflow id and the first run id the server gave it (the same across
continue-as-new and resets, new for a new execution under the same id). A client starts a run or a
durable call first, unsigned, and signs for the execution the server's reply names; so a proof read
from history can never start, answer or call anything else, and no record of spent proofs is needed
anywhere. The one exception is a schedule grant (:func:`schedule_binding`), signed before the runs
it grants exist: each of those proves instead that the schedule it names started it. Clients build
these to sign, workers build them to check; both call the functions here, so the two can never
drift apart. Digests raise ``TypeError``/``ValueError`` on values canonical JSON refuses (NaN,
infinity, lone surrogates): no proof can name those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lockgate.identity._canonical import digest

__all__ = [
    "answer_binding",
    "cancel_binding",
    "confirm_binding",
    "decide_binding",
    "gate_subject",
    "resume_binding",
    "schedule_binding",
    "sign_in_binding",
    "start_binding",
    "tool_binding",
]


def start_binding(
    graph: str,
    run: str,
    execution: str,
    inputs: Mapping[str, Any],
    version: int | None = None,
) -> dict[str, Any]:
    """Starting execution ``execution`` of run ``run`` of ``graph`` with exactly these inputs.

    ``version`` is the graph version the signer starts (None: whichever its workers serve newest
    when the run begins). A workflow of your own names its arguments as ``{"args": [...]}``.
    """
    return {
        "kind": "start",
        "graph": graph,
        "run": run,
        "execution": execution,
        "version": version,
        "inputs": digest(dict(inputs)),
    }


def schedule_binding(
    graph: str,
    schedule: str,
    inputs: Mapping[str, Any],
    not_before: int,
    not_after: int,
    version: int | None = None,
) -> dict[str, Any]:
    """Every run Temporal Schedule ``schedule`` starts of ``graph``, with exactly these inputs,
    from unix second ``not_before`` to ``not_after`` (both included): a *schedule grant*.

    Unlike every other binding it names no execution: the runs it starts do not exist yet. Each
    run instead proves that the schedule the grant names started it (the server lists the run
    among that schedule's actions) at a moment inside the window; the grant is good for as many
    runs as the schedule starts in it, and for none after. ``version`` is as for
    :func:`start_binding`.
    """
    return {
        "kind": "schedule",
        "graph": graph,
        "schedule": schedule,
        "version": version,
        "inputs": digest(dict(inputs)),
        "not_before": not_before,
        "not_after": not_after,
    }


def gate_subject(target: Mapping[str, Any] | None, choices: Sequence[Mapping[str, Any]]) -> str:
    """The digest of what an approver is shown at a gate: its target field and its options.

    Args:
        target: ``{field: value}`` of the graph's target field, or None if it has none.
        choices: Each option as ``{option, leads_to, operation, needs}``.
    """
    shown = [
        {
            "option": choice.get("option"),
            "leads_to": choice.get("leads_to"),
            "operation": choice.get("operation"),
            "needs": sorted(choice.get("needs") or ()),
        }
        for choice in choices
    ]
    return digest({"target": dict(target) if target is not None else None, "choices": shown})


def decide_binding(
    graph: str,
    run: str,
    execution: str,
    gate: str,
    choice: str,
    subject: str,
    evidence: Mapping[str, Any] | None = None,
    waiver: str | None = None,
    comment: str | None = None,
) -> dict[str, Any]:
    """Answering gate opening ``gate`` (``editor_call#2``) of ``run`` with ``choice``.

    ``execution`` is the run's first run id (the same across continue-as-new and resets, new for
    a new execution under the same workflow id); ``subject`` is :func:`gate_subject` of what the
    approver was shown; ``evidence``, when the gate asks for it, is signed with the answer (an
    answer without evidence names no ``evidence`` key at all). ``waiver`` is the reason of a
    waiver: the answer waives the gate's rules, as a holder of the role it may be waived by.
    ``comment`` is what the approver says with the answer (present only when given): kept with
    it in the trail, deciding nothing.
    """
    binding: dict[str, Any] = {
        "kind": "decide",
        "graph": graph,
        "run": run,
        "execution": execution,
        "gate": gate,
        "choice": choice,
        "subject": subject,
    }
    if evidence is not None:
        binding["evidence"] = dict(evidence)
    if waiver is not None:
        binding["waiver"] = waiver
    if comment is not None:
        binding["comment"] = comment
    return binding


def resume_binding(graph: str, run: str, execution: str, node: str | None) -> dict[str, Any]:
    """Resuming execution ``execution`` of ``run``, parked at ``node``."""
    return {"kind": "resume", "graph": graph, "run": run, "execution": execution, "node": node}


def cancel_binding(
    graph: str, run: str, execution: str, reason: str | None = None
) -> dict[str, Any]:
    """Cancelling execution ``execution`` of ``run``, for ``reason`` (None: no reason given)."""
    return {
        "kind": "cancel",
        "graph": graph,
        "run": run,
        "execution": execution,
        "reason": reason,
    }


def tool_binding(
    tool: str, arguments: Mapping[str, Any], request: str, execution: str
) -> dict[str, Any]:
    """Calling ``tool`` with exactly these arguments, as execution ``execution`` of the durable
    call with request id ``request``."""
    return {
        "kind": "tool",
        "tool": tool,
        "arguments": digest(dict(arguments)),
        "request": request,
        "execution": execution,
    }


def sign_in_binding(inbox: str, challenge: str) -> dict[str, Any]:
    """Signing in to the inbox at origin ``inbox`` with the one-time ``challenge`` it handed out.

    The origin is the one the browser was on when it signed, so a proof made for one inbox never
    signs anyone in to another that relayed its challenge.
    """
    return {"kind": "sign_in", "inbox": inbox, "challenge": challenge}


def confirm_binding(request: str, token: str) -> dict[str, Any]:
    """Confirming durable call ``request`` with the token it handed out."""
    return {"kind": "confirm", "request": request, "token": token}


def answer_binding(
    gate: Mapping[str, Any],
    choice: str,
    execution: str | None = None,
    evidence: Mapping[str, Any] | None = None,
    waiver: str | None = None,
    comment: str | None = None,
) -> dict[str, Any]:
    """The :func:`decide_binding` of answering ``choice`` to a gate as a run reports it.

    Args:
        gate: The open gate as the run shows it (``awaiting`` in ``show``): its ``graph``,
            ``run_id``, ``execution``, ``gate``, ``target`` and ``choices``.
        choice: The option chosen.
        execution: The execution as the server reports it (a client should pass it: a worker
            may say anything); defaults to the gate's own.
        evidence: The evidence the gate asks for with ``choice``, if it asks for any.
        waiver: The reason, when this answer waives the gate.
        comment: What the approver says with the answer, if anything.

    The subject is computed here from the target and options as shown, never taken from what the
    run says its digest is: a proof approves exactly what its signer was shown.
    """
    subject = gate_subject(gate.get("target"), list(gate.get("choices") or ()))
    return decide_binding(
        str(gate["graph"]),
        str(gate["run_id"]),
        execution if execution is not None else str(gate.get("execution") or ""),
        str(gate["gate"]),
        choice,
        subject,
        evidence,
        waiver,
        comment,
    )

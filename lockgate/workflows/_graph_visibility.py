"""What Temporal's visibility shows of a graph run: its search attributes, memo and details.

Search attributes name the run's graph, its status and the role its open gate waits for, so
that ``pending`` and the inbox find it across runs; the memo shows the open gate (as its
approvers are shown it) or the node the run is parked at, the graph version the run follows and,
once it has ended, the status it ended with (``finished`` or ``declined``, which the server's
ExecutionStatus cannot tell apart);
the current details say, in the Temporal UI, what the run is doing. The run writes each as it
changes, and only what changed: every search attribute upsert is billed. What the run shows
holds nothing of what anyone holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate

from lockgate._defaults import task_queue_flag
from lockgate.activities._activity_inputs import (
    DECLINED_PROTOCOL,
    QUIET_ANSWERS_PROTOCOL,
    SETTLING_PROTOCOL,
)
from lockgate.gates._gate_engine import gate_memo
from lockgate.gates._gates import OpenGate, ParkedNode
from lockgate.gates._judgements import ENDED_STATUSES
from lockgate.gates._limits import PayloadProblem
from lockgate.identity._actors import Actor
from lockgate.identity._quoting import a_role
from lockgate.workflows._carry import RunState, ThisRun
from lockgate.workflows._search_attributes import (
    LOCKGATE_AWAITING,
    LOCKGATE_GRAPH,
    LOCKGATE_STATE,
)

__all__ = [
    "STATUS_MEMO",
    "VERSION_MEMO",
    "RunStanding",
    "RunVisibility",
    "ended_status",
    "quiet_answers",
    "quiet_attributes",
]


VERSION_MEMO = "lockgate_version"


"""The memo key of the graph version a run follows (the run writes it unless its starter did)."""


STATUS_MEMO = "lockgate_status"


"""The memo key of the status a run ended with (written as it ends, from
:data:`DECLINED_PROTOCOL` on): ``finished``, ``declined``, ``refused`` or ``cancelled``."""


_GATE_MEMO = "lockgate_gate"
_PARKED_MEMO = "lockgate_parked"


@dataclass
class RunStanding:
    """Where a graph run stands, besides its state: what it shows of itself and does not carry
    across continue-as-new (a continued run reads its status again from its open gate).

    Attributes:
        status: ``starting``, ``running``, ``waiting`` (at a gate), ``parked``; once it has
            ended, ``finished``, ``declined`` (its last gate took its rejection), ``refused``
            or ``cancelled`` (see :data:`~lockgate.gates._judgements.ENDED_STATUSES`).
        parked: The node the run is parked at, if it is.
        refusal: Why the run was refused, if it was.
        canceller: Who cancelled the run, once their cancel was accepted.
    """

    status: str
    parked: ParkedNode | None = None
    refusal: PayloadProblem | None = None
    canceller: Actor | None = None

    @property
    def ended(self) -> bool:
        """Whether the run has ended: finished, declined, refused or cancelled."""
        return self.status in ENDED_STATUSES


class RunVisibility:
    """Writes what Temporal's visibility shows of a graph run, from its state and standing.

    Args:
        run: The run's state (its open gate, where it is, who drives it, its fields).
        standing: Where the run stands (its status, park, refusal, canceller).
        this: Which run it is (its graph's name, version and target; its workflow id, as the
            details' commands name it).
    """

    def __init__(self, run: RunState, standing: RunStanding, this: ThisRun) -> None:
        self._run = run
        self._standing = standing
        self._this = this
        # The open gate's record, built once for each state of the gate (its memo and every
        # view of the run show the same one).
        self._recorded: tuple[OpenGate, dict[str, Any]] | None = None

    def gate_record(self) -> dict[str, Any]:
        """The open gate as JSON data (:meth:`OpenGate.to_dict`), built once for each state of
        the gate: a new opening, or an answer counted, is a new gate. Not to be changed: copy
        it to add to it."""
        gate = self._run.gate
        assert gate is not None
        if self._recorded is None or self._recorded[0] is not gate:
            self._recorded = (gate, gate.to_dict())
        return self._recorded[1]

    def target(self) -> dict[str, Any] | None:
        """The field the graph declares as its target, with its value: the work a gate
        reviews (None for a graph that declares none)."""
        target = self._this.graph.target
        return {target: self._run.fields.get(target)} if target else None

    def show_gate_opened(self) -> None:
        """Writes the gate that opened to the memo."""
        workflow.upsert_memo({_GATE_MEMO: self._gate_memo()})

    def show_gate_answers(self) -> None:
        """Writes the open gate again, with the answers counted so far (it stays open)."""
        workflow.upsert_memo({_GATE_MEMO: self._gate_memo(keep_opened_at=True)})

    def show_gate_closed(self, *, unseen: bool = False) -> None:
        """Takes the gate, decided, out of the memo; unless ``unseen``: the run opens another
        gate or ends before anyone could read the memo between (see
        :func:`quiet_answers`), whose own write says so."""
        if not unseen:
            workflow.upsert_memo({_GATE_MEMO: None})

    def show_parked(self, why: str) -> None:
        """Writes the node the run parked at, and why, to the memo."""
        assert self._standing.parked is not None
        workflow.upsert_memo({_PARKED_MEMO: self._standing.parked.to_dict() | {"why": why}})

    def show_resumed(self) -> None:
        """Takes the park, resumed, out of the memo."""
        workflow.upsert_memo({_PARKED_MEMO: None})

    def show_cancelled(self) -> None:
        """Takes the gate or park the run was cancelled at out of the memo (before the run
        closes them)."""
        stale = {
            key: None
            for key, value in ((_GATE_MEMO, self._run.gate), (_PARKED_MEMO, self._standing.parked))
            if value is not None
        }
        if stale:
            workflow.upsert_memo(stale)

    def sync_memo(self) -> None:
        """Overwrites any lockgate memo the starter wrote: only the run says what it waits for,
        and on which version of its graph it runs."""
        parked = self._standing.parked
        wanted: dict[str, Any] = {
            _GATE_MEMO: self._gate_memo() if self._run.gate is not None else None,
            _PARKED_MEMO: parked.to_dict() if parked is not None else None,
            VERSION_MEMO: self._this.graph.version,
            STATUS_MEMO: None,
        }
        stale: dict[str, Any] = {}
        for key, value in wanted.items():
            written = workflow.memo_value(key, default=None)
            # The gate and park are written as they open and close; only their presence is
            # checked here (a forged one goes). The version is the run's own, always.
            differs = (
                written != value if key == VERSION_MEMO else (written is None) != (value is None)
            )
            if differs:
                stale[key] = value
        if stale:
            workflow.upsert_memo(stale)

    def upsert_search_attributes(self) -> None:
        """Brings the run's search attributes up to date, writing only what changed, and tells
        the Temporal UI what the run waits for (its current details)."""
        self._show_details()
        current = workflow.info().typed_search_attributes
        wanted = {
            LOCKGATE_GRAPH: self._this.graph.name,
            LOCKGATE_STATE: self._standing.status,
            LOCKGATE_AWAITING: self._run.gate.role if self._run.gate is not None else None,
        }
        updates: list[SearchAttributeUpdate[Any]] = []
        for key, value in wanted.items():
            if current.get(key) == value:
                continue
            updates.append(key.value_set(value) if value is not None else key.value_unset())
        if updates:
            workflow.upsert_search_attributes(updates)

    def show_moved_on(self, state: str, *, protocol: int | None) -> None:
        """After an answer or a resume sends the run on to ``state``: its search attributes
        still name the gate or park just left, and stay so (one billed upsert fewer, and often
        two: the next gate of the same role finds them already written). ``pending`` and
        ``list`` believe a gate or a park only from the memo, which says it closed; a gate or
        park the run comes to next writes them again, and ExecutionStatus says when it has
        ended. ``protocol`` is the one the run's start check recorded: runs recorded before
        :data:`QUIET_ANSWERS_PROTOCOL` put them right where the run may still open a gate from
        ``state``, and those before :data:`SETTLING_PROTOCOL` always."""
        if quiet_answers(protocol) or (
            quiet_attributes(protocol) and not self._this.graph.may_open_a_gate_from(state)
        ):
            self._show_details()
        else:
            self.upsert_search_attributes()

    def show_ended(self, *, protocol: int | None) -> None:
        """The run has ended. A refused or cancelled run says so in its search attributes (it
        completed); a finished or declined one leaves them as it last wrote them, where
        ``protocol`` allows (see :func:`quiet_attributes`): the server's ExecutionStatus says it
        closed (one billed upsert fewer per run). From :data:`DECLINED_PROTOCOL` on, every run
        also writes the status it ended with to its memo (:data:`STATUS_MEMO`; a memo write is
        not billed), and takes out a gate its last answer closed unseen (see
        :meth:`show_gate_closed`): whether it writes depends on its recorded protocol alone,
        never on what its graph declares, so a gate's ``rejection`` may change under runs in
        flight."""
        if self._standing.status in ("refused", "cancelled") or not quiet_attributes(protocol):
            self.upsert_search_attributes()
        else:
            self._show_details()
        if (protocol or 1) >= DECLINED_PROTOCOL:
            ended: dict[str, Any] = {STATUS_MEMO: self._standing.status}
            if workflow.memo_value(_GATE_MEMO, default=None) is not None:
                ended[_GATE_MEMO] = None
            workflow.upsert_memo(ended)

    def _gate_memo(self, *, keep_opened_at: bool = False) -> dict[str, Any]:
        """The open gate as its memo shows it (see :func:`gate_memo`)."""
        assert self._run.gate is not None
        written = workflow.memo_value(_GATE_MEMO, default=None) if keep_opened_at else None
        shows = {"target": self.target(), "version": self._this.graph.version}
        return gate_memo(self.gate_record(), shows, written, workflow.now())

    def _show_details(self) -> None:
        """Tells the Temporal UI what the run is doing (its current details; no write)."""
        workflow.set_current_details(self._details())

    def _details(self) -> str:
        """What the run is doing, in the Temporal UI's words (Markdown)."""
        graph = f"**{self._this.graph.name}** v{self._this.graph.version}"
        run_id = self._this.run_id
        flag = task_queue_flag(workflow.info().task_queue)
        gate = self._run.gate
        standing = self._standing
        if standing.status == "waiting" and gate is not None:
            options = ", ".join(
                f"`{choice.option}`" + (" (ends the run)" if choice.ends_run else "")
                for choice in gate.choices
            )
            policy = gate.policy
            if gate.due_at is not None:
                options += f" Its deadline passes at {gate.due_at}."
            if not policy.single:
                options += (
                    f" It needs {policy.approvals} matching answers ({policy.name}); "
                    f"{len(gate.answers)} given so far."
                )
            return (
                f"{graph} waits for **{a_role(gate.role)}** at gate `{gate.gate}`: "
                f"{gate.because} Options: {options}. Answer with `lockgate decide "
                f"{run_id} OPTION --as YOU{flag}`."
            )
        if standing.status == "parked" and standing.parked is not None:
            return (
                f"{graph} is parked at node `{standing.parked.node}` "
                f"({standing.parked.operation}): `lockgate resume {run_id} --as SOMEONE{flag}` "
                "carries it on."
            )
        if standing.status == "refused" and standing.refusal is not None:
            return f"{graph}: refused [{standing.refusal.code}] {standing.refusal.sentence}"
        if standing.status == "finished":
            return f"{graph} finished."
        if standing.status == "declined":
            return f"{graph} ended declined: its last gate took the option that says no."
        if standing.status == "cancelled" and standing.canceller is not None:
            return f"{graph} was cancelled by {standing.canceller.actor}."
        if standing.status == "starting":
            return (
                f"{graph} waits for its signed start proof (`lockgate sign start {run_id} "
                f"--as YOU{flag}`)."
            )
        return f"{graph} is running (at `{self._run.state}`, driven by {self._run.driver.actor})."


def ended_status(declined: bool, protocol: int | None) -> str:
    """The status of a run that ran to its end: ``declined`` where its last gate took the
    option that gate names as its rejection (``declined``) and its recorded ``protocol`` is
    :data:`DECLINED_PROTOCOL` or later, else ``finished`` (as every run recorded before ended,
    whatever it was answered: its replay writes what it wrote)."""
    return "declined" if declined and (protocol or 1) >= DECLINED_PROTOCOL else "finished"


def quiet_answers(protocol: int | None) -> bool:
    """Whether a run writes nothing to its visibility at an answer or a resume that its next
    state makes redundant, as runs recorded from :data:`QUIET_ANSWERS_PROTOCOL` on do: no
    search attributes, and no memo of a gate closed where another opens or the run ends in the
    same workflow task. ``protocol`` is the one the run's start check recorded."""
    return (protocol or 1) >= QUIET_ANSWERS_PROTOCOL


def quiet_attributes(protocol: int | None) -> bool:
    """Whether a run writes its search attributes only when it settles (a gate opens, a node
    parks), as runs recorded from :data:`SETTLING_PROTOCOL` on do; runs recorded before also
    wrote them when an answer or resume moved them on and when they finished. ``protocol`` is
    the one the run's start check recorded (None until one ran)."""
    return (protocol or 1) >= SETTLING_PROTOCOL

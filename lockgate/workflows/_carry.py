"""A graph run's state, as one versioned type: what it is, and what it hands its next run; and
which run it is (:class:`ThisRun`), which it never hands on.

Everything a run is (fields, trail, budgets, an open gate, who asked and who drove, the proofs
it spent, the makers of its work) crosses into the next run's start input. The input is anyone's
to write, so the next run trusts it only once the worker secret's seal on it opens (see
:mod:`._authority_context`); until then it is read, never believed. A carried state that cannot
be read back is refused like a forged one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from lockgate._errors import LockgateError
from lockgate.contracts import RunRef, TrailRow
from lockgate.gates._gates import OpenGate
from lockgate.graphs._compiled import CompiledGraph
from lockgate.identity._actors import Actor

__all__ = [
    "CARRIED_VERSION",
    "CarriedStateError",
    "RunState",
    "ThisRun",
    "written_fields",
]

CARRIED_VERSION = 2
"""The version of :class:`RunState` this lockgate writes and reads."""


class CarriedStateError(LockgateError, ValueError):
    """A carried state this lockgate cannot read."""


def written_fields(record: Mapping[str, Any]) -> Any:
    """The field values a start's verdict, a child run's end or a carried state holds.

    Runs recorded before 0.1.0 called them ``channels``; their histories still replay.
    """
    return record["fields"] if "fields" in record else record.get("channels")


@dataclass(frozen=True, slots=True)
class ThisRun:
    """Which graph run the parts of a run work for: the compiled graph it follows, its workflow
    id, and its execution (its first run id, which a proof names). Never carried: each history
    of the run knows it from its start.
    """

    graph: CompiledGraph
    run_id: str
    execution: str

    def ref(self) -> RunRef:
        """The run as another run names it (a sub-graph, its ``parent``)."""
        return {"graph": self.graph.name, "run_id": self.run_id, "execution": self.execution}


@dataclass
class RunState:
    """A graph run's state: what it is at any moment, and exactly what it hands its next
    history at continue-as-new (``to_dict``), under the worker secret's seal.

    A new field is one line here: the run reads and writes it as ``self._run.<field>``, and it
    is carried with the rest. Carried trail rows name their actor by index into ``actors``: a
    long run's carried trail is then a fraction of its shown size, and stays far inside
    Temporal's payload limit.
    """

    state: str
    fields: dict[str, Any]
    trail: list[TrailRow]
    taken: dict[str, int]
    visits: dict[str, int]
    requester: Actor
    driver: Actor
    gate: OpenGate | None
    gate_openings: int
    parkings: int
    spent: list[str]
    settles: int
    ignored_inputs: list[str] = field(default_factory=list)
    makers: list[str] = field(default_factory=list)
    refused_signals_dropped: int = 0
    inbox: list[dict[str, Any]] = field(default_factory=list)
    """Signals the run received and had not judged yet: the next run judges them first."""
    depth: int = 0
    """How deep the run nests under parent runs (a sub-graph's), 0 for none."""
    parent: dict[str, Any] | None = None
    """The parent run that started this one as a sub-graph, if any."""
    conversations: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The conversations of agent steps that wait (at a budget's gate, or for this next
    history), by the step's state."""
    declined: bool = False
    """Whether the last gate decided took the option its ``rejection`` names: the run, once it
    ends, reads ``declined`` rather than ``finished``."""

    def spend(self, actor: Actor) -> None:
        """Records the nonce of the proof ``actor`` came with: the run takes it once."""
        if actor.authorization:
            self.spent.append(actor.authorization)

    def add_maker(self) -> None:
        """Counts the driver among the makers of the work the next gate reviews (a verified
        principal, once): a maker may not answer that gate."""
        maker = self.driver.principal
        if self.driver.verified and maker is not None and maker not in self.makers:
            self.makers.append(maker)

    def to_dict(self) -> dict[str, Any]:
        """As the JSON object the next run's start input carries."""
        actors: list[dict[str, Any]] = []
        index: dict[str, int] = {}
        rows: list[dict[str, Any]] = []
        for row in self.trail:
            by = row.get("by")
            key = repr(sorted(by.items())) if isinstance(by, dict) else ""
            if key not in index:
                index[key] = len(actors)
                actors.append(dict(by) if isinstance(by, dict) else {})
            rows.append({**row, "by": index[key]})
        return {
            "version": CARRIED_VERSION,
            "state": self.state,
            "fields": self.fields,
            "actors": actors,
            "trail": rows,
            "taken": self.taken,
            "visits": self.visits,
            "requester": self.requester.to_dict(),
            "driver": self.driver.to_dict(),
            "gate": self.gate.to_dict() if self.gate is not None else None,
            "gate_openings": self.gate_openings,
            "parkings": self.parkings,
            "spent": self.spent,
            "settles": self.settles,
            "ignored_inputs": self.ignored_inputs,
            "makers": self.makers,
            "refused_signals_dropped": self.refused_signals_dropped,
            "inbox": self.inbox,
            **({"depth": self.depth, "parent": self.parent} if self.parent is not None else {}),
            **({"conversations": self.conversations} if self.conversations else {}),
            **({"declined": True} if self.declined else {}),
        }

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> RunState:
        """Reads :meth:`to_dict` output.

        Raises:
            CarriedStateError: It is not a carried state of this version.
        """
        if value.get("version") != CARRIED_VERSION:
            raise CarriedStateError(
                f"it is carried state version {value.get('version')!r}; this lockgate reads "
                f"version {CARRIED_VERSION}"
            )
        try:
            actors = value["actors"]
            gate = value.get("gate")
            return cls(
                state=str(value["state"]),
                fields=dict(written_fields(value)),
                trail=[cast(TrailRow, {**row, "by": actors[row["by"]]}) for row in value["trail"]],
                taken={str(k): int(v) for k, v in value["taken"].items()},
                visits={str(k): int(v) for k, v in value["visits"].items()},
                requester=Actor.from_dict(value["requester"]),
                driver=Actor.from_dict(value["driver"]),
                gate=OpenGate.from_dict(gate) if gate is not None else None,
                gate_openings=int(value["gate_openings"]),
                parkings=int(value["parkings"]),
                spent=[str(nonce) for nonce in value["spent"]],
                settles=int(value["settles"]),
                ignored_inputs=[str(name) for name in value.get("ignored_inputs", [])],
                makers=[str(name) for name in value.get("makers", [])],
                refused_signals_dropped=int(value.get("refused_signals_dropped", 0)),
                inbox=[_signal_entry(entry) for entry in value.get("inbox", [])],
                depth=int(value.get("depth", 0)),
                parent=dict(value["parent"]) if value.get("parent") is not None else None,
                conversations={
                    str(step): dict(record)
                    for step, record in dict(value.get("conversations") or {}).items()
                },
                declined=value.get("declined") is True,
            )
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
            raise CarriedStateError(f"it cannot be read ({type(error).__name__})") from None


def _signal_entry(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) - {"name", "value", "problem"}:
        raise CarriedStateError("a carried signal is not {name, value, problem}")
    return {
        "name": str(value["name"]),
        "value": value.get("value"),
        "problem": value.get("problem"),
    }

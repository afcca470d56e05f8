"""What each audit record counts as in a deployment's metrics: one rule, whatever exports them.

Every judgement already leaves an audit record; the metrics are counted from those records, so
a call, a refusal or a gate is counted where it is recorded, once. The OpenTelemetry metrics
(``lockgate.telemetry``) and the ones Temporal's own runtime exports (Prometheus) both read
:func:`audit_counts`, so the two cannot disagree on what was a refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["AuditCount", "Counted", "audit_counts"]

Counted = Literal[
    "tool_call", "refusal", "gate_opened", "gate_answered", "node_parked", "node_resumed"
]
"""What an audit record can count as."""


@dataclass(frozen=True)
class AuditCount:
    """One thing an audit record counts as, with its labels.

    Labels are few-valued names (tool, outcome, code, event, graph, role, node); who acted and
    what a call carried never become a label.
    """

    counted: Counted
    labels: Mapping[str, str] = field(default_factory=dict)
    waited_seconds: float | None = None
    """For an answered gate: how long it waited for the answer, when the run knows."""


def audit_counts(record: Mapping[str, Any], *, accepted: bool) -> list[AuditCount]:
    """What ``record`` (an audit record, as a sink gets it) counts as.

    - a tool call, by ``tool``, ``outcome`` (ok or error) and ``code``; a failed one is a
      refusal too; a dry run (``mode`` plan) that passed is no call;
    - any other record not accepted: a refusal, by ``code`` and ``event``;
    - a gate opened, and a gate answered (with how long it waited), by ``graph`` and ``role``;
    - a node parked, and a parked node resumed, by ``graph`` and ``node``.
    """
    event = str(record.get("event"))
    if event == "tool.call" and accepted and record.get("mode") == "plan":
        # A dry run that passed (a durable call checks itself before it waits): the call it
        # checked is counted when it runs. One that failed is the refused call, counted below.
        return []
    if event == "tool.call":
        code = str(record.get("code") or "")
        outcome = "ok" if accepted else "error"
        counts = [
            AuditCount(
                "tool_call",
                {"tool": str(record.get("tool")), "outcome": outcome, "code": code},
            )
        ]
        if not accepted:
            counts.append(AuditCount("refusal", {"code": code or "UNKNOWN", "event": event}))
        return counts
    if not accepted:
        return [
            AuditCount("refusal", {"code": str(record.get("code") or "UNKNOWN"), "event": event})
        ]
    gate = {"graph": str(record.get("graph") or ""), "role": str(record.get("role") or "")}
    node = {"graph": str(record.get("graph") or ""), "node": str(record.get("node") or "")}
    if event == "gate.open":
        return [AuditCount("gate_opened", gate)]
    if event in ("gate.decide", "signal.decide"):
        waited = record.get("waited_seconds")
        seconds = float(waited) if isinstance(waited, (int, float)) else None
        return [AuditCount("gate_answered", gate, seconds)]
    if event == "node.park":
        return [AuditCount("node_parked", node)]
    if event in ("run.resume", "signal.resume"):
        return [AuditCount("node_resumed", node)]
    return []

"""lockgate's metrics through Temporal's own metric meter, so that whatever a worker's Runtime
exports (Prometheus, OpenTelemetry) carries them beside the SDK's series, with no exporter of
lockgate's own.

What a record counts as is :func:`~lockgate.tools._audit_counts.audit_counts`'s rule; this
module only says which meter it goes to: a workflow's (replay-safe, labelled with the workflow
type, namespace and task queue), an activity's (labelled with the activity type), or the
Runtime's for what the worker judges outside both.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from temporalio import activity, workflow
from temporalio.common import MetricMeter
from temporalio.runtime import Runtime

from lockgate.tools._audit_counts import audit_counts

__all__ = ["PROMETHEUS_BUCKETS", "TemporalMetrics"]

_log = logging.getLogger("lockgate.audit")

TOOL_CALLS = "lockgate_tool_calls"
REFUSALS = "lockgate_refusals"
GATES_OPENED = "lockgate_gates_opened"
GATES_ANSWERED = "lockgate_gates_answered"
DECISION_SECONDS = "lockgate_gate_decision_seconds"

PROMETHEUS_BUCKETS: Mapping[str, Sequence[float]] = {
    # People answer gates in minutes to days; the SDK's default buckets (50 to 10,000) are
    # milliseconds, which would put every answer in the last one.
    DECISION_SECONDS: (1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400),
}
"""Histogram buckets for lockgate's series: give them to ``PrometheusConfig(
histogram_bucket_overrides=...)``."""


class TemporalMetrics:
    """Counts audit records on Temporal's metric meter (an audit sink).

    Series (counters unless said otherwise):

    - ``lockgate_tool_calls``: by ``tool``, ``outcome`` (ok, error) and ``code``;
    - ``lockgate_refusals``: by ``code`` and ``event``;
    - ``lockgate_gates_opened`` and ``lockgate_gates_answered``: by ``graph`` and ``role``;
    - ``lockgate_gate_decision_seconds`` (histogram): from a gate opening to its accepted
      answer, by ``graph`` and ``role``.

    Inside a workflow the meter is the workflow's: a metric is no command, so a run's history
    is the same with it or without. What a run records only while it replays (a history it does
    not believe: ``lockgate_refusals{event="history.refused"}``) is counted on the Runtime's
    meter, as the workflow's records nothing then.

    Args:
        runtime: The Runtime whose meter counts what is judged outside workflows and
            activities; ``Runtime.default()`` until the plugin gives it its worker's.
    """

    def __init__(self, runtime: Runtime | None = None) -> None:
        self.runtime = runtime

    def write(self, record: Mapping[str, Any], *, accepted: bool) -> None:
        """Counts ``record``; a meter that fails is logged, never raised into a judgement."""
        counts = audit_counts(record, accepted=accepted)
        if not counts:
            return
        try:
            meter = self._meter()
            for count in counts:
                labels = dict(count.labels)
                if count.counted == "tool_call":
                    meter.create_counter(TOOL_CALLS, "Tool calls, by outcome and code.").add(
                        1, labels
                    )
                elif count.counted == "refusal":
                    meter.create_counter(REFUSALS, "Refusals, by code and event.").add(1, labels)
                elif count.counted == "gate_opened":
                    meter.create_counter(GATES_OPENED, "Gates opened.").add(1, labels)
                elif count.counted == "gate_answered":
                    meter.create_counter(GATES_ANSWERED, "Gates answered.").add(1, labels)
                    if count.waited_seconds is not None:
                        meter.create_histogram_float(
                            DECISION_SECONDS,
                            "From a gate opening to its accepted answer.",
                            "s",
                        ).record(count.waited_seconds, labels)
        except Exception:  # a metric must never refuse a call
            _log.warning("lockgate could not count an audit record in its metrics", exc_info=True)

    def _meter(self) -> MetricMeter:
        if workflow.in_workflow() and not workflow.unsafe.is_replaying():
            return workflow.metric_meter()
        if activity.in_activity():
            return activity.metric_meter()
        return (self.runtime or Runtime.default()).metric_meter

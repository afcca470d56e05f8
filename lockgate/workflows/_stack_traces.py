"""No stack trace in what lockgate's own workflows and activities write to Temporal.

Anyone with namespace access reads every history, and can make lockgate's runs fail: a start
payload that does not decode fails the run, a tool with a bug fails its activity. Temporal's
failure converter writes each failure's Python stack trace (and its causes') beside its message:
the worker's source lines and install paths. lockgate's failures keep their type, message and
details; the worker's log keeps the trace (the SDK logs a failed activity and a failed workflow
task with it).

The SDK converts failures in two places, so there are two seams:

- A workflow's failures (the run's failure, a failed workflow task, a rejected update, a failed
  query) go through a converter the SDK makes for each workflow instance from the worker's
  ``failure_converter_class``. :class:`TracelessWorkflowRunner` gives lockgate's own workflow
  types a converter that drops traces and leaves every other type (a shop's own workflows on the
  same worker) with the worker's converter as it is.
- An activity's failure goes through the worker client's data converter, in the activity's
  serialization context. :func:`without_activity_stack_traces` wraps that converter's failure
  converter so that it drops traces when the activity is one of lockgate's (its type starts
  with ``lockgate.``), and only then.

What neither seam reaches: a failure the SDK converts outside any workflow instance (a workflow
task that deadlocks, an instance that cannot be created) uses the worker's converter in a context
that names the workflow id only, not its type.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Collection, Sequence
from typing import ClassVar

import temporalio.workflow
from temporalio.api.failure.v1 import Failure
from temporalio.converter import (
    ActivitySerializationContext,
    DataConverter,
    DefaultFailureConverter,
    FailureConverter,
    PayloadConverter,
    SerializationContext,
    WithSerializationContext,
)
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner

__all__ = [
    "LOCKGATE_ACTIVITY_PREFIX",
    "TracelessWorkflowRunner",
    "strip_stack_traces",
    "without_activity_stack_traces",
]

LOCKGATE_ACTIVITY_PREFIX = "lockgate."
"""What the name of every activity lockgate registers starts with (``lockgate.tool:<tool>``,
``lockgate.open_start``, ``lockgate.model``, ...)."""


def strip_stack_traces(failure: Failure, payload_converter: PayloadConverter) -> None:
    """Empties the stack trace of ``failure`` and of each of its causes, in clear and inside
    its encoded attributes (where a converter that encodes common attributes moved it; they are
    not yet encrypted when a failure converter writes them)."""
    current: Failure | None = failure
    while current is not None:
        current.stack_trace = ""
        if current.HasField("encoded_attributes"):
            # An attribute this converter cannot read is left as it is: it was never a trace
            # the SDK wrote in clear.
            with contextlib.suppress(Exception):
                attributes = payload_converter.from_payload(current.encoded_attributes)
                if isinstance(attributes, dict) and attributes.get("stack_trace"):
                    attributes["stack_trace"] = ""
                    current.encoded_attributes.CopyFrom(
                        payload_converter.to_payloads([attributes])[0]
                    )
        current = current.cause if current.HasField("cause") else None


class _TracelessFailureConverter(FailureConverter, WithSerializationContext):
    """``base`` (a failure converter class), writing failures without stack traces: always, or
    (``activities_only``) in the serialization context of one of lockgate's activities."""

    base: ClassVar[type[FailureConverter]] = DefaultFailureConverter
    activities_only: ClassVar[bool] = False

    def __init__(self, inner: FailureConverter | None = None, strips: bool | None = None) -> None:
        # The SDK makes a failure converter from its class with no arguments.
        self._inner = inner if inner is not None else self.base()
        self._strips = not self.activities_only if strips is None else strips

    def with_context(self, context: SerializationContext) -> _TracelessFailureConverter:
        """See :class:`temporalio.converter.WithSerializationContext`."""
        inner = self._inner
        if isinstance(inner, WithSerializationContext):
            inner = inner.with_context(context)
        strips = self._strips
        if self.activities_only:
            strips = isinstance(context, ActivitySerializationContext) and (
                context.activity_type or ""
            ).startswith(LOCKGATE_ACTIVITY_PREFIX)
        return type(self)(inner, strips)

    def to_failure(
        self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure
    ) -> None:
        """See :class:`temporalio.converter.FailureConverter`."""
        self._inner.to_failure(exception, payload_converter, failure)
        if self._strips:
            strip_stack_traces(failure, payload_converter)

    def from_failure(self, failure: Failure, payload_converter: PayloadConverter) -> BaseException:
        """See :class:`temporalio.converter.FailureConverter`."""
        return self._inner.from_failure(failure, payload_converter)


@functools.cache
def _traceless(
    base: type[FailureConverter], activities_only: bool
) -> type[_TracelessFailureConverter]:
    if issubclass(base, _TracelessFailureConverter):
        if base.activities_only == activities_only:
            return base
        base = base.base
    # One class per base, so that wrapping the same converter twice gives the same class.
    return type(
        f"Traceless{base.__name__}",
        (_TracelessFailureConverter,),
        {"base": base, "activities_only": activities_only, "__module__": __name__},
    )


def without_activity_stack_traces(converter: DataConverter) -> DataConverter:
    """``converter``, writing the failures of lockgate's activities without stack traces (its
    failure converter otherwise unchanged); ``converter`` itself when it already does."""
    wrapped = _traceless(converter.failure_converter_class, activities_only=True)
    if wrapped is converter.failure_converter_class:
        return converter
    return dataclasses.replace(converter, failure_converter_class=wrapped)


class TracelessWorkflowRunner(WorkflowRunner):
    """A workflow runner that gives ``own`` workflow classes a failure converter writing no
    stack traces, and runs every other workflow as ``inner`` does.

    Args:
        inner: The runner it wraps (the worker's unsandboxed runner: lockgate's workflows
            opt out of the sandbox).
        own: lockgate's own workflow classes.
    """

    def __init__(self, inner: WorkflowRunner, own: Collection[type]) -> None:
        self.inner = inner
        self.own = frozenset(own)

    def prepare_workflow(self, defn: temporalio.workflow._Definition) -> None:
        """See :class:`temporalio.worker.WorkflowRunner`."""
        self.inner.prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        """See :class:`temporalio.worker.WorkflowRunner`."""
        if det.defn.cls in self.own:
            det = dataclasses.replace(
                det,
                failure_converter_class=_traceless(
                    det.failure_converter_class, activities_only=False
                ),
            )
        return self.inner.create_instance(det)

    def set_worker_level_failure_exception_types(
        self, types: Sequence[type[BaseException]]
    ) -> None:
        """See :class:`temporalio.worker.WorkflowRunner`."""
        self.inner.set_worker_level_failure_exception_types(types)

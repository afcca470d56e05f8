"""Sealed tool calls: how a tool activity knows lockgate's own workflow scheduled it.

Anyone with namespace access can schedule ``essay:publish`` on lockgate's task queue from a
workflow of their own, with any input. A tool activity therefore runs as a verified actor, or as
already confirmed, only when the call carries a seal: an HMAC under the worker secret, put on the
activity's header by lockgate's workflow interceptor on the worker that scheduled it, over the
whole input and the scheduling execution as the server reports it to the activity (workflow id,
run id, activity type). A copy read from history opens for no other execution.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Mapping
from typing import Any

from temporalio import activity
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadConverter
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

from lockgate.gates._authority import Authority
from lockgate.identity._actors import Actor
from lockgate.identity._canonical import fingerprint
from lockgate.identity._seals import WorkerSecret
from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "COMPACT_HEADER",
    "HELD_HEADER",
    "SEAL_HEADER",
    "SealReader",
    "as_data",
    "compact_result_wanted",
    "current_seal",
    "handed_holdings",
    "header_text",
    "own_run_sealed",
    "sealed_by_own_run",
    "tool_activity_binding",
]

SEAL_HEADER = "lockgate-seal"
"""The activity header that carries a tool call's seal."""

COMPACT_HEADER = "lockgate-compact"
"""The activity header by which a caller that reads only whether a tool call succeeded, its
data and its error (a graph run's node or agent step) asks for those alone
(:meth:`~lockgate.tools._tool_result.ToolResult.to_compact_dict`), so its history keeps no copy
of the meta (who called, the request id, timings), which the audit record has. A header, not a
field of the input: the input's fingerprint, which its seal covers, stays what workers of the
previous build compute, and such a worker, which reads no such header, answers the whole
result, which the run reads as well."""

HELD_HEADER = "lockgate-held"
"""The activity header that hands the worker running a call what the person from an identity
provider who authorized it was judged to hold (sealed and encrypted, see
:meth:`~lockgate.gates._authority.Authority.handover_of`)."""

_SEAL: contextvars.ContextVar[str | None] = contextvars.ContextVar("lockgate_seal", default=None)
_HELD: contextvars.ContextVar[str | None] = contextvars.ContextVar("lockgate_held", default=None)
_COMPACT: contextvars.ContextVar[bool] = contextvars.ContextVar("lockgate_compact", default=False)

_OPENED: contextvars.ContextVar[tuple[Any, bool] | None] = contextvars.ContextVar(
    "lockgate_seal_opened", default=None
)
"""The call the running activity's seal was last opened for, and whether it opened."""


def tool_activity_binding(
    workflow_id: str, run_id: str, activity_type: str, call: Any
) -> dict[str, Any]:
    """What a tool activity's seal vouches for: this input, scheduled by this execution."""
    return {
        "workflow_id": workflow_id,
        "run_id": run_id,
        "activity": activity_type,
        "input": fingerprint(as_data(call)),
    }


def as_data(value: Any) -> Any:
    """What ``dataclasses.asdict`` makes of ``value``, without its deep copy of every value (a
    tenth of a tool call's cost on the worker, paid twice per call): the same JSON, so the same
    fingerprint."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: as_data(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {key: as_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_data(item) for item in value]
    return value


def sealed_by_own_run(secret: WorkerSecret | None, call: Any) -> bool:
    """Whether the activity running now carries the seal a lockgate run of this deployment put
    on exactly ``call``, scheduling it from the execution the server names. A worker without a
    secret opens no seal. Asked again for the same call (the activity judging its caller, then
    its result being sealed), the first answer is given."""
    opened = _OPENED.get()
    if opened is not None and opened[0] is call:
        return opened[1]
    info = activity.info()
    binding = tool_activity_binding(
        info.workflow_id or "", info.workflow_run_id or "", info.activity_type, call
    )
    verdict = secret is not None and secret.opens(current_seal(), "tool-activity", binding)
    _OPENED.set((call, verdict))
    return verdict


def own_run_sealed(authority: Authority, call: Any, event: str, **facts: Any) -> bool:
    """Whether the activity running now carries its own run's seal on ``call`` (see
    :func:`sealed_by_own_run`); when it does not, the refusal is audited as ``event``, with the
    run that scheduled it and ``facts``, before the caller refuses the call in its own words."""
    if sealed_by_own_run(authority.secret, call):
        return True
    authority.audit.refused(
        event, ErrorCode.UNAUTHORIZED, "no valid seal", run=activity.info().workflow_id, **facts
    )
    return False


def current_seal() -> str | None:
    """The seal on the header of the activity running now, if it carried one."""
    return _SEAL.get()


def compact_result_wanted() -> bool:
    """Whether the caller of the activity running now asked for its result compact
    (``COMPACT_HEADER``)."""
    return _COMPACT.get()


def handed_holdings(authority: Authority, actor: Actor, call: Any) -> None:
    """Keeps, for the activity running now, what its header hands over that ``actor``'s proof
    was judged to hold on the worker that scheduled it (``HELD_HEADER``), opened under the
    worker secret for exactly this call from this execution; the caller has already opened
    the call's own seal. Nothing is kept from a header that does not open."""
    held = _HELD.get()
    if held is None or authority.secret is None:
        return
    info = activity.info()
    binding = tool_activity_binding(
        info.workflow_id or "", info.workflow_run_id or "", info.activity_type, call
    )
    authority.take_handover(actor, authority.secret.open_data(held, "held", binding))


def header_text(
    headers: Mapping[str, Payload], name: str, converter: PayloadConverter
) -> str | None:
    """The text a header holds, or None when it is missing or holds anything else (whatever a
    stranger put there is no seal)."""
    payload = headers.get(name)
    if payload is None:
        return None
    try:
        value = converter.from_payload(payload, str)
    except Exception:
        return None
    return value if isinstance(value, str) else None


class SealReader(ActivityInboundInterceptor):
    """Hands the activity the seal its header carries, and the holdings handed over with it
    (and nothing when it carries none)."""

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        """Runs the activity with :func:`current_seal` set from its header."""
        converter = activity.payload_converter()
        seal = header_text(input.headers, SEAL_HEADER, converter)
        held = header_text(input.headers, HELD_HEADER, converter)
        token, opened, handed = _SEAL.set(seal), _OPENED.set(None), _HELD.set(held)
        compact = _COMPACT.set(COMPACT_HEADER in input.headers)
        try:
            return await self.next.execute_activity(input)
        finally:
            _HELD.reset(handed)
            _OPENED.reset(opened)
            _SEAL.reset(token)
            _COMPACT.reset(compact)

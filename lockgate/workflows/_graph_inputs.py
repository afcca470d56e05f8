"""What a graph run takes from callers, and how each payload is read before it is trusted.

Every input a run takes (its start, an update's payload, a query's page) arrives as JSON anyone
with namespace access can write. Each is read here, shape and size first, into one dataclass; a
payload that does not fit is a :class:`~lockgate.errors.Refusal` (or a refused start) with a
code and a sentence, never an exception from deep inside the SDK.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate.gates._limits import (
    MAX_ANSWER_BYTES,
    MAX_START_BYTES,
    TRAIL_PAGE,
    PayloadProblem,
    measure,
)
from lockgate.tools._tool_result import ErrorCode

__all__ = [
    "MAX_CARRIED_BYTES",
    "SettleInput",
    "ShowInput",
    "StartGraphInput",
    "channel_ok",
    "invalid",
    "one_answer",
    "parse_start",
    "settle_input",
    "show_input",
    "start_proof",
]

MAX_CARRIED_BYTES = 1_900_000
"""A continued run's start (its carried state) must still fit Temporal's ~2 MB payload limit."""

_START_KEYS = (
    "inputs",
    "signed",
    "proof",
    "channel",
    "version",
    "carried",
    "handed",
    "scheduled",
)


@dataclass
class StartGraphInput:
    """The input a graph run starts with.

    Attributes:
        inputs: Starting field values; a key that is not a field of the graph refuses the start
            (a graph whose model declares ``extra="allow"`` drops it and lists it instead).
        signed: The starter signs this run: it runs nothing until the ``start`` update brings
            a proof naming this execution
            (:func:`~lockgate.identity._bindings.start_binding`), whose verified signer becomes
            its requester, and ends refused if none comes within
            :data:`~lockgate.workflows._signed_starts.SIGNED_START_WITHIN` of its start. An
            unsigned run's requester is ``unverified:<channel>``, and a graph with gates
            refuses to start one.
        proof: A start proof inside the start input, as lockgate sent it before proofs named
            their execution: a run recorded then keeps its verdict; a new one is refused.
        channel: The channel of an unsigned starter.
        version: The graph version to run; new runs take the newest this worker serves, and
            any other is refused (older versions only finish their runs).
        carried: State carried over by continue-as-new: lockgate's own, honoured only under the
            seal of the deployment's workers.
        handed: What a parent run hands the sub-graph it starts (who drives it, how deep it
            nests, the parent): lockgate's own, honoured only under the seal of the
            deployment's workers, for exactly that parent run and this child.
        scheduled: The schedule grant of a run a Temporal Schedule starts: its owner's signed
            :func:`~lockgate.identity._bindings.schedule_binding`. The run runs as the owner
            only once its start check finds that the schedule the grant names started it,
            inside the grant's window (see :mod:`lockgate.activities._scheduled_starts`).
    """

    inputs: dict[str, Any] = field(default_factory=dict)
    proof: dict[str, Any] | None = None
    channel: str = "temporal"
    version: int | None = None
    carried: dict[str, Any] | None = None
    handed: dict[str, Any] | None = None
    signed: bool = False
    scheduled: dict[str, Any] | None = None


@dataclass
class SettleInput:
    """Waits until the run settles (a gate open, a node parked, or the run over) past ``after``.

    ``after`` is a count of settles the caller has seen (``settles`` in :meth:`show`); it may not
    exceed what the run has made.
    """

    after: int = 0


@dataclass
class ShowInput:
    """A page of the trail: ``trail_limit`` rows from ``trail_from`` (the newest when None)."""

    trail_from: int | None = None
    trail_limit: int = TRAIL_PAGE


def channel_ok(channel: object) -> bool:
    """Whether ``channel`` is a short name like ``temporal`` or ``cli``."""
    return isinstance(channel, str) and bool(re.fullmatch(r"[A-Za-z0-9._@:-]{1,64}", channel))


def parse_start(starts: Sequence[Any]) -> tuple[StartGraphInput, PayloadProblem | None]:
    """Reads a run's start payloads into a :class:`StartGraphInput`, or says what is wrong."""
    if len(starts) != 1:
        return StartGraphInput(), invalid(
            f"A run starts with one input, {{inputs, signed?, channel?}}; it got {len(starts)}."
        )
    raw = starts[0]
    if raw is None:
        return StartGraphInput(), None
    if not isinstance(raw, dict):
        return StartGraphInput(), invalid(
            "A run starts with an object {inputs, signed?, channel?, version?}, not "
            f"{type(raw).__name__}."
        )
    limit = MAX_CARRIED_BYTES if raw.get("carried") is not None else MAX_START_BYTES
    problem = measure(raw, what="The start input", max_bytes=limit)
    if problem is not None:
        return StartGraphInput(), problem
    unknown = sorted(str(key) for key in set(raw) - set(_START_KEYS))
    if unknown:
        shown = ", ".join(name[:40] for name in unknown[:5])
        return StartGraphInput(), invalid(
            f"The start input has unknown keys ({shown}): a run starts with "
            "{inputs, signed?, channel?, version?}. Put field values under 'inputs'."
        )
    inputs, proof, channel = raw.get("inputs", {}), raw.get("proof"), raw.get("channel")
    version, carried = raw.get("version"), raw.get("carried")
    if not isinstance(inputs, dict):
        return StartGraphInput(), invalid("'inputs' must be an object of starting field values.")
    if channel is not None and not channel_ok(channel):
        return StartGraphInput(), invalid(
            "'channel' must be a short name like 'temporal' or 'cli'."
        )
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        return StartGraphInput(), invalid("'version' must be a whole number.")
    signed = raw.get("signed", False)
    if not isinstance(signed, bool):
        return StartGraphInput(), invalid(
            "'signed' is true when a signed `start` update follows the start, else false."
        )
    if carried is not None and not isinstance(carried, dict):
        return StartGraphInput(), invalid("'carried' is lockgate's own: leave it out.")
    handed = raw.get("handed")
    if handed is not None and (not isinstance(handed, dict) or carried is not None):
        return StartGraphInput(), invalid("'handed' is lockgate's own: leave it out.")
    scheduled = raw.get("scheduled")
    if scheduled is not None and not isinstance(scheduled, dict):
        return StartGraphInput(), invalid(
            "'scheduled' is the schedule grant a Temporal Schedule's run carries: an object, as "
            "`lockgate schedule create` signs it."
        )
    if scheduled is not None and (signed or proof is not None or carried or handed):
        return StartGraphInput(), invalid(
            "A scheduled run's starter is its schedule grant's signer: it takes no 'signed', "
            "'proof', 'carried' or 'handed'."
        )
    return (
        StartGraphInput(
            inputs, proof, channel or "temporal", version, carried, handed, signed, scheduled
        ),
        None,
    )


def one_answer(args: Sequence[Any], update: str) -> tuple[Any, PayloadProblem | None]:
    """The one payload an answer update (``decide``, ``resume``) takes, measured."""
    if len(args) != 1:
        return None, invalid(
            f"`{update}` takes one payload, the signed proof that `lockgate sign {update}` prints; "
            f"it got {len(args)}."
        )
    return args[0], measure(args[0], what=f"The `{update}` payload", max_bytes=MAX_ANSWER_BYTES)


def start_proof(args: Sequence[Any]) -> tuple[Any, bool, PayloadProblem | None]:
    """The proof a ``start`` update takes, and whether its caller waits for the run to settle.

    The payload is the signed proof (what ``lockgate sign start`` prints: the caller waits), or
    ``{proof, settle: false}`` from a caller who only waits for the proof to be recorded.
    """
    value, problem = one_answer(args, "start")
    if problem is not None or not isinstance(value, dict) or set(value) != {"proof", "settle"}:
        return value, True, problem
    if not isinstance(value["settle"], bool):
        return value, True, invalid("'settle' is true (wait for the run to settle) or false.")
    return value["proof"], value["settle"], None


def settle_input(args: Sequence[Any]) -> tuple[SettleInput, PayloadProblem | None]:
    """The :class:`SettleInput` of a ``settle`` update, or what is wrong with its payload."""
    expected = "`settle` takes nothing, or one object {after: a whole number}."
    if not args:
        return SettleInput(), None
    if len(args) != 1:
        return SettleInput(), invalid(expected)
    value = args[0]
    if value is None:
        return SettleInput(), None
    if isinstance(value, SettleInput):
        return value, None
    if not isinstance(value, dict) or set(value) - {"after"}:
        return SettleInput(), invalid(expected)
    after = value.get("after", 0)
    if not isinstance(after, int) or isinstance(after, bool):
        return SettleInput(), invalid(expected)
    return SettleInput(after), None


def show_input(args: Sequence[Any]) -> ShowInput:
    """The page a ``show`` query asks for.

    Raises:
        ValueError: The payload is not ``{trail_from?, trail_limit?}`` (the query fails; a query
            writes nothing, so a failed one costs the run nothing).
    """
    if not args or args[0] is None:
        return ShowInput()
    value = args[0]
    if len(args) != 1 or not isinstance(value, dict) or set(value) - {"trail_from", "trail_limit"}:
        raise ValueError("`show` takes nothing, or one object {trail_from?, trail_limit?}.")
    start, limit = value.get("trail_from"), value.get("trail_limit", TRAIL_PAGE)
    if start is not None and (not isinstance(start, int) or isinstance(start, bool) or start < 0):
        raise ValueError("'trail_from' is a row number, 0 or more.")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise ValueError("'trail_limit' is a number of rows, 1 to 1000.")
    return ShowInput(start, limit)


def invalid(sentence: str) -> PayloadProblem:
    """A ``VALIDATION_ERROR`` problem."""
    return PayloadProblem(ErrorCode.VALIDATION_ERROR.value, sentence)

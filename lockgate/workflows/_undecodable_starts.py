"""A start the SDK cannot decode fails its run at once, instead of wedging it.

Before any lockgate code runs, temporalio decodes a workflow's start payloads; a payload it cannot
decode (an unknown encoding, broken JSON) is raised as ``RuntimeError("Failed decoding
arguments")``, the decoder's own error as its cause (``_convert_payloads`` in temporalio's
``worker/_workflow_instance.py``). As a task failure it would be retried for ever. The SDK offers
no hook before that decode, and fails a run instead of its task only for an exception that is an
instance of a workflow's ``failure_exception_types``.

So lockgate's workflows declare :class:`UnreadableStart` as their failure type, and
``isinstance(error, UnreadableStart)`` also recognises that one wrapper: a ``RuntimeError``
exactly, with exactly that message and a cause. No other exception inside lockgate's code fails a
run this way (a ``RecursionError`` is a ``RuntimeError`` too, and still fails only its task). The
run's failure reads ``RuntimeError: Failed decoding arguments``, the payload's problem its cause.
``tests/workflows/test_malformed_payloads.py`` starts runs with such payloads, so an SDK that
words or wraps the failure otherwise fails a test, not a run.
"""

from __future__ import annotations

from typing import Any

from lockgate._errors import RefusedError

__all__ = ["UnreadableStart"]

_SDK_DECODE_FAILURE = "Failed decoding arguments"


class _AlsoTheSdksDecodeFailure(type):
    """Makes ``isinstance`` true of the SDK's decode failure as well as of the class's own."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return type.__instancecheck__(cls, instance) or (
            type(instance) is RuntimeError
            and instance.args == (_SDK_DECODE_FAILURE,)
            and instance.__cause__ is not None
        )


class UnreadableStart(RefusedError, metaclass=_AlsoTheSdksDecodeFailure):
    """A workflow's start payload could not be decoded, so the run fails at once.

    The failure type lockgate's workflows declare; it also matches the SDK's own decode failure
    (see this module).
    """

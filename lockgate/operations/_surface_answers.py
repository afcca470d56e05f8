"""What every surface answers alike: lockgate's own failure, a request body over the limit, and
the HTTP status of any answer.

A surface says these in its own transport (an MCP tool result, a JSON response) with the same code
and sentence, and the surfaces that speak HTTP (the JSON API, the inbox) give an answer the same
status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockgate.contracts import RunView, refusal
from lockgate.tools._tool_result import ErrorCode

__all__ = ["STATUS_OF_CODE", "body_too_large", "could_not_complete", "http_status"]

STATUS_OF_CODE: dict[str, int] = {
    "VALIDATION_ERROR": 422,
    "INVALID_DECISION": 422,
    "PAYLOAD_TOO_LARGE": 413,
    "NOT_FOUND": 404,
    "TOOL_NOT_FOUND": 404,
    "UNAUTHORIZED": 403,
    "UNVERIFIED_APPROVER": 403,
    "FORBIDDEN": 403,
    "SELF_APPROVAL_FORBIDDEN": 403,
    "GATE_NOT_PENDING": 409,
    "NOTHING_TO_RESUME": 409,
    "CONFIRMATION_REQUIRED": 409,
    "RATE_LIMITED": 429,
    "TIMEOUT": 504,
    "UNAVAILABLE": 503,
}
"""The HTTP status of each refusal code; any other code is a 400, and lockgate's own failure
(``INTERNAL_ERROR``) a 500."""


def http_status(answer: Mapping[str, Any]) -> int:
    """The HTTP status of ``answer``: 200, or its refusal's (a graph's ``ok`` or a tool's
    ``success`` false) by :data:`STATUS_OF_CODE`."""
    if answer.get("ok") is not False and answer.get("success") is not False:
        return 200
    error = answer.get("error")
    code = str(error.get("code")) if isinstance(error, Mapping) else ""
    if code == ErrorCode.INTERNAL_ERROR:
        return 500
    return STATUS_OF_CODE.get(code, 400)


def could_not_complete(what: str) -> RunView:
    """lockgate's own failure at ``what`` (``'essay__write'``, ``this request``), never the
    caller's mistake: the refusal asks after Temporal and the workers, and says where the log
    is; it never carries a trace."""
    return refusal(
        ErrorCode.INTERNAL_ERROR,
        f"lockgate could not complete {what} (is Temporal reachable, and a lockgate worker "
        "serving this task queue?); the server's log says more.",
    )


def body_too_large(max_bytes: int) -> RunView:
    """The refusal of a request body over ``max_bytes``, which was not read."""
    kibibytes = f" ({max_bytes // 1024} KiB)" if max_bytes % 1024 == 0 else ""
    return refusal(
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"The request body is over {max_bytes} bytes{kibibytes}, the most this server reads; "
        "it was not read.",
    )

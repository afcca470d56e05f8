"""What every tool call returns: one shape, one error shape, one set of codes."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockgate.identity._canonical import to_jsonable

__all__ = ["ErrorCode", "ToolError", "ToolResult"]


class ErrorCode(str, enum.Enum):
    """The codes a refusal or failure carries in ``error.code``.

    The first nine are the tool pipeline's; the rest are answered by human gates and runs, and
    ``PAYLOAD_TOO_LARGE`` by anything that measures what a caller sent (see ``_limits``), and
    ``CONFIRMATION_DECLINED`` when the person asked to confirm a call (over MCP) said no;
    ``UNAVAILABLE`` when what would answer (the Temporal server, a worker polling the task
    queue) is not there.
    """

    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    """No tool of that name is registered (or served by the workers); the message names the tools
    there are."""
    VALIDATION_ERROR = "VALIDATION_ERROR"
    """An argument is missing, of the wrong type or out of its declared bounds; the message names
    each field."""
    FORBIDDEN = "FORBIDDEN"
    """The caller is known but may not do this: a scope or role it does not hold, a channel policy
    that blocks it, or a step-up sign-in a gate asks for."""
    RATE_LIMITED = "RATE_LIMITED"
    """The caller's budget for this tool is spent for the window, or the shared rate-limit store
    cannot be reached; nothing ran. ``meta`` says when to try again."""
    INTERNAL_ERROR = "INTERNAL_ERROR"
    """lockgate's own failure, or a tool that raised: the message says what, never with a stack
    trace."""
    TIMEOUT = "TIMEOUT"
    """A tool's activity did not finish within its time, after its retries."""
    CONFIRMATION_REQUIRED = "CONFIRMATION_REQUIRED"
    """The tool asks for a confirmation token bound to the caller and these exact arguments; the
    result carries the token to confirm with."""
    UNAUTHORIZED = "UNAUTHORIZED"
    """Nobody verified is calling where a verified principal is required: an unsigned call on a
    channel that requires authentication, or a gate in a run nobody signed the start of."""
    NOT_FOUND = "NOT_FOUND"
    """No such run, graph, schedule or thing to read; or one the caller may not see."""
    UNVERIFIED_APPROVER = "UNVERIFIED_APPROVER"
    """An answer (or a start, a resume, a cancel) whose proof does not verify: none sent, a
    signature that fails, a signer the Directory does not list, a proof out of its time or
    already spent."""
    SELF_APPROVAL_FORBIDDEN = "SELF_APPROVAL_FORBIDDEN"
    """Four eyes: the approver is the run's requester, or drove the work the gate reviews."""
    INVALID_DECISION = "INVALID_DECISION"
    """The answer is not one of the gate's options."""
    GATE_NOT_PENDING = "GATE_NOT_PENDING"
    """The answer is for no gate open now: the run waits for nothing, or the proof names
    another execution, another gate, or something other than what the gate shows."""
    NOTHING_TO_RESUME = "NOTHING_TO_RESUME"
    """``resume`` on a run that is not parked at a node."""
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    """What the caller sent is larger than lockgate accepts; the message names the limit."""
    CONFIRMATION_DECLINED = "CONFIRMATION_DECLINED"
    """The person asked to confirm the call (over MCP) said no."""
    ALREADY_ANSWERED = "ALREADY_ANSWERED"
    """This approver has already answered this opening of the gate: each approver counts once."""
    INVALID_EVIDENCE = "INVALID_EVIDENCE"
    """The evidence an answer must carry is missing, invalid or not asked for; the message names
    each field that failed, never the value sent."""
    NOT_WAIVABLE = "NOT_WAIVABLE"
    """A waiver of a gate that declares no ``waivable_by``."""
    NOTHING_TO_CANCEL = "NOTHING_TO_CANCEL"
    """``cancel`` on a run that has already ended."""
    UNAVAILABLE = "UNAVAILABLE"
    """What would answer is not there: the Temporal server, or a worker polling the task queue."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class ToolError:
    """The one error shape: a stable ``code`` for programs and a ``message`` for people."""

    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """Returns ``{"code": ..., "message": ...}``."""
        return {"code": self.code, "message": self.message}


class ToolResult:
    """The uniform result of a tool call: ``success, data, message, error, meta``.

    ``error`` is ``None`` on success and a :class:`ToolError` otherwise. Build results with the
    factories::

        ToolResult.ok({"notes": []})
        ToolResult.failed(ErrorCode.NOT_FOUND, "Note 7 does not exist.")
        ToolResult.paginated(items, page=1, total_items=42, limit=10)
    """

    def __init__(
        self,
        success: bool,
        data: Any = None,
        message: str | None = None,
        error: ToolError | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.success = success
        self.data = data
        self.message = message
        self.error = error
        self.meta = meta if meta is not None else {}

    @staticmethod
    def ok(
        data: Any = None, message: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """A successful result."""
        return ToolResult(True, data, message, None, dict(meta or {}))

    @staticmethod
    def failed(
        code: str | ErrorCode,
        message: str,
        data: Any = None,
        meta: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """A failed result whose error is ``{code, message}``; ``meta.type`` is ``"error"``."""
        return ToolResult(
            False, data, None, ToolError(str(code), message), {**(meta or {}), "type": "error"}
        )

    @staticmethod
    def paginated(
        items: list[Any],
        page: int,
        total_items: int,
        limit: int,
        message: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """A page of a list, with ``meta.pagination`` computed from the totals."""
        total_pages = -(-total_items // limit) if limit > 0 else 0
        pagination = {
            "page": page,
            "total_pages": total_pages,
            "total_items": total_items,
            "limit": limit,
            "has_prev": page > 1,
            "has_next": page < total_pages,
        }
        return ToolResult(
            True, items, message, None, {**(meta or {}), "type": "list", "pagination": pagination}
        )

    @staticmethod
    def detail(
        item: Any, entity: str, message: str | None = None, actions: list[str] | None = None
    ) -> ToolResult:
        """One entity, with the actions a caller may take on it."""
        return ToolResult(
            True,
            item,
            message,
            None,
            {"type": "detail", "entity": entity, "actions": actions or []},
        )

    @staticmethod
    def confirmation(
        message: str,
        details: Mapping[str, Any] | None = None,
        action: str | None = None,
        target: str | None = None,
        target_id: str | None = None,
    ) -> ToolResult:
        """A request to confirm before anything runs (a success: nothing went wrong)."""
        return ToolResult(
            True,
            dict(details or {}),
            message,
            None,
            {
                "type": "confirmation",
                "requires_confirmation": True,
                "action": action,
                "target": target,
                "target_id": target_id,
            },
        )

    @staticmethod
    def blocked(reason: str, suggestion: str | None = None) -> ToolResult:
        """A call a rule or hook stopped; ``error.code`` is ``FORBIDDEN``."""
        return ToolResult(
            False,
            None,
            None,
            ToolError(ErrorCode.FORBIDDEN.value, reason),
            {"type": "blocked", "blocked_by_rule": True, "suggestion": suggestion},
        )

    @property
    def code(self) -> str | None:
        """The error code, or ``None`` on success."""
        error: ToolError | None = self.__dict__["error"]
        return error.code if error is not None else None

    @property
    def type(self) -> str:
        """``meta.type``, or ``"generic"``."""
        return str(self.meta.get("type", "generic"))

    @property
    def is_blocked(self) -> bool:
        """Whether a rule or hook blocked the call."""
        return self.meta.get("type") == "blocked"

    @property
    def confirm_token(self) -> str | None:
        """The token a confirmation request hands back, if this is one."""
        if isinstance(self.data, dict):
            token = self.data.get("confirm_token")
            return token if isinstance(token, str) else None
        return None

    def with_meta(self, **extra: Any) -> ToolResult:
        """A copy with ``extra`` merged into ``meta``."""
        return ToolResult(self.success, self.data, self.message, self.error, {**self.meta, **extra})

    def to_dict(self) -> dict[str, Any]:
        """The wire shape, as plain JSON data."""
        error: ToolError | None = self.__dict__["error"]
        return {
            "success": self.__dict__["success"],
            "data": to_jsonable(self.data),
            "message": self.message,
            "error": error.to_dict() if error is not None else None,
            "meta": to_jsonable(self.meta),
        }

    def to_compact_dict(self) -> dict[str, Any]:
        """The wire shape as a caller that reads only ``success``, ``data`` and ``error`` needs
        it: those three, each left out when it holds nothing (``message`` and ``meta`` never).
        :meth:`from_dict` reads it back with the rest empty."""
        compact: dict[str, Any] = {"success": self.__dict__["success"]}
        if self.data is not None:
            compact["data"] = to_jsonable(self.data)
        error: ToolError | None = self.__dict__["error"]
        if error is not None:
            compact["error"] = error.to_dict()
        return compact

    def to_json(self) -> str:
        """The wire shape as a JSON string."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @staticmethod
    def from_dict(value: Mapping[str, Any]) -> ToolResult:
        """Rebuilds a result from :meth:`to_dict` output (for example an activity's result)."""
        error = value.get("error")
        return ToolResult(
            bool(value.get("success")),
            value.get("data"),
            value.get("message"),
            ToolError(str(error["code"]), str(error["message"])) if error else None,
            dict(value.get("meta") or {}),
        )

    @staticmethod
    def asks_for_confirmation(payload: object) -> bool:
        """Whether a result (object, dict or JSON text) is a request for confirmation.

        Only ``meta.requires_confirmation`` or a top-level ``requires_confirmation`` count; a flag
        nested inside a plan does not, so a dry run is never mistaken for a pending write.
        """
        if isinstance(payload, ToolResult):
            return payload.meta.get("requires_confirmation") is True
        if isinstance(payload, str):
            try:
                payload = json.loads(payload)
            except ValueError:
                return False
        if not isinstance(payload, dict):
            return False
        meta = payload.get("meta")
        if isinstance(meta, dict) and meta.get("requires_confirmation") is True:
            return True
        return payload.get("requires_confirmation") is True

    def __repr__(self) -> str:
        return (
            f"ToolResult(success={self.success!r}, data={self.data!r}, "
            f"message={self.message!r}, error={self.error!r}, meta={self.meta!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolResult):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

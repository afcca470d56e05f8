"""Human verification as two tools: one opens a request, another person resolves it.

``request_verification`` can only open a request; ``resolve_verification`` can only answer one,
and the person answering is always the caller's own principal, never an argument. Because they
are two tools, a host can let anyone ask while only reviewers (``resolve_scopes``) answer.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Annotated, Literal

from lockgate._errors import RefusedError
from lockgate.tools._context import ToolContext
from lockgate.tools._registry import ToolRegistry
from lockgate.tools._tool import Param, tool
from lockgate.tools._tool_result import ErrorCode, ToolResult

__all__ = [
    "HumanVerifier",
    "VerificationError",
    "VerificationRequest",
    "register_verification",
]

VerificationStatus = Literal["pending", "passed", "rejected"]
Decision = Literal["grant", "reject"]


class VerificationError(RefusedError):
    """A resolution that was refused: ``code`` for programs, the message for people.

    Attributes:
        code: Why, as an :class:`ErrorCode` (``NOT_FOUND``, ``GATE_NOT_PENDING``,
            ``SELF_APPROVAL_FORBIDDEN`` or ``UNVERIFIED_APPROVER``).
        message: The sentence saying which check failed.
    """

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class VerificationRequest:
    """One request for someone to verify a subject, and how it was resolved.

    Attributes:
        request_id: The id to echo back when resolving.
        subject: What is to be verified (``gate:report.publish``).
        policy: The host's name for how it is to be verified (``single`` by default).
        requested_by: The principal who asked, or ``None`` for an anonymous caller.
        status: ``pending``, then ``passed`` or ``rejected``.
        resolved_by: The principal who resolved it.
        reason: Why, as the resolver put it.
    """

    request_id: str
    subject: str
    policy: str
    requested_by: str | None
    status: VerificationStatus = "pending"
    resolved_by: str | None = None
    reason: str | None = None


class HumanVerifier:
    """Keeps verification requests in this process's memory until someone resolves them.

    Safe to share between threads. A request is resolved once, by a principal other than the
    one who asked.

    Example::

        verifier = HumanVerifier()
        asked = verifier.request("gate:report.publish", requested_by="agent:worker")
        verifier.resolve(asked.request_id, "grant", principal="agent:reviewer")
    """

    def __init__(self) -> None:
        self._requests: dict[str, VerificationRequest] = {}
        self._lock = threading.Lock()

    def request(
        self, subject: str, policy: str = "single", requested_by: str | None = None
    ) -> VerificationRequest:
        """Opens a pending request and returns it, with a fresh ``request_id``."""
        opened = VerificationRequest(str(uuid.uuid4()), subject, policy, requested_by)
        with self._lock:
            self._requests[opened.request_id] = opened
        return opened

    def get(self, request_id: str) -> VerificationRequest | None:
        """The request with this id, pending or resolved, or ``None``."""
        with self._lock:
            return self._requests.get(request_id)

    def pending(self) -> list[VerificationRequest]:
        """The requests nobody has resolved yet, oldest first."""
        with self._lock:
            return [r for r in self._requests.values() if r.status == "pending"]

    def resolve(
        self,
        request_id: str,
        decision: Decision,
        principal: str | None,
        reason: str | None = None,
    ) -> VerificationRequest:
        """Grants or rejects a pending request as ``principal``.

        Args:
            request_id: The id :meth:`request` returned.
            decision: ``grant`` passes the request, ``reject`` rejects it.
            principal: Who resolves it; must be someone, and not who asked.
            reason: Why, kept with the request.

        Returns:
            The resolved request.

        Raises:
            VerificationError: Nobody resolves it anonymously (``UNVERIFIED_APPROVER``), the id
                is unknown (``NOT_FOUND``), it was already resolved (``GATE_NOT_PENDING``), or
                the resolver asked for it (``SELF_APPROVAL_FORBIDDEN``).
        """
        if not principal:
            raise VerificationError(
                ErrorCode.UNVERIFIED_APPROVER,
                f"Verification '{request_id}' can only be resolved by an authenticated "
                "principal, and none was provided.",
            )
        with self._lock:
            found = self._requests.get(request_id)
            if found is None:
                raise VerificationError(
                    ErrorCode.NOT_FOUND,
                    f"No verification request '{request_id}' exists; "
                    "request_verification returns the id to resolve.",
                )
            if found.status != "pending":
                raise VerificationError(
                    ErrorCode.GATE_NOT_PENDING,
                    f"Verification '{request_id}' is no longer pending: it was already "
                    f"{found.status} by {found.resolved_by}.",
                )
            if found.requested_by == principal:
                raise VerificationError(
                    ErrorCode.SELF_APPROVAL_FORBIDDEN,
                    f"Verification '{request_id}' was requested by {principal}, who cannot "
                    "resolve it: someone else must.",
                )
            resolved = replace(
                found,
                status="passed" if decision == "grant" else "rejected",
                resolved_by=principal,
                reason=reason,
            )
            self._requests[request_id] = resolved
        return resolved


def register_verification(
    registry: ToolRegistry,
    *,
    resolve_scopes: Iterable[str] = (),
    verifier: HumanVerifier | None = None,
) -> HumanVerifier:
    """Registers ``request_verification`` and ``resolve_verification`` on ``registry``.

    Both are mutating and take no confirmation token: opening a request and resolving it is
    already the two-step confirmation. (A channel that confirms every mutating tool, such as
    ``telegram``, still asks for a token.)

    Example::

        verifier = register_verification(registry, resolve_scopes=["verification:resolve"])
        asked = await registry.call("request_verification", {"subject": "gate:publish"}, worker)
        await registry.call(
            "resolve_verification",
            {"request_id": asked.data["request_id"], "decision": "grant"},
            reviewer,
        )

    Args:
        registry: Where to register the two tools.
        resolve_scopes: The scopes of ``resolve_verification`` only (alternatives); anyone who
            reaches the registry may open a request.
        verifier: Where requests are kept; a new :class:`HumanVerifier` when omitted.

    Returns:
        The verifier holding the requests (for :meth:`HumanVerifier.pending`).
    """
    keeper = verifier if verifier is not None else HumanVerifier()

    @tool(
        "request_verification",
        "Ask someone else to verify a subject; returns the request_id they resolve.",
        mutating=True,
        confirm=False,
    )
    def request_verification(
        subject: Annotated[str, Param("What is to be verified, e.g. gate:report.publish")],
        ctx: ToolContext,
        policy: Annotated[str, Param("How it is to be verified")] = "single",
    ) -> ToolResult:
        opened = keeper.request(subject, policy, ctx.principal)
        return ToolResult.ok(
            {
                "subject": opened.subject,
                "policy": opened.policy,
                "request_id": opened.request_id,
                "requested_by": opened.requested_by,
            },
            f"Verification '{opened.request_id}' of '{subject}' is pending; someone other than "
            "the requester resolves it with resolve_verification.",
        )

    @tool(
        "resolve_verification",
        "Grant or reject a pending verification request, as yourself.",
        scopes=resolve_scopes,
        mutating=True,
        confirm=False,
    )
    def resolve_verification(
        request_id: Annotated[str, Param("The id request_verification returned")],
        decision: Annotated[Decision, Param("grant passes it, reject rejects it")],
        ctx: ToolContext,
        reason: Annotated[str | None, Param("Why")] = None,
    ) -> ToolResult:
        try:
            resolved = keeper.resolve(request_id, decision, ctx.principal, reason)
        except VerificationError as refused:
            return ToolResult.failed(refused.code, refused.message)
        return ToolResult.ok(
            {
                "request_id": resolved.request_id,
                "status": resolved.status,
                "principal": resolved.resolved_by,
                "reason": resolved.reason,
            },
            f"Verification '{resolved.request_id}' {resolved.status}, resolved by "
            f"{resolved.resolved_by}.",
        )

    registry.register(request_verification, resolve_verification)
    return keeper

"""Who is calling, through which channel, holding what: the context every call is judged in."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

__all__ = ["Mode", "ToolContext", "local_shell_context", "new_request_id"]

Mode = Literal["execute", "plan"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_EVERYTHING = frozenset({"*"})


_PROCESS_PREFIX = os.urandom(8).hex()
_sequence = itertools.count()


def new_request_id() -> str:
    """A random per-process prefix and a counter (``"3f2a9c01d4e5b6a7-42"``).

    Request ids correlate records; they are not secrets, so a counter is enough within a process
    and the random prefix keeps processes apart.
    """
    return f"{_PROCESS_PREFIX}-{next(_sequence)}"


class _ToolContextFields(NamedTuple):
    principal: str | None
    channel: str
    scopes: frozenset[str]
    request_id: str
    mode: Mode
    extra: Mapping[str, Any]


class ToolContext(_ToolContextFields):
    """The caller of one tool call (immutable).

    Hosts build one per call with the constructor for their channel (:meth:`cli`, :meth:`mcp`,
    :meth:`web`, ...). On Temporal, lockgate builds it on the worker: the principal and channel
    come from a verified proof and the scopes from the worker's Directory, never from the caller.

    Attributes:
        principal: Who is calling, or ``None`` when nobody was authenticated.
        channel: The surface the call came through (``cli``, ``mcp``, ``web``, ...).
        scopes: What the caller holds; ``"*"`` holds everything. Scopes are exact names: there
            are no prefix wildcards (``posts:*`` does not grant ``posts:read``).
        request_id: Correlates the call in results and audit records.
        mode: ``"execute"``, or ``"plan"`` to check everything and run nothing.
        extra: Host data (consent grants, the signer, an idempotency key, ...).
    """

    # A tuple underneath: building one costs a fraction of a frozen dataclass, and every
    # in-process call without a context builds one.
    __slots__ = ()

    def __new__(
        cls,
        principal: str | None = None,
        channel: str = "unknown",
        scopes: Iterable[str] = frozenset(),
        request_id: str | None = None,
        mode: Mode = "execute",
        extra: Mapping[str, Any] | None = None,
    ) -> ToolContext:
        if mode not in ("execute", "plan"):
            raise ValueError(f"mode must be 'execute' or 'plan', not {mode!r}")
        if isinstance(scopes, str):
            raise TypeError(f"scopes must be a collection of names, not the string {scopes!r}")
        return tuple.__new__(
            cls,
            (
                principal,
                channel,
                scopes if isinstance(scopes, frozenset) else frozenset(scopes),
                request_id or new_request_id(),
                mode,
                _EMPTY if not extra else MappingProxyType(dict(extra)),
            ),
        )

    @classmethod
    def cli(cls, request_id: str | None = None, mode: Mode = "execute") -> ToolContext:
        """A local shell: principal ``local-shell``, holding everything."""
        return cls("local-shell", "cli", _EVERYTHING, request_id, mode)

    @classmethod
    def tui(cls, request_id: str | None = None, mode: Mode = "execute") -> ToolContext:
        """A local terminal UI: principal ``local-shell``, holding everything."""
        return cls("local-shell", "tui", _EVERYTHING, request_id, mode)

    @classmethod
    def stdio(cls, request_id: str) -> ToolContext:
        """A trusted local stdio MCP server: the process boundary is the trust boundary.

        Principal ``stdio`` on the ``mcp`` channel, holding everything.
        """
        return cls("stdio", "mcp", _EVERYTHING, request_id)

    @classmethod
    def mcp(
        cls,
        request_id: str,
        principal: str | None = None,
        scopes: Iterable[str] = (),
        mode: Mode = "execute",
    ) -> ToolContext:
        """An MCP caller; without a principal it is ``mcp``, and an empty one stays empty."""
        return cls(
            "mcp" if principal is None else principal, "mcp", frozenset(scopes), request_id, mode
        )

    @classmethod
    def web(cls, principal: str, scopes: Iterable[str]) -> ToolContext:
        """A web session: exactly the scopes given, never a wildcard."""
        return cls(principal, "web", frozenset(scope for scope in scopes if scope != "*"))

    @classmethod
    def telegram(
        cls, chat_id: str, user_id: str | None = None, mode: Mode = "execute"
    ) -> ToolContext:
        """A Telegram chat: principal is the user, else ``chat:<chat_id>``."""
        return cls(
            user_id if user_id is not None else f"chat:{chat_id}",
            "telegram",
            frozenset({"read", "write"}),
            None,
            mode,
            {"chat_id": chat_id},
        )

    @property
    def is_plan(self) -> bool:
        """Whether this call only plans."""
        return self.mode == "plan"

    def as_plan(self) -> ToolContext:
        """The same caller, in plan mode: checks run, nothing executes."""
        return self._replace(mode="plan")

    def with_extra(self, **extra: Any) -> ToolContext:
        """The same caller with ``extra`` merged in."""
        return self._replace(extra=MappingProxyType({**self.extra, **extra}))

    def has_scope(self, scope: str) -> bool:
        """Whether the caller holds ``scope`` exactly, or ``*``."""
        return "*" in self.scopes or scope in self.scopes

    def has_any_scope(self, scopes: Iterable[str]) -> bool:
        """Whether the caller holds at least one of ``scopes`` (scopes are alternatives)."""
        return "*" in self.scopes or not self.scopes.isdisjoint(scopes)

    def has_all_scopes(self, scopes: Iterable[str]) -> bool:
        """Whether the caller holds every one of ``scopes``."""
        return "*" in self.scopes or self.scopes.issuperset(scopes)

    def to_dict(self) -> dict[str, Any]:
        """The context as plain data (scopes sorted)."""
        return {
            "principal": self.principal,
            "channel": self.channel,
            "scopes": sorted(self.scopes),
            "request_id": self.request_id,
            "mode": self.mode,
        }


_new_tuple = tuple.__new__


def local_shell_context() -> ToolContext:
    """:meth:`ToolContext.cli` with a fresh request id, built as cheaply as Python allows.

    Every in-process call made without a context gets one, so this skips the argument checks
    that the public constructor does.
    """
    request_id = f"{_PROCESS_PREFIX}-{next(_sequence)}"
    return _new_tuple(
        ToolContext, ("local-shell", "cli", _EVERYTHING, request_id, "execute", _EMPTY)
    )

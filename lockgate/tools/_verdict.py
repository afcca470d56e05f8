"""The one shape of a verdict: lockgate's yes or no to one request, and why not.

Every check that lets a request through or refuses it answers in this shape: a tool call's
authorization (:class:`~lockgate.tools._authorization.PolicyDecision`), its spend from a rate budget
(:class:`~lockgate.tools._ratelimit.RateDecision`), a confirmation token presented
(:class:`~lockgate.tools._confirm.TokenCheck`), a start, call, answer, resume or cancel judged
(:class:`~lockgate.gates._judgements.Judgement`), and an option a viewer could take
(:class:`~lockgate.gates._judgements.ViewerChoice`). ``tests/tools/test_verdicts.py`` holds each
to it, under mypy and at run time.

It lives in the lowest layer that has a verdict, so every layer that has one may import it.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Verdict"]


class Verdict(Protocol):
    """A yes or no to one request: ``allowed``, or a ``reason`` and (where it has one) a
    ``code``.

    Read-only, so a frozen dataclass's fields and a property computed from them both conform.
    """

    @property
    def allowed(self) -> bool:
        """Whether the request may go on."""
        ...

    @property
    def reason(self) -> str | None:
        """Why not, as a sentence a person reads; None when allowed."""
        ...

    @property
    def code(self) -> str | None:
        """What the verdict is, as a key a program matches on (``scopes``, ``expired``,
        ``FORBIDDEN``); None where the check names none."""
        ...

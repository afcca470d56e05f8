"""Authority: what a proven actor holds, looked up when judged, and why a node may not run.

Who a caller is comes from a verified proof (:mod:`lockgate.identity._verifier`); what they hold
comes from the worker's :class:`Directory`, here, each time they are judged. This module owns the
:class:`Authority` and the sentences of a node that may not run; the gate records live in
:mod:`lockgate.gates._gates` and the judgements of answers, resumes and viewers in
:mod:`lockgate.gates._judgements`. Nothing here writes what anyone holds anywhere.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from typing import Any

from lockgate.identity._actors import Actor
from lockgate.identity._directory import Directory
from lockgate.identity._issuers import ISSUER_PREFIX, Holdings, IssuerKeyring
from lockgate.identity._passkeys import RelyingParty
from lockgate.identity._seals import WorkerSecret, WorkerSecretError
from lockgate.identity._verifier import Verifier
from lockgate.tools._audit import AuditLogger
from lockgate.tools._authorization import PRIVATE_HOLDINGS
from lockgate.tools._context import ToolContext

_HELD_PROOFS = 4096
"""How many judged proofs of people from issuers a worker remembers the holdings of."""

_CLOCK_SKEW = 60.0
"""Seconds another worker's clock may run ahead of this one's."""

__all__ = [
    "Authority",
    "answer_refusal_sentence",
    "needed_phrase",
    "node_refusal_sentence",
    "why_node_refuses",
]


class Authority:
    """The worker's judge of callers: its Directory, its proof verifier, its secret.

    Args:
        directory: Principals, their public keys, roles and scopes.
        secret: The deployment's worker secret, which seals what workers hand each other (None
            where nothing is sealed, as in a client judging ``pending`` viewers).
        window_seconds: How long a proof is good after it was signed.
        audit: Where judgements are recorded.
        clock: Unix seconds; real time, because judgements are made live, never replayed.
        relying_party: The web inbox's site and origins, for answers signed with a passkey.
        issuer_keys: The trusted issuers' signing keys, which the worker fetches and refreshes,
            for answers signed with an ID token.
    """

    def __init__(
        self,
        directory: Directory,
        *,
        secret: WorkerSecret | None = None,
        window_seconds: float = 300,
        audit: AuditLogger | None = None,
        clock: Callable[[], float] = time.time,
        relying_party: RelyingParty | None = None,
        issuer_keys: IssuerKeyring | None = None,
    ) -> None:
        self.directory = directory
        self._clock = clock
        self._held: OrderedDict[str, tuple[Holdings, float]] = OrderedDict()
        self._held_lock = threading.Lock()
        self.secret = secret
        self.window_seconds = window_seconds
        self.audit = audit or AuditLogger()
        self.verifier = Verifier(
            directory,
            window_seconds=window_seconds,
            clock=clock,
            relying_party=relying_party,
            issuer_keys=issuer_keys,
        )

    def now(self) -> float:
        """This judge's clock, in unix seconds (real time: judgements are made live)."""
        return self._clock()

    @property
    def sealer(self) -> WorkerSecret:
        """The worker secret; a worker without one cannot vouch for anything it hands over."""
        if self.secret is None:
            raise WorkerSecretError(
                "This worker has no worker secret, so it can neither seal nor open what lockgate "
                "hands over between workers: give LockgatePlugin a secret."
            )
        return self.secret

    def scopes_of(self, actor: Actor) -> frozenset[str]:
        """What ``actor`` holds now: nothing unless verified and listed in the Directory."""
        return self._holdings(actor).scopes

    def roles_of(self, actor: Actor) -> frozenset[str]:
        """The roles ``actor`` holds now: none unless verified."""
        return self._holdings(actor).roles

    def _holdings(self, actor: Actor) -> Holdings:
        """What ``actor`` holds now: nothing unless verified; a person from a trusted issuer
        what their token grants (:meth:`_held_by`); anyone else what the Directory lists."""
        if not actor.verified:
            return Holdings()
        held = self._held_by(actor)
        if held is not None:
            return held
        return Holdings(
            roles=frozenset(self.directory.roles_of(actor.principal)),
            scopes=frozenset(self.directory.scopes_of(actor.principal)),
        )

    def _held_by(self, actor: Actor) -> Holdings | None:
        """What a person from a trusted issuer holds for this call, or None for anyone else.

        At a judgement, what their ID token's groups grant (``actor.held``). The node an answer
        leads to is judged again when it runs, as the actor the run hands over, which carries no
        token: it holds what its proof held when it was judged, for as long as the proof is
        fresh (``window_seconds``), and nothing after that (the node then parks, failing
        closed). This worker keeps that in memory under the proof's nonce; a node that runs on
        another worker of the deployment is handed it sealed (:meth:`handover_of`,
        :meth:`take_handover`). The person's groups are never kept: their next proof is judged
        by its own token.
        """
        if actor.held is not None:
            if actor.authorization is not None:
                self._remember(actor.authorization, actor.held, self._clock())
            return actor.held
        if actor.principal is None or not actor.principal.startswith(ISSUER_PREFIX):
            return None
        with self._held_lock:
            found = self._held.get(actor.authorization or "")
        if found is None or self._clock() - found[1] > self.window_seconds:
            return Holdings()
        return found[0]

    def handover_of(self, actor: Actor) -> dict[str, Any] | None:
        """What a person from a trusted issuer was judged to hold for ``actor``'s proof, as
        JSON data to hand the worker that runs the call it authorized (sealed and encrypted
        under the worker secret: never readable in history); None for anyone else, or once the
        proof is no longer fresh or was not judged here."""
        if actor.principal is None or not actor.principal.startswith(ISSUER_PREFIX):
            return None
        with self._held_lock:
            found = self._held.get(actor.authorization or "")
        if found is None or self._clock() - found[1] > self.window_seconds:
            return None
        held, judged_at = found
        return {
            "authorization": actor.authorization,
            "judged_at": judged_at,
            "roles": sorted(held.roles),
            "scopes": sorted(held.scopes),
            "authenticated_at": held.authenticated_at,
            "methods": sorted(held.methods),
        }

    def take_handover(self, actor: Actor, handed: object) -> None:
        """Keeps what another worker judged ``actor``'s proof to hold (:meth:`handover_of`, as
        the seal of the call that carries it opened it), for as long as that proof is fresh;
        anything that names another proof, or that proof no longer fresh, is ignored."""
        if (
            actor.principal is None
            or not actor.principal.startswith(ISSUER_PREFIX)
            or not isinstance(handed, dict)
            or handed.get("authorization") != actor.authorization
        ):
            return
        judged_at = handed.get("judged_at")
        if not isinstance(judged_at, (int, float)) or not (
            -_CLOCK_SKEW <= self._clock() - judged_at <= self.window_seconds
        ):
            return
        try:
            held = Holdings(
                roles=frozenset(str(role) for role in handed["roles"]),
                scopes=frozenset(str(scope) for scope in handed["scopes"]),
                authenticated_at=handed.get("authenticated_at"),
                methods=frozenset(str(method) for method in handed["methods"]),
            )
        except (KeyError, TypeError):
            return
        self._remember(str(actor.authorization), held, float(judged_at))

    def _remember(self, authorization: str, held: Holdings, judged_at: float) -> None:
        with self._held_lock:
            self._held[authorization] = (held, judged_at)
            while len(self._held) > _HELD_PROOFS:
                self._held.popitem(last=False)

    def context_for(
        self, actor: Actor, *, request_id: str | None = None, **extra: Any
    ) -> ToolContext:
        """The tool context of ``actor``: principal and channel from the proof, scopes from here.

        A verified actor's signature counts as consent on channels that take consent as a
        signature (its proof names the call it authorizes). Refusals made in this context never
        list what the actor holds: on Temporal they are written to history, which others read.
        """
        marks: dict[str, Any] = {
            "actor": actor.actor,
            "verified": actor.verified,
            PRIVATE_HOLDINGS: True,
            **extra,
        }
        if actor.verified:
            marks["signer"] = actor.principal
        # An unverified caller is named by its channel (``unverified:temporal``), so records and
        # rate budgets tell callers apart. The name is never an authentication: a channel that
        # requires a principal refuses it (over Temporal a caller picks its channel, so an
        # unregistered one must stay closed), and elsewhere it is served what needs no scope.
        principal = actor.principal if actor.verified else actor.actor
        return ToolContext(
            principal, actor.channel, self.scopes_of(actor), request_id, "execute", marks
        )


# --- Nodes ---------------------------------------------------------------------------------------


def needed_phrase(needs: Collection[str]) -> str:
    """``"the scope a"`` or ``"one of the scopes a, b"``."""
    ordered = sorted(needs)
    if len(ordered) == 1:
        return f"the scope {ordered[0]}"
    return f"one of the scopes {', '.join(ordered)}"


def why_node_refuses(actor: Actor, holds: Collection[str], needs: Collection[str]) -> str | None:
    """Why ``actor`` may not run a node needing ``needs`` (scopes are alternatives), or None.

    A node that needs nothing runs for anyone; ``*`` holds everything.
    """
    if not needs:
        return None
    if actor.principal is None:
        return (
            f"it needs {needed_phrase(needs)}, and this call names nobody its authority could be "
            f"judged for ({actor.actor} is not a verified caller)"
        )
    if "*" in holds or not set(needs).isdisjoint(holds):
        return None
    if len(needs) == 1:
        return f"it needs {needed_phrase(needs)}, which {actor.actor} does not hold"
    return f"it needs {needed_phrase(needs)}, and {actor.actor} holds none of them"


def node_refusal_sentence(node: str, operation: str, why: str) -> str:
    """The sentence of a node that did not run."""
    return (
        f"The node '{node}' ({operation}) did not run: {why}. The run is parked there and "
        "nothing after it ran."
    )


def answer_refusal_sentence(answer: str, node: str, operation: str, why: str) -> str:
    """The sentence of an answer refused because of the first node it leads to."""
    return (
        f"The answer '{answer}' was not recorded: it leads to the node '{node}' ({operation}), "
        f"and {why}. The gate is still waiting."
    )

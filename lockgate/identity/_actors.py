"""Actors: who a call is verified to come from, never what they hold.

A verified actor is the principal a checked proof names, with that proof's nonce; a caller
without a proof is ``unverified:<channel>``. Scopes and roles stay in the Directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._issuers import Holdings
from lockgate.identity._names import UNVERIFIED_PREFIX
from lockgate.identity._proofs import Proof

__all__ = ["Actor"]


@dataclass(frozen=True)
class Actor:
    """Who a call is verified to come from.

    Never what they hold: scopes and roles stay in the Directory and are looked up when judged.

    Attributes:
        actor: The principal's name if verified, else ``"unverified:<channel>"``.
        verified: Whether a proof was checked.
        channel: Where the call came from.
        principal: The verified principal, or None.
        authorization: The nonce of the proof that authorized the call, or None.
        held: For a person from a trusted issuer, what their ID token's groups grant, read when
            this call's token was checked. Never written (not in :meth:`to_dict`): an actor read
            back from history holds only what the Directory lists for it.
    """

    actor: str
    verified: bool
    channel: str
    principal: str | None
    authorization: str | None
    held: Holdings | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.verified:
            consistent = (
                isinstance(self.principal, str)
                and self.actor == self.principal
                and isinstance(self.authorization, str)
            )
        else:
            consistent = (
                self.actor == UNVERIFIED_PREFIX + self.channel
                and self.principal is None
                and self.authorization is None
            )
        if not consistent:
            # A verified flag that disagrees with the other fields would let an unverified caller
            # pass for someone, so such an Actor cannot exist.
            raise IdentityError(
                f"Inconsistent actor {self.to_dict()!r}: a verified actor is its principal and "
                "carries its proof's nonce; an unverified one is 'unverified:<channel>' with "
                "neither."
            )

    @classmethod
    def unverified(cls, channel: str) -> Actor:
        """Returns the actor for a caller that sent no proof over ``channel``."""
        return cls(UNVERIFIED_PREFIX + channel, False, channel, None, None)

    @classmethod
    def of_proof(cls, proof: Proof) -> Actor:
        """Returns the actor a checked proof verifies. Does not check the proof."""
        return cls(proof.principal, True, proof.channel, proof.principal, proof.nonce, proof.held)

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> Actor:
        """Reads an actor written by :meth:`to_dict`.

        Raises:
            IdentityError: ``value`` does not have exactly the five actor fields with their types,
                or they are inconsistent.
        """
        fields = ("actor", "verified", "channel", "principal", "authorization")
        if not isinstance(value, Mapping) or set(value) != set(fields):
            raise IdentityError(
                f"An actor is an object with exactly the fields {', '.join(fields)}."
            )
        actor, verified, channel = value["actor"], value["verified"], value["channel"]
        principal, authorization = value["principal"], value["authorization"]
        if not (
            isinstance(actor, str)
            and isinstance(verified, bool)
            and isinstance(channel, str)
            and (principal is None or isinstance(principal, str))
            and (authorization is None or isinstance(authorization, str))
        ):
            raise IdentityError(
                "An actor's actor and channel are strings, verified is a boolean, and principal "
                "and authorization are strings or null."
            )
        return cls(actor, verified, channel, principal, authorization)

    def to_dict(self) -> dict[str, Any]:
        """Returns the five fields as a JSON object, as the trail records it."""
        return {
            "actor": self.actor,
            "verified": self.verified,
            "channel": self.channel,
            "principal": self.principal,
            "authorization": self.authorization,
        }

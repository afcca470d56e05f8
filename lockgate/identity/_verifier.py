"""The Verifier: whether a proof authorizes a call, and if so who the call comes from.

A *proof* is a small signed JSON object that says who authorizes exactly which act. A
:class:`~lockgate.Signer` makes one with a principal's Ed25519 private key; a
:class:`Verifier` checks it against the public key a :class:`~lockgate.Directory` lists for
that principal, the act the call is about (which names the execution it acts on), and the
proof's age. The result is an :class:`~lockgate.identity._actors.Actor`: who the call is
verified to come from, never what they hold.
Scopes and roles are looked up in the Directory each time they are judged.

Like the rest of lockgate.identity this is pure: it imports no temporalio, reads no clock and
touches no file at import time, so it also runs inside the Temporal workflow sandbox.

Example:
    >>> key = generate_private_key()
    >>> directory = Directory(entries=[DirectoryEntry("ed", public_key_text(key))])
    >>> proof = Signer("ed", key).sign({"kind": "resume", "run": "essay:review-1"})
    >>> Verifier(directory).verify(proof, {"kind": "resume", "run": "essay:review-1"}).actor
    'ed'
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from lockgate.identity._actors import Actor
from lockgate.identity._canonical import canonical_json, to_jsonable
from lockgate.identity._directory import Directory
from lockgate.identity._identity_errors import IdentityError, ProofRefused
from lockgate.identity._issuers import (
    ISSUER_PREFIX,
    IssuerKeyring,
    issuer_principal,
    token_nonce,
    verify_id_token,
)
from lockgate.identity._keys import load_cryptography
from lockgate.identity._passkeys import RelyingParty, passkey_challenge, verify_passkey_assertion
from lockgate.identity._proofs import Proof, decode_signature
from lockgate.identity._quoting import quoted

__all__ = ["Verifier", "utc_moment"]


class Verifier:
    """Checks proofs against a Directory and turns them into Actors.

    A verifier checks shape, signer, signature, binding and age. Every act a proof authorizes
    names one execution, so whether it was already used there is that run's own history to
    say: a run takes one start proof, and spends each answer's nonce in its state.

    Example:
        >>> verifier = Verifier(directory)  # doctest: +SKIP
        >>> actor = verifier.verify(proof, {"kind": "resume", "run": run_id})  # doctest: +SKIP
    """

    def __init__(
        self,
        directory: Directory,
        window_seconds: float = 300,
        future_skew_seconds: float = 60,
        clock: Callable[[], float] = time.time,
        relying_party: RelyingParty | None = None,
        issuer_keys: IssuerKeyring | None = None,
    ) -> None:
        """Makes a verifier.

        Args:
            directory: Where principals' public keys (and passkeys) are looked up.
            window_seconds: How long after it was issued a proof is good.
            future_skew_seconds: How far ahead of this clock a signer's clock may be.
            clock: Returns unix seconds.
            relying_party: The inbox's site and origins, for proofs signed with a passkey;
                without one, such proofs are refused.
            issuer_keys: The trusted issuers' keys, for proofs signed with an ID token (the
                issuers themselves are the Directory's); without it, only pinned JWKS verify.

        Raises:
            ValueError: A window or skew is negative or not finite.
        """
        for label, seconds in (
            ("window_seconds", window_seconds),
            ("future_skew_seconds", future_skew_seconds),
        ):
            if not (math.isfinite(seconds) and seconds >= 0):
                raise ValueError(f"{label} must be a finite number of seconds, at least 0.")
        self.directory = directory
        self.window_seconds = window_seconds
        self.future_skew_seconds = future_skew_seconds
        self.relying_party = relying_party
        self.issuer_keys = issuer_keys if issuer_keys is not None else IssuerKeyring(clock)
        self._clock = clock

    def verify(self, value: object, expected: Mapping[str, Any]) -> Actor:
        """Checks that ``value`` is a good proof for the act ``expected`` describes.

        Checks run in this order, the first failure refusing: shape, principal listed, public key
        listed, signature, binding, freshness.

        Args:
            value: The proof as received; anything.
            expected: The fields the proof must authorize with exactly these values, for example
                ``{"kind": "decide", "run": run_id, "gate": gate, "choice": choice}``.

        Returns:
            The verified actor.

        Raises:
            ProofRefused: The proof does not authorize this call; nothing else is raised because
                of ``value``.
            TypeError: ``expected`` is not JSON data (a bug in the caller).
            ValueError: ``expected`` holds a NaN or infinity (a bug in the caller).
        """
        return Actor.of_proof(self.verify_proof(value, expected))

    def verify_proof(self, value: object, expected: Mapping[str, Any]) -> Proof:
        """Like :meth:`verify`, but returns the checked :class:`Proof` (its nonce and age)."""
        expected_json = {key: canonical_json(item) for key, item in expected.items()}
        proof = self._check_signed(Proof.parse(value))
        self._check_binding(proof, expected, expected_json)
        self._check_freshness(proof)
        return proof

    def verify_grant(self, value: object, expected: Mapping[str, Any]) -> Proof:
        """Like :meth:`verify_proof`, for a proof that lasts: a schedule grant, good for the
        window its binding names rather than for :attr:`window_seconds` after it was issued.

        Its shape, signer, signature and binding are checked as any proof's; its age is not (the
        caller checks the window it signed); one issued ahead of this clock is refused.
        """
        expected_json = {key: canonical_json(item) for key, item in expected.items()}
        proof = self._check_signed(Proof.parse(value))
        self._check_binding(proof, expected, expected_json)
        self._check_not_ahead(proof)
        return proof

    def _check_signed(self, proof: Proof) -> Proof:
        """The proof, once whoever it names signed it: by ID token, passkey or key."""
        if proof.id_token is not None:
            return self._check_id_token(proof)
        entry = self.directory.entry(proof.principal)
        if entry is None:
            raise ProofRefused(
                "unknown_principal",
                f"The directory lists no principal {quoted(proof.principal)}: add it to the "
                "directory file, or sign as a principal it lists.",
            )
        if proof.passkey is not None:
            verify_passkey_assertion(
                proof.passkey,
                passkey_challenge(proof.unsigned_dict()),
                proof.principal,
                entry.passkeys,
                self.relying_party,
            )
            return proof
        public_key = self.directory.public_key_of(proof.principal)
        if public_key is None:
            raise ProofRefused(
                "no_public_key",
                f"The directory lists {quoted(proof.principal)} without a public_key, so no proof "
                "from it can be checked: add the public_key that `lockgate keys new` printed.",
            )
        try:
            public_key.verify(decode_signature(proof.signature), proof.signed_bytes())
        except load_cryptography().InvalidSignature:
            raise ProofRefused(
                "forged",
                "The proof's signature does not match: it was not signed by "
                f"{proof.principal}, or it was altered after signing.",
            ) from None
        return proof

    def _check_id_token(self, proof: Proof) -> Proof:
        """The proof with what its person holds, once its ID token checks out: from the issuer
        its principal names, signing this proof's digest, naming that person."""
        assert proof.id_token is not None
        name, _, person = proof.principal.removeprefix(ISSUER_PREFIX).partition(":")
        issuer = self.directory.issuer(name) if proof.principal.startswith(ISSUER_PREFIX) else None
        if issuer is None or not person:
            raise ProofRefused(
                "unknown_issuer",
                f"The proof is signed with an ID token as {quoted(proof.principal)}, and the "
                "directory trusts no issuer of that name: a person from an identity provider is "
                "'sso:ISSUER:NAME', for an issuer the directory lists under [issuers.ISSUER].",
            )
        claims = verify_id_token(
            proof.id_token,
            issuer,
            self.issuer_keys,
            nonce=token_nonce(passkey_challenge(proof.unsigned_dict())),
            now=self._clock(),
            skew_seconds=self.future_skew_seconds,
        )
        value = claims.get(issuer.principal_claim)
        try:
            named = issuer_principal(issuer.name, value) if isinstance(value, str) else None
        except IdentityError:
            named = None
        if named != proof.principal:
            raise ProofRefused(
                "forged",
                f"The ID token names {quoted(value)} by its {issuer.principal_claim!r} claim, "
                f"so it signs as {quoted(named)}, not as {quoted(proof.principal)}.",
            )
        return dataclasses.replace(proof, held=issuer.holdings(claims))

    def check(self, value: object, expected: Mapping[str, Any]) -> Actor | ProofRefused:
        """Like :meth:`verify`, but returns the refusal instead of raising it."""
        try:
            return self.verify(value, expected)
        except ProofRefused as refusal:
            return refusal

    def _check_binding(
        self,
        proof: Proof,
        expected: Mapping[str, Any],
        expected_json: Mapping[str, bytes],
    ) -> None:
        # The kind is checked first so that a proof for another sort of act is reported as such,
        # not as a mismatch in some field that act happens to share.
        ordered = sorted(expected, key=lambda key: key != "kind")
        for key in ordered:
            authorized = proof.authorizes.get(key)
            if key in proof.authorizes and canonical_json(authorized) == expected_json[key]:
                continue
            wanted = to_jsonable(expected[key])
            if key == "kind":
                sentence = (
                    f"The proof authorizes a {quoted(proof.authorizes['kind'])}, but this call is "
                    f"a {quoted(wanted)}"
                )
            elif key not in proof.authorizes:
                sentence = (
                    f"The proof authorizes no {key}, but this call is on {key} {quoted(wanted)}"
                )
            else:
                sentence = (
                    f"The proof authorizes {key} {quoted(proof.authorizes[key])}, but this call is "
                    f"on {key} {quoted(wanted)}"
                )
            raise ProofRefused(
                "wrong_binding", sentence + ": a proof is good only for the exact act it names."
            )

    def _check_freshness(self, proof: Proof) -> None:
        now = self._clock()
        expires_at = proof.issued_at + self.window_seconds
        if now > expires_at:
            raise ProofRefused(
                "expired",
                f"The proof was issued at {utc_moment(proof.issued_at)} and expired at "
                f"{utc_moment(expires_at)} (a proof is good for {self.window_seconds:g} "
                "seconds): sign a fresh one.",
            )
        self._check_not_ahead(proof)

    def _check_not_ahead(self, proof: Proof) -> None:
        now = self._clock()
        if proof.issued_at > now + self.future_skew_seconds:
            raise ProofRefused(
                "not_yet_valid",
                f"The proof says it was issued at {utc_moment(proof.issued_at)}, but it is "
                f"only {utc_moment(now)} here, more than the {self.future_skew_seconds:g} "
                "seconds of clock skew allowed: check the signer's clock.",
            )


def utc_moment(unix_seconds: float) -> str:
    """``unix_seconds`` as a UTC moment a person reads (``2026-12-04T21:30:00Z``), or as
    seconds where no calendar holds it."""
    try:
        moment = datetime.datetime.fromtimestamp(unix_seconds, tz=datetime.timezone.utc)
    except (OverflowError, ValueError, OSError):
        return f"{unix_seconds:g} unix seconds"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

"""The errors of identities and proofs, and why a proof is refused.

The two errors, and what each means::

    ValueError
    └── IdentityError   a key, principal name, key file or Directory file is unusable:
                        fix it where the key or the file is kept
    Exception
    └── ProofRefused    a proof does not authorize the call it came with (code
                        ``UNAUTHORIZED``; ``reason`` is a RefusalReason): the caller reads
                        its sentence
"""

from __future__ import annotations

from typing import Literal

from lockgate._errors import ConfigurationError, RefusedError

__all__ = ["IdentityError", "ProofRefused", "RefusalReason"]

RefusalReason = Literal[
    "malformed",
    "unknown_principal",
    "no_public_key",
    "forged",
    "wrong_binding",
    "expired",
    "not_yet_valid",
    "replayed",
    "unknown_issuer",
]
"""Why a proof was refused; the ``reason`` of a :class:`ProofRefused`."""


class IdentityError(ConfigurationError):
    """A key, principal name, key file or Directory file is unusable.

    The message is a sentence that says what is wrong and, where there is one, what to do.
    """


class ProofRefused(RefusedError):
    """A proof does not authorize the call it came with.

    Attributes:
        code: Always ``"UNAUTHORIZED"``, the error code callers report.
        reason: Which check refused the proof (see :data:`RefusalReason`).
        sentence: What is wrong, in a sentence a person can act on; also ``str(error)``.
    """

    code = "UNAUTHORIZED"

    def __init__(self, reason: RefusalReason, sentence: str) -> None:
        """Makes a refusal.

        Args:
            reason: Which check refused the proof.
            sentence: What is wrong, for the person who sent the proof.
        """
        super().__init__(sentence)
        self.reason: RefusalReason = reason
        self.sentence = sentence

    def __str__(self) -> str:
        return self.sentence

    def __reduce__(self) -> tuple[type[ProofRefused], tuple[RefusalReason, str]]:
        # The default reduction would call __init__ with the sentence alone.
        return (type(self), (self.reason, self.sentence))

"""What the adapters share about a framework's tool approval answered by a lockgate gate."""

from __future__ import annotations

import enum

__all__ = ["APPROVE", "MAX_SUBJECT_BYTES", "Approval"]

APPROVE = "approve"
"""The option value that approves a call; every other option of the gate rejects it."""

MAX_SUBJECT_BYTES = 16 * 1024
"""The most a tool call asking approval may carry (its arguments, as JSON) to be shown to an
approver. The model writes those arguments, and a prompt can steer the model: a larger call is
rejected without a gate instead of being written into the run's memo for ``pending``."""


class Approval(str, enum.Enum):
    """The options of a gate that answers a framework's tool approval: the call runs, or not.

    A gate may offer an enum of its own instead; its case whose value is ``"approve"`` approves
    the call, and every other case rejects it.

    Example::

        gates = {issue_refund: Ask(Approval, of="support-lead", because="Refunds need a lead.")}
    """

    APPROVE = APPROVE
    REJECT = "reject"

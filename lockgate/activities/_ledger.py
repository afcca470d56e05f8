"""A nonce ledger every worker of a deployment shares: Temporal itself.

A proof is spent by starting a tiny workflow whose id is the proof's nonce
(``lockgate-proof-<nonce>``), with the reuse policy that refuses a second execution under that
id for as long as the namespace retains the first (a day or more, longer than any proof lives).
The server's one-execution-per-id rule is the lock: of two workers spending one proof, exactly
one starts the record. The record's memo names the use that spent it, sealed with the worker
secret, so a retry of that use is recognised and a record someone else wrote (after terminating
ours, or before we got there) is never taken for ours: when in doubt the ledger refuses.

Records run ``lockgate.spent_proof``, which the plugin serves and which completes at once.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from lockgate.gating import WorkerSecret

__all__ = ["SPENT_PROOF_WORKFLOW", "TemporalNonceLedger", "spent_proof_id"]

SPENT_PROOF_WORKFLOW = "lockgate.spent_proof"
"""The workflow type of a spent-proof record."""


def spent_proof_id(nonce: str) -> str:
    """The workflow id of the record of a spent proof."""
    return f"lockgate-proof-{nonce}"


class TemporalNonceLedger:
    """A :class:`~lockgate.gating.NonceLedger` kept in the namespace, for use inside activities.

    Args:
        secret: The deployment's worker secret, which seals each record's holder.
    """

    def __init__(self, secret: WorkerSecret) -> None:
        self.secret = secret

    async def claim(self, nonce: str, holder: str, expires_at: float) -> bool:
        """Spends ``nonce`` for ``holder`` (see :meth:`~lockgate.gating.NonceLedger.claim`)."""
        client = activity.client()
        binding = {"nonce": nonce, "holder": holder}
        record = spent_proof_id(nonce)
        try:
            await client.start_workflow(
                SPENT_PROOF_WORKFLOW,
                id=record,
                task_queue=activity.info().task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                memo={"holder": holder, "seal": self.secret.seal("spent-proof", binding)},
                # It completes at once; the bound only keeps a record nobody serves from lingering.
                execution_timeout=timedelta(hours=1),
                static_summary=f"proof {nonce} spent by {holder}"[:200],
            )
            return True
        except WorkflowAlreadyStartedError:
            pass
        try:
            memo = await (await client.get_workflow_handle(record).describe()).memo()
        except RPCError:
            return False
        return memo.get("holder") == holder and self.secret.opens(
            memo.get("seal"), "spent-proof", binding
        )

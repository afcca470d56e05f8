"""The signed start of a workflow of your own: start held back, then prove it, naming the
execution the server started (for ``GraphClient.start_workflow`` and ``LockgateClientPlugin``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.converter import PayloadConverter

from lockgate.clients._client_support import refused_by_update
from lockgate.identity._bindings import start_binding
from lockgate.identity._proofs import Signer
from lockgate.workflows._own_start import OWN_START_UPDATE, start_arguments
from lockgate.workflows._signed_starts import StartRefusedError, withdraw

__all__ = ["prove_own_start"]

_ENDED_BEFORE_THE_UPDATE = "AcceptedUpdateCompletedWorkflow"
"""The failure of an update whose run ended after accepting it, before its handler finished."""


async def prove_own_start(
    handle: WorkflowHandle[Any, Any],
    signer: Signer,
    converter: PayloadConverter,
    workflow_type: str,
    args: Sequence[Any],
) -> None:
    """Signs the start of the run ``handle`` names (its execution, type, id and ``args``) and
    sends the proof as its ``lockgate.start`` update, which lets the held-back run begin.
    ``handle`` is pinned to that execution (its run id or first execution run id), so another
    run under the same id refuses the update.

    Raises:
        StartRefusedError: The run refused the proof (it names the reason); the run, which ran
            none of its code, was withdrawn.
    """
    execution = handle.first_execution_run_id or handle.result_run_id or ""
    arguments = start_arguments(converter, list(args))
    proof = signer.sign(start_binding(workflow_type, handle.id, execution, {"args": arguments}))
    try:
        await handle.execute_update(OWN_START_UPDATE, proof, result_type=dict)
    except WorkflowUpdateFailedError as error:
        code, sentence = refused_by_update(error)
        if code == _ENDED_BEFORE_THE_UPDATE:
            # Accepted, and the run's own code ended it before its handler was done.
            return
        await withdraw(handle)
        raise StartRefusedError(code, sentence, run_id=handle.id) from None

"""Signed starts from the Temporal client a shop already has: :class:`LockgateClientPlugin`.

A shop's services start their workflows with ``client.start_workflow(ShopRefund.run, ...)`` (or
``execute_workflow``). Given to ``Client.connect(plugins=[...])``, the plugin makes every such
start of a workflow of your own that it governs a signed start, as
``GraphClient.start_workflow`` makes one: the run is started held back and marked signed, the
plugin's signer (the service's own principal in the Directory) signs for the execution the
server started, its type, id and exact arguments, and the proof goes to the run as its
``lockgate.start`` update, which lets it begin. The call sites do not change. A start the plugin
cannot sign (it has no signer) is refused before anything starts, rather than started to fail
at its first gate.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import temporalio.client
from temporalio.client import (
    Client,
    ClientConfig,
    OutboundInterceptor,
    StartWorkflowInput,
    StartWorkflowUpdateInput,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
)
from temporalio.converter import PayloadConverter
from temporalio.exceptions import ApplicationError
from temporalio.service import ConnectConfig, ServiceClient

from lockgate.clients._graph_client import GraphClient, starting_attributes
from lockgate.clients._own_starts import prove_own_start
from lockgate.identity._proofs import Signer
from lockgate.tools._configuration import check_setting
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._own_start import SIGNED_START_MEMO
from lockgate.workflows._own_workflows import workflow_type_names
from lockgate.workflows._signed_starts import SIGNED_START_WITHIN, StartRefusedError

__all__ = ["LockgateClientPlugin"]

_DECIDE = "decide"
"""The update that answers a gate in a workflow of your own."""


class LockgateClientPlugin(temporalio.client.Plugin):
    """Makes a Temporal client's starts of your gated workflows signed, without changing them.

    ``client.start_workflow`` and ``client.execute_workflow`` of the workflows it governs start
    the run held back, sign for the execution the server started as ``signer`` and send the
    proof, as :meth:`lockgate.GraphClient.start_workflow` does: the run's requester is the
    signer's principal, judged by four eyes like any person (it may not answer a gate of the
    work it asked for). ``handle.execute_update("decide", "issue")`` on such a run answers its
    gate as ``signer``, signed for the gate open now as :meth:`lockgate.GraphClient.decide`
    signs (the signer must be an approver the gate accepts). Starts and updates of other
    workflow types pass through untouched.

    Example::

        client = await Client.connect(
            "localhost:7233",
            plugins=[LockgateClientPlugin(Signer.from_keys_dir("refund-service"), [ShopRefund])],
        )
        await client.start_workflow(ShopRefund.run, request, id="refund-42", task_queue="shop")

    Args:
        signer: The service's identity: a principal of the workers' Directory, with the roles
            and scopes it is given there. None refuses every start of a governed workflow at
            once (:class:`~lockgate.errors.StartRefusedError`), before anything starts, rather
            than starting a run that fails at its first gate.
        workflows: The workflows of your own it signs the starts of: ``@workflow.defn``
            classes, their run methods, or type names.

    A governed start takes no ``start_delay``, ``cron_schedule`` or start signal (its run waits
    for the proof the start's reply makes possible): each is refused with ``ValueError``.
    """

    def __init__(
        self,
        signer: Signer | None,
        workflows: Iterable[type | str | Callable[..., Any]],
    ) -> None:
        check_setting("LockgateClientPlugin", "signer", signer, Signer, "a Signer", optional=True)
        self.signer = signer
        self.workflows = workflow_type_names("LockgateClientPlugin", "workflows", workflows)

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        """Adds the interceptor that signs the governed starts and answers."""
        # What the interceptor reads runs through (to sign an answer to the gate open now): the
        # same server and converter, without the interceptors, so it signs nothing itself.
        reader = Client(
            config["service_client"],
            namespace=config["namespace"],
            data_converter=config["data_converter"],
        )
        interceptor = _SignedStarts(self, reader)
        config["interceptors"] = [*config["interceptors"], interceptor]
        return config

    async def connect_service_client(
        self, config: ConnectConfig, next: Callable[[ConnectConfig], Awaitable[ServiceClient]]
    ) -> ServiceClient:
        """Connects as the client would without it."""
        return await next(config)


class _SignedStarts(temporalio.client.Interceptor):
    def __init__(self, plugin: LockgateClientPlugin, reader: Client) -> None:
        self.plugin = plugin
        self.reader = reader

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _SigningOutbound(next, self.plugin, self.reader)


class _SigningOutbound(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, plugin: LockgateClientPlugin, reader: Client):
        super().__init__(next)
        self.plugin = plugin
        self.reader = reader
        self.converter: PayloadConverter = reader.data_converter.payload_converter

    async def start_workflow_update(
        self, input: StartWorkflowUpdateInput
    ) -> WorkflowUpdateHandle[Any]:
        """An answer given as a bare option (``handle.execute_update("decide", "issue")``) to
        a governed run is signed for the gate open now, as ``GraphClient.decide`` signs one;
        anything else (a proof signed elsewhere, another update) passes through."""
        signer = self.plugin.signer
        choice = input.args[0] if len(input.args) == 1 else None
        if isinstance(choice, enum.Enum):
            choice = choice.value
        if input.update != _DECIDE or signer is None or not isinstance(choice, str):
            return await self.next.start_workflow_update(input)
        handle = self.reader.get_workflow_handle(input.id, run_id=input.run_id)
        described = await handle.describe()
        if described.workflow_type not in self.plugin.workflows:
            return await self.next.start_workflow_update(input)
        runs = GraphClient(self.reader, described.task_queue, signer)
        signed = await runs.sign_decide(input.id, choice, described=described)
        if "error" in signed:
            # Refused before anything is sent, as the run's validator would refuse it.
            error = signed["error"]
            raise WorkflowUpdateFailedError(
                ApplicationError(str(error["message"]), type=str(error["code"]), non_retryable=True)
            )
        input.args = [signed]
        return await self.next.start_workflow_update(input)

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        already_signing = SIGNED_START_MEMO in (input.memo or {})
        if input.workflow not in self.plugin.workflows or already_signing:
            # Another signer's start (GraphClient.start_workflow on this client) proves itself.
            return await self.next.start_workflow(input)
        signer = self.plugin.signer
        if signer is None:
            raise StartRefusedError(
                ErrorCode.UNAUTHORIZED.value,
                f"Workflow '{input.workflow}' starts only signed (its gates need to know who "
                "asked for the work), and this client's LockgateClientPlugin has no signer: "
                "give it the service's Signer, or let the workers start it unsigned "
                f"(LockgatePlugin(unsigned_starts=['{input.workflow}'])). Nothing was started.",
                run_id=input.id,
            )
        for taken, given in (
            ("start_delay", input.start_delay),
            ("cron_schedule", input.cron_schedule),
            ("start signal (signal-with-start)", input.start_signal),
        ):
            if given:
                raise ValueError(
                    f"A signed start of '{input.workflow}' takes no {taken}: its run waits for "
                    "the proof that names it, which the start's reply makes possible and which "
                    "ends any delay."
                )
        input.memo = {**(input.memo or {}), SIGNED_START_MEMO: True}
        input.start_delay = SIGNED_START_WITHIN
        input.search_attributes = starting_attributes(input.workflow, input.search_attributes)
        handle = await self.next.start_workflow(input)
        await prove_own_start(handle, signer, self.converter, input.workflow, input.args)
        return handle

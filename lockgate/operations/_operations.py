"""The operations lockgate serves to agents and scripts, whatever the protocol.

MCP and the JSON HTTP API call these with what their caller sent, unchecked; each answers a
result or a refusal ``{"ok": False, "error": {"code", "message"}}`` with the sentence that names
what is wrong, never an exception for a caller's mistake. Inputs follow the seeds' graph
operations: ``graph``, ``inputs`` (a JSON object, or its text), ``run``, ``choice``.

Who calls is the server's principal when it was started with a key (every start, tool call and
resume is signed as it), else ``unverified:temporal``. A gate answer is never signed here: it is
relayed only as a proof its approver signed elsewhere (``lockgate sign decide``), and the run's
worker judges it as it judges every answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import uuid
from collections.abc import Mapping
from typing import Any, cast

from temporalio.client import Client

from lockgate.clients._graph_client import GraphClient
from lockgate.clients._tool_client import ToolClient
from lockgate.contracts import RunView, ToolCallResult, refusal
from lockgate.gates._limits import MAX_START_BYTES, measure
from lockgate.identity._canonical import digest
from lockgate.identity._directory import Directory
from lockgate.identity._proofs import Signer
from lockgate.tools._tool_result import ErrorCode
from lockgate.workflows._catalogue import CatalogueError
from lockgate.workflows._graph_inputs import StartGraphInput

__all__ = ["Operations"]

_MAX_TEXT = 200
"""How much of a caller's value a refusal quotes back."""


def _quoted(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…"


def _text(arguments: Mapping[str, Any], name: str, operation: str) -> str | RunView:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        return refusal(
            ErrorCode.VALIDATION_ERROR,
            f"{operation}: `{name}` is required, as a non-empty string"
            + ("." if value is None else f", and this is not one: {_quoted(value)}."),
        )
    return value.strip()


def _json_object(
    arguments: Mapping[str, Any], name: str, operation: str, *, default: Any = None
) -> dict[str, Any] | tuple[str, str] | None:
    """A JSON object argument given as an object or as its text; the refusal's code and sentence
    when it is neither."""
    value = arguments.get(name, default)
    if value is None:
        return None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # not JSON: refused below, quoting it
            value = json.loads(value)
    if isinstance(value, dict):
        return value
    return (
        ErrorCode.VALIDATION_ERROR.value,
        f"{operation}: `{name}` must be a JSON object, and this is not one: "
        f"{_quoted(arguments.get(name))}.",
    )


class Operations:
    """Graph operations and durable tool calls for one caller on one task queue.

    Args:
        client: A Temporal client.
        task_queue: Where the lockgate workers listen.
        signer: Signs starts, tool calls and resumes as the server's principal, on its
            channel (``mcp``, ``http``); None: the caller is ``unverified:<channel>``.
        channel: The channel of unsigned starts and calls: ``temporal``, the channel of a client
            with no signer. A surface's own channel (``mcp``, ``http``) requires an
            authenticated principal, which an unsigned caller never is.
        directory: Judges, in :meth:`pending`, which options the server's principal may take.
        wait_seconds: How long a start, answer or resume waits for the run to settle.
    """

    def __init__(
        self,
        client: Client,
        task_queue: str,
        signer: Signer | None = None,
        *,
        channel: str = "temporal",
        directory: Directory | None = None,
        wait_seconds: float = 30.0,
    ) -> None:
        self.task_queue = task_queue
        self.principal = signer.principal if signer is not None else f"unverified:{channel}"
        self.runs = GraphClient(
            client,
            task_queue,
            signer,
            directory=directory,
            channel=channel,
            wait_seconds=wait_seconds,
        )
        self.tools = ToolClient(client, task_queue, signer, channel=channel)

    # Graphs ------------------------------------------------------------------------------------

    async def _catalogue(self) -> dict[str, Any]:
        try:
            return await self.runs.catalogue()
        except CatalogueError as error:
            return dict(refusal(ErrorCode.NOT_FOUND, str(error)))

    async def list_graphs(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``{count, graphs}``: the graphs the workers serve, with their nodes and gates."""
        catalogue = await self._catalogue()
        if "error" in catalogue:
            return catalogue
        graphs = catalogue.get("graphs") or []
        return {"ok": True, "count": len(graphs), "graphs": graphs}

    async def start(self, arguments: Mapping[str, Any]) -> RunView:
        """Starts ``graph`` with ``inputs`` and returns the run once it settles."""
        graph = _text(arguments, "graph", "start")
        if isinstance(graph, dict):
            return graph
        inputs = _json_object(arguments, "inputs", "start", default={})
        if isinstance(inputs, tuple):
            code, sentence = inputs
            return refusal(
                code,
                sentence.replace("a JSON object", "a JSON object of starting fields"),
            )
        refused = self._refused_start_input(inputs or {})
        if refused is not None:
            return refused
        # The client refuses a graph its workers do not serve, before starting anything.
        return await self.runs.start(graph, inputs or {})

    def _refused_start_input(self, inputs: dict[str, Any]) -> RunView | None:
        """The refusal of inputs a run refuses as it starts (too large, too deep, or not plain
        JSON a proof can name), answered before any run exists.

        A run refuses these before its start proof reaches it, so it never learns who started
        it: it would end refused as an unverified starter's (and the proof's refusal would be
        audited with no actor) though this server signs every start. They are measured as the
        run measures its start input.
        """
        start = StartGraphInput(
            inputs=inputs, channel=self.runs.channel, signed=self.runs.signer is not None
        )
        problem = measure(
            dataclasses.asdict(start), what="The start input", max_bytes=MAX_START_BYTES
        )
        if problem is not None:
            return refusal(problem.code, problem.sentence)
        try:
            digest(inputs)
        except (TypeError, ValueError):
            return refusal(
                ErrorCode.VALIDATION_ERROR,
                "start: `inputs` hold a value that is not plain JSON (NaN, infinity or an "
                "unpaired surrogate), which no proof can name; nothing was started.",
            )
        return None

    async def pending(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """``{count, pending}``: open gates (of ``role``, if given), each option with where it
        leads and, for a server with a principal, whether that principal may take it."""
        role = arguments.get("role")
        if role is not None and not isinstance(role, str):
            return dict(
                refusal(
                    ErrorCode.VALIDATION_ERROR,
                    f"pending: `role` is a role's name, and this is not one: {_quoted(role)}.",
                )
            )
        rows = await self.runs.pending(of=role or None)
        return {"ok": True, "count": len(rows), "pending": [dict(row) for row in rows]}

    async def show(self, arguments: Mapping[str, Any]) -> RunView:
        """A run: status, fields, trail, the gate it waits at."""
        run = _text(arguments, "run", "show")
        if isinstance(run, dict):
            return run
        return await self.runs.show(run)

    async def decide(self, arguments: Mapping[str, Any]) -> RunView:
        """Relays a signed answer (``proof``: what ``lockgate sign decide`` prints)."""
        run = _text(arguments, "run", "decide")
        if isinstance(run, dict):
            return run
        proof = _json_object(arguments, "proof", "decide")
        if proof is None:
            choice = arguments.get("choice")
            hint = choice if isinstance(choice, str) and choice else "<choice>"
            return refusal(
                ErrorCode.UNVERIFIED_APPROVER,
                "A gate is answered by a verified actor — a signed call — and this call carries "
                "no proof: the approver is read from a signature, never from who holds this "
                "connection or from the arguments. The approver signs with their own key, "
                f"`lockgate sign decide {_quoted(run)} {_quoted(hint)} --as <approver>`, and the "
                "printed JSON is passed here as `proof`.",
                run_id=run,
            )
        if isinstance(proof, tuple):
            return refusal(*proof, run_id=run)
        choice = arguments.get("choice")
        signed_choice = (proof.get("authorizes") or {}).get("choice")
        if isinstance(choice, str) and choice and signed_choice not in (None, choice):
            return refusal(
                ErrorCode.INVALID_DECISION,
                f"decide: `choice` is {_quoted(choice)}, and the proof answers "
                f"{_quoted(signed_choice)}; nothing was sent.",
                run_id=run,
            )
        return await self.runs.decide_signed(run, proof)

    async def resume(self, arguments: Mapping[str, Any]) -> RunView:
        """Carries on a parked run: as a relayed ``proof`` (``lockgate sign resume``), or as the
        server's principal."""
        run = _text(arguments, "run", "resume")
        if isinstance(run, dict):
            return run
        proof = _json_object(arguments, "proof", "resume")
        if isinstance(proof, tuple):
            return refusal(*proof, run_id=run)
        if proof is not None:
            return await self.runs.resume_signed(run, proof)
        if self.runs.signer is None:
            return refusal(
                ErrorCode.UNAUTHORIZED,
                f"A run is resumed by someone allowed to run its parked node, and "
                f"{self.principal} is nobody's verified caller. Pass what `lockgate sign resume "
                f"{_quoted(run)} --as <principal>` prints as `proof`.",
                run_id=run,
            )
        return await self.runs.resume(run)

    # Tools -------------------------------------------------------------------------------------

    async def list_tools(self) -> list[dict[str, Any]] | dict[str, Any]:
        """The tools the workers serve (MCP wire shape), or the refusal saying none answered."""
        catalogue = await self._catalogue()
        if "error" in catalogue:
            return catalogue
        return list(catalogue.get("tools") or [])

    async def call_tool(
        self, tool: str, arguments: Any, *, request_id: str | None = None, plan: bool = False
    ) -> ToolCallResult:
        """One durable call of ``tool``: the first answer for ``request_id``, however often.

        With ``plan`` the workers check everything and run nothing (``data["plan"]``)."""
        if arguments is not None and not isinstance(arguments, dict):
            return cast(
                ToolCallResult,
                {
                    "success": False,
                    "error": {
                        "code": ErrorCode.VALIDATION_ERROR.value,
                        "message": f"The arguments of '{tool}' are a JSON object, and these are "
                        f"not one: {_quoted(arguments)}.",
                    },
                },
            )
        return await self.tools.call(
            tool, arguments or {}, request_id=request_id or uuid.uuid4().hex, plan=plan
        )

    async def confirm_tool(self, arguments: Mapping[str, Any]) -> ToolCallResult | RunView:
        """Confirms a call that asked for it, with its ``request_id`` and ``token``."""
        request_id = _text(arguments, "request_id", "confirm")
        if isinstance(request_id, dict):
            return request_id
        token = _text(arguments, "token", "confirm")
        if isinstance(token, dict):
            return token
        return await self.tools.confirm(request_id, token)

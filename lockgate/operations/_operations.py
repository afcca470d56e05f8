"""The one way in: what a caller asks of lockgate's runs, gates and tools, whatever the surface.

The CLI, MCP, the JSON HTTP API and the inbox each make an :class:`Operations` for their caller
and call it with what the caller sent, unchecked. Each operation answers a result or a refusal
(:func:`~lockgate.contracts.refusal`) with the sentence that names what is wrong, never an
exception for a caller's mistake. A sentence names a value as the wire does (``graph``,
``inputs``, ``run``, ``choice``, ``proof``, ``role``...): MCP's tools and the API's bodies take
these names, and so do the keyword arguments here.

Who calls is the signer the surface hands over: a person's own key on the CLI, the server's
principal for MCP and HTTP; without one, ``unverified:<channel>``. Identity is never read from
arguments: the door signs as its signer, or relays a proof someone signed elsewhere
(:meth:`Operations.decide_signed`, what MCP, HTTP and the inbox do with a gate answer), and the
run's worker judges either as it judges every answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import uuid
from typing import Any, cast

from temporalio.client import Client

from lockgate._defaults import task_queue_flag
from lockgate.clients._graph_client import GraphClient
from lockgate.clients._schedules import interval_of, moment_of
from lockgate.clients._tool_client import ToolClient
from lockgate.contracts import RunView, ToolCallResult, refusal
from lockgate.gates._limits import MAX_START_BYTES, measure
from lockgate.identity._canonical import digest
from lockgate.identity._directory import Directory
from lockgate.identity._proofs import Signer
from lockgate.tools._tool_result import ErrorCode, ToolResult
from lockgate.workflows._catalogue import CatalogueError
from lockgate.workflows._graph_inputs import StartGraphInput

__all__ = ["Operations"]

_MAX_TEXT = 200
"""How much of a caller's value a refusal quotes back."""


def _comment_of(comment: object, run_id: str) -> tuple[str | None, RunView | None]:
    """A caller's ``comment`` as an answer signs it (None for none or empty), or the refusal
    of one that is not text (its length the run's worker judges)."""
    if comment is None or isinstance(comment, str):
        return comment or None, None
    return None, refusal(
        ErrorCode.VALIDATION_ERROR,
        f"decide: `comment` is text, and this is not: {_quoted(comment)}.",
        run_id=run_id,
    )


def _quoted(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "…"


def _text(value: object, name: str, operation: str) -> str | RunView:
    """``value`` as a non-empty string, stripped; else the refusal naming ``name``."""
    if not isinstance(value, str) or not value.strip():
        return refusal(
            ErrorCode.VALIDATION_ERROR,
            f"{operation}: `{name}` is required, as a non-empty string"
            + ("." if value is None else f", and this is not one: {_quoted(value)}."),
        )
    return value.strip()


def _texts(operation: str, **values: object) -> tuple[str, ...] | RunView:
    """Each of ``values`` as :func:`_text` takes it, in order; else the first refusal."""
    texts = []
    for name, value in values.items():
        text = _text(value, name, operation)
        if not isinstance(text, str):
            return text
        texts.append(text)
    return tuple(texts)


def _run_and_proof(
    run: object, proof: object, operation: str
) -> tuple[str, dict[str, Any] | None] | RunView:
    """``(run, the proof relayed or None)`` of an operation on a run, checked; else the
    refusal."""
    run_id = _text(run, "run", operation)
    if not isinstance(run_id, str):
        return run_id
    signed, wrong = _json_object(proof, "proof", operation)
    if wrong is not None:
        return refusal(ErrorCode.VALIDATION_ERROR, wrong, run_id=run_id)
    return run_id, signed


def _json_object(
    value: object, name: str, operation: str, *, what: str = "a JSON object"
) -> tuple[dict[str, Any] | None, str | None]:
    """``(value as a JSON object, None)``, given as one or as its text (``(None, None)`` when
    it is None); else ``(None, the sentence that refuses it, naming name)``."""
    if value is None:
        return None, None
    read = value
    if isinstance(read, str):
        with contextlib.suppress(ValueError):  # not JSON: refused below, quoting it
            read = json.loads(read)
    if not isinstance(read, dict):
        return None, f"{operation}: `{name}` must be {what}, and this is not one: {_quoted(value)}."
    return read, None


def _schedule_problem(
    until: object, cron: object, interval: object, schedule_id: object
) -> str | None:
    """Why a schedule's ``until``, ``cron``, ``interval`` or ``schedule_id`` is refused; None
    when each is what it should be."""
    if not isinstance(until, str) or moment_of(until) is None:
        return (
            "schedule: `until` is when the grant ends, an ISO 8601 date or moment "
            f"(2027-01-01, 2027-01-01T09:00Z), and this is not one: {_quoted(until)}."
        )
    if cron is not None and (not isinstance(cron, str) or not cron.strip()):
        return f"schedule: `cron` is a cron expression, and this is not one: {_quoted(cron)}."
    if interval is not None and (not isinstance(interval, str) or interval_of(interval) is None):
        return (
            "schedule: `interval` is a time between ticks (30s, 15m, 2h, 1d), and this is not "
            f"one: {_quoted(interval)}."
        )
    if schedule_id is not None and (not isinstance(schedule_id, str) or not schedule_id.strip()):
        return f"schedule: `schedule_id` is a non-empty string, not {_quoted(schedule_id)}."
    return None


class Operations:
    """Graph runs, gates and durable tool calls for one caller on one task queue: the one way
    every surface reaches them.

    Args:
        client: A Temporal client.
        task_queue: Where the lockgate workers listen.
        signer: The caller's signer: it signs starts, answers, resumes, cancels and tool calls
            (the server's principal for MCP and HTTP, a person's own key on the CLI). None: the
            caller is ``unverified:<channel>``.
        channel: The channel of unsigned starts and calls: ``temporal``, the channel of a client
            with no signer. A surface's own channel (``mcp``, ``http``, ``web``) requires an
            authenticated principal, which an unsigned caller never is.
        directory: Judges, in :meth:`pending`, which options the viewer may take.
        wait_seconds: How long a start, answer, resume or cancel waits for the run to settle.

    Example::

        door = Operations(client, "lockgate", Signer.from_keys_dir("ed", keys), channel="cli")
        gates = await door.pending(role="editor")
        run = await door.decide(gates["pending"][0]["run_id"], "publish_as_is")
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
        self.channel = channel
        self.signer = signer
        self.principal = signer.principal if signer is not None else f"unverified:{channel}"
        self._runs = GraphClient(
            client,
            task_queue,
            signer,
            directory=directory,
            channel=channel,
            wait_seconds=wait_seconds,
        )
        self._tools = ToolClient(client, task_queue, signer, channel=channel)

    # Graphs and runs ---------------------------------------------------------------------------

    async def list_graphs(self) -> dict[str, Any]:
        """``{ok, count, graphs}``: the graphs the workers serve, with their inputs, nodes and
        gates; or the refusal saying no worker answered."""
        try:
            catalogue = await self._runs.catalogue()
        except CatalogueError as error:
            return dict(refusal(ErrorCode.NOT_FOUND, str(error)))
        graphs = catalogue.get("graphs") or []
        return {"ok": True, "count": len(graphs), "graphs": graphs}

    async def start(self, graph: object, inputs: object = None, *, wait: bool = True) -> RunView:
        """Starts ``graph`` with ``inputs`` (a JSON object, or its text) and returns the run once
        it settles (a gate, a park, the end); without ``wait``, once it has started."""
        name = _text(graph, "graph", "start")
        if not isinstance(name, str):
            return name
        fields, wrong = _json_object(
            inputs, "inputs", "start", what="a JSON object of starting fields"
        )
        if wrong is not None:
            return refusal(ErrorCode.VALIDATION_ERROR, wrong)
        refused = self._refused_start_input(fields or {})
        if refused is not None:
            return refused
        # The client refuses a graph its workers do not serve, before starting anything.
        return await self._runs.start(name, fields or {}, wait=wait)

    async def schedule(
        self,
        graph: object,
        inputs: object = None,
        *,
        until: object,
        cron: object = None,
        interval: object = None,
        schedule_id: object = None,
    ) -> dict[str, Any]:
        """Creates a Temporal Schedule of ``graph`` whose runs start as this door's signer, until
        ``until`` (an ISO 8601 date or moment), ticking by ``cron`` or every ``interval``
        (``30s``, ``15m``, ``2h``, ``1d``); see :meth:`GraphClient.schedule`."""
        name = _text(graph, "graph", "schedule")
        if not isinstance(name, str):
            return dict(name)
        fields, wrong = _json_object(
            inputs, "inputs", "schedule", what="a JSON object of starting fields"
        )
        if wrong is None:
            wrong = _schedule_problem(until, cron, interval, schedule_id)
        if wrong is not None:
            return dict(refusal(ErrorCode.VALIDATION_ERROR, wrong))
        refused = self._refused_start_input(fields or {})
        if refused is not None:
            return dict(refused)
        moment = moment_of(str(until))
        assert moment is not None  # checked by _schedule_problem
        return await self._runs.schedule(
            name,
            fields or {},
            until=moment,
            cron=cron.strip() if isinstance(cron, str) else None,
            interval=interval_of(interval) if isinstance(interval, str) else None,
            schedule_id=schedule_id.strip() if isinstance(schedule_id, str) else None,
        )

    def _refused_start_input(self, inputs: dict[str, Any]) -> RunView | None:
        """The refusal of inputs a run refuses as it starts (too large, too deep, or not plain
        JSON a proof can name), answered before any run exists.

        A run refuses these before its start proof reaches it, so it never learns who started
        it: it would end refused as an unverified starter's (and the proof's refusal would be
        audited with no actor) though the caller signed its start. They are measured as the run
        measures its start input.
        """
        start = StartGraphInput(inputs=inputs, channel=self.channel, signed=self.signer is not None)
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

    async def show(self, run: object, *, trail_limit: int | None = None) -> RunView:
        """A run: status, fields, trail (its newest ``trail_limit`` rows, if given), the gate it
        waits at."""
        run_id = _text(run, "run", "show")
        if not isinstance(run_id, str):
            return run_id
        return await self._runs.show(run_id, trail_limit=trail_limit)

    async def started_at(self, run: str) -> str | None:
        """When ``run`` started, as the server says (ISO 8601, UTC); None where it cannot say
        (no such run, or the server not reached): a page shows the run without it."""
        try:
            described = await self._runs.client.get_workflow_handle(run).describe()
        except Exception:
            return None
        return described.start_time.isoformat() if described.start_time else None

    async def list_runs(self, graph: object = None) -> dict[str, Any]:
        """``{ok, count, runs}``: every lockgate run on the task queue (of ``graph``, if given),
        each with how it stands."""
        if graph is not None and (not isinstance(graph, str) or not graph.strip()):
            return dict(
                refusal(
                    ErrorCode.VALIDATION_ERROR,
                    f"list: `graph` is a graph's name, and this is not one: {_quoted(graph)}.",
                )
            )
        rows = await self._runs.list(graph.strip() if graph is not None else None)
        return {"ok": True, "count": len(rows), "runs": rows}

    async def pending(
        self, role: object = None, *, viewer: str | None = None, all_queues: bool = False
    ) -> dict[str, Any]:
        """``{ok, count, pending}``: the open gates (asking ``role``, if given), each option with
        where it leads and, where the door has a Directory, whether ``viewer`` (by default the
        signer's principal) may take it and why not. ``all_queues`` looks across every task
        queue whose workers serve lockgate, not only the door's (each row names its queue).

        ``viewer`` only says whose options to judge for a page or a list; it proves nobody, and
        an answer is judged again, on its proof, by the run's worker.
        """
        if role is not None and not isinstance(role, str):
            return dict(
                refusal(
                    ErrorCode.VALIDATION_ERROR,
                    f"pending: `role` is a role's name, and this is not one: {_quoted(role)}.",
                )
            )
        rows = await self._runs.pending(of=role or None, viewer=viewer, all_queues=all_queues)
        return {"ok": True, "count": len(rows), "pending": [dict(row) for row in rows]}

    async def serves(self, run: str) -> bool:
        """Whether ``run`` is a run these workers serve (see :meth:`GraphClient.serves`): a
        surface shows any other as no run at all."""
        return await self._runs.serves(run)

    # Gates, parks and cancels ------------------------------------------------------------------

    async def decide(
        self,
        run: object,
        choice: object,
        *,
        evidence: object = None,
        waiver: str | None = None,
        comment: object = None,
    ) -> RunView:
        """Answers the gate ``run`` waits at with ``choice``, signed by the caller's signer;
        returns the run once it settles again, or the refusal (nothing written).

        ``evidence`` is what the gate asks for with ``choice`` (a JSON object, or its text);
        ``waiver`` the reason when the signer waives the gate; ``comment`` what the signer says
        with the answer (text, signed with it; it decides nothing). A surface whose signer is
        not the person answering (a server's principal) relays that person's proof with
        :meth:`decide_signed` instead.
        """
        checked = self._answer(run, choice, evidence, comment)
        if not isinstance(checked, tuple):
            return checked
        run_id, option, given, said = checked
        return await self._runs.decide(run_id, option, evidence=given, waiver=waiver, comment=said)

    def _answer(
        self, run: object, choice: object, evidence: object, comment: object
    ) -> tuple[str, str, dict[str, Any] | None, str | None] | RunView:
        """``(run, choice, evidence, comment)`` of an answer, checked; else the refusal."""
        texts = _texts("decide", run=run, choice=choice)
        if not isinstance(texts, tuple):
            return texts
        run_id, option = texts
        given, wrong = _json_object(evidence, "evidence", "decide")
        if wrong is not None:
            return refusal(ErrorCode.VALIDATION_ERROR, wrong)
        said, not_text = _comment_of(comment, run_id)
        if not_text is not None:
            return not_text
        return run_id, option, given or None, said

    async def decide_signed(self, run: object, proof: object, *, choice: object = None) -> RunView:
        """Relays an answer signed elsewhere: ``proof`` is what ``lockgate sign decide`` prints
        (or what the inbox's page signed), as a JSON object or its text. ``choice``, when
        given, must be the option the proof answers."""
        checked = _run_and_proof(run, proof, "decide")
        if not isinstance(checked, tuple):
            return checked
        run_id, signed = checked
        if signed is None:
            hint = choice if isinstance(choice, str) and choice else "<choice>"
            return refusal(
                ErrorCode.UNVERIFIED_APPROVER,
                "A gate is answered by a verified actor — a signed call — and this call carries "
                "no proof: the approver is read from a signature, never from who holds this "
                "connection or from the arguments. The approver signs with their own key, "
                f"`lockgate sign decide {_quoted(run_id)} {_quoted(hint)} --as <approver>"
                f"{task_queue_flag(self.task_queue)}`, and "
                "the printed JSON is passed here as `proof`.",
                run_id=run_id,
            )
        signed_choice = (signed.get("authorizes") or {}).get("choice")
        if isinstance(choice, str) and choice and signed_choice not in (None, choice):
            return refusal(
                ErrorCode.INVALID_DECISION,
                f"decide: `choice` is {_quoted(choice)}, and the proof answers "
                f"{_quoted(signed_choice)}; nothing was sent.",
                run_id=run_id,
            )
        return await self._runs.decide_signed(run_id, signed)

    async def resume(self, run: object, *, proof: object = None) -> RunView:
        """Carries on a parked run: as a relayed ``proof`` (what ``lockgate sign resume``
        prints), or as the caller's signer."""
        checked = _run_and_proof(run, proof, "resume")
        if not isinstance(checked, tuple):
            return checked
        run_id, signed = checked
        if signed is not None:
            return await self._runs.resume_signed(run_id, signed)
        if self.signer is None:
            return refusal(
                ErrorCode.UNAUTHORIZED,
                f"A run is resumed by someone allowed to run its parked node, and "
                f"{self.principal} is nobody's verified caller. Pass what `lockgate sign resume "
                f"{_quoted(run_id)} --as <principal>{task_queue_flag(self.task_queue)}` prints "
                "as `proof`.",
                run_id=run_id,
            )
        return await self._runs.resume(run_id)

    async def cancel(
        self, run: object, *, reason: str | None = None, proof: object = None
    ) -> RunView:
        """Ends ``run`` for good, as the caller's signer, who must be its requester; ``reason``
        is shown in its trail. With ``proof``, relays a cancel signed elsewhere instead (what
        the inbox's page signed): the run's worker judges it."""
        checked = _run_and_proof(run, proof, "cancel")
        if not isinstance(checked, tuple):
            return checked
        run_id, signed = checked
        if signed is not None:
            return await self._runs.cancel_signed(run_id, signed)
        return await self._runs.cancel(run_id, reason=reason)

    # What a signer elsewhere signs ---------------------------------------------------------------

    async def decide_binding(
        self,
        run: object,
        choice: object,
        *,
        evidence: object = None,
        gate: object = None,
        comment: object = None,
    ) -> dict[str, Any]:
        """What an answer of ``choice`` to the gate ``run`` waits at authorizes, for a proof
        signed elsewhere (a passkey in the inbox's page), or the refusal. Signs nothing.

        ``gate`` is the key of the gate the signer was shown (``editor_call#2``): refused if
        another is open now. ``comment`` is text the signer says with the answer, signed with
        it; the run's worker judges it and keeps it in the trail, and it decides nothing.
        """
        checked = self._answer(run, choice, evidence, comment)
        if not isinstance(checked, tuple):
            return dict(checked)
        run_id, option, given, said = checked
        if gate is not None and not isinstance(gate, str):
            return dict(
                refusal(
                    ErrorCode.VALIDATION_ERROR,
                    f"decide: `gate` is the key of the gate shown, and this is not one: "
                    f"{_quoted(gate)}.",
                    run_id=run_id,
                )
            )
        return await self._runs.decide_binding(
            run_id, option, evidence=given, gate_shown=gate, comment=said
        )

    async def resume_binding(self, run: object) -> dict[str, Any]:
        """What a resume of the parked ``run`` authorizes, for a proof signed elsewhere (a key
        or passkey in the inbox's page), or the refusal. Signs nothing."""
        run_id = _text(run, "run", "resume")
        if not isinstance(run_id, str):
            return dict(run_id)
        return await self._runs.resume_binding(run_id)

    async def cancel_binding(self, run: object, *, reason: object = None) -> dict[str, Any]:
        """What a cancel of ``run`` (for ``reason``, a string, if given) authorizes, for a proof
        signed elsewhere, or the refusal. Signs nothing."""
        run_id = _text(run, "run", "cancel")
        if not isinstance(run_id, str):
            return dict(run_id)
        if reason is not None and not isinstance(reason, str):
            return dict(
                refusal(
                    ErrorCode.VALIDATION_ERROR,
                    f"cancel: `reason` is text, and this is not: {_quoted(reason)}.",
                    run_id=run_id,
                )
            )
        return await self._runs.cancel_binding(run_id, reason=reason or None)

    async def sign_decide(
        self,
        run: object,
        choice: object,
        *,
        evidence: object = None,
        waiver: str | None = None,
        comment: object = None,
    ) -> dict[str, Any]:
        """The caller's signed answer (with its ``comment``, if any), to paste into the Temporal
        UI's or CLI's ``decide`` update; or the refusal."""
        checked = self._answer(run, choice, evidence, comment)
        if not isinstance(checked, tuple):
            return dict(checked)
        run_id, option, given, said = checked
        if self.signer is None:
            return self._no_signer("An answer", run_id)
        return await self._runs.sign_decide(
            run_id, option, evidence=given, waiver=waiver, comment=said
        )

    async def sign_resume(self, run: object) -> dict[str, Any]:
        """The caller's signed resume, to paste into the Temporal UI's or CLI's ``resume``
        update; or the refusal."""
        run_id = _text(run, "run", "resume")
        if not isinstance(run_id, str):
            return dict(run_id)
        if self.signer is None:
            return self._no_signer("A resume", run_id)
        return await self._runs.sign_resume(run_id)

    async def start_to_sign(self, run: object) -> dict[str, Any]:
        """``{binding, update, shown}``: what the start of ``run`` (started with the `temporal`
        CLI or UI, held for its proof) authorizes, the update that takes the proof, and the
        inputs it names; or the refusal. Signs nothing: the caller signs ``binding``."""
        run_id = _text(run, "run", "start")
        if not isinstance(run_id, str):
            return dict(run_id)
        return await self._runs.start_to_sign(run_id)

    def _no_signer(self, what: str, run_id: str) -> dict[str, Any]:
        return dict(
            refusal(
                ErrorCode.UNAUTHORIZED,
                f"{what} is signed with its principal's own key, and {self.principal} holds "
                "none here: nothing was signed.",
                run_id=run_id,
            )
        )

    # Tools -------------------------------------------------------------------------------------

    async def list_tools(self) -> dict[str, Any]:
        """``{ok, count, tools}``: the tools the workers serve (MCP wire shape); or the refusal
        saying no worker answered."""
        try:
            catalogue = await self._runs.catalogue()
        except CatalogueError as error:
            return dict(refusal(ErrorCode.NOT_FOUND, str(error)))
        tools = list(catalogue.get("tools") or [])
        return {"ok": True, "count": len(tools), "tools": tools}

    async def call_tool(
        self,
        tool: str,
        arguments: object = None,
        *,
        request_id: str | None = None,
        plan: bool = False,
    ) -> ToolCallResult:
        """One durable call of ``tool``: the first answer for ``request_id``, however often.

        With ``plan`` the workers check everything and run nothing (``data["plan"]``)."""
        if arguments is not None and not isinstance(arguments, dict):
            refused = ToolResult.failed(
                ErrorCode.VALIDATION_ERROR,
                f"The arguments of '{tool}' are a JSON object, and these are not one: "
                f"{_quoted(arguments)}.",
            )
            return cast(ToolCallResult, refused.to_dict())
        return await self._tools.call(
            tool, arguments or {}, request_id=request_id or uuid.uuid4().hex, plan=plan
        )

    async def confirm_tool(self, request_id: object, token: object) -> ToolCallResult | RunView:
        """Confirms a call that asked for it, with its ``request_id`` and ``token``."""
        texts = _texts("confirm", request_id=request_id, token=token)
        if not isinstance(texts, tuple):
            return texts
        asked, given = texts
        return await self._tools.confirm(asked, given)

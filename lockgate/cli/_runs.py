"""Graph runs: ``lockgate graphs``, ``start``, ``schedule create``, ``show``, ``list``,
``pending``, ``decide``, ``resume`` and ``cancel``."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from lockgate._defaults import task_queue_flag
from lockgate.cli._arguments import json_argument
from lockgate.cli._output import CommandError, is_refused, print_json, report_result
from lockgate.cli._settings import local_directory, operations, signer
from lockgate.contracts import ChoiceView, GateView, PendingGate, RunView
from lockgate.gates._gates import ENDS_RUN
from lockgate.identity._quoting import a_role
from lockgate.operations._operations import Operations

__all__ = [
    "cancel_run",
    "create_schedule",
    "decide_gate",
    "evidence_argument",
    "gate_rules",
    "graphs_as_text",
    "list_graphs",
    "list_pending_gates",
    "list_runs",
    "resume_run",
    "show_run",
    "start_run",
]


def _leads_to(choice: ChoiceView) -> str:
    """Where a gate's option leads, in words: its node, the end of the run, or a gate."""
    if choice["leads_to"]:
        return choice["leads_to"]
    return "(ends the run)" if choice["operation"] == ENDS_RUN else "(a gate)"


def _run_as_text(shown: RunView) -> str:
    """A run as the commands print it for a person (``--json`` prints it as it came)."""
    lines = [
        f"run {shown.get('run_id')}  graph {shown.get('graph')} v{shown.get('version')}  "
        f"status {shown.get('status')}"
    ]
    requester = shown.get("requester")
    if requester:
        lines.append(f"requester: {requester['actor']}")
    parent = shown.get("parent")
    if parent:
        lines.append(f"sub-graph of {parent.get('graph')} run {parent.get('run_id')}")
    child = shown.get("child")
    if child:
        lines.append(f"waiting for its sub-graph {child.get('graph')} run {child.get('run_id')}")
    gate = shown.get("awaiting")
    if gate:
        lines.append(
            f"waiting at gate {gate['gate']} for {a_role(gate['role'])}: {gate['because']}".rstrip()
        )
        for choice in gate["choices"]:
            needs = f" (needs {', '.join(choice['needs'])})" if choice["needs"] else ""
            lines.append(f"  - {choice['option']} → {_leads_to(choice)}{needs}")
        lines += [f"  {line}" for line in gate_rules(gate)]
    parked = shown.get("parked")
    if parked:
        lines.append(f"parked at node {parked['node']} ({parked['operation']})")
    if shown.get("ignored_inputs"):
        lines.append(f"ignored inputs (not fields): {', '.join(shown['ignored_inputs'])}")
    trail = shown.get("trail") or []
    total = shown.get("trail_total", len(trail))
    if not trail and total:
        # An answer carries only the rows it added, a start none: `show` has them all.
        lines.append(f"trail: {total} rows (lockgate show {shown.get('run_id')})")
    if trail:
        total, first = shown.get("trail_total", len(trail)), shown.get("trail_from", 0)
        shown_rows = (
            f" (rows {first + 1}–{first + len(trail)} of {total})" if total > len(trail) else ""
        )
        lines.append(f"trail{shown_rows}:")
        for row in trail:
            by = row["by"]["actor"] if row.get("by") else "?"
            extra = f" → {row['answer']}" if row.get("answer") else ""
            ran_child = row.get("child")
            if ran_child:
                extra += f" (run {ran_child.get('run_id')}: {ran_child.get('outcome')})"
            lines.append(
                f"  {row['outcome']:>8}  {row['node']} ({row['operation']}) by {by}{extra}"
            )
            if row.get("why"):
                lines.append(f"            {row['why']}")
    fields = shown.get("fields")
    if fields:
        lines.append("fields: " + json.dumps(fields, ensure_ascii=False))
    return "\n".join(lines)


def evidence_argument(text: str | None) -> dict[str, Any] | None:
    """``--evidence``: a JSON object, or nothing."""
    if text is None:
        return None
    evidence = json_argument(text, "--evidence")
    if not isinstance(evidence, dict):
        raise CommandError("--evidence must be a JSON object of the fields the gate asks for.")
    return evidence


def gate_rules(gate: GateView) -> list[str]:
    """What a gate's rules say beyond its options: its approval policy and the answers so far."""
    lines: list[str] = []
    policy = gate.get("policy")
    if policy is not None and policy["approvals"] > 1:
        answers = gate.get("answers", [])
        given = ", ".join(f"{answer['principal']} → {answer['option']}" for answer in answers)
        panel = f" of a panel of {policy['panel']}" if policy["panel"] else ""
        veto = f"; any '{policy['rejection']}' rejects" if policy["any_rejection_rejects"] else ""
        lines.append(
            f"{policy['name']}: needs {policy['approvals']} matching answers{panel}{veto}; "
            f"{len(answers)} so far" + (f" ({given})" if given else "")
        )
    parent = gate.get("parent")
    if parent:
        lines.append(f"in a sub-graph of {parent.get('graph')} run {parent.get('run_id')}")
    deadline = gate.get("deadline")
    if deadline is not None:
        then = (
            f"escalates to {deadline['escalate_to']}"
            if deadline["escalate_to"]
            else f"takes '{deadline['take']}'"
        )
        lines.append(f"deadline {gate.get('due_at')}: then it {then}")
    if gate.get("escalated_from"):
        lines.append(f"escalated from {gate['escalated_from']} when its deadline passed")
    if gate.get("waivable_by"):
        lines.append(f"{a_role(gate['waivable_by'])} may waive it (--waive REASON)")
    for option, needs in (gate.get("evidence") or {}).items():
        required = ", ".join(needs.get("required") or []) or "an object"
        lines.append(
            f"'{option}' needs evidence {needs.get('model')}: {required} (--evidence '{{...}}')"
        )
    return lines


async def start_run(arguments: argparse.Namespace) -> int:
    """``lockgate start GRAPH``: starts a run and, unless ``--no-wait``, shows where it stopped."""
    inputs = json_argument(arguments.inputs, "--inputs")
    if not isinstance(inputs, dict):
        raise CommandError("--inputs must be a JSON object of starting field values.")
    door = await operations(arguments, signer(arguments))
    result = await door.start(arguments.graph, inputs, wait=not arguments.no_wait)
    if not arguments.json and not is_refused(result):
        print(_run_as_text(result))
        _print_next_step(result, arguments)
    return report_result(result, arguments)


async def create_schedule(arguments: argparse.Namespace) -> int:
    """``lockgate schedule create GRAPH --as WHO``: a Temporal Schedule whose runs start as WHO."""
    door = await _signing_door(
        arguments, "schedule create", "a schedule's runs start as its owner", " (its grant)"
    )
    result = await door.schedule(
        arguments.graph,
        json_argument(arguments.inputs, "--inputs"),
        until=arguments.until,
        cron=arguments.cron,
        interval=arguments.interval,
        schedule_id=arguments.schedule_id,
    )
    if not arguments.json and not is_refused(result):
        flag = task_queue_flag(arguments.task_queue, os.environ)
        print(
            f"schedule {result['schedule_id']}: {result['graph']} as {result['owner']}, from "
            f"{result['not_before']} until {result['not_after']}\n"
            f"its runs: lockgate list --graph {result['graph']}{flag}\n"
            f"pause, trigger, backfill, delete: temporal schedule ... --schedule-id "
            f"{result['schedule_id']}"
        )
    return report_result(result, arguments)


def _print_next_step(result: RunView, arguments: argparse.Namespace) -> None:
    """The command that carries a run on from where it stopped, as a person types it: on the
    task queue it runs on, which the hint names unless the command reaches it without."""
    flag = task_queue_flag(arguments.task_queue, os.environ)
    gate = result.get("awaiting")
    parked = result.get("parked")
    if gate:
        print(
            f"\nanswer it: lockgate decide {result['run_id']} {gate['choices'][0]['option']} "
            f"--as <an approver>{flag}"
        )
    elif parked:
        print(
            f"\nresume it: lockgate resume {result['run_id']} --as <someone who may run "
            f"{parked['operation']}>{flag}"
        )


async def decide_gate(arguments: argparse.Namespace) -> int:
    """``lockgate decide RUN CHOICE --as PRINCIPAL``: answers the gate a run waits at."""
    door = await _signing_door(arguments, "decide", "a gate is answered")
    evidence = evidence_argument(arguments.evidence)
    result = await door.decide(
        arguments.run,
        arguments.choice,
        evidence=evidence,
        waiver=arguments.waive,
        comment=arguments.comment,
    )
    if not arguments.json and not is_refused(result):
        print(_run_as_text(result))
        _print_next_step(result, arguments)
    return report_result(result, arguments)


async def resume_run(arguments: argparse.Namespace) -> int:
    """``lockgate resume RUN --as PRINCIPAL``: resumes a parked run."""
    door = await _signing_door(arguments, "resume", "a run is resumed")
    return _report_run(await door.resume(arguments.run), arguments)


async def cancel_run(arguments: argparse.Namespace) -> int:
    """``lockgate cancel RUN --as PRINCIPAL``: ends a run its requester started."""
    door = await _signing_door(arguments, "cancel", "a run is cancelled", " of its requester")
    return _report_run(await door.cancel(arguments.run, reason=arguments.reason), arguments)


async def _signing_door(
    arguments: argparse.Namespace, command: str, act: str, whose: str = ""
) -> Operations:
    """The door, signing as ``--as``, ``--sso`` or the person ``lockgate login`` signed in;
    without any of them, the refusal that says ``act`` takes a proof.

    Raises:
        CommandError: nobody to sign.
    """
    signing = signer(arguments, needed=True)
    if signing is None:
        raise CommandError(
            f"{command} needs --as PRINCIPAL: {act} only by a signed proof{whose}, made with "
            "that principal's key in --keys-dir (or --sso, with a sign-in at your identity "
            "provider: `lockgate login`)."
        )
    return await operations(arguments, signing)


def _report_run(result: RunView, arguments: argparse.Namespace) -> int:
    """Prints the run a signed act left (unless --json or refused); the command's status."""
    if not arguments.json and not is_refused(result):
        print(_run_as_text(result))
        _print_next_step(result, arguments)
    return report_result(result, arguments)


def graphs_as_text(graphs: list[dict[str, Any]], flag: str = "") -> str:
    """The catalogue's graphs for a person: each one's versions, inputs and gates; ``flag`` is
    what the start hints add to reach the task queue (see ``task_queue_flag``)."""
    if not graphs:
        return "no graphs served on this task queue"
    blocks: list[str] = []
    for graph in graphs:
        versions = ", ".join(f"v{version}" for version in graph.get("versions") or []) or (
            f"v{graph.get('version')}"
        )
        lines = [f"{graph['name']}  ({versions})  {graph.get('description') or ''}".rstrip()]
        inputs = graph.get("inputs") or []
        if inputs:
            lines.append("  inputs:")
            name_width = max(len(row["name"]) for row in inputs)
            type_width = max(len(row["type"]) for row in inputs)
            for row in inputs:
                if row.get("required"):
                    given = "required"
                elif row.get("default_made_per_run"):
                    given = "default: made per run"
                else:
                    given = "default: " + json.dumps(row.get("default"), ensure_ascii=False)
                about = f"  {row['description']}" if row.get("description") else ""
                lines.append(
                    f"    {row['name']:<{name_width}}  {row['type']:<{type_width}}  {given}{about}"
                )
        gates = graph.get("gates") or []
        if gates:
            lines.append("  gates:")
            for gate in gates:
                waivable = (
                    f"; role {gate['waivable_by']} may waive it" if gate.get("waivable_by") else ""
                )
                says_no = f" ({gate['rejection']} says no)" if gate.get("rejection") else ""
                lines.append(
                    f"    {gate['gate']}: asks role {gate['role']}; "
                    f"options {', '.join(gate['options'])}{says_no}{waivable}"
                )
                if gate.get("because"):
                    lines.append(f"      {gate['because']}")
        if graph.get("needs_signed_start"):
            lines.append(
                f"  start: lockgate start {graph['name']} --as YOU --inputs '{{...}}'{flag}"
            )
        else:
            lines.append(f"  start: lockgate start {graph['name']} --inputs '{{...}}'{flag}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


async def list_graphs(arguments: argparse.Namespace) -> int:
    """``lockgate graphs``: what the workers on the task queue serve, and what each takes."""
    door = await operations(arguments)
    listed = await door.list_graphs()
    if is_refused(listed):
        return report_result(listed, arguments)
    graphs: list[dict[str, Any]] = listed["graphs"]
    if arguments.json:
        print_json(listed)  # {ok, count, graphs}: every --json answer is one object
    else:
        print(graphs_as_text(graphs, task_queue_flag(arguments.task_queue, os.environ)))
    return 0


async def show_run(arguments: argparse.Namespace) -> int:
    """``lockgate show RUN``: a run, the gate it waits at, and its trail; and, where it waits or
    is parked, the command that carries it on."""
    door = await operations(arguments)
    result = await door.show(arguments.run)
    if not arguments.json and not is_refused(result):
        print(_run_as_text(result))
        _print_next_step(result, arguments)
    return report_result(result, arguments)


async def list_pending_gates(arguments: argparse.Namespace) -> int:
    """``lockgate pending``: open gates, and with ``--as`` whether that principal may answer."""
    door = await operations(arguments, signer(arguments), directory=local_directory(arguments))
    listed = await door.pending(arguments.of, all_queues=arguments.all_queues)
    if is_refused(listed):
        return report_result(listed, arguments)
    rows: list[PendingGate] = listed["pending"]
    if arguments.json:
        print_json(listed)  # {ok, count, pending}
        return 0
    if not rows:
        print("no open gates" + (f" for {arguments.of}" if arguments.of else ""))
        return 0
    for row in rows:
        target = row.get("target") or {}
        named = ", ".join(f"{key}={value!r}" for key, value in target.items())
        queue = f"  task queue {row['task_queue']}" if "task_queue" in row else ""
        print(
            f"{row['run_id']}  {row['graph']}  gate {row['gate']}  for {row['role']}{queue}  "
            f"{named}"
        )
        print(f"  opened by {row['requester']}: {row['because']}")
        for line in gate_rules(row):
            print(f"  {line}")
        for choice in row["choices"]:
            needs = f" needs {', '.join(choice['needs'])}" if choice["needs"] else ""
            verdict = ""
            if "may" in choice:
                verdict = "  ✓ you may" if choice["may"] else f"  ✗ {choice['why_not']}"
            print(f"    {choice['option']} → {_leads_to(choice)}{needs}{verdict}")
    return 0


async def list_runs(arguments: argparse.Namespace) -> int:
    """``lockgate list``: runs, of one graph with ``--graph``."""
    door = await operations(arguments)
    listed = await door.list_runs(arguments.graph)
    if is_refused(listed):
        return report_result(listed, arguments)
    rows: list[dict[str, Any]] = listed["runs"]
    if arguments.json:
        print_json(listed)  # {ok, count, runs}
        return 0
    for row in rows:
        awaiting = f" (awaiting {row['awaiting']})" if row["awaiting"] else ""
        print(f"{row['run_id']}  {row['graph']}  {row['status']}{awaiting}  {row['started_at']}")
    if not rows:
        print("no runs")
    return 0

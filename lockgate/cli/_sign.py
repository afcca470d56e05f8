"""``lockgate sign``: a signed answer to paste into the Temporal UI or the ``temporal`` CLI."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from lockgate.cli._arguments import json_argument
from lockgate.cli._output import CommandError, print_json, report_result
from lockgate.cli._runs import evidence_argument
from lockgate.cli._settings import connect, signer
from lockgate.gating import start_binding
from lockgate.workflows import GraphClient

__all__ = ["print_signed_answer"]


async def print_signed_answer(arguments: argparse.Namespace) -> int:
    """``lockgate sign start|decide|resume ... --as PRINCIPAL``: prints the signed input.

    A start's proof is made here, offline; a decide's or a resume's binds what the run waits at
    now, so it asks the run first.
    """
    answerer = signer(arguments)
    if answerer is None:
        raise CommandError("sign needs --as PRINCIPAL (whose key in --keys-dir signs).")
    if arguments.what == "start":
        inputs = json_argument(arguments.inputs, "--inputs")
        proof = answerer.sign(start_binding(arguments.graph, arguments.run, inputs))
        print_json({"inputs": inputs, "proof": proof, "channel": "cli"})
        return 0
    runs = GraphClient(await connect(arguments), arguments.task_queue, answerer)
    if arguments.what == "decide":
        proof = await runs.sign_decide(
            arguments.run,
            arguments.choice,
            evidence=evidence_argument(arguments.evidence),
            waiver=arguments.waive,
        )
    else:
        proof = await runs.sign_resume(arguments.run)
    if proof.get("ok") is False:
        return report_result(proof, arguments)
    text = json.dumps(proof, separators=(",", ":"))
    if arguments.json:
        print(text)
        return 0
    name = arguments.what
    print(text)
    print(
        textwrap.dedent(
            f"""
            Valid for {int(300 / 60)} minutes, once. Paste it as the input of the update '{name}':
              Temporal UI: the run's page → More Actions → Send an Update → Name: {name} → Data
              temporal CLI: temporal workflow update execute -w {arguments.run} --name {name} \\
                              --input '{text}'
              (or as a signal, recorded in the trail even when refused:
               temporal workflow signal -w {arguments.run} --name {name} --input '...')"""
        ),
        file=sys.stderr,
    )
    return 0

"""``lockgate sign``: a signed answer to paste into the Temporal UI or the ``temporal`` CLI."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from lockgate.cli._output import CommandError, report_result
from lockgate.cli._runs import evidence_argument
from lockgate.cli._settings import operations, signer

__all__ = ["print_signed_answer"]

_SIGNAL_NOTE = (
    "(or as a signal, recorded in the trail even when refused: temporal workflow signal ... "
    "--name NAME --input '...')"
)


async def print_signed_answer(arguments: argparse.Namespace) -> int:
    """``lockgate sign start|decide|resume RUN ... --as PRINCIPAL|--sso``: prints the signed
    input.

    Each binds the run as the server and its first event (a start) or its worker (an answer, a
    resume) report it now, so it asks the run first.
    """
    answerer = signer(arguments, needed=True)
    if answerer is None:
        raise CommandError(
            "sign needs --as PRINCIPAL (whose key in --keys-dir signs), or --sso (a sign-in at "
            "your identity provider: `lockgate login`)."
        )
    door = await operations(arguments, answerer)
    name = arguments.what
    if name == "start":
        found = await door.start_to_sign(arguments.run)
        if found.get("ok") is False:
            return report_result(found, arguments)
        proof = answerer.sign(found["binding"])
        name = found["update"]
        if not arguments.json:
            shown = json.dumps(found["shown"], separators=(",", ":"))
            print(f"Signs the start of {arguments.run} with {shown}", file=sys.stderr)
    elif name == "decide":
        proof = await door.sign_decide(
            arguments.run,
            arguments.choice,
            evidence=evidence_argument(arguments.evidence),
            waiver=arguments.waive,
            comment=arguments.comment,
        )
    else:
        proof = await door.sign_resume(arguments.run)
    if proof.get("ok") is False:
        return report_result(proof, arguments)
    text = json.dumps(proof, separators=(",", ":"))
    if arguments.json:
        print(text)
        return 0
    print(text)
    print(
        textwrap.dedent(
            f"""
            Valid for {int(300 / 60)} minutes, once. Paste it as the input of the update '{name}':
              Temporal UI: the run's page → More Actions → Send an Update → Name: {name} → Data
              temporal CLI: temporal workflow update execute -w {arguments.run} --name {name} \\
                              --input '{text}'
              {_SIGNAL_NOTE if name in ("decide", "resume") else ""}"""
        ),
        file=sys.stderr,
    )
    return 0

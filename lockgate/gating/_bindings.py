"""What each kind of proof authorizes: one definition for the signer and the verifier.

A proof is good only for the exact act its ``authorizes`` names. Clients build these to sign,
workers build them to check; both call the functions here, so the two can never drift apart.
Digests raise ``TypeError``/``ValueError`` on values canonical JSON refuses (NaN, infinity,
lone surrogates): no proof can name those.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockgate.gating._canonical import digest

__all__ = [
    "confirm_binding",
    "decide_binding",
    "resume_binding",
    "start_binding",
    "tool_binding",
]


def start_binding(graph: str, run: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Starting run ``run`` of ``graph`` with exactly these inputs."""
    return {"kind": "start", "graph": graph, "run": run, "inputs": digest(dict(inputs))}


def decide_binding(graph: str, run: str, gate: str, choice: str) -> dict[str, Any]:
    """Answering gate opening ``gate`` (``editor_call#2``) of ``run`` with ``choice``."""
    return {"kind": "decide", "graph": graph, "run": run, "gate": gate, "choice": choice}


def resume_binding(graph: str, run: str, node: str | None) -> dict[str, Any]:
    """Resuming ``run``, parked at ``node``."""
    return {"kind": "resume", "graph": graph, "run": run, "node": node}


def tool_binding(
    tool: str, arguments: Mapping[str, Any], request: str | None = None
) -> dict[str, Any]:
    """Calling ``tool`` with exactly these arguments (as request ``request`` of a durable call)."""
    binding = {"kind": "tool", "tool": tool, "arguments": digest(dict(arguments))}
    if request is not None:
        binding["request"] = request
    return binding


def confirm_binding(request: str, token: str) -> dict[str, Any]:
    """Confirming durable call ``request`` with the token it handed out."""
    return {"kind": "confirm", "request": request, "token": token}

"""What one run hands another through Temporal (a sub-graph's driver, the state carried on at
continue-as-new), believed only under the worker secret's seal for exactly that handover."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lockgate.activities._activity_inputs import OpenStartInput, handover_binding
from lockgate.gates._authority import Authority
from lockgate.gates._limits import MAX_SUBGRAPH_DEPTH
from lockgate.identity._actors import Actor
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._seals import WorkerSecretError
from lockgate.tools._tool_result import ErrorCode

__all__ = ["open_handover", "seal_problem", "start_refused"]


def seal_problem(
    authority: Authority, seal: object, purpose: str, binding: Callable[[], Mapping[str, Any]]
) -> str | None:
    """Why ``seal`` does not vouch for the handover ``binding()`` names, or None when it does.

    ``binding`` is made here, so a handover whose data cannot be bound is refused the same way.
    """
    try:
        if authority.sealer.opens(seal, purpose, binding()):
            return None
        return "it carries no seal of this deployment's workers for this handover"
    except (TypeError, ValueError):
        return "it is not JSON data"
    except WorkerSecretError as error:
        return str(error)


def start_refused(code: ErrorCode, reason: str) -> dict[str, Any]:
    """A refused start, as the start activity reports it."""
    return {
        "fields": None,
        "ignored_inputs": [],
        "actor": None,
        "code": code.value,
        "reason": reason,
    }


def open_handover(
    authority: Authority, start: OpenStartInput, opened: dict[str, Any]
) -> dict[str, Any]:
    """A sub-graph's start: who its parent handed it (driver, depth, parent), believed only
    under the worker secret's seal for exactly the parent run the server names."""
    problem: str | None = None
    handed = start.handed
    if start.parent_id is None or start.parent_run is None:
        problem = "this run was not started by a parent run"
    elif not isinstance(handed, dict):
        problem = "it is not an object"
    else:
        parent_id, parent_run = start.parent_id, start.parent_run
        problem = seal_problem(
            authority,
            start.seal,
            "handover",
            lambda: handover_binding(start.run, parent_id, parent_run, handed),
        )
    if problem is None:
        assert isinstance(handed, dict)
        try:
            actor = Actor.from_dict(handed["actor"])
            depth = int(handed["depth"])
        except (KeyError, TypeError, ValueError, IdentityError):
            problem = "it does not name a driver and a depth"
        else:
            if depth > MAX_SUBGRAPH_DEPTH:
                return start_refused(
                    ErrorCode.VALIDATION_ERROR,
                    f"'{start.graph}' would run {depth} sub-graphs deep; sub-graphs nest at "
                    f"most {MAX_SUBGRAPH_DEPTH} levels.",
                )
            return opened | {
                "actor": actor.to_dict(),
                "depth": depth,
                "parent": handed.get("parent"),
            }
    reason = (
        "'handed' is lockgate's own, handed by a parent run to the sub-graph it starts, and "
        f"this one was refused: {problem}."
    )
    authority.audit.refused("run.handed", ErrorCode.UNAUTHORIZED, reason, run=start.run)
    return start_refused(ErrorCode.UNAUTHORIZED, reason)

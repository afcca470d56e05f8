"""The event loop a serving command runs on: uvloop where the ``uvloop`` extra is installed."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

__all__ = ["event_loop_name", "run_on_the_fastest_loop"]


def event_loop_name() -> str:
    """``uvloop`` where the ``uvloop`` extra is installed, else ``asyncio``."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run_on_the_fastest_loop(command: Coroutine[Any, Any, int]) -> int:
    """Runs a serving command on uvloop where it is installed (``pip install
    'lockgate[uvloop]'``: a worker's steps take less time on it), else on asyncio's own loop."""
    if event_loop_name() == "uvloop":
        import uvloop

        return uvloop.run(command)
    return asyncio.run(command)

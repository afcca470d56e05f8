"""A tool whose every run leaves a line in a file: how the fleet's rate-limit test counts runs.

The ``lockgate worker`` processes of that test serve ``TOOLS`` from here.
"""

from __future__ import annotations

import os
from pathlib import Path

from lockgate import tool

__all__ = ["TOOLS", "record"]


@tool("fleet:record", "Append a line naming this call and the worker that ran it.")
def record(path: str, label: str) -> dict[str, str]:
    with Path(path).open("a") as runs:
        runs.write(f"{label} {os.getpid()}\n")
    return {"label": label}


TOOLS = [record]

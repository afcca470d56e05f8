"""Small helpers several test modules share."""

from __future__ import annotations

import socket
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
"""The repository's root: where `lockgate` subprocesses run and `examples` import from."""


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])

"""How a benchmark that ran a Temporal worker ends."""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def leave() -> NoReturn:
    """Exits at once, the figures already printed.

    temporalio's native threads can crash a finalizing interpreter (a segfault after the last
    line), which would turn a finished benchmark into a failed `make bench`.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

"""The pytest plugin installing lockgate registers: the fixtures of :mod:`lockgate.testing`.

pytest loads it in every project where lockgate is installed, so it must never break a test
run: without pytest-asyncio (which the fixtures need) it offers nothing. Install the
``testing`` extra (``pip install 'lockgate[testing]'``) to have them.
"""

from __future__ import annotations

import importlib.util

__all__: list[str] = []

if importlib.util.find_spec("pytest_asyncio") is not None:
    from lockgate.testing import (  # noqa: F401 - pytest collects fixtures from this module
        lockgate_worker,
        task_queue,
        temporal_client,
        temporal_env,
        time_skipping_env,
    )

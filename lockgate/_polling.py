"""A watcher's loop: looks again and again, and keeps going while the server is away."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

__all__ = ["keep_looking"]


async def keep_looking(
    look: Callable[[], Awaitable[None]], every: float, logger: logging.Logger, failed: str
) -> None:
    """Calls ``look`` every ``every`` seconds until cancelled; a look that fails (the server
    away for a moment) is logged as ``failed`` and tried again at the next."""
    while True:
        try:
            await look()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            logger.warning("%s: %s", failed, error)
        await asyncio.sleep(every)

"""The one way in: what every surface (the CLI, MCP, the HTTP API, the inbox, the next one) asks
of lockgate's runs, gates and tools, for one caller.

A surface hands :class:`Operations` what its caller sent and the caller's signer, if any, and
shows what comes back: a result, or a refusal (:func:`lockgate.contracts.refusal`) whose sentence
names what is wrong. Nothing here needs an extra.
"""

from __future__ import annotations

from lockgate.operations._operations import Operations

__all__ = ["Operations"]

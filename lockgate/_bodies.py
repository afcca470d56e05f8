"""Request bodies read up to a limit, for lockgate's HTTP surfaces (the inbox, the JSON API).

A body is read no further than the limit: a declared ``Content-Length`` over it is refused before
anything is read, and a body that declares none (chunked) is counted as it arrives. Each surface
says the refusal in its own shape; this module only reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = ["read_bounded"]


async def read_bounded(request: Request, max_bytes: int) -> bytes | None:
    """The body of ``request``, or None once it is over ``max_bytes`` (read no further)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
    return b"".join(chunks)

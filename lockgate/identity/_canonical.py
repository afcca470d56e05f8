"""Canonical JSON and digests: one byte string per value, so signatures and bindings agree."""

from __future__ import annotations

import enum
import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "digest", "fingerprint", "to_jsonable"]


def to_jsonable(value: Any) -> Any:
    """Returns ``value`` as plain JSON data (dicts, lists, str, int, float, bool, None).

    Pydantic models are dumped in JSON mode, enums become their values, tuples and sets become
    lists (sets sorted so that equal sets give equal JSON).
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_jsonable(item) for item in value), key=repr)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON data")


def canonical_json(value: Any) -> bytes:
    """Serialises ``value`` with sorted keys and no insignificant whitespace, as UTF-8.

    Two parties that agree on a value agree on these bytes, which is what a signature over an
    authorization or a digest of tool arguments needs.
    """
    return json.dumps(
        to_jsonable(value),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    ).encode("utf-8")


def digest(value: Any) -> str:
    """Returns ``"sha256:<hex>"`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def fingerprint(value: Any) -> str:
    """Returns ``"sha256:<hex>"`` of ``value``'s JSON, for data that must only match itself.

    Unlike :func:`digest` it never raises: text that is not valid Unicode is escaped, NaN and
    infinity are written as JSON's extensions, anything else by ``str``. Temporal's JSON round
    trip keeps all of these, so a seal over a run's own data (which a stranger may have filled
    with such values) opens on the far side of the round trip and never fails the run.
    """
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True, default=str
    )
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()

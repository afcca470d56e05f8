"""Quoting values inside sentences: how an error or a refusal names what it was given.

Errors about keys, names and the Directory, and refusals of proofs, quote the value at fault; a
hostile value (a lone surrogate, a huge object, something that is not JSON) must still make a
sentence that prints.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = ["a_role", "kind_of", "label", "quoted"]


def kind_of(value: object) -> str:
    """Names the JSON kind of ``value`` for a sentence: ``a string``, ``an object``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def quoted(value: object, limit: int = 80) -> str:
    """Returns ``value`` quoted for a sentence: strings in single quotes, the rest as JSON."""
    if isinstance(value, str):
        # A lone surrogate would make the sentence itself unprintable.
        text = "'" + value.encode("utf-8", "backslashreplace").decode("utf-8") + "'"
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            text = kind_of(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(name: object) -> str:
    """A name (an option's, a role's) as words: ``publish_as_is`` is ``Publish as is``."""
    words = str(name).replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:]


def a_role(role: object) -> str:
    """A role with its article, for a sentence: ``an editor``, ``a finance lead``."""
    words = label(role).lower()
    return ("an " if words[:1] in ("a", "e", "i", "o", "u") else "a ") + words

"""How many tool definitions fit a model's context: a token estimate and a greedy budget."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BUDGET_PERCENT",
    "DEFAULT_CONTEXT_TOKENS",
    "MODEL_CONTEXT_TOKENS",
    "BudgetReport",
    "context_tokens",
    "estimate_tokens",
    "tools_within_budget",
]

_log = logging.getLogger("lockgate.tools")

MODEL_CONTEXT_TOKENS: Mapping[str, int] = {
    "gpt-3.5-turbo": 4096,
    "gpt-4": 8192,
    "gpt-4-32k": 32768,
    "gpt-4-turbo": 128000,
    "gpt-4o": 128000,
    "gpt-4.1": 1047576,
    "o3": 200000,
    "claude-2": 100000,
    "claude-3-haiku": 200000,
    "claude-3-sonnet": 200000,
    "claude-3-opus": 200000,
    "claude-3.5-sonnet": 200000,
    "claude-sonnet": 200000,
    "claude-haiku": 200000,
    "claude-opus": 200000,
}
"""Context windows by model name; a dated name resolves by its longest known prefix."""

DEFAULT_CONTEXT_TOKENS = 8192
BUDGET_PERCENT = 30
"""Tool definitions may take this share of the context; the rest is for the conversation."""


def estimate_tokens(text: str) -> int:
    """About four bytes of UTF-8 per token, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def context_tokens(model: str) -> int:
    """The context window of ``model``: exact name, else the longest matching prefix."""
    if model in MODEL_CONTEXT_TOKENS:
        return MODEL_CONTEXT_TOKENS[model]
    prefixes = [name for name in MODEL_CONTEXT_TOKENS if model.startswith(name)]
    return MODEL_CONTEXT_TOKENS[max(prefixes, key=len)] if prefixes else DEFAULT_CONTEXT_TOKENS


@dataclass(frozen=True, slots=True)
class BudgetReport:
    """The tools that fit, those that did not, and the arithmetic."""

    tools: list[dict[str, Any]]
    excluded: list[str]
    tokens_used: int
    budget: int


def tools_within_budget(
    definitions: Sequence[Mapping[str, Any]], model: str, priority: Sequence[str] = ()
) -> BudgetReport:
    """Greedily keeps definitions while they fit; a tool that does not fit does not stop the rest.

    Tools named in ``priority`` are considered first, keeping their registration order.
    """
    budget = context_tokens(model) * BUDGET_PERCENT // 100
    wanted = set(priority)
    ordered = [d for d in definitions if d["name"] in wanted] + [
        d for d in definitions if d["name"] not in wanted
    ]
    kept: list[dict[str, Any]] = []
    excluded: list[str] = []
    used = 0
    for definition in ordered:
        cost = estimate_tokens(json.dumps(definition, ensure_ascii=False))
        if used + cost <= budget:
            kept.append(dict(definition))
            used += cost
        else:
            excluded.append(str(definition["name"]))
    if excluded:
        shown = ", ".join(excluded[:5]) + ("..." if len(excluded) > 5 else "")
        _log.info("Token budget exceeded. Excluded %d tools: %s", len(excluded), shown)
    return BudgetReport(kept, excluded, used, budget)

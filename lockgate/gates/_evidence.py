"""Evidence: what an approver must or may give with an answer, checked before it is accepted.

A gate may require, per option, a declared pydantic model (a ticket URL, a checklist, a reason).
The evidence travels inside the signed answer, so it is exactly what the approver signed; it is
validated by the model here, and a refusal names each field that failed, never the value sent.

Any answer may also carry a ``comment``: free text the approver signs with it, recorded in the
trail beside the answer as what they said. A comment never decides anything: no rule reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

__all__ = ["MAX_COMMENT_CHARS", "comment_problem", "evidence_problem", "evidence_shown"]

MAX_COMMENT_CHARS = 2000
"""The longest comment an answer may carry."""

_MOST_FIELDS_NAMED = 5


def evidence_shown(model: type[BaseModel]) -> dict[str, Any]:
    """What a gate shows an approver of the evidence ``model``: its name, fields and which are
    required, each field with its description."""
    fields = {
        name: info.description or (getattr(info.annotation, "__name__", None) or "value")
        for name, info in model.model_fields.items()
    }
    required = [name for name, info in model.model_fields.items() if info.is_required()]
    return {"model": model.__name__, "fields": fields, "required": required}


def comment_problem(comment: object) -> str | None:
    """Why ``comment`` (what a signed answer carries as ``comment``; None when none) cannot be
    kept with the answer, or None if it can: text of 1 to :data:`MAX_COMMENT_CHARS`
    characters."""
    if comment is None:
        return None
    if not isinstance(comment, str) or not comment.strip() or len(comment) > MAX_COMMENT_CHARS:
        return (
            f"A comment with an answer is text of 1 to {MAX_COMMENT_CHARS} characters, and this "
            "one is not: sign the answer without it, or with a shorter one."
        )
    return None


def evidence_problem(
    models: Mapping[str, type[BaseModel]], option: str, evidence: object
) -> str | None:
    """Why ``evidence`` does not stand for answering ``option``, or None if it does.

    Args:
        models: The evidence each option of the gate requires.
        option: The option answered.
        evidence: What the signed answer carries (None when it carries none).
    """
    model = models.get(option)
    if model is None:
        if evidence is None:
            return None
        return (
            f"The answer '{option}' takes no evidence at this gate, and this one carries some; "
            "sign it without evidence."
        )
    if evidence is None:
        required = ", ".join(
            name for name, info in model.model_fields.items() if info.is_required()
        )
        return (
            f"The answer '{option}' needs evidence ({model.__name__}: {required or 'an object'}) "
            "signed with it, and this one carries none."
        )
    try:
        model.model_validate(evidence)
    except ValidationError as error:
        problems = []
        for found in error.errors(include_url=False, include_input=False)[:_MOST_FIELDS_NAMED]:
            field = ".".join(str(part) for part in found["loc"]) or "(the evidence itself)"
            problems.append(f"field '{field}': {found['msg']}")
        return f"The evidence for '{option}' ({model.__name__}) was refused: {'; '.join(problems)}."
    except Exception as error:  # a graph author's own validator
        return (
            f"The evidence for '{option}' ({model.__name__}) was refused: its check raised "
            f"{type(error).__name__}."
        )
    return None

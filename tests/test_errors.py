"""One error hierarchy: every exception lockgate raises is a ``LockgateError``, drawn once in
``lockgate.errors`` and pinned here, and each keeps the built-in base it had before."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import lockgate
import lockgate.errors
from lockgate.errors import LockgateError

# Exceptions lockgate raises only to itself: a run's accepted cancel unwinds the interpreter's
# stack and must not be caught by a shop's `except LockgateError` around a gate.
INTERNAL = {"CancelAccepted"}


def _lockgate_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(lockgate.__path__, "lockgate."):
        if info.name.startswith(("lockgate.adapters.", "lockgate.examples")):
            continue  # optional extras; their modules raise lockgate's own exceptions
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__.startswith("lockgate")
            ):
                found[value.__name__] = value
    return found


def _drawn_tree() -> dict[str, str | None]:
    """Each class drawn in the module docstring, with the class it is drawn under."""
    assert lockgate.errors.__doc__ is not None
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in lockgate.errors.__doc__.splitlines():
        drawn = re.match(r"^\s{4}([│ ]*(?:├── |└── ))?(\w+)", line)
        if drawn is None or not drawn.group(2)[0].isupper():
            continue
        depth = len(drawn.group(1) or "")
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[drawn.group(2)] = stack[-1][1] if stack else None
        stack.append((depth, drawn.group(2)))
    return parents


def test_every_exception_lockgate_raises_to_callers_is_a_lockgate_error() -> None:
    outside = [
        name
        for name, error in _lockgate_exceptions().items()
        if not issubclass(error, LockgateError) and name not in INTERNAL
    ]

    assert outside == []


def test_the_tree_drawn_in_the_docstring_is_the_tree_in_the_code() -> None:
    found = _lockgate_exceptions()
    drawn = _drawn_tree()

    assert sorted(drawn) == sorted(set(found) - INTERNAL)
    for name, parent in drawn.items():
        if parent is None:
            assert found[name] is LockgateError
            continue
        lockgate_bases = [base for base in found[name].__bases__ if issubclass(base, LockgateError)]
        assert [base.__name__ for base in lockgate_bases] == [parent], name


@pytest.mark.parametrize(
    ("name", "builtin"),
    [
        ("ToolDeclarationError", TypeError),
        ("GraphDeclarationError", TypeError),
        ("IdentityError", ValueError),
        ("EnrolmentRefused", ValueError),
        ("WorkerSecretError", ValueError),
        ("EnrolmentSecretError", ValueError),
        ("PayloadKeysError", ValueError),
        ("CodecAccessError", ValueError),
        ("ToolNameError", ValueError),
        ("ArgumentsInvalid", ValueError),
        ("PayloadDecryptionError", ValueError),
        ("CarriedStateError", ValueError),
        ("DevServerError", RuntimeError),
        ("SearchAttributesMissingError", RuntimeError),
        ("CatalogueError", RuntimeError),
    ],
)
def test_each_keeps_the_builtin_base_existing_except_clauses_catch(
    name: str, builtin: type[Exception]
) -> None:
    assert issubclass(_lockgate_exceptions()[name], builtin)


def test_a_refused_proof_is_caught_by_one_except_clause_for_all_of_lockgate() -> None:
    from lockgate.errors import ProofRefused

    with pytest.raises(LockgateError, match="no proof"):
        raise ProofRefused("forged", "no proof")


def test_the_sdk_decode_failure_still_reads_as_an_unreadable_start() -> None:
    from lockgate.workflows._undecodable_starts import UnreadableStart

    def decode_failure(message: str, cause: BaseException | None) -> RuntimeError:
        error = RuntimeError(message)
        error.__cause__ = cause
        return error

    assert isinstance(decode_failure("Failed decoding arguments", ValueError()), UnreadableStart)
    assert not isinstance(decode_failure("Failed decoding arguments", None), UnreadableStart)
    assert not isinstance(decode_failure("Failed decoding", ValueError()), UnreadableStart)
    assert not isinstance(RecursionError("Failed decoding arguments"), UnreadableStart)
    assert not isinstance(RuntimeError("Failed decoding arguments"), LockgateError)

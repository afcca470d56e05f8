"""Configuration checks: a setting of the wrong type is refused where it is given, in a sentence.

A policy given as a dict, or a flag given as the string ``"false"``, would otherwise be taken and
fail (or, worse, mean its opposite) on every later call. Every public configuration entry point
(``@tool``, :class:`ChannelPolicy`, :class:`Authorizer`, ``LockgatePlugin``) checks what it is
given with these, so the sentence reads the same everywhere: where, which setting, what it got,
what it expects.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["check_flag", "check_number", "check_setting", "checked_names", "refused_setting"]

_SHOWN_LENGTH = 60


def check_setting(
    where: str,
    name: str,
    value: object,
    expected: type | tuple[type, ...],
    described: str,
    *,
    optional: bool = False,
    error: type[TypeError] = TypeError,
) -> None:
    """Raises ``error`` unless ``value`` is an instance of ``expected`` (or None, if optional).

    Args:
        where: The entry point, as its caller wrote it (``Authorizer.set_channel_policy``).
        name: The parameter.
        value: What it was given.
        expected: The types it takes.
        described: What it takes, as a reader says it (``a ChannelPolicy``).
        optional: None is taken too.
        error: The error to raise (a declaration error of the entry point's own, say).
    """
    if optional and value is None:
        return
    if isinstance(value, expected):
        return
    raise error(_sentence(where, name, value, described + (" or None" if optional else "")))


def refused_setting(
    where: str, name: str, value: object, described: str, *, error: type[TypeError] = TypeError
) -> TypeError:
    """The error to raise for a setting no type check describes (a protocol, say)."""
    return error(_sentence(where, name, value, described))


def check_flag(where: str, name: str, value: object, *, error: type[TypeError] = TypeError) -> None:
    """Raises ``error`` unless ``value`` is True or False (the string ``"false"`` is truthy)."""
    check_setting(where, name, value, bool, "True or False", error=error)


def check_number(
    where: str,
    name: str,
    value: object,
    described: str,
    *,
    optional: bool = False,
    error: type[TypeError] = TypeError,
) -> None:
    """Raises ``error`` unless ``value`` is an int or float (never a bool, which Python counts as
    an int), or None if optional."""
    if optional and value is None:
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return
    raise error(_sentence(where, name, value, described + (" or None" if optional else "")))


def checked_names(
    where: str, name: str, value: object, *, error: type[TypeError] = TypeError
) -> frozenset[str]:
    """The names ``value`` holds; raises ``error`` unless it is a collection of non-empty strings
    (not one string, whose letters would each become a name).

    Use what it returns: a generator is read once, here.
    """
    if (
        not isinstance(value, str)
        and isinstance(value, Iterable)
        and not isinstance(value, (bytes, bytearray))
    ):
        listed = list(value)
        if all(isinstance(each, str) and each for each in listed):
            return frozenset(listed)
        value = listed
    raise error(_sentence(where, name, value, "a list of non-empty names"))


def _sentence(where: str, name: str, value: object, described: str) -> str:
    shown = repr(value)
    if len(shown) > _SHOWN_LENGTH:
        shown = shown[: _SHOWN_LENGTH - 1] + "…"
    return f"{where}: {name} must be {described}, and it got {type(value).__name__} {shown}."

"""The roots of lockgate's exception tree, at the bottom of the layers.

Every module of lockgate raises a subclass of one of these; they import nothing of lockgate, so
any layer may import them. :mod:`lockgate.errors` is the public face: it draws the whole tree
and serves every exception in it.
"""

from __future__ import annotations

__all__ = ["ConfigurationError", "DeclarationError", "LockgateError", "RefusedError", "SetupError"]


class LockgateError(Exception):
    """The root of every exception lockgate raises to its callers."""


class DeclarationError(LockgateError, TypeError):
    """A tool or graph is declared in a way lockgate cannot use; the message says what to
    declare instead."""


class ConfigurationError(LockgateError, ValueError):
    """A key, secret, file or setting is missing or unusable; the message says what to do."""


class SetupError(LockgateError, RuntimeError):
    """What lockgate runs on (a Temporal server, a namespace, a worker) is missing or not
    ready; the message says how to get it ready."""


class RefusedError(LockgateError):
    """A request was refused, and nothing it asked for happened; the message says why."""

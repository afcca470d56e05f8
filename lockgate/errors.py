"""lockgate's exceptions, under one root.

Every exception lockgate raises to its callers is a :class:`LockgateError`, so one ``except``
clause catches them all. Each keeps the built-in base it had before this root existed
(``TypeError``, ``ValueError``, ``RuntimeError``), so ``except ValueError`` keeps working::

    LockgateError
    ├── DeclarationError (TypeError)        a tool or graph lockgate cannot use as declared
    │   ├── ToolDeclarationError
    │   └── GraphDeclarationError
    ├── ConfigurationError (ValueError)     a key, secret, file or setting is unusable
    │   ├── IdentityError
    │   │   └── EnrolmentRefused
    │   ├── WorkerSecretError
    │   ├── EnrolmentSecretError
    │   ├── PayloadKeysError
    │   ├── CodecAccessError
    │   └── ToolNameError
    ├── SetupError (RuntimeError)           what lockgate runs on is missing or not ready
    │   ├── DevServerError
    │   ├── SearchAttributesMissingError
    │   └── CatalogueError
    ├── RefusedError                        a request was refused; the message says why
    │   ├── ArgumentsInvalid (ValueError)
    │   ├── PayloadDecryptionError (ValueError)
    │   ├── ProofRefused
    │   ├── VerificationError
    │   ├── StartRefusedError
    │   ├── UnreadableStart
    │   └── Refusal (temporalio's ApplicationError)
    ├── ToolFailure                         a tool's own failure, when asked not to contain it
    ├── UnservedVersionError                a run on a graph version no worker here serves
    ├── CarriedStateError (ValueError)      a continued run's state this lockgate cannot read
    └── CommandError                        a ``lockgate`` command called the wrong way

This module holds the roots only; each exception lives beside the rule that raises it, and
``tests/test_errors.py`` pins the tree above. Over Temporal, a refusal an activity raises
reaches the workflow as an ``ApplicationError`` whose ``type`` is the refusal's code.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "DeclarationError",
    "LockgateError",
    "RefusedError",
    "SetupError",
]


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

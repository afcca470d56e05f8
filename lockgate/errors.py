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
    ├── UnsealedHistoryError                a run's history holds what no worker of ours sealed
    ├── CarriedStateError (ValueError)      a continued run's state this lockgate cannot read
    └── CommandError                        a ``lockgate`` command called the wrong way

The roots are defined in ``lockgate._errors``, at the bottom of the layers, where every layer
imports them from; each other exception lives beside the rule that raises it. This module is the
public face: it sits above every layer, and serves each exception on first use (so it stays
light). No module of lockgate imports it. ``tests/test_errors.py`` pins
the tree above. Over Temporal, a refusal an activity raises
reaches the workflow as an ``ApplicationError`` whose ``type`` is the refusal's code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockgate._errors import (
    ConfigurationError,
    DeclarationError,
    LockgateError,
    RefusedError,
    SetupError,
)
from lockgate._lazy import lazy_names

if TYPE_CHECKING:
    from lockgate.activities._refusal import Refusal
    from lockgate.cli._output import CommandError
    from lockgate.devserver import DevServerError
    from lockgate.encryption._codec import PayloadDecryptionError
    from lockgate.encryption._keys import PayloadKeysError
    from lockgate.encryption._server import CodecAccessError
    from lockgate.graphs._declare import GraphDeclarationError
    from lockgate.identity._enrolment import EnrolmentRefused, EnrolmentSecretError
    from lockgate.identity._identity_errors import IdentityError, ProofRefused
    from lockgate.identity._seals import WorkerSecretError
    from lockgate.namespace import SearchAttributesMissingError
    from lockgate.serving._names import ToolNameError
    from lockgate.tools._events import ToolFailure
    from lockgate.tools._tool import ArgumentsInvalid, ToolDeclarationError
    from lockgate.tools._verification import VerificationError
    from lockgate.workflows._carry import CarriedStateError
    from lockgate.workflows._catalogue import CatalogueError
    from lockgate.workflows._failures import UnreadableStart
    from lockgate.workflows._graph_workflow import UnservedVersionError
    from lockgate.workflows._history_seals import UnsealedHistoryError
    from lockgate.workflows._signed_starts import StartRefusedError

__all__ = [
    "ArgumentsInvalid",
    "CarriedStateError",
    "CatalogueError",
    "CodecAccessError",
    "CommandError",
    "ConfigurationError",
    "DeclarationError",
    "DevServerError",
    "EnrolmentRefused",
    "EnrolmentSecretError",
    "GraphDeclarationError",
    "IdentityError",
    "LockgateError",
    "PayloadDecryptionError",
    "PayloadKeysError",
    "ProofRefused",
    "Refusal",
    "RefusedError",
    "SearchAttributesMissingError",
    "SetupError",
    "StartRefusedError",
    "ToolDeclarationError",
    "ToolFailure",
    "ToolNameError",
    "UnreadableStart",
    "UnsealedHistoryError",
    "UnservedVersionError",
    "VerificationError",
    "WorkerSecretError",
]

_HOMES = {
    "ArgumentsInvalid": "lockgate.tools._tool",
    "CarriedStateError": "lockgate.workflows._carry",
    "CatalogueError": "lockgate.workflows._catalogue",
    "CodecAccessError": "lockgate.encryption._server",
    "CommandError": "lockgate.cli._output",
    "DevServerError": "lockgate.devserver",
    "EnrolmentRefused": "lockgate.identity._enrolment",
    "EnrolmentSecretError": "lockgate.identity._enrolment",
    "GraphDeclarationError": "lockgate.graphs._declare",
    "IdentityError": "lockgate.identity._identity_errors",
    "PayloadDecryptionError": "lockgate.encryption._codec",
    "PayloadKeysError": "lockgate.encryption._keys",
    "ProofRefused": "lockgate.identity._identity_errors",
    "Refusal": "lockgate.activities._refusal",
    "SearchAttributesMissingError": "lockgate.namespace",
    "StartRefusedError": "lockgate.workflows._signed_starts",
    "ToolDeclarationError": "lockgate.tools._tool",
    "ToolFailure": "lockgate.tools._events",
    "ToolNameError": "lockgate.serving._names",
    "UnreadableStart": "lockgate.workflows._failures",
    "UnsealedHistoryError": "lockgate.workflows._history_seals",
    "UnservedVersionError": "lockgate.workflows._graph_workflow",
    "VerificationError": "lockgate.tools._verification",
    "WorkerSecretError": "lockgate.identity._seals",
}
"""Where each exception below the roots is defined: imported from there on first use."""


__getattr__, __dir__ = lazy_names(globals(), _HOMES)

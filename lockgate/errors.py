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
    │   ├── SignInError
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

from lockgate._lazy import lazy_exports

# Every exception of the tree above, each listed once: imported here for type checkers, and
# served on first use (see lockgate._lazy), so this module stays light.
if TYPE_CHECKING:
    from lockgate._errors import ConfigurationError as ConfigurationError
    from lockgate._errors import DeclarationError as DeclarationError
    from lockgate._errors import LockgateError as LockgateError
    from lockgate._errors import RefusedError as RefusedError
    from lockgate._errors import SetupError as SetupError
    from lockgate.activities._refusal import Refusal as Refusal
    from lockgate.cli._output import CommandError as CommandError
    from lockgate.devserver import DevServerError as DevServerError
    from lockgate.encryption._codec import PayloadDecryptionError as PayloadDecryptionError
    from lockgate.encryption._keys import PayloadKeysError as PayloadKeysError
    from lockgate.encryption._server import CodecAccessError as CodecAccessError
    from lockgate.graphs._declare import GraphDeclarationError as GraphDeclarationError
    from lockgate.identity._enrolment import EnrolmentRefused as EnrolmentRefused
    from lockgate.identity._enrolment import EnrolmentSecretError as EnrolmentSecretError
    from lockgate.identity._identity_errors import IdentityError as IdentityError
    from lockgate.identity._identity_errors import ProofRefused as ProofRefused
    from lockgate.identity._seals import WorkerSecretError as WorkerSecretError
    from lockgate.namespace import SearchAttributesMissingError as SearchAttributesMissingError
    from lockgate.serving._names import ToolNameError as ToolNameError
    from lockgate.sso import SignInError as SignInError
    from lockgate.tools._events import ToolFailure as ToolFailure
    from lockgate.tools._tool import ArgumentsInvalid as ArgumentsInvalid
    from lockgate.tools._tool import ToolDeclarationError as ToolDeclarationError
    from lockgate.tools._verification import VerificationError as VerificationError
    from lockgate.workflows._carry import CarriedStateError as CarriedStateError
    from lockgate.workflows._catalogue import CatalogueError as CatalogueError
    from lockgate.workflows._graph_workflow import UnservedVersionError as UnservedVersionError
    from lockgate.workflows._history_seals import UnsealedHistoryError as UnsealedHistoryError
    from lockgate.workflows._signed_starts import StartRefusedError as StartRefusedError
    from lockgate.workflows._undecodable_starts import UnreadableStart as UnreadableStart

__getattr__, __dir__, __all__ = lazy_exports(globals())

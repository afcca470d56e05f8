"""The ``lockgate`` command: a dev stack, a worker, and every client operation.

Human-readable by default, ``--json`` for scripts. A refusal prints its sentence and exits 1;
a usage mistake exits 2. Connection settings follow Temporal's conventions: ``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE``, TLS and API-key variables, and env-config profiles (``--profile``).

One module per command family, so the file's name says where a command lives:

- ``_runs``: ``start``, ``show``, ``list``, ``pending``, ``decide``, ``resume``
- ``_sign``: ``sign start|decide|resume``
- ``_tools``: ``tools list|call|confirm``
- ``_keys``: ``keys new`` and ``secret new|rotate|retire``
- ``_login``: ``login`` (a sign-in at the identity provider, remembered per user)
- ``_setup``: ``setup``; ``_worker``: ``worker``; ``_dev``: ``dev``

Shared by them: ``_arguments`` (the parser), ``_settings`` (flags and environment: paths,
the signer, a key's or a sign-in's, the connection), ``_output`` (``--json``, refusals, exit
statuses), ``_logs`` (where a serving command's log goes) and ``_entry`` (running a command and
ending the process).
"""

from lockgate.cli._arguments import build_parser
from lockgate.cli._entry import entry, main

__all__ = ["entry", "main"]

_parser = build_parser
"""The whole command line's parser; ``tests/test_docs.py`` checks the commands of the README and
the docs against it, and the docs' command line reference is generated from it."""

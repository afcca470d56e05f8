"""Key material on disk: ``lockgate keys new`` (a principal's key) and ``lockgate secret new``,
``rotate`` and ``retire`` (the workers' shared secret). Neither talks to Temporal."""

from __future__ import annotations

import argparse

from lockgate.cli._output import CommandError
from lockgate.cli._settings import keys_dir, secret_path
from lockgate.gating import IdentityError, WorkerSecret, WorkerSecretError, new_identity

__all__ = ["manage_worker_secret", "new_key"]


def manage_worker_secret(arguments: argparse.Namespace) -> int:
    """``lockgate secret new|rotate|retire``: makes, rotates or trims the worker secret."""
    target = getattr(arguments, "secret_file", None)
    try:
        if arguments.secret_command == "new":
            secret = WorkerSecret.generate()
            if target is None:
                print(secret.to_text(), end="")
                return 0
            written = secret.write(target)
            print(f"# worker secret written to {written} (mode 0600); copy it to every worker")
            return 0
        path = secret_path(arguments)
        current = WorkerSecret.load(path)
        if arguments.secret_command == "rotate":
            updated = current.rotated()
            note = f"new current key {updated.current}; {', '.join(current.key_ids)} still open"
        else:
            updated = current.retired(arguments.key_id)
            note = f"key {arguments.key_id} retired"
        updated.write(path, overwrite=True)
    except WorkerSecretError as error:
        raise CommandError(str(error)) from None
    print(f"# {path}: {note}; copy it to every worker, then restart them")
    return 0


def new_key(arguments: argparse.Namespace) -> int:
    """``lockgate keys new PRINCIPAL``: writes a private key and prints its Directory entry."""
    try:
        made = new_identity(arguments.principal, keys_dir(arguments))
    except IdentityError as error:
        raise CommandError(str(error)) from None
    print(f"# private key written to {made.key_path} (keep it; it never goes in a Directory)")
    print("# add this to the worker's Directory file, with the roles and scopes it holds:")
    print(made.directory_entry_toml)
    return 0

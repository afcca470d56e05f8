"""Key material on disk: ``lockgate keys new`` (a principal's key), ``lockgate keys enrol`` (a
code to register a passkey with) and ``lockgate secret new``, ``rotate`` and ``retire`` (the
workers' shared secret). None of them talks to Temporal."""

from __future__ import annotations

import argparse
import json
import time

from lockgate.cli._output import CommandError, print_new_secret
from lockgate.cli._settings import enrolment_secret_path, keys_dir, secret_path
from lockgate.identity._directory import DirectoryEntry, add_directory_entry
from lockgate.identity._enrolment import EnrolmentSecret, EnrolmentSecretError
from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._keys import new_identity
from lockgate.identity._names import check_principal_name
from lockgate.identity._seals import WorkerSecret, WorkerSecretError

__all__ = ["enrolment_secret", "manage_keys", "manage_worker_secret"]


def manage_worker_secret(arguments: argparse.Namespace) -> int:
    """``lockgate secret new|rotate|retire``: makes, rotates or trims the worker secret."""
    target = getattr(arguments, "secret_file", None)
    try:
        if arguments.secret_command == "new":
            return print_new_secret(
                WorkerSecret.generate(), target, what="worker secret", to="it to every worker"
            )
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


def manage_keys(arguments: argparse.Namespace) -> int:
    """``lockgate keys new|enrol PRINCIPAL``."""
    if arguments.keys_command == "enrol":
        return _enrol(arguments)
    return _new_key(arguments)


def enrolment_secret(arguments: argparse.Namespace, *, make: bool) -> EnrolmentSecret | None:
    """The enrolment secret; made (and written) where ``make`` and there is none yet, else None
    where there is none.

    Raises:
        CommandError: the file is there but unusable, or cannot be written.
    """
    path = enrolment_secret_path(arguments)
    try:
        if path.exists():
            return EnrolmentSecret.load(path)
        if not make:
            return None
        made = EnrolmentSecret.generate()
        made.write(path)
        return made
    except EnrolmentSecretError as error:
        raise CommandError(str(error)) from None


def _enrol(arguments: argparse.Namespace) -> int:
    """``lockgate keys enrol PRINCIPAL``: prints a code that lets PRINCIPAL register a passkey."""
    try:
        check_principal_name(arguments.principal)
    except IdentityError as error:
        raise CommandError(str(error)) from None
    if not (0 < arguments.valid_for <= 24 * 30):
        raise CommandError("--valid-for is a number of hours, more than 0 and at most 720.")
    secret = enrolment_secret(arguments, make=True)
    assert secret is not None
    expires_at = int(time.time() + arguments.valid_for * 3600)
    code = secret.code(arguments.principal, expires_at)
    until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(expires_at))
    print(f"# enrolment code for {arguments.principal}, good until {until}:")
    print(code)
    print(
        f"# {arguments.principal} enters it in the inbox (who you are → a passkey) with their "
        "name; the inbox reads the same enrolment secret "
        f"({enrolment_secret_path(arguments)})."
    )
    return 0


def _new_key(arguments: argparse.Namespace) -> int:
    """``lockgate keys new PRINCIPAL [--role R] [--scope S] [--directory FILE]``: writes a
    private key, and its Directory entry into FILE (or, without ``--directory``, prints it)."""
    principal, target = arguments.principal, getattr(arguments, "directory", None)
    roles, scopes = arguments.roles or [], arguments.scopes or []
    made = []

    def make() -> str:
        made.append(new_identity(principal, keys_dir(arguments), roles, scopes))
        return made[0].directory_entry_toml

    try:
        DirectoryEntry(principal, roles=frozenset(roles), scopes=frozenset(scopes))
        written = add_directory_entry(target, principal, make) if target else None
        entry = make() if written is None else None
    except IdentityError as error:
        raise CommandError(str(error)) from None
    print(f"# private key written to {made[0].key_path} (keep it; it never goes in a Directory)")
    if written is not None:
        held = f"roles {json.dumps(sorted(roles))} and scopes {json.dumps(sorted(scopes))}"
        print(f"# {principal} added to the Directory {written} with {held}")
        return 0
    print("# add this to the worker's Directory file, with the roles and scopes it holds:")
    print(entry)
    return 0

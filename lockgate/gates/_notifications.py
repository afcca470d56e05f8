"""Notifications: who is told when a gate opens or closes, and what they are sent.

Each :class:`Webhook` serves one role. A ``slack`` webhook gets Slack's incoming-webhook JSON
(``{"text": ...}``, which Slack-compatible chat tools take too); a ``json`` webhook gets the event
as JSON, signed with a shared secret the receiver checks::

    X-Lockgate-Timestamp: 1764576000
    X-Lockgate-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>

Both carry a link to the gate in the inbox. The secret comes from an environment variable the
configuration names, never from the file itself.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from lockgate.identity._identity_errors import IdentityError
from lockgate.identity._quoting import a_role, quoted

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "GateEvent",
    "Notifications",
    "Webhook",
    "signature_of",
    "webhook_request",
]

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class Webhook:
    """One webhook told of the gates of one role.

    Attributes:
        name: A short name, unique in the configuration (it names the delivery).
        role: The gates it is told about: those asking this role.
        url: Where events are posted.
        kind: ``slack`` (incoming-webhook JSON) or ``json`` (the event, signed).
        secret: The shared secret a ``json`` webhook's body is signed with.
    """

    name: str
    role: str
    url: str
    kind: Literal["slack", "json"] = "json"
    secret: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise IdentityError(f"A webhook's name {quoted(self.name)} must be a short word.")
        if not self.url.startswith(("http://", "https://")):
            raise IdentityError(f"Webhook {quoted(self.name)}: its url must be http(s).")
        if self.kind not in ("slack", "json"):
            raise IdentityError(f"Webhook {quoted(self.name)}: kind is 'slack' or 'json'.")
        if self.kind == "json" and not self.secret:
            raise IdentityError(
                f"Webhook {quoted(self.name)} posts signed JSON and needs its shared secret "
                "(secret_env names the variable holding it)."
            )


@dataclass(frozen=True)
class Notifications:
    """The webhooks of a deployment, and where the inbox is.

    Attributes:
        webhooks: Every webhook.
        inbox_url: The inbox's address, for links (``http://localhost:8240``).
        poll_seconds: How often a worker looks for gates that opened or closed.
        attempts: How many times a delivery is tried before it is given up (and audited).
    """

    webhooks: tuple[Webhook, ...]
    inbox_url: str | None = None
    poll_seconds: float = 2.0
    attempts: int = 5

    def __post_init__(self) -> None:
        object.__setattr__(self, "webhooks", tuple(self.webhooks))
        names = [hook.name for hook in self.webhooks]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise IdentityError(f"Two webhooks are named {quoted(repeated[0])}.")

    def for_role(self, role: str) -> tuple[Webhook, ...]:
        """The webhooks told about gates asking ``role``."""
        return tuple(hook for hook in self.webhooks if hook.role == role)

    def named(self, name: str) -> Webhook | None:
        """The webhook called ``name``."""
        return next((hook for hook in self.webhooks if hook.name == name), None)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Notifications:
        """Reads a TOML file.

        For example::

            inbox_url = "http://localhost:8240"

            [[webhooks]]
            name = "editors"
            role = "editor"
            url = "https://hooks.slack.com/services/..."
            kind = "slack"

            [[webhooks]]
            name = "audit"
            role = "editor"
            url = "https://audit.example/lockgate"
            secret_env = "LOCKGATE_AUDIT_WEBHOOK_SECRET"

        Raises:
            IdentityError: the file is not such a configuration, or a secret's variable is unset.
        """
        source = str(path)
        try:
            document = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise IdentityError(f"Cannot read the notifications {source}: {error}.") from None
        hooks = []
        for raw in document.get("webhooks", []):
            if not isinstance(raw, dict):
                raise IdentityError(f"{source}: webhooks are [[webhooks]] tables.")
            unknown = sorted(set(raw) - {"name", "role", "url", "kind", "secret_env"})
            if unknown:
                raise IdentityError(
                    f"{source}: a webhook has an unknown field {quoted(unknown[0])}."
                )
            secret = None
            if raw.get("secret_env"):
                secret = os.environ.get(str(raw["secret_env"]))
                if not secret:
                    raise IdentityError(
                        f"{source}: the variable {quoted(str(raw['secret_env']))} holding "
                        f"webhook {quoted(str(raw.get('name')))}'s secret is not set."
                    )
            hooks.append(
                Webhook(
                    str(raw.get("name", "")),
                    str(raw.get("role", "")),
                    str(raw.get("url", "")),
                    raw.get("kind", "json"),
                    secret,
                )
            )
        return cls(
            tuple(hooks),
            inbox_url=document.get("inbox_url"),
            poll_seconds=float(document.get("poll_seconds", 2.0)),
            attempts=int(document.get("attempts", 5)),
        )


@dataclass(frozen=True)
class GateEvent:
    """A gate that opened or closed, as its webhooks are told of it (no secret, nothing held)."""

    event: Literal["gate.opened", "gate.closed"]
    run_id: str
    graph: str
    gate: str
    role: str
    because: str = ""
    requester: str = ""
    choices: tuple[str, ...] = ()
    answered_by: str | None = None
    answer: str | None = None
    outcome: str | None = None

    def link(self, inbox_url: str | None) -> str | None:
        """The run's page in the inbox."""
        if not inbox_url:
            return None
        return f"{inbox_url.rstrip('/')}/runs/{quote(self.run_id, safe=':')}"

    def as_json(self, inbox_url: str | None) -> dict[str, Any]:
        """The ``json`` webhook's body."""
        return {
            "event": self.event,
            "run_id": self.run_id,
            "graph": self.graph,
            "gate": self.gate,
            "role": self.role,
            "because": self.because,
            "requester": self.requester,
            "choices": list(self.choices),
            "answered_by": self.answered_by,
            "answer": self.answer,
            "outcome": self.outcome,
            "link": self.link(inbox_url),
        }

    def as_slack(self, inbox_url: str | None) -> dict[str, Any]:
        """The ``slack`` webhook's body: one line of text with the link."""
        link = self.link(inbox_url)
        where = f"<{link}|{self.run_id}>" if link else self.run_id
        if self.event == "gate.opened":
            text = (
                f"A gate for {a_role(self.role)} opened on {where} ({self.graph}): {self.because} "
                f"Options: {', '.join(self.choices)}."
            )
        elif self.answered_by:
            text = f"{self.answered_by} answered {self.answer} on {where} ({self.graph})."
        else:
            text = (
                f"The gate on {where} ({self.graph}) closed: the run {self.outcome or 'moved on'}."
            )
        return {"text": text}

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> GateEvent:
        """Reads :meth:`to_dict`'s output."""
        fields = dict(value)
        fields["choices"] = tuple(fields.get("choices") or ())
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON data (a workflow's input)."""
        return {**self.__dict__, "choices": list(self.choices)}


def signature_of(secret: str, timestamp: int, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 with ``secret`` over ``"<timestamp>." + body``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def webhook_request(
    hook: Webhook, event: GateEvent, inbox_url: str | None, timestamp: int
) -> tuple[bytes, dict[str, str]]:
    """The body and headers posted to ``hook`` for ``event``."""
    payload = event.as_slack(inbox_url) if hook.kind == "slack" else event.as_json(inbox_url)
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "lockgate"}
    if hook.kind == "json" and hook.secret:
        headers["X-Lockgate-Timestamp"] = str(timestamp)
        headers["X-Lockgate-Signature"] = signature_of(hook.secret, timestamp, body)
    return body, headers

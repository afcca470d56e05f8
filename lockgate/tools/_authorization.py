"""The authorizer: may this caller, on this channel, run this tool? Every denial says why.

The pipeline's ``authorize`` stage. (A *gate*, in lockgate, is where a run waits for people.)
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from lockgate.identity._names import UNVERIFIED_PREFIX
from lockgate.tools._configuration import check_flag, check_setting, refused_setting
from lockgate.tools._context import ToolContext

__all__ = [
    "DEADLINE_CHANNEL",
    "DEFAULT_CHANNEL_POLICIES",
    "FAIL_CLOSED_POLICY",
    "PRIVATE_HOLDINGS",
    "Authorizer",
    "ChannelPolicy",
    "ConsentGrant",
    "GovernedTool",
    "PolicyDecision",
    "PolicyRule",
    "PolicyRuleProvider",
    "check_channel_policy",
    "format_scopes",
]

_log = logging.getLogger("lockgate.policy")


class GovernedTool(Protocol):
    """What the authorizer needs to know of a tool."""

    @property
    def name(self) -> str: ...

    @property
    def scopes(self) -> frozenset[str]: ...

    @property
    def mutating(self) -> bool: ...

    @property
    def confirm(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ChannelPolicy:
    """How a channel is governed.

    Attributes:
        allow_all: Allows at the last step (it never skips authentication, consent or scopes).
        require_auth: Refuses a call that names no principal, or names an unverified caller
            (``unverified:<channel>``, a caller on Temporal that sent no proof).
        block_mutating: Refuses every mutating tool on this channel.
        require_confirmation_for_mutating: A mutating tool asks for a confirmation token first.
        confirmation_requires_signature: A tool that needs confirmation runs only with consent
            presented as a signature or grant naming the call; there is no token to click.
        signature_is_consent: A verified signature naming the call counts as its confirmation.
            Off where a server signs for its caller without asking anyone (``lockgate mcp --as``).
    """

    allow_all: bool = False
    require_auth: bool = False
    block_mutating: bool = False
    require_confirmation_for_mutating: bool = False
    confirmation_requires_signature: bool = False
    signature_is_consent: bool = True

    def __post_init__(self) -> None:
        # A flag given as the string "false" is truthy: it would mean its opposite, silently.
        for name in self.__slots__:
            check_flag("ChannelPolicy", name, getattr(self, name))

    @classmethod
    def parse(cls, flags: str) -> ChannelPolicy:
        """The policy a comma-separated list of flags spells, as ``lockgate worker --channel``
        takes it: ``require_auth,block_mutating`` turns those on, ``no_signature_is_consent``
        turns that one off; a flag not named keeps its default, and ``""`` is all defaults.

        Raises:
            ValueError: A word is not a flag, or a flag is named twice; the sentence lists the
                flags there are.
        """
        settings: dict[str, bool] = {}
        for word in (part.strip() for part in flags.split(",")):
            if not word:
                continue
            name = word.removeprefix("no_")
            if name not in cls.__slots__:
                raise ValueError(
                    f"{word!r} is not a channel policy flag: name any of "
                    f"{', '.join(cls.__slots__)}, each on, or off as no_<flag>."
                )
            if name in settings:
                raise ValueError(f"The flag {name!r} is named twice.")
            settings[name] = name == word
        return cls(**settings)


DEADLINE_CHANNEL = "(deadline)"
"""The channel of a gate's deadline when it takes an option: the system's, which nobody sends."""

DEFAULT_CHANNEL_POLICIES: Mapping[str, ChannelPolicy] = {
    "cli": ChannelPolicy(confirmation_requires_signature=True),
    "tui": ChannelPolicy(confirmation_requires_signature=True),
    # `lockgate mcp --as agent` signs every call of its agent itself: that says who, not that
    # anyone said yes, so a tool that asks for confirmation still asks.
    "mcp": ChannelPolicy(require_auth=True, signature_is_consent=False),
    # `lockgate mcp --http`'s JSON API, which like MCP signs for its caller without asking.
    "http": ChannelPolicy(require_auth=True, signature_is_consent=False),
    "telegram": ChannelPolicy(require_confirmation_for_mutating=True),
    "web": ChannelPolicy(require_auth=True),
    # Unsigned callers reaching a worker through Temporal (the `temporal` CLI, the UI, a client
    # with no signer). They hold nothing, so only tools that need no scope run for them.
    "temporal": ChannelPolicy(),
    # A gate's deadline taking its declared option (the system, never a person). No caller can
    # name this channel (a start's channel is letters, digits and ._@:-), and it holds nothing.
    DEADLINE_CHANNEL: ChannelPolicy(),
}
"""The built-in channels. Any other channel is governed by :data:`FAIL_CLOSED_POLICY`."""

FAIL_CLOSED_POLICY = ChannelPolicy(require_auth=True)
"""What an unregistered channel gets: authentication required, nothing allowed by default."""


def format_scopes(scopes: Iterable[str]) -> str:
    """``"a, b"`` in sorted order, or ``"(none)"``."""
    ordered = sorted(scopes)
    return ", ".join(ordered) if ordered else "(none)"


PRIVATE_HOLDINGS = "holdings_private"
"""A context mark: refusals must not list what the caller holds (they are written to history)."""


def _lacks_scope(ctx: ToolContext, scopes: Iterable[str], needs: str, check: str) -> PolicyDecision:
    """The refusal of a caller that holds none of ``scopes``: ``needs`` says who needs one of
    them, and what the caller holds follows — or, where refusals are written down for others to
    read, who lacks it without listing what they hold."""
    if ctx.extra.get(PRIVATE_HOLDINGS):
        holds = f", which {ctx.principal or 'this caller'} does not hold"
    else:
        holds = f" — context has: {format_scopes(ctx.scopes)}"
    return PolicyDecision(False, f"{needs}{format_scopes(scopes)}{holds}.", check)


def _operation_id(name: str) -> str:
    # `config.set`, `config:set` and `config_set` name one act.
    return re.sub(r"[:_]", ".", name.strip().lower()).strip(".")


@dataclass(frozen=True, slots=True)
class ConsentGrant:
    """A recorded "yes" to one operation, optionally bound to argument values.

    Put grants in ``ctx.extra["consent.grants"]`` (a list) to let a session that already said yes
    run a tool whose channel takes consent as a signature.
    """

    operation: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def covers(self, tool: str, arguments: Mapping[str, Any]) -> bool:
        """Whether this grant names ``tool`` and every bound argument has the granted value."""
        if _operation_id(self.operation) != _operation_id(tool):
            return False
        return all(
            key in arguments and arguments[key] == value for key, value in self.arguments.items()
        )


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """A host's rule for one (channel, principal, tool), as a :class:`PolicyRuleProvider` finds.

    Attributes:
        id: How the rule is named in denials.
        effect: ``"allow"`` admits the call; anything else denies it.
        scopes: When set, the caller must hold one of these for the rule to apply at all.
        description: Said verbatim when the rule denies.
    """

    id: str | int
    effect: Literal["allow", "deny"]
    scopes: frozenset[str] = frozenset()
    description: str | None = None


class PolicyRuleProvider(Protocol):
    """A host's store of rules (a database table, a config file)."""

    def find_matching_rule(
        self, channel: str, principal: str | None, tool: str, mutating: bool
    ) -> PolicyRule | None:
        """The rule that governs this call, or ``None`` to fall through to the channel policy."""
        ...


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """The authorizer's verdict (a :class:`~lockgate.tools._verdict.Verdict`).

    Attributes:
        allowed: Whether the call may go on.
        reason: Why not, in a sentence naming the check and what was missing.
        code: The check that denied (``require_auth``, ``consent``, ``scopes``, ``rule``,
            ``block_mutating``).
        needs_confirmation: An allowed call must still be confirmed before it runs.
    """

    allowed: bool
    reason: str | None = None
    code: str | None = None
    needs_confirmation: bool = False


_ALLOWED = PolicyDecision(True)
_ALLOWED_AFTER_CONFIRMATION = PolicyDecision(True, needs_confirmation=True)


class Authorizer:
    """Authorizes calls: authentication, consent, scopes, host rules, then the channel policy.

    The pipeline's ``authorize`` stage. The checks run in that order and the first that fails
    decides, with a sentence naming the check and what was missing. A channel nobody
    registered fails closed.

    Example::

        authorizer = Authorizer(rules=HostRules())  # the built-in channels, and your rules
        registry = ToolRegistry(authorizer=authorizer)
    """

    def __init__(
        self,
        policies: Mapping[str, ChannelPolicy] | None = None,
        rules: PolicyRuleProvider | None = None,
    ) -> None:
        check_setting(
            "Authorizer",
            "policies",
            policies,
            Mapping,
            "a mapping of channel names to ChannelPolicy",
            optional=True,
        )
        self._policies: dict[str, ChannelPolicy] = {}
        for channel, policy in (DEFAULT_CHANNEL_POLICIES if policies is None else policies).items():
            self._register("Authorizer", channel, policy)
        if rules is not None and not callable(getattr(rules, "find_matching_rule", None)):
            raise refused_setting(
                "Authorizer", "rules", rules, "a PolicyRuleProvider (with find_matching_rule)"
            )
        self.rules = rules

    def set_channel_policy(self, channel: str, policy: ChannelPolicy) -> None:
        """Registers or replaces the policy of ``channel``.

        Raises:
            TypeError: ``channel`` is not a string, or ``policy`` not a :class:`ChannelPolicy`.
        """
        self._register("Authorizer.set_channel_policy", channel, policy)

    def _register(self, where: str, channel: str, policy: ChannelPolicy) -> None:
        # Checked here, once: a dict taken as a policy would fail every later call on the channel.
        check_channel_policy(where, channel, policy)
        self._policies[channel] = policy

    def policy_for(self, channel: str) -> ChannelPolicy:
        """The policy of ``channel``, or the fail-closed policy when it is not registered."""
        policy = self._policies.get(channel)
        if policy is None:
            _log.warning(
                "channel %r is not a registered channel: falling back to a FAIL-CLOSED policy "
                "(require_auth, no allow_all). Register it: LockgatePlugin(channels={...}) or "
                "lockgate worker --channel NAME=FLAGS.",
                channel,
            )
            return FAIL_CLOSED_POLICY
        return policy

    def requires_confirmation(self, ctx: ToolContext, tool: GovernedTool) -> bool:
        """Whether the call must be confirmed before it runs.

        A call carrying a verified signature (``ctx.extra["signer"]``) is already consented.
        """
        policy = self._policies.get(ctx.channel, FAIL_CLOSED_POLICY)
        return _needs_confirmation(ctx, tool, policy)

    def authorize(
        self,
        ctx: ToolContext,
        tool: GovernedTool,
        arguments: Mapping[str, Any] | None = None,
    ) -> PolicyDecision:
        """Judges one call; see the class docstring for the order of checks."""
        policy = self._policies.get(ctx.channel) or self.policy_for(ctx.channel)
        if policy.require_auth and not _authenticated(ctx.principal):
            return PolicyDecision(False, self._unauthenticated(ctx), "require_auth")
        # Inlined _needs_confirmation: this runs on every call.
        needs_confirmation = (
            tool.confirm or (tool.mutating and policy.require_confirmation_for_mutating)
        ) and not (policy.signature_is_consent and ctx.extra.get("signer"))
        if needs_confirmation and policy.confirmation_requires_signature:
            if not _consented(ctx, tool.name, arguments or {}):
                return PolicyDecision(
                    False,
                    f"'{tool.name}' needs explicit consent, and channel '{ctx.channel}' takes "
                    "consent as a signature or grant naming this call; none was presented.",
                    "consent",
                )
            # On this channel the grant is the confirmation: there is no token to click.
            needs_confirmation = False
        if tool.scopes and not ctx.has_any_scope(tool.scopes):
            needs = f"Missing required scope for tool '{tool.name}'. Need one of: "
            return _lacks_scope(ctx, tool.scopes, needs, "scopes")
        if self.rules is not None:
            rule = self.rules.find_matching_rule(
                ctx.channel, ctx.principal, tool.name, tool.mutating
            )
            if rule is not None:
                verdict = _judge_rule(rule, ctx, tool)
                return _after_confirmation(verdict, needs_confirmation)
        if policy.block_mutating and tool.mutating and not policy.allow_all:
            return PolicyDecision(
                False,
                f"Mutating tool '{tool.name}' is blocked on channel '{ctx.channel}' "
                "(block_mutating policy).",
                "block_mutating",
            )
        return _ALLOWED_AFTER_CONFIRMATION if needs_confirmation else _ALLOWED

    def _unauthenticated(self, ctx: ToolContext) -> str:
        """Why ``ctx`` does not pass ``require_auth``: no principal, or an unverified one."""
        which = (
            "require_auth"
            if ctx.channel in self._policies
            else "require_auth: it is not a registered channel, so it fails closed"
        )
        if not ctx.principal:
            who = "none was provided"
        else:
            who = f"{ctx.principal} is not one: a caller that sent no proof is never authenticated"
        return f"Channel '{ctx.channel}' requires an authenticated principal ({which}), and {who}."


def check_channel_policy(where: str, channel: object, policy: object) -> None:
    """Raises a :class:`TypeError` naming ``where`` unless ``channel`` is a string and
    ``policy`` a :class:`ChannelPolicy`."""
    check_setting(where, "channel", channel, str, "a channel name")
    check_setting(
        where,
        f"the policy of channel {channel!r}",
        policy,
        ChannelPolicy,
        "a ChannelPolicy (ChannelPolicy(require_auth=True, ...))",
    )


def _authenticated(principal: str | None) -> bool:
    # A principal named unverified:<channel> is how lockgate names a caller on Temporal that sent
    # no proof (no real principal may be named so): a name, never an authentication.
    if not principal:
        return False
    return not principal.startswith(UNVERIFIED_PREFIX)


def _needs_confirmation(ctx: ToolContext, tool: GovernedTool, policy: ChannelPolicy) -> bool:
    if not (tool.confirm or (tool.mutating and policy.require_confirmation_for_mutating)):
        return False
    # A call carrying a verified signature naming it is already consented, where that counts.
    return not (policy.signature_is_consent and ctx.extra.get("signer"))


def _after_confirmation(verdict: PolicyDecision, needs_confirmation: bool) -> PolicyDecision:
    if verdict.allowed and needs_confirmation:
        return _ALLOWED_AFTER_CONFIRMATION
    return verdict


def _consented(ctx: ToolContext, tool: str, arguments: Mapping[str, Any]) -> bool:
    grants: Sequence[object] = list(ctx.extra.get("consent.grants") or ())
    single = ctx.extra.get("consent.grant")
    if single is not None:
        grants = [*grants, single]
    return any(
        isinstance(grant, ConsentGrant) and grant.covers(tool, arguments) for grant in grants
    )


def _judge_rule(rule: PolicyRule, ctx: ToolContext, tool: GovernedTool) -> PolicyDecision:
    if rule.scopes and not ctx.has_any_scope(rule.scopes):
        needs = f"Policy rule #{rule.id} for tool '{tool.name}' requires one of these scopes: "
        return _lacks_scope(ctx, rule.scopes, needs, "rule")
    if rule.effect == "allow":
        return _ALLOWED
    return PolicyDecision(
        False,
        rule.description
        or (
            f"Denied by policy rule #{rule.id} for tool '{tool.name}' on channel "
            f"'{ctx.channel}' (principal: {ctx.principal or '(none)'})."
        ),
        "rule",
    )

"""Who may run which tool, on which channel: the pipeline's ``authorize`` and ``confirm`` stages.

A :class:`~lockgate.ToolRegistry` authorizes every call with its :class:`Authorizer`: the
channel's :class:`ChannelPolicy` (authentication, consent, mutating tools, confirmation), the
scopes the tool declares, and any :class:`PolicyRule` of yours; a mutating tool may ask for a
confirmation token first, minted (a :class:`Confirmation`) and redeemed (a :class:`TokenCheck`)
by the registry's :class:`ConfirmationStore`.

Example::

    from lockgate import ToolRegistry
    from lockgate.authorization import Authorizer, ChannelPolicy

    authorizer = Authorizer()
    authorizer.set_channel_policy("kiosk", ChannelPolicy(require_auth=True, block_mutating=True))
    registry = ToolRegistry(authorizer=authorizer)
"""

from __future__ import annotations

from lockgate.tools._authorization import (
    Authorizer,
    ChannelPolicy,
    ConsentGrant,
    PolicyDecision,
    PolicyRule,
    PolicyRuleProvider,
)
from lockgate.tools._confirm import Confirmation, ConfirmationStore, TokenCheck

__all__ = [
    "Authorizer",
    "ChannelPolicy",
    "Confirmation",
    "ConfirmationStore",
    "ConsentGrant",
    "PolicyDecision",
    "PolicyRule",
    "PolicyRuleProvider",
    "TokenCheck",
]

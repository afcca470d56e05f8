"""A setting of the wrong type fails where it is given.

``set_channel_policy("evil", {...})`` used to be taken, and every later call on that channel
crashed with an AttributeError; a flag given as the string ``"false"`` meant True. Each public
configuration entry point now refuses such a setting at once, in a sentence naming where, the
setting, what it got and what it takes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from lockgate import InMemoryRateLimiter, LockgatePlugin, ToolRegistry, WorkerSecret, tool
from lockgate.authorization import Authorizer, ChannelPolicy
from lockgate.errors import GraphDeclarationError, ToolDeclarationError
from lockgate.graphs._compile import compile_graph
from lockgate.graphs._declare import ApprovalPolicy
from tests.helpers.gate_graphs import payment_graph


def refusal(configure: Callable[[], object]) -> str:
    with pytest.raises(TypeError) as refused:
        configure()
    return str(refused.value)


# Policies ---------------------------------------------------------------------------------------


def test_a_channel_policy_given_as_a_dict_is_refused_when_it_is_set() -> None:
    authorizer = Authorizer()

    assert refusal(lambda: authorizer.set_channel_policy("evil", {"require_auth": True})) == (  # type: ignore[arg-type]
        "Authorizer.set_channel_policy: the policy of channel 'evil' must be a ChannelPolicy "
        "(ChannelPolicy(require_auth=True, ...)), and it got dict {'require_auth': True}."
    )
    assert "evil" not in authorizer._policies


def test_a_channel_named_by_something_else_than_text_is_refused() -> None:
    assert refusal(lambda: Authorizer().set_channel_policy(7, ChannelPolicy())) == (  # type: ignore[arg-type]
        "Authorizer.set_channel_policy: channel must be a channel name, and it got int 7."
    )


def test_an_authorizer_built_with_a_dict_for_a_policy_is_refused() -> None:
    assert refusal(lambda: Authorizer({"web": {"require_auth": True}})) == (  # type: ignore[dict-item]
        "Authorizer: the policy of channel 'web' must be a ChannelPolicy "
        "(ChannelPolicy(require_auth=True, ...)), and it got dict {'require_auth': True}."
    )


def test_an_authorizer_built_with_a_list_of_policies_or_rules_it_cannot_ask_is_refused() -> None:
    assert "Authorizer: policies must be a mapping of channel names to ChannelPolicy or None, " in (
        refusal(lambda: Authorizer([ChannelPolicy()]))  # type: ignore[arg-type]
    )
    assert refusal(lambda: Authorizer(rules={"deny": "all"})) == (  # type: ignore[arg-type]
        "Authorizer: rules must be a PolicyRuleProvider (with find_matching_rule), and it got "
        "dict {'deny': 'all'}."
    )


def test_a_channel_policy_flag_given_as_text_is_refused() -> None:
    assert refusal(lambda: ChannelPolicy(require_auth="false")) == (  # type: ignore[arg-type]
        "ChannelPolicy: require_auth must be True or False, and it got str 'false'."
    )


def test_a_registry_given_a_dict_for_its_authorizer_is_refused() -> None:
    refused = refusal(lambda: ToolRegistry(authorizer={"web": ChannelPolicy()}))  # type: ignore[arg-type]

    assert refused.startswith(
        "ToolRegistry: authorizer must be an Authorizer or None, and it got dict {'web': "
        "ChannelPolicy("
    )


# Tools ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        ({"mutating": "yes"}, "mutating must be True or False, and it got str 'yes'."),
        ({"confirm": 1}, "confirm must be True or False, and it got int 1."),
        ({"scopes": ["notes:read", None]}, "scopes must be a list of non-empty names"),
        ({"sensitive": "token"}, "sensitive must be a list of non-empty names, and it got str"),
        ({"timeout": "30"}, "timeout must be a number of seconds, and it got str '30'."),
        ({"heartbeat": True}, "heartbeat must be a number of seconds or None, and it got bool"),
        ({"retry": {"max_attempts": 5}}, "retry must be a Retry (Retry(max_attempts=5)) or None"),
    ],
)
def test_a_tool_option_of_the_wrong_type_is_refused_when_declared(
    options: dict[str, Any], sentence: str
) -> None:
    with pytest.raises(ToolDeclarationError) as refused:
        tool("notes:wipe", "Wipes the notes", **options)

    assert str(refused.value).startswith("@tool('notes:wipe'): ")
    assert sentence in str(refused.value)


def test_tool_scopes_given_as_a_generator_are_read_once_and_kept() -> None:
    @tool("notes:read", "Reads notes", scopes=(scope for scope in ["notes:read"]))
    def read() -> str:
        return "notes"

    registry = ToolRegistry()
    registry.register(read)

    definition = registry.get("notes:read")
    assert definition is not None and definition.scopes == {"notes:read"}


# Gate policies ----------------------------------------------------------------------------------


def test_a_gate_policy_flag_given_as_text_is_refused_when_the_graph_compiles() -> None:
    policy = ApprovalPolicy("dual", 2, any_rejection_rejects="no")  # type: ignore[arg-type]

    with pytest.raises(GraphDeclarationError) as refused:
        compile_graph(payment_graph("pay:flagged", policy))

    assert str(refused.value) == (
        "Graph Pay_Flagged: Ask(Release)'s policy: any_rejection_rejects must be True or False, "
        "and it got str 'no'."
    )


def test_a_gate_policy_that_is_not_one_is_refused_when_the_graph_compiles() -> None:
    with pytest.raises(GraphDeclarationError, match="declares policy=\\{'approvals': 2\\}; use"):
        compile_graph(payment_graph("pay:dict", {"approvals": 2}))


# The plugin -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "sentence"),
    [
        (
            {"directory": {"ed": {"roles": ["editor"]}}},
            "LockgatePlugin: directory must be a Directory or the path of its TOML file or None, "
            "and it got dict {'ed': {'roles': ['editor']}}.",
        ),
        (
            {"secret": "hunter2"},
            "LockgatePlugin: secret must be a WorkerSecret (WorkerSecret.load(...)) or None, and "
            "it got str 'hunter2'.",
        ),
        (
            {"check_search_attributes": "false"},
            "LockgatePlugin: check_search_attributes must be True or False, and it got str "
            "'false'.",
        ),
        (
            {"tools": "notes:read"},
            "LockgatePlugin: tools must be a ToolRegistry or a list of @tool functions, and it "
            "got str 'notes:read'.",
        ),
        (
            {"graphs": 7},
            "LockgatePlugin: graphs must be a list of @graph classes, and it got int 7.",
        ),
        (
            {"audit": "audit.jsonl"},
            "LockgatePlugin: audit must be an AuditLogger or None, and it got str 'audit.jsonl'.",
        ),
        (
            {"relying_party": "http://localhost:8240"},
            "LockgatePlugin: relying_party must be a RelyingParty (RelyingParty.of_origins([...])) "
            "or None, and it got str 'http://localhost:8240'.",
        ),
        (
            {"notifications": ["https://example.com/hook"]},
            "LockgatePlugin: notifications must be a Notifications (Notifications.load(...)) or "
            "None, and it got list ['https://example.com/hook'].",
        ),
        (
            {"encryption": b"0" * 32},
            "LockgatePlugin: encryption must be PayloadKeys or an EncryptionCodec or None, and it "
            "got bytes",
        ),
        (
            {"models": ["support-model"]},
            "LockgatePlugin: models must be a mapping of model names to models or None, and it "
            "got list ['support-model'].",
        ),
        (
            {"rate_limiter": {"max_tokens": 10}},
            "LockgatePlugin: rate_limiter must be a RateLimiter (InMemoryRateLimiter() or "
            "RedisRateLimiter(url)), and it got dict {'max_tokens': 10}.",
        ),
        (
            {"rate_limiter": "redis://:hunter2@cache:6379/0"},
            "LockgatePlugin: rate_limiter must be a RateLimiter, and it got a string: give a "
            "store's URL as RedisRateLimiter(url).",
        ),
        (
            {"channels": ["slack"]},
            "LockgatePlugin: channels must be a mapping of channel names to ChannelPolicy "
            "({'slack': ChannelPolicy(...)}) or None, and it got list ['slack'].",
        ),
        (
            {"channels": {"slack": {"require_auth": True}}},
            "LockgatePlugin: the policy of channel 'slack' must be a ChannelPolicy "
            "(ChannelPolicy(require_auth=True, ...)), and it got dict {'require_auth': True}.",
        ),
        (
            {"unsealed_runs_before": "2026-12-04"},
            "LockgatePlugin: unsealed_runs_before must be a datetime with a time zone or None, "
            "and it got str '2026-12-04'.",
        ),
        (
            {"unsigned_starts": "support:refund"},
            "LockgatePlugin: unsigned_starts must be a list of @workflow.defn classes, their run "
            "methods or workflow type names, and it got str 'support:refund'.",
        ),
        (
            {"unsigned_starts": [42]},
            "LockgatePlugin: unsigned_starts must be a list of @workflow.defn classes, their run "
            "methods or workflow type names, and it got int 42.",
        ),
    ],
)
def test_a_plugin_setting_of_the_wrong_type_is_refused_when_the_plugin_is_built(
    settings: dict[str, Any], sentence: str
) -> None:
    settings.setdefault("secret", WorkerSecret.generate("test"))

    assert refusal(lambda: LockgatePlugin(**settings)).startswith(sentence)


def test_a_channel_no_caller_can_sign_with_is_refused_as_a_plugin_setting() -> None:
    # The deadline's channel is the system's: no caller names it, and no setting opens it.
    with pytest.raises(ValueError, match=r"LockgatePlugin: channels: '\(deadline\)' is not a "):
        LockgatePlugin(
            channels={"(deadline)": ChannelPolicy(allow_all=True)},
            secret=WorkerSecret.generate("test"),
        )


@pytest.mark.parametrize(
    ("moment", "sentence"),
    [
        (datetime(2026, 12, 4), "unsealed_runs_before must say its time zone"),
        (datetime.now(timezone.utc) + timedelta(days=1), "unsealed_runs_before is in the future"),
    ],
)
def test_a_plugin_refuses_a_moment_before_which_runs_are_unsealed_that_it_cannot_compare(
    moment: datetime, sentence: str
) -> None:
    """A moment in the future would leave the runs started until then unsealed."""
    with pytest.raises(ValueError, match=sentence):
        LockgatePlugin(secret=WorkerSecret.generate("test"), unsealed_runs_before=moment)


def test_a_plugin_given_a_limiter_and_a_registry_with_another_is_refused() -> None:
    registry = ToolRegistry(rate_limiter=InMemoryRateLimiter())

    sentence = refusal(
        lambda: LockgatePlugin(
            registry, rate_limiter=InMemoryRateLimiter(), secret=WorkerSecret.generate("test")
        )
    )

    assert sentence.startswith("LockgatePlugin: rate_limiter ")
    assert "the ToolRegistry given as tools has its own" in sentence


def test_a_plugins_limiter_counts_the_calls_of_its_registry() -> None:
    limiter = InMemoryRateLimiter()

    plugin = LockgatePlugin(rate_limiter=limiter, secret=WorkerSecret.generate("test"))

    assert plugin.registry.rate_limiter is limiter


def test_a_plugin_keeps_the_limiter_of_a_registry_given_as_its_tools() -> None:
    limiter = InMemoryRateLimiter()

    plugin = LockgatePlugin(ToolRegistry(rate_limiter=limiter), secret=WorkerSecret.generate("t"))

    assert plugin.registry.rate_limiter is limiter

"""The rules every call is judged by, under the name they had: kept for compatibility.

This package held three concerns, which now have a package each. It re-exports every name it
exported before, from the module that now defines it:

- :mod:`lockgate.identity`: keys and keyrings, proofs and their bindings, canonical JSON, the
  Verifier and passkeys, the Directory, enrolment and names, the worker secret's seals.
- :mod:`lockgate.tools`: the context a call is judged in, results and error codes, the policy
  gate, rate limits, confirmations, the audit record and its sinks, model-safe tool names.
- :mod:`lockgate.gates`: the Authority, gate and park records, approval policies, evidence, the
  judgements, notifications, and the limits on what a caller sends to a run.

lockgate's own modules import from those, never from here. Like them, this package never imports
temporalio.
"""

from lockgate.gates._authority import (
    Authority,
    answer_refusal_sentence,
    needed_phrase,
    node_refusal_sentence,
    why_node_refuses,
)
from lockgate.gates._evidence import evidence_problem, evidence_shown
from lockgate.gates._gates import ENDS_RUN, GateChoice, OpenGate, ParkedNode
from lockgate.gates._judgements import (
    MADE_THE_WORK,
    OWN_GATE,
    Judgement,
    ViewerChoice,
    judge_answer,
    judge_call,
    judge_cancel,
    judge_resume,
    judge_start,
    judge_start_inputs,
    judge_viewer,
)
from lockgate.gates._limits import (
    MAX_ANSWER_BYTES,
    MAX_DEPTH,
    MAX_REFUSED_SIGNALS_KEPT,
    MAX_SHOWN_ANSWER_CHARS,
    MAX_START_BYTES,
    MAX_SUBGRAPH_DEPTH,
    MAX_WAITING_SETTLES,
    TRAIL_PAGE,
    PayloadProblem,
    measure,
    shorten,
)
from lockgate.gates._notifications import (
    GateEvent,
    Notifications,
    Webhook,
    signature_of,
    webhook_request,
)
from lockgate.gates._policies import (
    SINGLE_POLICY,
    GateAnswer,
    GateDeadline,
    GatePolicy,
    PolicyOutcome,
    describe_duration,
    tally,
)
from lockgate.identity._actors import Actor
from lockgate.identity._bindings import (
    answer_binding,
    cancel_binding,
    confirm_binding,
    decide_binding,
    gate_subject,
    resume_binding,
    sign_in_binding,
    start_binding,
    tool_binding,
)
from lockgate.identity._canonical import canonical_json, digest, fingerprint, to_jsonable
from lockgate.identity._directory import Directory, DirectoryEntry
from lockgate.identity._enrolment import (
    ENROLMENT_SECRET_FILE_ENV,
    EnrolmentRefused,
    EnrolmentSecret,
    EnrolmentSecretError,
)
from lockgate.identity._identity_errors import IdentityError, ProofRefused, RefusalReason
from lockgate.identity._keys import (
    NewIdentity,
    directory_entry_toml,
    encode_base64url,
    generate_private_key,
    new_identity,
    parse_public_key,
    public_key_text,
    read_private_key,
    write_private_key,
)
from lockgate.identity._names import check_principal_name, toml_key
from lockgate.identity._passkeys import (
    Passkey,
    RelyingParty,
    passkey_challenge,
    verify_passkey_assertion,
)
from lockgate.identity._proofs import Proof, Signer
from lockgate.identity._seals import (
    WORKER_SECRET_ENV,
    WORKER_SECRET_FILE_ENV,
    WorkerSecret,
    WorkerSecretError,
)
from lockgate.identity._verifier import Verifier
from lockgate.tools._audit import (
    AUDIT_LOGGER_NAME,
    DEFAULT_SENSITIVE_NAMES,
    REDACTED,
    AuditLogger,
    redact,
)
from lockgate.tools._audit_sinks import AUDIT_FILE_ENV, AuditSink, JsonLinesAuditSink
from lockgate.tools._confirm import (
    DEFAULT_CONFIRMATION_TTL_SECONDS,
    Confirmation,
    ConfirmationStore,
    TokenCheck,
    action_summary,
)
from lockgate.tools._context import Mode, ToolContext, local_shell_context, new_request_id
from lockgate.tools._policy import (
    DEADLINE_CHANNEL,
    DEFAULT_CHANNEL_POLICIES,
    FAIL_CLOSED_POLICY,
    PRIVATE_HOLDINGS,
    ChannelPolicy,
    ConsentGrant,
    GovernedTool,
    PolicyDecision,
    PolicyGate,
    PolicyRule,
    PolicyRuleProvider,
    format_scopes,
)
from lockgate.tools._ratelimit import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_WINDOW_SECONDS,
    MUTATING_COST,
    InMemoryRateLimiter,
    RateDecision,
    RateLimiter,
    rate_key,
)
from lockgate.tools._render import ChannelRenderer, CliRenderer, DefaultRenderer, RendererRegistry
from lockgate.tools._result import ErrorCode, ToolError, ToolResult
from lockgate.tools._tool_names import model_tool_name

__all__ = [
    "AUDIT_FILE_ENV",
    "AUDIT_LOGGER_NAME",
    "DEADLINE_CHANNEL",
    "DEFAULT_CHANNEL_POLICIES",
    "DEFAULT_CONFIRMATION_TTL_SECONDS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_SENSITIVE_NAMES",
    "DEFAULT_WINDOW_SECONDS",
    "ENDS_RUN",
    "ENROLMENT_SECRET_FILE_ENV",
    "FAIL_CLOSED_POLICY",
    "MADE_THE_WORK",
    "MAX_ANSWER_BYTES",
    "MAX_DEPTH",
    "MAX_REFUSED_SIGNALS_KEPT",
    "MAX_SHOWN_ANSWER_CHARS",
    "MAX_START_BYTES",
    "MAX_SUBGRAPH_DEPTH",
    "MAX_WAITING_SETTLES",
    "MUTATING_COST",
    "OWN_GATE",
    "PRIVATE_HOLDINGS",
    "REDACTED",
    "SINGLE_POLICY",
    "TRAIL_PAGE",
    "WORKER_SECRET_ENV",
    "WORKER_SECRET_FILE_ENV",
    "Actor",
    "AuditLogger",
    "AuditSink",
    "Authority",
    "ChannelPolicy",
    "ChannelRenderer",
    "CliRenderer",
    "Confirmation",
    "ConfirmationStore",
    "ConsentGrant",
    "DefaultRenderer",
    "Directory",
    "DirectoryEntry",
    "EnrolmentRefused",
    "EnrolmentSecret",
    "EnrolmentSecretError",
    "ErrorCode",
    "GateAnswer",
    "GateChoice",
    "GateDeadline",
    "GateEvent",
    "GatePolicy",
    "GovernedTool",
    "IdentityError",
    "InMemoryRateLimiter",
    "JsonLinesAuditSink",
    "Judgement",
    "Mode",
    "NewIdentity",
    "Notifications",
    "OpenGate",
    "ParkedNode",
    "Passkey",
    "PayloadProblem",
    "PolicyDecision",
    "PolicyGate",
    "PolicyOutcome",
    "PolicyRule",
    "PolicyRuleProvider",
    "Proof",
    "ProofRefused",
    "RateDecision",
    "RateLimiter",
    "RefusalReason",
    "RelyingParty",
    "RendererRegistry",
    "Signer",
    "TokenCheck",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Verifier",
    "ViewerChoice",
    "Webhook",
    "WorkerSecret",
    "WorkerSecretError",
    "action_summary",
    "answer_binding",
    "answer_refusal_sentence",
    "cancel_binding",
    "canonical_json",
    "check_principal_name",
    "confirm_binding",
    "decide_binding",
    "describe_duration",
    "digest",
    "directory_entry_toml",
    "encode_base64url",
    "evidence_problem",
    "evidence_shown",
    "fingerprint",
    "format_scopes",
    "gate_subject",
    "generate_private_key",
    "judge_answer",
    "judge_call",
    "judge_cancel",
    "judge_resume",
    "judge_start",
    "judge_start_inputs",
    "judge_viewer",
    "local_shell_context",
    "measure",
    "model_tool_name",
    "needed_phrase",
    "new_identity",
    "new_request_id",
    "node_refusal_sentence",
    "parse_public_key",
    "passkey_challenge",
    "public_key_text",
    "rate_key",
    "read_private_key",
    "redact",
    "resume_binding",
    "shorten",
    "sign_in_binding",
    "signature_of",
    "start_binding",
    "tally",
    "to_jsonable",
    "toml_key",
    "tool_binding",
    "verify_passkey_assertion",
    "webhook_request",
    "why_node_refuses",
    "write_private_key",
]

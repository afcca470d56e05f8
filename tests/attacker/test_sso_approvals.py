"""Approvals the company's identity provider signs, against a real provider and a real worker.

The provider is panva's certified ``oidc-provider`` (``tests/helpers/idp.py``); every token here
is a real one, obtained through its authorization and token endpoints, with the nonce the test
asks for. The Directory trusts it as the issuer ``corp``: its group ``payments-officers`` grants
the role ``officer`` and the scope ``payment:send``, ``clerks`` the role ``clerk``. People from it
have no Directory entry; they are ``sso:corp:EMAIL``.

Each attack below, on the code before people from an issuer existed, was refused as a malformed
proof (an ``id_token`` was no field a proof could have), so nothing an IdP signed could answer;
what each checks now is that the token answers exactly the act it names, and nothing else.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from lockgate import Directory, GraphClient, LockgatePlugin
from lockgate.clients._issuer_keys import IssuerKeyFetcher
from lockgate.errors import IdentityError, ProofRefused
from lockgate.gates._authority import Authority
from lockgate.identity._actors import Actor
from lockgate.identity._bindings import answer_binding, sign_in_binding
from lockgate.identity._canonical import canonical_json
from lockgate.identity._directory import DirectoryEntry
from lockgate.identity._issuers import Holdings, IssuerKeyring, token_nonce
from lockgate.identity._passkeys import passkey_challenge
from lockgate.identity._proofs import Signer
from lockgate.identity._seals import WorkerSecret
from lockgate.identity._verifier import Verifier
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.gate_graphs import PAYMENT, POLICY_GRAPHS, DualPayment, MfaPayment
from tests.helpers.graphs import eventually
from tests.helpers.idp import IdentityProvider
from tests.helpers.support import gate_of

pytestmark = pytest.mark.timeout(120)

PEOPLE = {
    "olu": {"email": "olu@example.com", "groups": ["payments-officers"]},
    "rod": {"email": "rod@example.com", "groups": ["payments-officers"]},
    "cal": {"email": "cal@example.com", "groups": ["clerks"]},
    "ada": {"email": "ada@example.com", "groups": ["payments-officers", "clerks"]},
    "eve": {"email": "eve@example.com", "groups": ["marketing"]},
}


def issuer_toml(issuer: str, **extra: Any) -> str:
    lines = [
        "[issuers.corp]",
        f'issuer = "{issuer}"',
        'audience = "lockgate"',
        'principal_claim = "email"',
        'groups_claim = "groups"',
        *(f"{key} = {json.dumps(value)}" for key, value in extra.items()),
        "",
        "[issuers.corp.groups.payments-officers]",
        'roles = ["officer"]',
        'scopes = ["payment:send"]',
        "",
        "[issuers.corp.groups.clerks]",
        'roles = ["clerk"]',
        "",
    ]
    return "\n".join(lines)


@pytest.fixture
def idp(tmp_path: Path) -> Iterator[IdentityProvider]:
    folder = tmp_path / "idp"
    folder.mkdir()
    provider = IdentityProvider(folder, {k: dict(v) for k, v in PEOPLE.items()}).start()
    try:
        yield provider
    finally:
        provider.stop()


@pytest.fixture
def keys() -> Identities:
    """ada, who starts runs with a key (and is also a person at the IdP)."""
    return Identities({"ada": {"roles": [], "scopes": []}})


def directory_of(idp: IdentityProvider, keys: Identities, **extra: Any) -> Directory:
    return Directory.from_toml(keys.toml + "\n" + issuer_toml(idp.issuer, **extra))


def sso(idp: IdentityProvider, person: str, *, client: str = "lockgate") -> Signer:
    """Signs as ``person`` with a fresh ID token from ``idp`` per proof."""
    email = idp.people[person]["email"]
    return Signer.from_identity_provider(
        f"sso:corp:{email}", lambda nonce: idp.id_token(person, nonce, client=client)
    )


def client_of(temporal_client: Client, task_queue: str, signer: object) -> GraphClient:
    return GraphClient(temporal_client, task_queue, signer=cast(Signer, signer))


def plugin_of(directory: Directory, **fetcher: float) -> LockgatePlugin:
    plugin = LockgatePlugin(
        graphs=[*POLICY_GRAPHS, MfaPayment], directory=directory, secret=WorkerSecret.generate()
    )
    for name, value in fetcher.items():
        setattr(plugin.issuer_fetcher, name, value)
    return plugin


async def until(check: Any, timeout: float = 30) -> None:
    import asyncio

    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.02)


async def checked_payment(
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
    graph: type = DualPayment,
) -> tuple[GraphClient, str]:
    """A payment ada started with her key, checked by the clerk cal through SSO: waiting at the
    officers' gate."""
    ada = client_of(temporal_client, task_queue, keys.signer("ada"))
    run = await ada.start(graph, PAYMENT)
    checked = await client_of(temporal_client, task_queue, sso(idp, "cal")).decide(
        run["run_id"], "checked"
    )
    assert checked["status"] == "waiting", checked
    assert gate_of(checked)["gate"].startswith("release"), checked
    return ada, run["run_id"]


# The approval, from start to end -----------------------------------------------------------------


async def test_two_officers_signed_in_with_sso_release_a_payment_and_no_token_is_shown(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
) -> None:
    plugin = plugin_of(directory_of(idp, keys))
    async with lockgate_worker(plugin=plugin):
        ada, run_id = await checked_payment(temporal_client, task_queue, idp, keys)
        first = await client_of(temporal_client, task_queue, sso(idp, "olu")).decide(
            run_id, "release"
        )
        done = await client_of(temporal_client, task_queue, sso(idp, "rod")).decide(
            run_id, "release"
        )
        shown = await ada.show(run_id)

    assert first["status"] == "waiting", first
    assert done["status"] == "finished", done
    assert done["fields"]["sent"] is True
    text = json.dumps(shown)
    assert "sso:corp:olu@example.com" in text and "sso:corp:rod@example.com" in text
    assert "id_token" not in text and "eyJ" not in text
    assert "payments-officers" not in text  # what the token's groups granted is never written


# A token for something else ----------------------------------------------------------------------


async def test_a_sign_in_token_replayed_as_an_answer_is_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
) -> None:
    sign_in = sign_in_binding("http://inbox.example", "a-sign-in-challenge")
    signed_in = idp.id_token(
        "olu", token_nonce(passkey_challenge({"authorizes": sign_in, "nonce": "x"}))
    )
    plugin = plugin_of(directory_of(idp, keys))
    async with lockgate_worker(plugin=plugin):
        ada, run_id = await checked_payment(temporal_client, task_queue, idp, keys)
        officer = client_of(
            temporal_client,
            task_queue,
            Signer.from_identity_provider("sso:corp:olu@example.com", lambda _: signed_in),
        )
        refused = await officer.decide(run_id, "release")
        still = await ada.show(run_id)

    assert refused["ok"] is False, refused
    assert "nonce is not the digest of this proof" in refused["error"]["message"]
    assert gate_of(still).get("answers") in (None, [])


async def test_a_token_for_another_choice_or_another_run_is_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
) -> None:
    plugin = plugin_of(directory_of(idp, keys))
    async with lockgate_worker(plugin=plugin):
        ada, run_id = await checked_payment(temporal_client, task_queue, idp, keys)
        _, other_run = await checked_payment(temporal_client, task_queue, idp, keys)
        officer = client_of(temporal_client, task_queue, sso(idp, "olu"))
        shown = await ada.show(run_id)
        proof = officer._signer().sign(
            answer_binding(gate_of(shown), "release", shown.get("execution"))
        )
        # The same token, with the proof changed to another choice: its nonce no longer matches.
        swapped = {**proof, "authorizes": {**proof["authorizes"], "choice": "reject"}}
        other_choice = await officer.decide_signed(run_id, swapped)
        other = await officer.decide_signed(other_run, proof)
        still = await ada.show(run_id)
        honest = await officer.decide_signed(run_id, proof)

    assert other_choice["ok"] is False, other_choice
    assert "nonce is not the digest of this proof" in other_choice["error"]["message"]
    assert other["ok"] is False, other
    assert "a proof is good only for the exact act it names" in other["error"]["message"], other
    assert gate_of(still).get("answers") in (None, [])
    assert honest["status"] == "waiting", honest
    assert gate_of(honest).get("answers") == [
        {"principal": "sso:corp:olu@example.com", "option": "release"}
    ]


async def test_a_token_for_another_application_or_from_an_untrusted_issuer_is_refused(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
    tmp_path: Path,
) -> None:
    rogue_folder = tmp_path / "rogue"
    rogue_folder.mkdir()
    rogue = IdentityProvider(rogue_folder, {k: dict(v) for k, v in PEOPLE.items()}).start()
    try:
        plugin = plugin_of(directory_of(idp, keys))
        async with lockgate_worker(plugin=plugin):
            ada, run_id = await checked_payment(temporal_client, task_queue, idp, keys)
            other_app = await client_of(
                temporal_client, task_queue, sso(idp, "olu", client="other-app")
            ).decide(run_id, "release")
            untrusted = await client_of(temporal_client, task_queue, sso(rogue, "olu")).decide(
                run_id, "release"
            )
            unknown_issuer = await client_of(
                temporal_client,
                task_queue,
                Signer.from_identity_provider(
                    "sso:rogue:olu@example.com", lambda n: rogue.id_token("olu", n)
                ),
            ).decide(run_id, "release")
            still = await ada.show(run_id)
    finally:
        rogue.stop()

    assert other_app["ok"] is False
    assert "not lockgate's client id 'lockgate'" in other_app["error"]["message"], other_app
    assert untrusted["ok"] is False
    assert f"issued by '{rogue.issuer}'" in untrusted["error"]["message"], untrusted
    assert unknown_issuer["ok"] is False
    assert "trusts no issuer of that name" in unknown_issuer["error"]["message"]
    assert gate_of(still).get("answers") in (None, [])


async def test_a_token_naming_another_person_cannot_sign_as_someone_else(
    idp: IdentityProvider, keys: Identities
) -> None:
    """eve's real token, in a proof that says it is olu's."""
    verifier = Verifier(directory_of(idp, keys), issuer_keys=await fetched_keyring(idp, keys))
    binding = {"kind": "resume", "run": "r"}
    proof = Signer.from_identity_provider(
        "sso:corp:olu@example.com", lambda n: idp.id_token("eve", n)
    ).sign(binding)

    with pytest.raises(ProofRefused) as refused:
        verifier.verify(proof, binding)

    assert "names 'eve@example.com'" in str(refused.value)


# Old tokens --------------------------------------------------------------------------------------


async def fetched_keyring(
    idp: IdentityProvider, keys: Identities, clock: Any = time.time
) -> IssuerKeyring:
    """A keyring the worker's fetcher filled from the provider, as it does while running."""
    keyring = IssuerKeyring(clock)
    fetcher = IssuerKeyFetcher(directory_of(idp, keys), keyring, clock=clock)
    assert await fetcher.fetch(directory_of(idp, keys).issuers()[0])
    return keyring


@pytest.mark.parametrize(
    ("later", "says"),
    [
        (301, "authenticated more than 300 seconds ago"),
        (3700, "The ID token has expired"),
    ],
)
async def test_a_token_too_old_or_expired_is_refused(
    idp: IdentityProvider, keys: Identities, later: float, says: str
) -> None:
    binding = {"kind": "resume", "run": "r"}
    proof = sso(idp, "olu").sign(binding)
    keyring = await fetched_keyring(idp, keys)
    fresh = Verifier(directory_of(idp, keys), issuer_keys=keyring)
    late = Verifier(
        directory_of(idp, keys),
        issuer_keys=keyring,
        clock=lambda: time.time() + later,
        window_seconds=10_000,
    )

    assert fresh.verify(proof, binding).actor == "sso:corp:olu@example.com"
    with pytest.raises(ProofRefused, match=says):
        late.verify(proof, binding)


async def test_an_issuer_may_be_given_a_shorter_window(
    idp: IdentityProvider, keys: Identities
) -> None:
    binding = {"kind": "resume", "run": "r"}
    proof = sso(idp, "olu").sign(binding)
    strict = Verifier(
        directory_of(idp, keys, max_age_seconds=60),
        issuer_keys=await fetched_keyring(idp, keys),
        clock=lambda: time.time() + 61,
    )

    with pytest.raises(ProofRefused, match="authenticated more than 60 seconds ago"):
        strict.verify(proof, binding)


# Groups, at the moment of judgement --------------------------------------------------------------


async def test_an_officer_who_left_the_group_is_refused_at_the_next_decision(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
) -> None:
    plugin = plugin_of(directory_of(idp, keys))
    async with lockgate_worker(plugin=plugin):
        _, first_run = await checked_payment(temporal_client, task_queue, idp, keys)
        _, second_run = await checked_payment(temporal_client, task_queue, idp, keys)
        olu = client_of(temporal_client, task_queue, sso(idp, "olu"))
        before = await olu.decide(first_run, "release")
        idp.set_people({**idp.people, "olu": {"email": "olu@example.com", "groups": []}})
        after = await olu.decide(second_run, "release")

    assert before["status"] == "waiting", before
    assert gate_of(before).get("answers") == [
        {"principal": "sso:corp:olu@example.com", "option": "release"}
    ]
    assert after["ok"] is False, after
    assert after["error"]["code"] == "FORBIDDEN", after
    assert "does not hold the role 'officer'" in after["error"]["message"]


# A fleet: the node an answer leads to runs on another worker ------------------------------------


async def test_a_node_an_sso_answer_leads_to_runs_on_another_worker_of_the_deployment(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
) -> None:
    """The officers answer on a worker that runs no regular activities, so `pay:send` runs on
    another worker of the deployment, which never saw their tokens: it is handed what their
    groups granted, sealed and encrypted under the worker secret, and the payment is sent."""
    secret = WorkerSecret.generate()
    directory = directory_of(idp, keys)

    def deployment_plugin() -> LockgatePlugin:
        return LockgatePlugin(graphs=POLICY_GRAPHS, directory=directory, secret=secret)

    async with lockgate_worker(plugin=deployment_plugin(), no_remote_activities=True):
        ada, run_id = await checked_payment(temporal_client, task_queue, idp, keys)
        await client_of(temporal_client, task_queue, sso(idp, "olu")).decide(run_id, "release")
        rod = client_of(temporal_client, task_queue, sso(idp, "rod"))
        released = asyncio.ensure_future(rod.decide(run_id, "release"))
        handle = temporal_client.get_workflow_handle(run_id)
        send = await eventually(
            lambda: scheduled_send(handle), lambda found: found is not None, what="pay:send"
        )
        # Another process of the deployment: its own connection, its own memory.
        elsewhere = await Client.connect(
            temporal_client.service_client.config.target_host, namespace=temporal_client.namespace
        )
        async with Worker(elsewhere, task_queue=task_queue, plugins=[deployment_plugin()]):
            await released
            shown = await eventually(
                lambda: ada.show(run_id),
                lambda view: view.get("status") not in ("waiting", "running"),
                seconds=30,
                what="the payment settled",
            )

    assert shown["status"] == "finished", shown  # parked, where the node could not run
    assert shown["fields"]["sent"] is True
    assert shown["trail"][-1]["node"] == "send"
    assert shown["trail"][-1]["by"]["principal"] == "sso:corp:rod@example.com"
    held = send.header.fields["lockgate-held"].data.decode()
    assert held.startswith('"lge1.') and "payment:send" not in held and "officer" not in held


async def scheduled_send(handle: Any) -> Any:
    """The event that scheduled the run's `pay:send` activity, once there is one."""
    async for event in handle.fetch_history_events():
        scheduled = event.activity_task_scheduled_event_attributes
        if event.HasField("activity_task_scheduled_event_attributes") and (
            scheduled.activity_type.name == "lockgate.tool:pay:send"
        ):
            return scheduled
    return None


def test_holdings_handed_over_open_only_for_their_call_and_their_proof() -> None:
    """What one worker hands another through history: encrypted, bound to one call of one
    execution, and taken only for the proof it names while that proof is fresh."""
    secret = WorkerSecret.generate()
    binding = {"workflow_id": "pay-1", "run_id": "r1", "activity": "send", "input": "f"}
    now = [1_000_000.0]
    authority = Authority(Directory.from_toml(""), secret=secret, clock=lambda: now[0])
    olu = Actor("sso:corp:olu@example.com", True, "temporal", "sso:corp:olu@example.com", "n-1")
    granted = Holdings(roles=frozenset({"officer"}), scopes=frozenset({"payment:send"}))
    authority.scopes_of(dataclasses.replace(olu, held=granted))  # judged here, at its answer
    handed = authority.handover_of(olu)
    sealed = secret.seal_data("held", binding, handed or {})

    assert handed is not None and handed["scopes"] == ["payment:send"]
    assert "payment:send" not in sealed and "officer" not in sealed
    assert secret.open_data(sealed, "held", binding) == handed
    assert secret.open_data(sealed, "held", {**binding, "run_id": "r2"}) is None  # another call
    assert secret.open_data(sealed, "tool-activity", binding) is None  # another purpose
    assert WorkerSecret.generate().open_data(sealed, "held", binding) is None  # another deployment
    assert secret.open_data(sealed[:-4] + "AAAA", "held", binding) is None  # altered

    def taken(actor: Actor, handed: object, *, after: float = 0) -> frozenset[str]:
        other = Authority(Directory.from_toml(""), secret=secret, clock=lambda: now[0] + after)
        other.take_handover(actor, handed)
        return other.scopes_of(actor)

    assert taken(olu, handed) == {"payment:send"}
    assert taken(dataclasses.replace(olu, authorization="n-2"), handed) == frozenset()
    assert taken(olu, handed, after=301) == frozenset()  # the proof is no longer fresh
    ada = Actor("ada", True, "temporal", "ada", "n-1")  # a Directory name holds what it lists
    assert taken(ada, {**(handed or {}), "authorization": "n-1"}) == frozenset()
    assert authority.handover_of(ada) is None


async def test_the_requester_signed_in_with_sso_cannot_answer_their_own_gate(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
) -> None:
    plugin = plugin_of(directory_of(idp, keys))
    async with lockgate_worker(plugin=plugin):
        ada = client_of(temporal_client, task_queue, sso(idp, "ada"))
        run = await ada.start(DualPayment, PAYMENT)
        own_check = await ada.decide(run["run_id"], "checked")
        checked = await client_of(temporal_client, task_queue, sso(idp, "cal")).decide(
            run["run_id"], "checked"
        )
        own_release = await ada.decide(run["run_id"], "release")
        cancelled = await ada.cancel(run["run_id"], reason="changed my mind")

    assert run["status"] == "waiting", run
    assert own_check["ok"] is False
    assert own_check["error"]["code"] == "SELF_APPROVAL_FORBIDDEN", own_check
    assert checked["status"] == "waiting", checked
    assert own_release["ok"] is False
    assert own_release["error"]["code"] == "SELF_APPROVAL_FORBIDDEN", own_release
    assert cancelled["status"] == "cancelled", cancelled


# The provider's keys -----------------------------------------------------------------------------


async def test_a_rotated_signing_key_still_verifies_once_fetched_and_fails_closed_until_then(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
) -> None:
    plugin = plugin_of(directory_of(idp, keys), min_interval_seconds=0)
    async with lockgate_worker(plugin=plugin):
        _, run_id = await checked_payment(temporal_client, task_queue, idp, keys)
        held_before = plugin.issuer_keys.kids(idp.issuer)
        new_key = idp.rotate()
        olu = client_of(temporal_client, task_queue, sso(idp, "olu"))
        # The validator cannot fetch: the first answer with the new key is refused, and asks.
        first = await olu.decide(run_id, "release")
        await until(lambda: new_key["kid"] in plugin.issuer_keys.kids(idp.issuer))
        second = await olu.decide(run_id, "release")

    assert held_before == {"key-1"}
    if first.get("ok") is False:  # the fetcher may have fetched before the answer arrived
        assert "does not hold" in first["error"]["message"], first
        assert first["error"]["code"] == "UNVERIFIED_APPROVER", first
    assert second["status"] == "waiting", second
    assert gate_of(second).get("answers") == [
        {"principal": "sso:corp:olu@example.com", "option": "release"}
    ]


async def test_an_unknown_key_fails_closed_and_asks_for_the_keys_once(
    idp: IdentityProvider, keys: Identities
) -> None:
    keyring = await fetched_keyring(idp, keys)
    asked: list[str] = []
    keyring.on_want = asked.append
    idp.rotate()
    binding = {"kind": "resume", "run": "r"}
    verifier = Verifier(directory_of(idp, keys), issuer_keys=keyring)
    proofs = [sso(idp, "olu").sign(binding) for _ in range(2)]

    for proof in proofs:
        with pytest.raises(ProofRefused, match="which this worker does not hold"):
            verifier.verify(proof, binding)

    assert asked == [idp.issuer]


async def test_with_the_provider_unreachable_cached_keys_verify_until_they_expire(
    idp: IdentityProvider, keys: Identities
) -> None:
    now = [time.time()]
    keyring = await fetched_keyring(idp, keys, clock=lambda: now[0])
    binding = {"kind": "resume", "run": "r"}
    proofs = [sso(idp, "olu").sign(binding) for _ in range(2)]
    idp.stop()
    verifier = Verifier(directory_of(idp, keys), issuer_keys=keyring)
    fetcher = IssuerKeyFetcher(directory_of(idp, keys), keyring, clock=lambda: now[0])
    fetched = await fetcher.fetch(directory_of(idp, keys).issuers()[0])
    assert verifier.verify(proofs[0], binding).actor == "sso:corp:olu@example.com"
    now[0] += fetcher.cache_seconds + 1

    assert fetched is False
    with pytest.raises(ProofRefused, match="which this worker does not hold"):
        verifier.verify(proofs[1], binding)


def test_a_pinned_jwks_verifies_without_fetching(idp: IdentityProvider, keys: Identities) -> None:
    pinned = json.dumps(idp.public_jwks())
    directory = directory_of(idp, keys, jwks=pinned)
    binding = {"kind": "resume", "run": "r"}
    proof = sso(idp, "olu").sign(binding)
    idp.stop()

    actor = Verifier(directory).verify(proof, binding)

    assert actor.actor == "sso:corp:olu@example.com"
    assert actor.held is not None and actor.held.roles == {"officer"}


# The Directory -----------------------------------------------------------------------------------


def test_no_directory_entry_may_take_an_issuers_name() -> None:
    with pytest.raises(IdentityError, match="starts with 'sso:'"):
        DirectoryEntry("sso:corp:olu@example.com")


def test_an_issuer_table_with_an_unknown_field_is_refused_naming_it() -> None:
    with pytest.raises(IdentityError, match="issuer 'corp' has the unknown field 'audiance'"):
        Directory.from_toml(
            '[issuers.corp]\nissuer = "https://idp.example"\naudiance = "lockgate"\n',
            source="directory.toml",
        )


def test_the_tokens_nonce_is_the_digest_of_the_rest_of_the_proof() -> None:
    proof = Signer.from_identity_provider("sso:corp:a@b.c", lambda nonce: f"h.{nonce}.s").sign(
        {"kind": "x"}
    )
    unsigned = {key: value for key, value in proof.items() if key != "id_token"}
    import base64
    import hashlib

    digest = hashlib.sha256(canonical_json(unsigned)).digest()
    assert proof["id_token"].split(".")[1] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def test_unknown_keys_make_the_worker_fetch_at_most_once_per_interval(
    idp: IdentityProvider, keys: Identities
) -> None:
    """A flood of tokens naming unknown keys cannot make the worker hammer the provider."""
    now = [time.time()]
    keyring = IssuerKeyring(lambda: now[0])
    directory = directory_of(idp, keys)
    fetcher = IssuerKeyFetcher(directory, keyring, min_interval_seconds=10, clock=lambda: now[0])
    await fetcher.fetch_due()
    issuer = directory.issuers()[0]

    for _ in range(5):
        assert keyring.key(issuer, "no-such-key") is None
        await fetcher.fetch_due()
    now[0] += 10
    await fetcher.fetch_due()

    assert fetcher.fetches == 2


# A gate asking for MFA -------------------------------------------------------------------------


async def test_a_gate_asking_for_mfa_refuses_a_password_sign_in_and_takes_the_step_up(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    idp: IdentityProvider,
    keys: Identities,
) -> None:
    plugin = plugin_of(directory_of(idp, keys))
    async with lockgate_worker(plugin=plugin):
        ada, run_id = await checked_payment(temporal_client, task_queue, idp, keys, MfaPayment)
        olu = client_of(temporal_client, task_queue, sso(idp, "olu"))
        password_only = await olu.decide(run_id, "release")
        idp.set_people({**idp.people, "olu": {**idp.people["olu"], "amr": ["pwd", "mfa"]}})
        stepped_up = await olu.decide(run_id, "release")
        shown = await ada.show(run_id)

    assert password_only["ok"] is False, password_only
    assert password_only["error"]["code"] == "FORBIDDEN"
    assert "asks for a sign-in with mfa" in password_only["error"]["message"]
    assert "shows pwd" in password_only["error"]["message"]
    assert stepped_up["status"] == "waiting", stepped_up
    assert gate_of(stepped_up).get("answers") == [
        {"principal": "sso:corp:olu@example.com", "option": "release"}
    ]
    assert gate_of(shown).get("sign_in") == {"mfa": ["mfa"]}


def test_a_gate_asking_for_a_recent_sign_in_refuses_an_older_one() -> None:
    from lockgate.gates._gates import GateChoice, OpenGate
    from lockgate.gates._judgements import _sign_in_refusal
    from lockgate.identity._actors import Actor
    from lockgate.identity._issuers import Holdings

    opened = OpenGate(
        "pay:x",
        "r",
        "release#1",
        "release",
        "officer",
        "",
        "ada",
        (GateChoice("release", None, None),),
        sign_in={"within_seconds": 60},
    )
    held = Holdings(frozenset({"officer"}), frozenset(), authenticated_at=1_000.0)
    actor = Actor("sso:corp:olu@example.com", True, "cli", "sso:corp:olu@example.com", "n", held)
    key_actor = Actor("rod", True, "cli", "rod", "n")

    assert _sign_in_refusal(actor, opened, now=1_060.0) is None
    refused = _sign_in_refusal(actor, opened, now=1_061.0)
    assert refused is not None and "asks for a sign-in within 60 seconds" in refused
    assert _sign_in_refusal(key_actor, opened, now=1_061.0) is None

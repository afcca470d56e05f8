"""The web inbox in a real Chromium, on the real dev server: passkeys and browser keys answer.

Debian's ``chromium`` through Playwright (never a downloaded browser), with Chromium's virtual
authenticator standing in for the person's device. Screenshots of the inbox and of a run's page
are kept in ``test-artifacts/inbox/``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import uvicorn
from cryptography.hazmat.primitives import serialization
from playwright.async_api import Browser, Page, async_playwright
from temporalio.client import Client

from lockgate import GraphClient, LockgatePlugin, WorkerSecret
from lockgate.devserver import free_port
from lockgate.examples.essay_review import EssayReview
from lockgate.examples.payment_release import PaymentRelease
from lockgate.gating import Directory, RelyingParty
from lockgate.inbox import inbox_app
from lockgate.testing import Identities, WorkerFactory
from tests.graphs_for_tests import ALWAYS_FAILS, eventually

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

pytestmark = pytest.mark.timeout(120)

CHROMIUM = shutil.which("chromium")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "inbox"

if CHROMIUM is None:
    if os.environ.get("CI"):
        raise RuntimeError(
            "CI must install chromium (apt-get install chromium) for the inbox tests"
        )
    pytest.skip("no chromium here: `apt-get install chromium` runs these", allow_module_level=True)

AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        yield launched
        await launched.close()


@dataclass
class Desk:
    """An inbox, its worker (watching a Directory file) and the people."""

    url: str
    people: Identities
    directory_file: Path
    plugin: LockgatePlugin
    runs: GraphClient

    async def add_to_directory(self, principal: str, entry: str) -> None:
        """What an administrator does with the entry the inbox printed; returns once the
        worker's watched Directory has it."""
        with self.directory_file.open("a") as file:
            file.write("\n" + entry)
        directory = self.plugin.authority.directory
        await eventually(
            lambda: asyncio.sleep(0.1),
            lambda _: bool(getattr(directory.entry(principal), "passkeys", ())),
            what=f"the worker reading {principal}'s new passkey",
        )


@pytest_asyncio.fixture(loop_scope="session")
async def place(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, tmp_path: Path
) -> AsyncIterator[Desk]:
    """The inbox, its worker and the people, for one test."""
    people = Identities(
        {
            "ada": {},
            "ed": {"roles": ["editor"], "scopes": ["essay:publish"]},
            "clerk": {"roles": ["editor"]},
            "rod": {"roles": ["officer"], "scopes": ["payment:send"]},
            "olga": {"roles": ["officer"], "scopes": ["payment:send"]},
            "fay": {"roles": ["finance_lead"]},
        }
    )
    directory_file = tmp_path / "directory.toml"
    directory_file.write_text(people.toml)
    port = free_port()
    # Passkeys refuse IP-address origins: the page is localhost, the server binds 127.0.0.1.
    origin = f"http://localhost:{port}"
    party = RelyingParty.of_origins([origin])
    plugin = LockgatePlugin(
        graphs=[EssayReview, PaymentRelease],
        directory=str(directory_file),
        secret=WorkerSecret.generate("inbox"),
        relying_party=party,
    )
    viewers = Directory.load(directory_file, watch=True)
    app = inbox_app(temporal_client, task_queue, party, directory=viewers, poll_seconds=0.5)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    try:
        async with lockgate_worker(plugin=plugin):
            await eventually(lambda: asyncio.sleep(0.02), lambda _: server.started, what="inbox")
            runs = GraphClient(temporal_client, task_queue, people.signer("ada"))
            yield Desk(origin, people, directory_file, plugin, runs)
    finally:
        server.should_exit = True
        await serving
        viewers.close()


async def new_page(browser: Browser, url: str) -> Page:
    context = await browser.new_context()
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    await cdp.send("WebAuthn.enable", {"enableUI": False})
    await cdp.send("WebAuthn.addVirtualAuthenticator", {"options": AUTHENTICATOR})
    await page.goto(url + "/identity")
    return page


async def register_passkey(page: Page, principal: str) -> str:
    """Registers a passkey in the inbox as ``principal``; returns the Directory entry shown."""
    await page.fill("#passkey-principal", principal)
    await page.click("#register-passkey")
    entry = page.locator("#directory-entry")
    await entry.wait_for(state="visible")
    return str(await entry.text_content())


async def start_essay(place: Desk) -> dict[str, Any]:
    run = dict(await place.runs.start(EssayReview, ALWAYS_FAILS))
    assert run["status"] == "waiting", run
    await eventually(
        lambda: place.runs.pending(),
        lambda rows: any(row["run_id"] == run["run_id"] for row in rows),
        what="the gate in pending",
    )
    return run


async def answer(page: Page, url: str, run: dict[str, Any], choice: str) -> dict[str, Any]:
    await page.goto(f"{url}/runs/{run['run_id']}")
    await page.wait_for_function("document.body.dataset.viewer !== ''")
    answered: dict[str, Any] = await page.evaluate(
        "([run, choice]) => answerGate(run, choice)", [run["run_id"], choice]
    )
    return answered


async def test_ed_registers_a_passkey_and_answers_the_gate_with_it(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    entry = await register_passkey(page, "ed")
    await place.add_to_directory("ed", entry)
    run = await start_essay(place)
    await page.goto(place.url + "/")
    await page.locator(f"section.gate[data-run='{run['run_id']}']").wait_for()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=ARTIFACTS / "gates.png", full_page=True)
    answered = await answer(page, place.url, run, "publish_as_is")
    # The run page reloads itself once it has said the answer is in: a navigation of the test's
    # own would race that reload (and lose it, ERR_ABORTED, where the page is slow to load).
    async with page.expect_navigation():
        pass
    await page.screenshot(path=ARTIFACTS / "run.png", full_page=True)
    status = await page.text_content("#status")

    parsed = tomllib.loads(entry)
    assert list(parsed["principals"]["ed"]["passkeys"][0]) == ["credential_id", "public_key"]
    assert answered["status"] == "finished"
    assert answered["trail"][-1]["by"] == {
        "actor": "ed",
        "verified": True,
        "channel": "web",
        "principal": "ed",
        "authorization": answered["trail"][-1]["by"]["authorization"],
    }
    assert status == "finished"
    assert (ARTIFACTS / "gates.png").stat().st_size > 0 and (ARTIFACTS / "run.png").exists()


async def test_a_passkey_nobody_added_is_refused_and_the_gate_still_waits(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    await register_passkey(page, "ed")  # never added: nothing enrols itself
    run = await start_essay(place)
    answered = await answer(page, place.url, run, "publish_as_is")
    message = await page.text_content("#message")
    still = await place.runs.show(run["run_id"])

    assert answered["error"]["code"] == "UNVERIFIED_APPROVER"
    assert "not one the directory lists for ed" in (message or "")
    assert "Traceback" not in (message or "")
    assert still["status"] == "waiting"


async def test_clerk_and_ada_are_refused_with_their_sentences_and_a_replay_elsewhere_too(
    browser: Browser, place: Desk
) -> None:
    clerk_page = await new_page(browser, place.url)
    await place.add_to_directory("clerk", await register_passkey(clerk_page, "clerk"))
    ada_page = await new_page(browser, place.url)
    await place.add_to_directory("ada", await register_passkey(ada_page, "ada"))
    run, other = await start_essay(place), await start_essay(place)
    by_clerk = await answer(clerk_page, place.url, run, "publish_as_is")
    clerk_says = await clerk_page.text_content("#message")
    by_ada = await answer(ada_page, place.url, run, "publish_as_is")
    # clerk may abandon (it leads to no node clerk may not run); take that proof elsewhere.
    abandoned = await answer(clerk_page, place.url, other, "abandon")
    proof = await clerk_page.evaluate("window.lockgateLastProof")
    replayed = await place.runs.decide_signed(run["run_id"], proof)
    still = await place.runs.show(run["run_id"])

    assert by_clerk["error"]["code"] == "FORBIDDEN"
    assert "essay:publish, which clerk does not hold" in (clerk_says or "")
    assert by_ada["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert abandoned["status"] == "finished"
    assert replayed["error"]["code"] == "UNVERIFIED_APPROVER"  # bound to the other run's gate
    assert still["status"] == "waiting"


async def import_key(page: Page, place: Desk, principal: str) -> None:
    """``principal``'s key file, imported into the browser on ``page``."""
    pem = place.people.key(principal).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    await page.fill("#key-principal", principal)
    await page.fill("#key-pem", pem.decode())
    await page.click("#import-key")
    await page.locator("#message.done").wait_for()


async def test_two_officers_release_a_payment_each_with_evidence_and_the_page_counts_them(
    browser: Browser, place: Desk
) -> None:
    rod, olga = await new_page(browser, place.url), await new_page(browser, place.url)
    await import_key(rod, place, "rod")
    await import_key(olga, place, "olga")
    run = await place.runs.start(PaymentRelease, {"payee": "ACME", "amount": 25_000})
    url = f"{place.url}/runs/{run['run_id']}"

    await rod.goto(url)
    await rod.wait_for_function("document.body.dataset.viewer === 'rod'")
    without = await rod.evaluate("([r]) => answerGate(r, 'release')", [run["run_id"]])
    await rod.fill("textarea.evidence-input[data-option='release']", '{"invoice_number": "7"}')
    invalid = await rod.evaluate("([r]) => answerGate(r, 'release')", [run["run_id"]])
    evidence = '{"invoice_number": "INV-1042", "reason": "Quarterly licence"}'
    await rod.fill("textarea.evidence-input[data-option='release']", evidence)
    first = await rod.evaluate("([r]) => answerGate(r, 'release')", [run["run_id"]])
    await olga.goto(url)
    await olga.wait_for_function("document.body.dataset.viewer === 'olga'")
    so_far = await olga.text_content(".policy")
    await olga.fill("textarea.evidence-input[data-option='release']", evidence)
    second = await olga.evaluate("([r]) => answerGate(r, 'release')", [run["run_id"]])
    # The release runs the transfer as a sub-graph; the run finishes when it has.
    done = await eventually(
        lambda: place.runs.show(run["run_id"]),
        lambda shown: shown.get("status") == "finished",
        what="the payment released and transferred",
    )

    assert without["error"]["code"] == "INVALID_EVIDENCE"
    assert invalid["error"]["code"] == "INVALID_EVIDENCE"
    assert "invoice_number" in invalid["error"]["message"]
    assert first["status"] == "waiting"
    assert "needs 2 matching answers" in (so_far or "") and "rod → release" in (so_far or "")
    assert second["ok"] is not False
    answered = [row for row in done["trail"] or [] if row["outcome"] == "answered"]
    assert [row["by"]["actor"] for row in answered] == ["rod", "olga"]


async def test_an_ed25519_key_imported_into_the_browser_answers_a_gate(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    await import_key(page, place, "ed")
    extractable = await page.evaluate(
        "async () => { const s = await keyStore('readonly');"
        " return await new Promise(r => { const g = s.get('ed');"
        " g.onsuccess = () => r(g.result.extractable); }); }"
    )
    run = await start_essay(place)
    answered = await answer(page, place.url, run, "publish_as_is")

    assert extractable is False
    assert answered["status"] == "finished"
    assert answered["trail"][-1]["by"]["actor"] == "ed"


async def test_an_anonymous_visitor_sees_the_gates_and_is_told_why_they_may_take_none(
    browser: Browser, place: Desk
) -> None:
    run = await start_essay(place)
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(place.url + "/")
    gate = page.locator(f"section.gate[data-run='{run['run_id']}']")
    await gate.wait_for()
    buttons = gate.locator("button.answer")
    disabled = [await buttons.nth(i).is_disabled() for i in range(await buttons.count())]
    why = await gate.locator(".why").first.text_content()
    await context.close()

    assert disabled and all(disabled)
    assert "a gate is answered by a verified person" in (why or "")


async def test_a_page_answers_the_gate_it_showed_and_never_one_opened_since(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    await import_key(page, place, "ed")
    run = await start_essay(place)
    await page.goto(f"{place.url}/runs/{run['run_id']}")
    await page.wait_for_function("document.body.dataset.viewer === 'ed'")
    button = page.locator("button.answer[data-choice='publish_as_is']")
    shown_gate = await button.get_attribute("data-gate")
    unseen = await page.evaluate(
        "([r]) => answerGate(r, 'publish_as_is', 'editor_call#0')", [run["run_id"]]
    )
    still = await place.runs.show(run["run_id"])
    await button.click()
    done = await eventually(
        lambda: place.runs.show(run["run_id"]),
        lambda shown: shown.get("status") == "finished",
        what="the gate answered from its button",
    )

    assert shown_gate == "editor_call#1"
    assert unseen["error"]["code"] == "GATE_NOT_PENDING"
    assert "now waits at gate 'editor_call#1', not at 'editor_call#0'" in unseen["error"]["message"]
    assert still["status"] == "waiting"
    assert done["trail"][-2]["by"]["actor"] == "ed"

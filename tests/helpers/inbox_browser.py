"""The web inbox in a real Chromium, on the real dev server: what its tests share.

Debian's ``chromium`` through Playwright (never a downloaded browser), with Chromium's virtual
authenticator standing in for the person's device. Screenshots of the inbox and of a run's page
are kept in ``test-artifacts/inbox/``. A test module imports the fixtures it uses from here.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest_asyncio
import uvicorn
from cryptography.hazmat.primitives import serialization
from playwright.async_api import Browser, Page, async_playwright
from starlette.applications import Starlette
from temporalio.client import Client

from lockgate import Directory, GraphClient, LockgatePlugin, RelyingParty, WorkerSecret
from lockgate.devserver import free_port
from lockgate.examples.essay_review import EssayReview
from lockgate.examples.payment_release import PaymentRelease
from lockgate.identity._bindings import sign_in_binding
from lockgate.identity._enrolment import EnrolmentSecret
from lockgate.inbox import inbox_app
from lockgate.inbox._app import url_id
from lockgate.testing import Identities, WorkerFactory
from tests.helpers.graphs import ALWAYS_FAILS, eventually
from tests.helpers.support import require_installed

CHROMIUM = shutil.which("chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "inbox"

require_installed(CHROMIUM is None, "chromium", "`apt-get install chromium`")

AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}

PEOPLE = {
    "ada": {},
    "ed": {"roles": ["editor"], "scopes": ["essay:publish"]},
    "clerk": {"roles": ["editor"]},
    "rod": {"roles": ["officer"], "scopes": ["payment:send"]},
    "olga": {"roles": ["officer"], "scopes": ["payment:send"]},
    "fay": {"roles": ["finance_lead"]},
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


@asynccontextmanager
async def serving(app: Starlette, port: int) -> AsyncIterator[None]:
    """``app`` listening on 127.0.0.1:``port`` (pages open it as localhost: passkeys refuse IP
    addresses)."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: asyncio.sleep(0.02), lambda _: server.started, what="inbox")
        yield
    finally:
        server.should_exit = True
        await task


@dataclass
class Desk:
    """An inbox, its worker (watching a Directory file), the people and the enrolment secret."""

    url: str
    people: Identities
    directory_file: Path
    plugin: LockgatePlugin
    runs: GraphClient
    enrolment: EnrolmentSecret
    open_inbox: Callable[[], Any]
    """An inbox on the same worker that lets anyone read (``lockgate dev``'s): async context,
    yields its URL."""
    viewers: Directory
    """The inbox's own copy of the Directory, watching the same file as the worker's."""

    def code(self, principal: str, hours: float = 1.0) -> str:
        """An enrolment code for ``principal``, as ``lockgate keys enrol`` prints one."""
        return self.enrolment.code(principal, int(time.time() + hours * 3600))

    async def add_to_directory(self, principal: str, entry: str) -> None:
        """What an administrator does with the entry the inbox printed; returns once the
        worker's and the inbox's watched Directories both have it (each reads the file on its
        own: a sign-in between the two would be refused)."""
        with self.directory_file.open("a") as file:
            file.write("\n" + entry)
        directories = (self.plugin.authority.directory, self.viewers)
        await eventually(
            lambda: asyncio.sleep(0.1),
            lambda _: all(
                getattr(directory.entry(principal), "passkeys", ()) for directory in directories
            ),
            what=f"the worker and the inbox reading {principal}'s new passkey",
        )

    def http(self, origin: str | None = "same") -> httpx.AsyncClient:
        """A program talking to the inbox; by default it sends the inbox's own Origin."""
        headers = {} if origin is None else {"Origin": self.url if origin == "same" else origin}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=30)

    @asynccontextmanager
    async def signed_in(self, principal: str) -> AsyncIterator[httpx.AsyncClient]:
        """A program signed in as ``principal`` with their key (as a browser would be)."""
        async with self.http() as http:
            challenge = (await http.post("/session/challenge", json={})).json()["challenge"]
            proof = self.people.signer(principal).sign(sign_in_binding(self.url, challenge))
            signed = await http.post("/session", json={"proof": proof})
            assert signed.status_code == 200, signed.text
            yield http


@pytest_asyncio.fixture(loop_scope="session")
async def place(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str, tmp_path: Path
) -> AsyncIterator[Desk]:
    """The inbox, its worker and the people, for one test."""
    people = Identities(PEOPLE)
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
    enrolment = EnrolmentSecret.generate()
    app = inbox_app(
        temporal_client,
        task_queue,
        party,
        directory=viewers,
        enrolment=enrolment,
        poll_seconds=0.5,
    )

    @asynccontextmanager
    async def open_inbox() -> AsyncIterator[str]:
        port = free_port()
        url = f"http://localhost:{port}"
        opened = inbox_app(
            temporal_client,
            task_queue,
            RelyingParty.of_origins([url]),
            directory=viewers,
            open_to_anyone=True,
        )
        async with serving(opened, port):
            yield url

    try:
        async with lockgate_worker(plugin=plugin), serving(app, port):
            runs = GraphClient(temporal_client, task_queue, people.signer("ada"))
            yield Desk(origin, people, directory_file, plugin, runs, enrolment, open_inbox, viewers)
    finally:
        viewers.close()


async def new_page(browser: Browser, url: str) -> Page:
    context = await browser.new_context()
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    await cdp.send("WebAuthn.enable", {"enableUI": False})
    await cdp.send("WebAuthn.addVirtualAuthenticator", {"options": AUTHENTICATOR})
    await page.goto(url + "/identity")
    return page


async def register_passkey(page: Page, principal: str, code: str) -> str:
    """Registers a passkey in the inbox as ``principal`` with the enrolment ``code``; returns
    the Directory entry shown."""
    await page.fill("#passkey-principal", principal)
    await page.fill("#passkey-code", code)
    await page.click("#register-passkey")
    entry = page.locator("#directory-entry")
    await entry.wait_for(state="visible")
    return str(await entry.text_content())


async def sign_in(page: Page) -> dict[str, Any]:
    """Signs in with the passkey or key the page's browser holds; returns what the inbox said."""
    signed: dict[str, Any] = await page.evaluate("signIn()")
    return signed


def pem_of(place: Desk, principal: str) -> str:
    """``principal``'s key file, as ``lockgate keys new`` wrote it."""
    return (
        place.people.key(principal)
        .private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        .decode()
    )


async def import_key(page: Page, place: Desk, principal: str, pem: str | None = None) -> str:
    """Imports ``principal``'s key (or ``pem``, a key not theirs, under their name) into the
    browser on ``page``; returns the message the page showed."""
    await page.fill("#key-principal", principal)
    await page.fill("#key-pem", pem if pem is not None else pem_of(place, principal))
    if pem is None:
        # The page reloads as the person now signed in, and says so.
        async with page.expect_navigation():
            await page.click("#import-key")
    else:
        await page.click("#import-key")
    message = page.locator("#message.done, #message.refused")
    await message.wait_for()
    return str(await message.text_content())


async def start_essay(place: Desk, run_id: str | None = None) -> dict[str, Any]:
    run = dict(await place.runs.start(EssayReview, ALWAYS_FAILS, run_id=run_id))
    assert run["status"] == "waiting", run
    await eventually(
        lambda: place.runs.pending(),
        lambda rows: any(row["run_id"] == run["run_id"] for row in rows),
        what="the gate in pending",
    )
    return run


async def open_run(page: Page, url: str, run_id: str, viewer: str) -> None:
    """Opens the page of ``run_id`` signed in as ``viewer``."""
    await page.goto(f"{url}/runs/{url_id(run_id)}")
    await page.wait_for_function(f"document.body.dataset.viewer === {viewer!r}")


async def answer(
    page: Page, url: str, run: dict[str, Any], choice: str, viewer: str
) -> dict[str, Any]:
    await open_run(page, url, run["run_id"], viewer)
    answered: dict[str, Any] = await page.evaluate(
        "([run, choice]) => answerGate(run, choice)", [run["run_id"], choice]
    )
    return answered

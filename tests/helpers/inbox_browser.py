"""The web inbox in a real Chromium, on the real dev server: what its tests share.

Debian's ``chromium`` through Playwright (never a downloaded browser), with Chromium's virtual
authenticator standing in for the person's device. The screenshot tests write each page, at a
desktop's size and a phone's, into the folder ``LOCKGATE_SCREENSHOTS`` names (by default
``test-artifacts/screenshots``; ``make screenshots`` writes the ones the docs show). A test
module imports the fixtures it uses from here.
"""

from __future__ import annotations

import asyncio
import enum
import os
import shutil
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest_asyncio
import uvicorn
from cryptography.hazmat.primitives import serialization
from playwright.async_api import Browser, Page, ViewportSize, async_playwright
from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel
from starlette.applications import Starlette
from temporalio.client import Client

from lockgate import (
    Ask,
    Because,
    Directory,
    Edge,
    GraphClient,
    LockgatePlugin,
    Quorum,
    RelyingParty,
    Route,
    Target,
    WorkerSecret,
    graph,
    tool,
)
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
SCREENSHOTS = Path(
    os.environ.get("LOCKGATE_SCREENSHOTS")
    or Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
)
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}

require_installed(CHROMIUM is None, "chromium", "`apt-get install chromium`")

AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}


class ClaimCall(str, enum.Enum):
    APPROVE = "approve"
    ASK_FOR_RECEIPTS = "ask_for_receipts"
    DENY = "deny"


@tool("claim:file", "File the expense claim.")
async def file_claim(title: str) -> None:
    return None


@tool("claim:pay", "Pay the expense claim.")
async def pay_claim(title: str) -> None:
    return None


@tool("claim:close", "Close the expense claim unpaid.")
async def close_claim(title: str) -> None:
    return None


@graph(
    "claim:expense",
    "An expense claim an editor approves or denies; denying is the gate's declared no.",
    start=file_claim,
    routes=[
        Route(ClaimCall.APPROVE, to=pay_claim),
        Route(ClaimCall.ASK_FOR_RECEIPTS, to=close_claim),
        Route(ClaimCall.DENY, to=close_claim),
    ],
    edges=[Edge(file_claim, ClaimCall)],
    asks=[
        Ask(
            ClaimCall,
            of="editor",
            because="An editor approves each expense claim.",
            policy=Quorum(1, rejection=ClaimCall.DENY),
        )
    ],
)
class ExpenseClaim(BaseModel):
    title: Annotated[str, Target(), Because("What the claim is for")]


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
        graphs=[EssayReview, PaymentRelease, ExpenseClaim],
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


async def new_page(browser: Browser, url: str, viewport: ViewportSize | None = None) -> Page:
    """A fresh browser (its own storage and virtual authenticator) on the identity page."""
    context = await browser.new_context(viewport=viewport)
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


async def page_as(
    browser: Browser, place: Desk, principal: str, viewport: ViewportSize | None = None
) -> Page:
    """A fresh browser that imported ``principal``'s key: signed in, on the gates page."""
    page = await new_page(browser, place.url, viewport)
    await import_key(page, place, principal)
    return page


async def start_claim(place: Desk, title: str = "Train to the Lisbon meetup") -> dict[str, Any]:
    """An expense claim started by ada, waiting for an editor (its declared no: deny)."""
    run = dict(await place.runs.start(ExpenseClaim, {"title": title}))
    assert run["status"] == "waiting", run
    return run


async def start_essay(place: Desk, run_id: str | None = None) -> dict[str, Any]:
    run = dict(await place.runs.start(EssayReview, ALWAYS_FAILS, run_id=run_id))
    assert run["status"] == "waiting", run
    await eventually(
        lambda: place.runs.pending(),
        lambda rows: any(row["run_id"] == run["run_id"] for row in rows),
        what="the gate in pending",
    )
    return run


async def goto(page: Page, url: str) -> None:
    """``page.goto(url)``, again once if the page it leaves reloaded itself meanwhile (the gates
    page does when a gate opens or closes), which aborts the navigation."""
    try:
        await page.goto(url)
    except PlaywrightError as error:
        if "ERR_ABORTED" not in str(error):
            raise
        await page.goto(url)


async def open_run(page: Page, url: str, run_id: str, viewer: str) -> None:
    """Opens the page of ``run_id`` signed in as ``viewer``."""
    await goto(page, f"{url}/runs/{url_id(run_id)}")
    await page.wait_for_function(f"document.body.dataset.viewer === {viewer!r}")


async def answer(
    page: Page, url: str, run: dict[str, Any], choice: str, viewer: str
) -> dict[str, Any]:
    await open_run(page, url, run["run_id"], viewer)
    answered: dict[str, Any] = await page.evaluate(
        "([run, choice]) => answerGate(run, choice)", [run["run_id"], choice]
    )
    return answered

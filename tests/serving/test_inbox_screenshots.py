"""Screenshots of each page of the inbox, at a desktop's size and a phone's.

Written into the folder ``LOCKGATE_SCREENSHOTS`` names (by default ``test-artifacts/screenshots``);
``make screenshots`` writes the ones the documentation shows into ``docs/screenshots``, named
``<page>-desktop.png`` and ``<page>-phone.png``. Each is the page as the viewport shows it, not a
full-page capture, so they stay small.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page

from lockgate.examples.payment_release import PaymentRelease
from tests.helpers.graphs import PASSES_FIRST_TIME
from tests.helpers.inbox_browser import (
    DESKTOP,
    PHONE,
    SCREENSHOTS,
    Desk,
    browser,
    goto,
    new_page,
    open_run,
    page_as,
    place,
    start_claim,
    start_essay,
)

__all__ = ["browser", "place"]  # the fixtures the tests here use

# Chromium draws the pages: the same on every Python (see the python_agnostic marker).
pytestmark = [pytest.mark.timeout(120), pytest.mark.python_agnostic]

PNG = b"\x89PNG\r\n\x1a\n"
SIZES = {"desktop": DESKTOP, "phone": PHONE}


async def _shot(page: Page, name: str) -> bytes:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.evaluate("document.fonts.ready")
    return await page.screenshot(path=SCREENSHOTS / f"{name}.png")


@pytest.mark.parametrize("size", list(SIZES))
async def test_screenshots_of_the_sign_in_and_identity_pages(
    browser: Browser, place: Desk, size: str
) -> None:
    stranger = await browser.new_context(viewport=SIZES[size])
    page = await stranger.new_page()
    await page.goto(place.url + "/")
    sign_in = await _shot(page, f"sign-in-{size}")
    await stranger.close()
    page = await new_page(browser, place.url, SIZES[size])
    identity = await _shot(page, f"identity-{size}")

    for shot in (sign_in, identity):
        assert shot.startswith(PNG) and len(shot) < 400_000


@pytest.mark.parametrize("size", list(SIZES))
async def test_screenshots_of_the_gates_and_a_runs_page(
    browser: Browser, place: Desk, size: str
) -> None:
    essay = await start_essay(place)
    await start_claim(place)
    await place.runs.start(PaymentRelease, {"payee": "ACME", "amount": 25_000})
    await place.runs.start("essay:review", PASSES_FIRST_TIME)  # parked: ada may not publish
    page = await page_as(browser, place, "ed", SIZES[size])
    await goto(page, place.url + "/")
    await page.locator(f"section.gate[data-run='{essay['run_id']}']").wait_for()
    await page.evaluate("document.getElementById('message').hidden = true")
    gates = await _shot(page, f"gates-{size}")
    await open_run(page, place.url, essay["run_id"], "ed")
    await page.click("details.comment summary")
    await page.fill("textarea.comment-input", "Short, but it makes its point.")
    run = await _shot(page, f"run-{size}")

    for shot in (gates, run):
        assert shot.startswith(PNG) and len(shot) < 400_000

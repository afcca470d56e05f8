"""The web inbox in a real Chromium, on the real dev server: passkeys and browser keys answer.

The fixtures and helpers are in ``tests/helpers/inbox_browser.py``; the attacks on the inbox are in
``tests/attacker/test_inbox.py``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from playwright.async_api import Browser

from lockgate import GraphClient
from lockgate.examples.essay_review import EssayReview
from lockgate.examples.payment_release import PaymentRelease
from tests.helpers.graphs import ALWAYS_FAILS, PASSES_FIRST_TIME, eventually
from tests.helpers.inbox_browser import (
    PHONE,
    Desk,
    answer,
    browser,
    goto,
    import_key,
    new_page,
    open_run,
    page_as,
    pem_of,
    place,
    register_passkey,
    sign_in,
    start_claim,
    start_essay,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["browser", "place"]  # the fixtures the tests here use

# Chromium runs the pages; the inbox's HTTP side is tested without it, on every Python, in
# tests/attacker/test_inbox.py (see the python_agnostic marker).
pytestmark = [pytest.mark.timeout(120), pytest.mark.python_agnostic]


async def test_ed_registers_a_passkey_and_answers_the_gate_with_it(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    entry = await register_passkey(page, "ed", place.code("ed"))
    await place.add_to_directory("ed", entry)
    signed_in = await sign_in(page)
    run = await start_essay(place)
    await page.goto(place.url + "/")
    await page.locator(f"section.gate[data-run='{run['run_id']}']").wait_for()
    header = await page.text_content("#who")
    answered = await answer(page, place.url, run, "publish_as_is", "ed")
    # The run page reloads itself once it has said the answer is in: a navigation of the test's
    # own would race that reload (and lose it, ERR_ABORTED, where the page is slow to load).
    async with page.expect_navigation():
        pass
    status = await page.get_attribute("#status", "data-status")

    parsed = tomllib.loads(entry)
    assert list(parsed["principals"]["ed"]["passkeys"][0]) == ["credential_id", "public_key"]
    assert signed_in == {"ok": True, "principal": "ed"}
    assert "signed in as ed" in (header or "")
    assert answered["status"] == "finished"
    assert answered["trail"][-1]["by"] == {
        "actor": "ed",
        "verified": True,
        "channel": "web",
        "principal": "ed",
        "authorization": answered["trail"][-1]["by"]["authorization"],
    }
    assert status == "finished"


async def test_a_passkey_nobody_added_signs_nobody_in_and_answers_nothing(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    await register_passkey(page, "ed", place.code("ed"))  # never added: nothing enrols itself
    run = await start_essay(place)
    signed_in = await sign_in(page)
    message = await page.text_content("#message")
    answered = await page.evaluate("([run]) => answerGate(run, 'publish_as_is')", [run["run_id"]])
    still = await place.runs.show(run["run_id"])

    assert signed_in["error"]["code"] == "UNAUTHORIZED"
    assert "not one the directory lists for ed" in (message or "")
    assert "Traceback" not in (message or "")
    assert answered == {"ok": False}
    assert still["status"] == "waiting"


async def test_clerk_and_ada_are_refused_with_their_sentences_and_a_replay_elsewhere_too(
    browser: Browser, place: Desk
) -> None:
    clerk_page = await new_page(browser, place.url)
    await place.add_to_directory(
        "clerk", await register_passkey(clerk_page, "clerk", place.code("clerk"))
    )
    ada_page = await new_page(browser, place.url)
    await place.add_to_directory("ada", await register_passkey(ada_page, "ada", place.code("ada")))
    await sign_in(clerk_page)
    await sign_in(ada_page)
    run, other = await start_essay(place), await start_essay(place)
    by_clerk = await answer(clerk_page, place.url, run, "publish_as_is", "clerk")
    clerk_says = await clerk_page.text_content("#message")
    by_ada = await answer(ada_page, place.url, run, "publish_as_is", "ada")
    # clerk may abandon (it leads to no node clerk may not run); take that proof elsewhere.
    abandoned = await answer(clerk_page, place.url, other, "abandon", "clerk")
    proof = await clerk_page.evaluate("window.lockgateLastProof")
    replayed = await place.runs.decide_signed(run["run_id"], proof)
    still = await place.runs.show(run["run_id"])

    assert by_clerk["error"]["code"] == "FORBIDDEN"
    assert "essay:publish, which clerk does not hold" in (clerk_says or "")
    assert by_ada["error"]["code"] == "SELF_APPROVAL_FORBIDDEN"
    assert abandoned["status"] == "finished"
    assert replayed["error"]["code"] == "UNVERIFIED_APPROVER"  # bound to the other run's gate
    assert still["status"] == "waiting"


async def test_two_officers_release_a_payment_each_with_evidence_and_the_page_counts_them(
    browser: Browser, place: Desk
) -> None:
    rod, olga = await new_page(browser, place.url), await new_page(browser, place.url)
    await import_key(rod, place, "rod")
    await import_key(olga, place, "olga")
    run = await place.runs.start(PaymentRelease, {"payee": "ACME", "amount": 25_000})

    await open_run(rod, place.url, run["run_id"], "rod")
    without = await rod.evaluate("([r]) => answerGate(r, 'release')", [run["run_id"]])
    await rod.fill("textarea.evidence-input[data-option='release']", '{"invoice_number": "7"}')
    invalid = await rod.evaluate("([r]) => answerGate(r, 'release')", [run["run_id"]])
    evidence = '{"invoice_number": "INV-1042", "reason": "Quarterly licence"}'
    await rod.fill("textarea.evidence-input[data-option='release']", evidence)
    first = await rod.evaluate("([r]) => answerGate(r, 'release')", [run["run_id"]])
    await open_run(olga, place.url, run["run_id"], "olga")
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


async def test_an_ed25519_key_imported_into_the_browser_signs_in_and_answers_a_gate(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    said = await import_key(page, place, "ed")
    extractable = await page.evaluate(
        "async () => { const s = await keyStore('readonly');"
        " return await new Promise(r => { const g = s.get('ed');"
        " g.onsuccess = () => r(g.result.extractable); }); }"
    )
    run = await start_essay(place)
    answered = await answer(page, place.url, run, "publish_as_is", "ed")

    assert "you are signed in as ed" in said
    assert extractable is False
    assert answered["status"] == "finished"
    assert answered["trail"][-1]["by"]["actor"] == "ed"


async def test_an_open_inbox_shows_a_visitor_the_gates_and_why_they_may_take_none(
    browser: Browser, place: Desk
) -> None:
    run = await start_essay(place)
    async with place.open_inbox() as url:
        context = await browser.new_context()
        page = await context.new_page()
        await page.goto(url + "/")
        gate = page.locator(f"section.gate[data-run='{run['run_id']}']")
        await gate.wait_for()
        buttons = gate.locator("button.answer")
        disabled = [await buttons.nth(i).is_disabled() for i in range(await buttons.count())]
        why = await gate.locator(".why").first.text_content()
        notice = await page.text_content(".open-notice")
        nav = await page.locator("header nav a").all_inner_texts()
        await context.close()

    assert disabled and all(disabled)
    assert "a gate is answered by a verified person" in (why or "")
    assert "anyone who reaches this page reads every run" in (notice or "")
    assert [" ".join(link.split()) for link in nav] == ["All open 1", "Paused 0"]  # no "needs you"
    assert f"reads every run of task queue {place.runs.task_queue}" in (notice or "")


async def test_a_page_answers_the_gate_it_showed_and_never_one_opened_since(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    await import_key(page, place, "ed")
    run = await start_essay(place)
    await open_run(page, place.url, run["run_id"], "ed")
    button = page.locator("button.answer[data-choice='publish_as_is']")
    shown_gate = await page.get_attribute("section.gate", "data-gate")
    # As a page loaded before the gate opened again would show it.
    await page.evaluate("document.querySelector('section.gate').dataset.gate = 'editor_call#0'")
    unseen = await page.evaluate("([r]) => answerGate(r, 'publish_as_is')", [run["run_id"]])
    still = await place.runs.show(run["run_id"])
    await page.evaluate("document.querySelector('section.gate').dataset.gate = 'editor_call#1'")
    await button.click()
    await page.click("#confirm-send")
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


async def test_an_imported_key_survives_the_reload_and_a_lost_one_is_said_not_swallowed(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    await import_key(page, place, "ed")
    run = await start_essay(place)
    await open_run(page, place.url, run["run_id"], "ed")
    kept = await page.evaluate("storedKey('ed').then((key) => key !== undefined)")
    # As a browser whose site data was cleared under the open page would be.
    await page.evaluate(
        "keyStore('readwrite').then((store) => new Promise((done) => {"
        " store.delete('ed'); store.transaction.oncomplete = done; }))"
    )
    await page.click("button.answer[data-choice='publish_as_is']")
    await page.click("#confirm-send")
    said = await page.locator("#message.refused").text_content()
    after = await place.runs.show(run["run_id"])

    assert kept is True
    assert "Nothing was signed: This browser holds no key for ed: import it again." in (said or "")
    assert after["status"] == "waiting"


async def test_a_click_asks_first_and_the_page_says_the_answer_was_recorded(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    await import_key(page, place, "ed")
    run = await start_essay(place)
    await open_run(page, place.url, run["run_id"], "ed")
    await page.click("button.answer[data-choice='publish_as_is']")
    asked = await page.text_content("#confirm-text")
    await page.click("dialog#confirm button[value='cancel']")
    after_cancel = await place.runs.show(run["run_id"])
    await page.click("button.answer[data-choice='publish_as_is']")
    async with page.expect_navigation():
        await page.click("#confirm-send")
    await page.locator("#message.done").wait_for()
    said = await page.text_content("#message")
    status = await page.text_content("#status")

    assert "Answer “Publish as is” on “Tides”?" in (asked or "")
    assert "Next: Publish." in (asked or "") and "as ed" in (asked or "")
    assert after_cancel["status"] == "waiting"
    assert "Your answer “Publish as is” was recorded, signed as ed" in (said or "")
    assert status == "Finished"


async def test_the_gates_page_shows_the_work_and_says_things_in_words(
    browser: Browser, place: Desk
) -> None:
    run = await start_essay(place)
    draft = (await place.runs.show(run["run_id"]))["fields"]["draft"]
    ada = await new_page(browser, place.url)
    await import_key(ada, place, "ada")
    await ada.goto(place.url + "/?view=all")
    card = ada.locator(f"section.gate[data-run='{run['run_id']}']")
    await card.wait_for()
    text = " ".join((await card.inner_text()).split())
    labels = await card.locator("button.answer").all_inner_texts()
    refusals = await card.locator(".why").all_inner_texts()
    work = await card.locator("h2.work").inner_text()
    await ada.goto(f"{place.url}/runs/{run['run_id']}")
    fields = await ada.locator("dl.fields").inner_text()

    assert work == "Tides"
    assert " ".join(draft.split())[:40] in text  # an excerpt of the work judged
    assert "ada asked an editor" in text and "a(n)" not in text
    assert re.search(r"asked an editor · (just now|\d+ min ago)", text)
    assert not re.search(r"\d\d:\d\d:\d\d\.\d+", text)  # no raw ISO time
    assert labels == ["Publish as is", "One more round", "Abandon"]
    # ada opened the gate: one reason for every option, said once.
    assert len(refusals) == 1 and "You may not answer this gate: ada opened" in refusals[0]
    assert '"Tides.' in fields or "Tides." in fields  # drafts: JSON, not a Python repr
    assert "['" not in fields


async def test_the_pages_fit_a_phone_and_ask_for_nothing_that_is_not_there(
    browser: Browser, place: Desk
) -> None:
    run = await start_essay(place)
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    page = await context.new_page()
    missing: list[str] = []
    page.on(
        "response",
        lambda response: missing.append(response.url) if response.status == 404 else None,
    )
    await page.goto(place.url + "/identity")
    await import_key(page, place, "ed")
    await page.goto(place.url + "/")
    await page.locator(f"section.gate[data-run='{run['run_id']}']").wait_for()
    wide = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    await open_run(page, place.url, run["run_id"], "ed")
    run_wide = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    await context.close()

    assert wide <= 0 and run_wide <= 0
    assert missing == []


async def test_a_key_file_is_picked_and_imported_without_pasting(
    browser: Browser, place: Desk, tmp_path: Path
) -> None:
    key_file = tmp_path / "ed.key"
    key_file.write_text(pem_of(place, "ed"))
    page = await new_page(browser, place.url)
    await page.fill("#key-principal", "ed")
    await page.set_input_files("#key-file", str(key_file))
    await page.wait_for_function("document.getElementById('key-pem').value.includes('PRIVATE KEY')")
    async with page.expect_navigation():
        await page.click("#import-key")
    said = await page.locator("#message.done").text_content()
    header = await page.text_content("#who")

    assert "you are signed in as ed" in (said or "")
    assert "signed in as ed" in (header or "")


async def test_the_front_page_shows_what_needs_you_and_the_rest_is_a_click_away_with_counts(
    browser: Browser, place: Desk
) -> None:
    theirs = await start_essay(place)  # ada's: ed may answer it
    as_ed = GraphClient(place.runs.client, place.runs.task_queue, place.people.signer("ed"))
    own = await as_ed.start(EssayReview, ALWAYS_FAILS)  # ed's own: he may not
    page = await page_as(browser, place, "ed")
    await page.locator(f"section.gate[data-run='{theirs['run_id']}']").wait_for()
    needs_you = await page.locator("section.gate").evaluate_all(
        "all => all.map(s => s.dataset.run)"
    )
    counts = {
        which: await page.text_content(f"#nav-{which} .count")
        for which in ("mine", "all", "paused")
    }
    await page.click("#nav-all")
    await page.locator(f"section.gate[data-run='{own['run_id']}']").wait_for()
    everything = await page.locator("section.gate").evaluate_all(
        "all => all.map(s => s.dataset.run)"
    )

    assert page.url.endswith("/?view=all")
    assert needs_you == [theirs["run_id"]]
    assert counts == {"mine": "1", "all": "2", "paused": "0"}
    assert sorted(everything) == sorted([theirs["run_id"], own["run_id"]])


async def test_a_parked_run_offers_resume_to_who_may_run_its_node_and_the_worker_resumes_it(
    browser: Browser, place: Desk
) -> None:
    run = await place.runs.start(EssayReview, PASSES_FIRST_TIME)  # ada may not publish
    page = await page_as(browser, place, "ed")
    await goto(page, place.url + "/?view=paused")
    card = page.locator(f"section.parked[data-run='{run['run_id']}']")
    await card.wait_for()
    said = " ".join((await card.inner_text()).split())
    cancels = await card.locator("button.cancel").count()
    await card.locator("button.resume").click()
    asked = await page.text_content("#confirm-text")
    await page.click("#confirm-send")
    done = await eventually(
        lambda: place.runs.show(run["run_id"]),
        lambda shown: shown.get("status") == "finished",
        what="the run resumed from the page",
    )

    assert run["status"] == "parked"
    assert "Paused before Publish" in said and "ada was not allowed to run it" in said
    assert cancels == 0  # ed did not start it
    assert "Resume “Tides and the moon”?" in (asked or "")
    resumed = [row for row in done["trail"] if row["outcome"] == "resumed"]
    assert [(row["by"]["actor"], row["by"]["channel"]) for row in resumed] == [("ed", "web")]


async def test_the_requester_cancels_a_parked_run_from_the_page_and_may_not_resume_it(
    browser: Browser, place: Desk
) -> None:
    run = await place.runs.start(EssayReview, PASSES_FIRST_TIME)
    page = await page_as(browser, place, "ada")
    await open_run(page, place.url, run["run_id"], "ada")
    resumes = await page.locator("button.resume").count()
    cancel = page.locator("section.parked button.cancel")
    is_destructive = "destructive" in (await cancel.get_attribute("class") or "")
    await cancel.click()
    confirm_class = await page.get_attribute("#confirm-send", "class")
    async with page.expect_navigation():
        await page.click("#confirm-send")
    await page.locator("#message.done").wait_for()
    status = await page.get_attribute("#status", "data-status")

    assert resumes == 0  # ada may not publish
    assert is_destructive and confirm_class == "destructive"
    assert status == "cancelled"
    assert (await place.runs.show(run["run_id"]))["trail"][-1]["by"]["actor"] == "ada"


async def test_the_gates_declared_no_looks_destructive_and_a_gate_without_one_has_none(
    browser: Browser, place: Desk
) -> None:
    claim, essay = await start_claim(place), await start_essay(place)
    page = await page_as(browser, place, "ed")
    await page.locator(f"section.gate[data-run='{claim['run_id']}']").wait_for()

    async def looks(run_id: str) -> dict[str, tuple[str, str]]:
        buttons = page.locator(f"section.gate[data-run='{run_id}'] button.answer")
        found: dict[str, tuple[str, str]] = {}
        for i in range(await buttons.count()):
            button = buttons.nth(i)
            kind = await button.evaluate(
                "b => b.classList.contains('destructive') ? 'destructive'"
                " : b.classList.contains('primary') ? 'primary' : 'plain'"
            )
            colour = await button.evaluate("b => getComputedStyle(b).color")
            found[str(await button.get_attribute("data-choice"))] = (kind, colour)
        return found

    claim_buttons, essay_buttons = await looks(claim["run_id"]), await looks(essay["run_id"])

    assert {option: kind for option, (kind, _) in claim_buttons.items()} == {
        "approve": "primary",
        "ask_for_receipts": "plain",
        "deny": "destructive",
    }
    assert len({colour for _, colour in claim_buttons.values()}) == 3  # each looks different
    assert {option: kind for option, (kind, _) in essay_buttons.items()} == {
        "publish_as_is": "primary",
        "one_more_round": "plain",
        "abandon": "plain",  # essay:review declares no rejection: nothing is destructive
    }


async def test_the_run_page_is_titled_with_its_subject_with_times_on_hover_and_faces(
    browser: Browser, place: Desk
) -> None:
    run = await start_essay(place)
    page = await page_as(browser, place, "ed")
    await open_run(page, place.url, run["run_id"], "ed")
    heading = await page.text_content("h1")
    title = await page.title()
    times = await page.locator("time").evaluate_all(
        "all => all.map(t => [t.textContent, t.title, t.getAttribute('datetime')])"
    )
    trail = await page.locator("ol.trail li").all_inner_texts()
    avatars = await page.locator("ol.trail .avatar").all_inner_texts()

    assert heading == "Tides" and title == "Tides · lockgate inbox"
    assert run["run_id"] not in (heading or "")
    # When the run started, since when its gate waits, and when each step of its trail ran.
    assert len(times) == 2 + len(trail)
    assert all(
        re.fullmatch(r"just now|\d+ min ago", text)
        and re.fullmatch(r"\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC", exact)
        for text, exact, _ in times
    )
    assert trail and all("ran " in row or "answered" in row for row in trail)
    assert set(avatars) == {"A"}  # ada drove every step so far


async def test_a_comment_typed_with_an_answer_is_signed_with_it_and_kept_in_the_trail(
    browser: Browser, place: Desk
) -> None:
    run = await start_essay(place)
    page = await page_as(browser, place, "ed")
    await open_run(page, place.url, run["run_id"], "ed")
    await page.click("details.comment summary")
    await page.fill("textarea.comment-input", "Good enough for the spring issue.")
    await page.click("button.answer[data-choice='publish_as_is']")
    async with page.expect_navigation():
        await page.click("#confirm-send")
    proof = await eventually(
        lambda: place.runs.show(run["run_id"]),
        lambda shown: shown.get("status") == "finished",
        what="the answer with its comment",
    )
    await page.locator("q.comment").wait_for()
    shown_comment = await page.text_content("q.comment")

    answered = [row for row in proof["trail"] if row["outcome"] == "answered"]
    assert [row.get("comment") for row in answered] == ["Good enough for the spring issue."]
    assert shown_comment == "Good enough for the spring issue."


async def test_after_a_key_is_imported_the_page_is_your_gates_and_forgetting_is_not_primary(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    forget = await page.get_attribute("#forget", "class")
    await import_key(page, place, "ed")
    landed = page.url
    heading = await page.text_content("h1")

    assert landed == place.url + "/"
    assert heading == "Needs you"
    assert "primary" not in (forget or "") and "quiet" in (forget or "")


async def test_after_a_passkey_is_registered_the_page_leads_back_to_your_gates(
    browser: Browser, place: Desk
) -> None:
    page = await new_page(browser, place.url)
    await register_passkey(page, "ed", place.code("ed"))
    back = page.locator("#back-to-gates a")
    await back.wait_for()
    async with page.expect_navigation():
        await back.click()

    assert page.url == place.url + "/"


async def test_the_pages_say_things_in_plain_words_not_internal_names(
    browser: Browser, place: Desk
) -> None:
    run = await start_essay(place)
    page = await page_as(browser, place, "ed")
    await page.locator(f"section.gate[data-run='{run['run_id']}']").wait_for()
    gates = await page.inner_text("main")
    await open_run(page, place.url, run["run_id"], "ed")
    run_page = await page.inner_text("main")

    for text in (gates, run_page):
        for internal in ("ask:", "→", "✓", "Channels", "editor_call#", "needs essay:publish"):
            assert internal not in text, internal
    assert "Next: Publish" in gates
    assert "ada started it" in " ".join(run_page.split())
    assert "Waiting for a decision" in run_page


async def test_no_page_scrolls_sideways_on_a_phone(browser: Browser, place: Desk) -> None:
    run = await start_essay(place)
    parked = await place.runs.start(EssayReview, PASSES_FIRST_TIME)
    stranger = await browser.new_context(viewport=PHONE)
    sign_in_page = await stranger.new_page()
    await sign_in_page.goto(place.url + "/")
    widths = {"sign-in": await sign_in_page.evaluate("document.documentElement.scrollWidth")}
    await stranger.close()
    page = await new_page(browser, place.url, PHONE)
    widths["identity"] = await page.evaluate("document.documentElement.scrollWidth")
    await import_key(page, place, "ed")
    for name, path in (
        ("gates", "/"),
        ("all", "/?view=all"),
        ("paused", "/?view=paused"),
        ("run", f"/runs/{run['run_id']}"),
        ("parked run", f"/runs/{parked['run_id']}"),
    ):
        await goto(page, place.url + path)
        widths[name] = await page.evaluate("document.documentElement.scrollWidth")

    assert widths == {name: width for name, width in widths.items() if width <= 390}, widths

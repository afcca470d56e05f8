"""The inbox as an attacker meets it: a confused deputy, a compromised server, strangers reading.

What must hold (SECURITY.md): the browser signs only what the page showed the person; a run page
exists only for runs of the inbox's own workers; nobody reads a run without signing in; only
same-origin JSON changes anything; a passkey registers only with an operator's enrolment code; a
key the Directory does not list for a name is refused when it is imported.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import quote
from uuid import uuid4

import pytest
from playwright.async_api import Browser, Route
from temporalio.client import Client

from lockgate.cli import main as lockgate_main
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import (
    answer_binding,
    cancel_binding,
    resume_binding,
    sign_in_binding,
)
from lockgate.identity._enrolment import EnrolmentSecret
from lockgate.identity._keys import generate_private_key
from lockgate.inbox._app import url_id
from tests.helpers.attacker import attackers_worker, start_look_alike
from tests.helpers.graphs import PASSES_FIRST_TIME
from tests.helpers.inbox_browser import (
    Desk,
    browser,
    import_key,
    new_page,
    open_run,
    place,
    start_essay,
)

__all__ = ["browser", "place"]  # the fixtures the tests here use

pytestmark = pytest.mark.timeout(120)


@pytest.mark.python_agnostic  # Chromium runs the page
async def test_a_look_alike_whose_id_walks_to_a_real_run_has_no_page_and_nothing_is_signed(
    browser: Browser, place: Desk, temporal_client: Client, task_queue: str
) -> None:
    # The stranger's own workflow, on their own queue, shows the real run's gate; its id walks,
    # once a browser normalises a URL built from it raw, to the real run's binding.
    victim = await start_essay(place)
    attacker_queue = f"{task_queue}-attacker"
    spoof_id = f"x/../../runs/{victim['run_id']}"
    page = await new_page(browser, place.url)
    await import_key(page, place, "ed")
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    async with attackers_worker(temporal_client, attacker_queue):
        await start_look_alike(temporal_client, attacker_queue, spoof_id)
        response = await page.goto(f"{place.url}/runs/{url_id(spoof_id)}")
        buttons = await page.locator("button.answer").count()
        heading = await page.text_content("h1")
        # Even called by hand on that page, the script signs nothing for a gate it does not show.
        forced = await page.evaluate("([run]) => answerGate(run, 'publish_as_is')", [spoof_id])
    still = await place.runs.show(victim["run_id"])

    assert url_id(spoof_id) == "x%2F..%2F..%2Fruns%2F" + victim["run_id"]
    assert response is not None and response.status == 404
    assert heading == "Not found" and buttons == 0
    assert forced["error"]["code"] == "NOT_SIGNED"
    assert not [url for url in asked if url.endswith(("/binding", "/decide"))]
    assert await page.evaluate("window.lockgateLastProof") is None
    assert still["status"] == "waiting"


@pytest.mark.python_agnostic  # Chromium runs the page
async def test_ids_with_slashes_are_encoded_in_every_url_the_pages_make(
    browser: Browser, place: Desk
) -> None:
    run = await start_essay(place, run_id=f"essay:review/team-a/{uuid4().hex[:8]}")
    page = await new_page(browser, place.url)
    await import_key(page, place, "ed")
    posted: list[str] = []
    page.on("request", lambda request: posted.append(request.url))
    await page.goto(place.url + "/")
    link = await page.get_attribute(f"section.gate[data-run='{run['run_id']}'] a", "href")
    await open_run(page, place.url, run["run_id"], "ed")
    answered = await page.evaluate("([r]) => answerGate(r, 'abandon')", [run["run_id"]])

    encoded = quote(run["run_id"], safe="")  # as encodeURIComponent writes it
    assert link == f"/runs/{run['run_id'].replace('/', '%2F')}"
    assert f"{place.url}/runs/{encoded}/binding" in posted
    assert f"{place.url}/runs/{encoded}/decide" in posted
    assert answered["status"] == "finished"


@pytest.mark.python_agnostic  # Chromium runs the page
@pytest.mark.parametrize(
    "swap",
    [
        "another run",
        "another choice",
        "another execution",
        "another gate",
        "a tool call",
        "a comment nobody typed",
    ],
)
async def test_a_compromised_inbox_gets_no_signature_for_anything_the_page_did_not_show(
    browser: Browser, place: Desk, swap: str
) -> None:
    shown, other = await start_essay(place), await start_essay(place)
    gate: dict[str, Any] = dict((await place.runs.show(shown["run_id"]))["awaiting"] or {})
    elsewhere: dict[str, Any] = dict((await place.runs.show(other["run_id"]))["awaiting"] or {})
    swapped: dict[str, Any] = {
        "another run": answer_binding(elsewhere, "abandon", execution=elsewhere["execution"]),
        "another choice": answer_binding(gate, "publish_as_is", execution=gate["execution"]),
        "another execution": answer_binding(gate, "abandon", execution=str(uuid4())),
        "another gate": answer_binding({**gate, "gate": "editor_call#7"}, "abandon"),
        "a comment nobody typed": {
            **answer_binding(gate, "abandon", execution=gate["execution"]),
            "comment": "Approved by the board.",
        },
        "a tool call": {
            "kind": "tool",
            "tool": "essay:publish",
            "arguments": "sha256:" + "0" * 64,
            "request": "r",
            "execution": gate["execution"],
        },
    }[swap]
    page = await new_page(browser, place.url)
    await import_key(page, place, "ed")
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))

    async def compromised(route: Route) -> None:
        await route.fulfill(json={"ok": True, "authorizes": swapped})

    await page.route("**/binding", compromised)
    await open_run(page, place.url, shown["run_id"], "ed")
    refused = await page.evaluate("([r]) => answerGate(r, 'abandon')", [shown["run_id"]])
    message = await page.text_content("#message")
    after = [await place.runs.show(run["run_id"]) for run in (shown, other)]

    assert refused["error"]["code"] == "NOT_SIGNED"
    assert "nothing was signed" in (message or "")
    assert await page.evaluate("window.lockgateLastProof") is None
    assert not [url for url in asked if url.endswith("/decide")]
    assert [run["status"] for run in after] == ["waiting", "waiting"]


async def test_an_anonymous_visitor_reads_no_run_and_is_asked_to_sign_in(place: Desk) -> None:
    run = await start_essay(place)
    async with place.http(origin=None) as stranger:
        front = await stranger.get("/")
        page = await stranger.get(f"/runs/{url_id(run['run_id'])}")
        polled = await stranger.get("/gates.json")

    assert front.status_code == 401 and "Sign in" in front.text
    assert page.status_code == 401 and "Sign in" in page.text
    for body in (front.text, page.text):
        assert run["run_id"] not in body
        assert "Tides" not in body  # the essay's title, a field of the run
    assert polled.status_code == 401


async def test_a_signed_in_person_sees_the_gates_and_runs_they_may_and_no_others(
    place: Desk,
) -> None:
    run = await start_essay(place)
    page = f"/runs/{url_id(run['run_id'])}"
    seen: dict[str, tuple[bool, int]] = {}
    for person in ("ed", "ada", "rod"):
        async with place.signed_in(person) as http:
            front = await http.get("/")
            seen[person] = (run["run_id"] in front.text, (await http.get(page)).status_code)

    assert seen["ed"] == (True, 200)  # an editor: the gate asks their role
    assert seen["ada"] == (True, 200)  # she started it
    assert seen["rod"] == (False, 404)  # an officer: not his gate, not his run


async def test_a_sign_in_is_good_once_and_only_at_the_inbox_it_was_signed_for(
    place: Desk,
) -> None:
    async with place.http() as http:
        challenge = (await http.post("/session/challenge", json={})).json()["challenge"]
        proof = place.people.signer("ed").sign(sign_in_binding(place.url, challenge))
        first = await http.post("/session", json={"proof": proof})
        again = await http.post("/session", json={"proof": proof})
        challenge = (await http.post("/session/challenge", json={})).json()["challenge"]
        relayed = place.people.signer("ed").sign(
            sign_in_binding("https://look-alike.example", challenge)
        )
        elsewhere = await http.post("/session", json={"proof": relayed})
        challenge = (await http.post("/session/challenge", json={})).json()["challenge"]
        forged = place.people.signer("ed").sign(sign_in_binding(place.url, challenge))
        forged["principal"] = "rod"
        as_rod = await http.post("/session", json={"proof": forged})

    assert first.status_code == 200 and "lockgate_session" in first.cookies
    assert again.status_code == 401 and "expired or was used" in again.json()["error"]["message"]
    assert elsewhere.status_code == 401
    assert "https://look-alike.example" in elsewhere.json()["error"]["message"]
    assert as_rod.status_code == 401


async def test_state_changing_requests_take_only_same_origin_json(place: Desk) -> None:
    run = await start_essay(place)
    binding = f"/runs/{url_id(run['run_id'])}/binding"
    async with (
        place.signed_in("ed") as ed,
        place.http("https://evil.example") as foreign,
        place.http(None) as bare,
    ):
        foreign.cookies = ed.cookies  # a foreign page's request carries no cookie; say it did
        bare.cookies = ed.cookies
        from_foreign = await foreign.post(binding, json={"choice": "abandon"})
        without_origin = await bare.post(binding, json={"choice": "abandon"})
        as_a_form = await ed.post(binding, data={"choice": "abandon"})
        registering = await foreign.post("/passkeys/options", json={"principal": "ed"})
        same = await ed.post(binding, json={"choice": "abandon"})

    assert from_foreign.status_code == 403
    assert "not from the inbox" in from_foreign.json()["error"]["message"]
    assert without_origin.status_code == 403
    assert as_a_form.status_code == 415
    assert registering.status_code == 403
    assert same.status_code == 200 and same.json()["authorizes"]["choice"] == "abandon"


async def test_a_passkey_registers_only_with_the_enrolment_code_issued_for_that_name(
    place: Desk, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret_file = tmp_path / "enrolment.secret"
    status = lockgate_main(["keys", "enrol", "ed", "--enrolment-secret", str(secret_file)])
    printed = capsys.readouterr().out
    issued = next(line for line in printed.splitlines() if line.startswith("lge1-"))
    expired = place.enrolment.code("ed", int(time.time()) - 60)
    other_secret = EnrolmentSecret.generate().code("ed", int(time.time()) + 3600)
    async with place.http() as http:
        attempts = {
            "none": await http.post("/passkeys/options", json={"principal": "ed"}),
            "ada's": await http.post(
                "/passkeys/options", json={"principal": "ed", "code": place.code("ada")}
            ),
            "expired": await http.post(
                "/passkeys/options", json={"principal": "ed", "code": expired}
            ),
            "another secret's": await http.post(
                "/passkeys/options", json={"principal": "ed", "code": other_secret}
            ),
            "ed's": await http.post(
                "/passkeys/options", json={"principal": "ed", "code": place.code("ed")}
            ),
        }

    assert status == 0
    EnrolmentSecret.load(secret_file).check(issued, "ed", time.time())  # the inbox's own check
    assert {name: got.status_code for name, got in attempts.items()} == {
        "none": 403,
        "ada's": 403,
        "expired": 403,
        "another secret's": 403,
        "ed's": 200,
    }
    assert "enrolment code an operator issued" in attempts["none"].json()["error"]["message"]
    assert "not one issued for 'ed'" in attempts["ada's"].json()["error"]["message"]
    assert "expired" in attempts["expired"].json()["error"]["message"]
    assert attempts["ed's"].json()["options"]["user"]["name"] == "ed"


async def test_a_key_the_directory_does_not_list_for_the_name_is_refused_at_import(
    browser: Browser, place: Desk
) -> None:
    from cryptography.hazmat.primitives import serialization

    mallory = generate_private_key().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    page = await new_page(browser, place.url)
    said = await import_key(page, place, "ed", mallory.decode())
    held = await page.evaluate(
        "async () => { const s = await keyStore('readonly');"
        " return await new Promise(r => { const g = s.get('ed');"
        " g.onsuccess = () => r(g.result === undefined ? null : 'a key'); }); }"
    )
    identity = await page.evaluate("localStorage.getItem('lockgate.identity')")
    viewer = await page.evaluate("document.body.dataset.viewer")

    assert said.startswith("Not imported: This is not the key the Directory lists for ed")
    assert held is None and identity is None and viewer == ""


async def test_a_body_too_large_or_too_deep_is_a_refusal_with_a_sentence(place: Desk) -> None:
    async with place.http() as http:
        challenge = "/session/challenge"
        deep = await http.post(
            challenge,
            content=b"[" * 30_000 + b"]" * 30_000,  # within the size, over any parser's depth
            headers={"Content-Type": "application/json"},
        )
        large = await http.post(
            challenge,
            content=b'{"x": "' + b"a" * 3_000_000 + b'"}',
            headers={"Content-Type": "application/json"},
        )

    assert deep.status_code == 422
    assert deep.json()["error"]["message"] == "The request body nests too deep to read."
    assert large.status_code == 413 and "64 KiB" in large.json()["error"]["message"]


@pytest.mark.parametrize("act", ["resume", "cancel"])
async def test_a_compromised_inbox_gets_no_signature_for_a_resume_or_cancel_the_page_did_not_show(
    browser: Browser, place: Desk, act: str
) -> None:
    shown = await place.runs.start(EssayReview, PASSES_FIRST_TIME)  # parked, ada's
    other = await place.runs.start(EssayReview, PASSES_FIRST_TIME)
    swapped = (
        resume_binding("essay:review", other["run_id"], other["execution"], "publish")
        if act == "resume"
        else cancel_binding("essay:review", other["run_id"], other["execution"])
    )
    # ada may cancel her runs; ed may resume them: each sees the button for the act.
    who = "ed" if act == "resume" else "ada"
    page = await new_page(browser, place.url)
    await import_key(page, place, who)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))

    async def compromised(route: Route) -> None:
        await route.fulfill(json={"ok": True, "authorizes": swapped})

    await page.route(f"**/{act}/binding", compromised)
    await open_run(page, place.url, shown["run_id"], who)
    refused = await page.evaluate("([a, r]) => actOnRun(a, r)", [act, shown["run_id"]])
    message = await page.text_content("#message")
    after = [await place.runs.show(run["run_id"]) for run in (shown, other)]

    assert refused["error"]["code"] == "NOT_SIGNED"
    assert "nothing was signed" in (message or "")
    assert await page.evaluate("window.lockgateLastProof") is None
    assert not [url for url in asked if url.endswith(f"/{act}")]
    assert [run["status"] for run in after] == ["parked", "parked"]


async def test_a_resume_or_cancel_is_relayed_only_as_the_signed_in_persons_own_proof(
    place: Desk,
) -> None:
    run = await place.runs.start(EssayReview, PASSES_FIRST_TIME)
    place_of = f"/runs/{url_id(run['run_id'])}"
    binding = cancel_binding("essay:review", run["run_id"], run["execution"])
    async with place.signed_in("ed") as ed, place.http("https://evil.example") as foreign:
        foreign.cookies = ed.cookies
        from_foreign = await foreign.post(place_of + "/cancel/binding", json={})
        unsigned = await ed.post(place_of + "/cancel", json={})
        as_ada = await ed.post(
            place_of + "/cancel", json={"proof": place.people.signer("ada", "web").sign(binding)}
        )
        by_ed = await ed.post(
            place_of + "/cancel", json={"proof": place.people.signer("ed", "web").sign(binding)}
        )
    still = await place.runs.show(run["run_id"])

    assert from_foreign.status_code == 403
    assert unsigned.status_code == 401
    assert as_ada.status_code == 403 and "signed in as ed" in as_ada.json()["error"]["message"]
    assert by_ed.json()["error"]["code"] == "FORBIDDEN"  # the worker: ed did not start it
    assert still["status"] == "parked"

"""The Temporal UI in headless Chromium, with payload encryption on and lockgate's codec server:
a person reads a run decoded, and answers its gate from the UI.

It needs Chromium (Debian's ``chromium``) and Playwright (the ``browser`` extra, in ``dev``);
``make browser`` installs Chromium where it can (as root, with apt-get). Without them the test
is skipped, and says why.
"""

from __future__ import annotations

import json
import shutil
from datetime import timedelta

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate import GraphClient, LockgatePlugin
from lockgate.devserver import free_port, server_args, temporal_binary
from lockgate.encryption import CodecServer, EncryptionCodec, PayloadKeys, encrypting_client
from lockgate.encryption._server import CodecAccess
from lockgate.examples.essay_review import EssayReview
from lockgate.identity._bindings import answer_binding
from lockgate.workflows._search_attributes import LOCKGATE_SEARCH_ATTRIBUTES
from tests.helpers.encryption import marked_inputs
from tests.helpers.graphs import essay_people
from tests.helpers.support import gate_of

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="Chromium is not installed: `make browser` installs Debian's chromium (as root); "
        "the codec server's HTTP side is tested without it in test_codec_server.py",
    ),
    # Chromium drives the Temporal UI; the codec server's side is test_codec_server.py's, on
    # every Python (see the python_agnostic marker).
    pytest.mark.python_agnostic,
]

WAIT_MS = 60_000
"""How long a step may take to appear on a loaded 2-core machine (a ceiling, not a timing)."""


async def test_the_ui_shows_a_run_decoded_and_a_gate_answered_from_it_is_accepted(
    task_queue: str,
) -> None:
    playwright = pytest.importorskip("playwright.async_api")
    keys = PayloadKeys.generate("k1")
    ui_port = free_port()
    origins = (f"http://localhost:{ui_port}", f"http://127.0.0.1:{ui_port}")
    codec_server = CodecServer(
        EncryptionCodec(keys), CodecAccess(origins=origins, tokenless_local=True)
    )
    codec_server.start()
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()),
        search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
        dev_server_extra_args=[
            *server_args(database=False),
            "--ui-codec-endpoint",
            codec_server.url,
        ],
        ui=True,
        ui_port=ui_port,
        # A second server (with its UI) on a machine the session's tests keep busy: the SDK's
        # 5 s default is too short for it there.
        dev_server_startup_timeout=timedelta(seconds=60),
    )
    people = essay_people()
    plugin = LockgatePlugin(
        graphs=[EssayReview], directory=people.directory, secret=people.secret, encryption=keys
    )
    marker, inputs = marked_inputs()
    sent_through_codec: list[str] = []
    try:
        async with Worker(environment.client, task_queue=task_queue, plugins=[plugin]):
            client = encrypting_client(environment.client, keys)
            run = await GraphClient(client, task_queue, signer=people.signer("ada")).start(
                EssayReview, inputs
            )
            handle = client.get_workflow_handle(run["run_id"])
            execution = (await handle.describe()).run_id
            proof = people.signer("ed").sign(answer_binding(gate_of(run), "abandon"))
            async with playwright.async_playwright() as driver:
                browser = await driver.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox"]
                )
                page = await browser.new_page()
                page.on(
                    "request",
                    lambda request: (
                        sent_through_codec.append(request.url.split("?")[0])
                        if request.url.startswith(codec_server.url)
                        else None
                    ),
                )
                await page.goto(
                    f"http://localhost:{ui_port}/namespaces/default/workflows/"
                    f"{run['run_id']}/{execution}/history"
                )
                # The start input, decoded by the codec server, shows the run's title.
                await page.get_by_text(marker).first.wait_for(timeout=WAIT_MS)

                await page.get_by_role("button", name="More Actions").click()
                await page.get_by_role("menuitem", name="Send an Update").first.click()
                modal = page.locator("dialog[data-testid=update-confirmation-modal][open]")
                await modal.locator("[data-testid=update-select-button]").click()
                await modal.get_by_role("option", name="decide").click()
                await modal.locator(".cm-content").click()
                await page.keyboard.insert_text(json.dumps(proof))
                # The editor re-lays itself out when it loses focus; a click during that is
                # lost, so leave it first and wait until Submit can be pressed.
                await page.evaluate("document.activeElement.blur()")
                submit = modal.locator("[data-testid=confirm-modal-button]")
                await submit.wait_for(state="visible", timeout=WAIT_MS)
                await submit.click()
                await page.get_by_text("Update successful").first.wait_for(timeout=WAIT_MS)
                await browser.close()
            answered = await handle.result()
            status = (await handle.describe()).status
    finally:
        await environment.shutdown()
        codec_server.stop()

    assert f"{codec_server.url}/decode" in sent_through_codec
    assert f"{codec_server.url}/encode" in sent_through_codec
    assert status == WorkflowExecutionStatus.COMPLETED
    assert answered["trail"][-1]["node"] == "abandon"

"""Notifications: webhooks told when a gate opens and when it is answered, against a local
receiver; a webhook that is down changes nothing for the run, and is audited."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.client import Client

from lockgate import GraphClient, LockgatePlugin, Notifications
from lockgate.devserver import free_port
from lockgate.examples.essay_review import EssayReview
from lockgate.gates._notifications import Webhook, signature_of
from lockgate.testing import WorkerFactory
from lockgate.workflows._notify import NOTIFY_WORKFLOW
from tests.helpers.graphs import ALWAYS_FAILS, essay_people, eventually
from tests.helpers.support import audit_facts, gate_of

pytestmark = pytest.mark.timeout(90)

SECRET = "shared-" + uuid4().hex


@dataclass
class Receiver:
    """A webhook receiver: what each path was posted."""

    url: str
    posts: dict[str, list[tuple[dict[str, str], bytes]]] = field(default_factory=dict)

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.posts.get(path, [])]


@asynccontextmanager
async def receiver() -> AsyncIterator[Receiver]:
    port = free_port()
    received = Receiver(f"http://127.0.0.1:{port}")

    async def take(request: Request) -> Response:
        path = request.path_params["path"]
        received.posts.setdefault(path, []).append((dict(request.headers), await request.body()))
        if path == "down":
            return JSONResponse({"error": "down"}, status_code=503)
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route("/{path}", take, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: asyncio.sleep(0.02), lambda _: server.started, what="receiver")
        yield received
    finally:
        server.should_exit = True
        await serving


def notifications(url: str) -> Notifications:
    return Notifications(
        (
            Webhook("editors-chat", "editor", f"{url}/slack", "slack"),
            Webhook("editors-audit", "editor", f"{url}/json", "json", secret=SECRET),
            Webhook("broken", "editor", f"{url}/down", "json", secret=SECRET),
            Webhook("officers", "officer", f"{url}/officers", "slack"),
        ),
        inbox_url="http://localhost:8240",
        poll_seconds=0.2,
        attempts=2,
    )


async def test_webhooks_hear_a_gate_open_and_its_answer_once_each_and_a_dead_one_changes_nothing(
    lockgate_worker: WorkerFactory,
    temporal_client: Client,
    task_queue: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    people = essay_people()
    caplog.set_level(logging.INFO, logger="lockgate.audit")
    async with receiver() as hooks:
        plugin = LockgatePlugin(
            graphs=[EssayReview],
            directory=people.directory,
            secret=people.secret,
            notifications=notifications(hooks.url),
        )
        async with lockgate_worker(plugin=plugin):
            ada = GraphClient(temporal_client, task_queue, people.signer("ada"))
            run = await ada.start(EssayReview, ALWAYS_FAILS)
            await eventually(
                lambda: asyncio.sleep(0.05),
                lambda _: len(hooks.posts.get("json", [])) >= 1,
                what="the gate's opening announced",
            )
            ed = GraphClient(temporal_client, task_queue, people.signer("ed"))
            answered = await ed.decide(run["run_id"], "publish_as_is")
            await eventually(
                lambda: asyncio.sleep(0.05),
                lambda _: (
                    len(hooks.posts.get("json", [])) >= 2
                    and len(hooks.posts.get("slack", [])) >= 2
                    and len(hooks.posts.get("down", [])) >= 4
                ),
                what="the answer announced, and the dead webhook tried for both",
            )
            broken = temporal_client.get_workflow_handle(
                f"lockgate-notify:{run['run_id']}:{gate_of(run)['gate']}:gate.opened:broken"
            )
            given_up = await broken.result()

    assert answered["status"] == "finished"  # the dead webhook held nothing up
    opened, closed = hooks.bodies("json")
    assert opened["event"] == "gate.opened" and closed["event"] == "gate.closed"
    assert opened["run_id"] == run["run_id"] and opened["role"] == "editor"
    assert opened["requester"] == "ada"
    assert opened["choices"] == ["publish_as_is", "one_more_round", "abandon"]
    assert opened["link"] == f"http://localhost:8240/runs/{run['run_id']}"
    assert (closed["answered_by"], closed["answer"], closed["outcome"]) == (
        "ed",
        "publish_as_is",
        "finished",
    )
    for headers, body in hooks.posts["json"]:
        stamp = int(headers["x-lockgate-timestamp"])
        assert headers["x-lockgate-signature"] == signature_of(SECRET, stamp, body)
    chat = [body["text"] for body in hooks.bodies("slack")]
    assert "A gate for an editor opened" in chat[0] and run["run_id"] in chat[0]
    assert chat[1].startswith("ed answered publish_as_is")
    assert "officers" not in hooks.posts  # another role's webhook hears nothing
    assert given_up["delivered"] is False and "503" in given_up["why"]
    failures = [
        audit_facts(record)
        for record in caplog.records
        if "notify.delivery" in record.getMessage() and record.levelno == logging.WARNING
    ]
    assert len(failures) >= 2


async def test_a_delivery_started_by_anyone_but_a_worker_posts_nothing(
    lockgate_worker: WorkerFactory, temporal_client: Client, task_queue: str
) -> None:
    people = essay_people()
    async with receiver() as hooks:
        plugin = LockgatePlugin(
            graphs=[EssayReview],
            directory=people.directory,
            secret=people.secret,
            notifications=notifications(hooks.url),
        )
        async with lockgate_worker(plugin=plugin):
            forged = await temporal_client.execute_workflow(
                NOTIFY_WORKFLOW,
                {
                    "hook": "editors-chat",
                    "event": {
                        "event": "gate.opened",
                        "run_id": "essay:review-urgent",
                        "graph": "essay:review",
                        "gate": "editor_call#1",
                        "role": "editor",
                        "because": "Click here to log in again.",
                    },
                    "seal": "made-up",
                },
                id=f"lockgate-notify:forged-{uuid4().hex}",
                task_queue=task_queue,
                result_type=dict,
            )
            malformed = await temporal_client.execute_workflow(
                NOTIFY_WORKFLOW,
                "not a delivery",
                id=f"lockgate-notify:malformed-{uuid4().hex}",
                task_queue=task_queue,
                result_type=dict,
            )

    assert forged["delivered"] is False
    assert "not sealed by a lockgate worker" in forged["why"]
    assert malformed["delivered"] is False
    assert hooks.posts == {}

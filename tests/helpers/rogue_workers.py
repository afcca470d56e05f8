"""Rogue workers on lockgate's own task queue, as the threat model has them.

Someone with namespace access and no key of anyone's or worker secret runs a worker that takes
lockgate's tasks: a build of lockgate of their own (its Directory lists their own key under real
people's names, its worker secret is theirs), or a plain worker that completes lockgate's
activities with whatever it likes. What such a worker writes into a run's history must never be
believed by the deployment's own workers.

The graph here ships an order once a clerk has checked it and an officer released it. The real
``ship:send`` tool records whom it shipped for in :data:`SHIPPED`; the rogue build's look-alike
records in :data:`ROGUE_SHIPPED`, so a test tells the deployment's tool from the attacker's own
code (which they can always run, on their own worker).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import Worker, WorkerDeploymentConfig

from lockgate import (
    END,
    Ask,
    Edge,
    LockgatePlugin,
    Route,
    Target,
    ToolContext,
    call_tool,
    gate,
    graph,
    tool,
)
from lockgate.testing import Identities
from lockgate.tools._audit import AuditLogger
from lockgate.workflows._authority_context import AuthorityInterceptor
from lockgate.workflows._graph_inputs import StartGraphInput
from lockgate.workflows._history_seals import HistorySeals
from tests.helpers.worker_versioning import set_current_version

SHIPPED: list[str] = []
"""The orders the deployment's own ``ship:send`` shipped, as ``order by principal``."""

ROGUE_SHIPPED: list[str] = []
"""The orders the rogue build's look-alike ``ship:send`` shipped."""

ORDER = {"order": "A-1"}


class Checked(str, Enum):
    APPROVE = "approve"


class Released(str, Enum):
    RELEASE = "release"
    HOLD = "hold"


class Packed(BaseModel):
    packed: bool


class Sent(BaseModel):
    sent: bool


@tool("ship:pack", "Pack the order.")
async def pack(order: str) -> Packed:
    return Packed(packed=True)


@tool("ship:send", "Ship the order.", scopes=["ship:send"], mutating=True)
async def send(order: str, ctx: ToolContext) -> Sent:
    SHIPPED.append(f"{order} by {ctx.principal}")
    return Sent(sent=True)


@graph(
    "ship:order",
    "Pack an order; a clerk checks it, an officer releases it, and it ships.",
    start=pack,
    edges=[Edge(pack, Checked)],
    routes=[
        Route(Checked.APPROVE, to=Released),
        Route(Released.RELEASE, to=send),
        Route(Released.HOLD, to=END),
    ],
    asks=[
        Ask(Checked, of="clerk", because="A clerk checks the order."),
        Ask(Released, of="officer", because="An officer releases what ships."),
    ],
)
class ShipOrder(BaseModel):
    order: Annotated[str, Target()]
    packed: bool = False
    sent: bool = False


@workflow.defn(name="ship:own-order", sandboxed=False)
class OwnShipOrder:
    """The order as a workflow of your own: an officer releases it at a lockgate gate, and it
    ships as the officer."""

    @workflow.run
    async def run(self, order: str) -> str:
        decided = await gate(
            Ask(Released, of="officer", because="An officer releases what ships."),
            subject={"order": order},
            leads_to={Released.RELEASE: "ship:send"},
        )
        if decided.choice is Released.RELEASE:
            await call_tool("ship:send", {"order": order})
        return str(decided.choice.value)


@graph("ship:direct", "Ship an order straight away.", start=send)
class ShipDirect(BaseModel):
    order: Annotated[str, Target()]
    sent: bool = False


@tool("ship:pack", "Pack the order.")
async def rogue_pack(order: str) -> Packed:
    return Packed(packed=True)


@tool("ship:send", "Ship the order.", scopes=["ship:send"], mutating=True)
async def rogue_send(order: str, ctx: ToolContext) -> Sent:
    ROGUE_SHIPPED.append(f"{order} by {ctx.principal}")
    return Sent(sent=True)


PEOPLE = {
    "ada": {"scopes": ["ship:send"]},
    "clerk": {"roles": ["clerk"]},
    "rod": {"roles": ["officer"], "scopes": ["ship:send"]},
}
"""ada orders; the clerk checks; rod, an officer, releases and may ship."""


def deployment_people() -> Identities:
    """The deployment's people, with their own keys, and its worker secret."""
    return Identities(PEOPLE)


def rogue_people() -> Identities:
    """The same names in the attacker's Directory, every one with a key the attacker holds,
    and a worker secret of the attacker's."""
    return Identities(PEOPLE)


def deployment_plugin(people: Identities, audit: AuditLogger | None = None) -> LockgatePlugin:
    """The deployment's own build."""
    return LockgatePlugin(
        [pack, send], [ShipOrder], people.directory, secret=people.secret, audit=audit
    )


class Gullible(HistorySeals):
    """How the attacker's build reads a history: it believes whatever the history says (it
    takes over runs the deployment's workers began), and records its own seals, under its own
    secret, where lockgate records seals."""

    def opens(self, seal: object, purpose: str, binding: Mapping[str, Any]) -> bool:
        return True


def rogue_plugin(rogue: Identities, graphs: Sequence[type] = (ShipOrder,)) -> LockgatePlugin:
    """The attacker's build of lockgate: the same graphs, their look-alike tools, their
    Directory and their worker secret, patched to believe any history (:class:`Gullible`)."""
    plugin = LockgatePlugin(
        [rogue_pack, rogue_send], list(graphs), rogue.directory, secret=rogue.secret
    )
    for interceptor in plugin.interceptors or ():
        if isinstance(interceptor, AuthorityInterceptor):
            # The attacker's own patch to lockgate's code, as a build of theirs could carry.
            inbound: Any = interceptor._inbound
            inbound.seals = Gullible(rogue.secret, AuditLogger())
    return plugin


def plain_activity(name: str, result: Callable[[], Any]) -> Callable[..., Any]:
    """An activity of no lockgate at all, named like one of lockgate's, that returns
    ``result()`` whatever it is asked."""

    @activity.defn(name=name)
    async def forged(*_: Any) -> Any:
        return result()

    return forged


@workflow.defn(name="rogue.forge-carried", sandboxed=False)
class ForgeCarried:
    """A workflow of the attacker's own that continues as new into ``ship:order``, carrying
    the state it likes (sealed by the worker it runs on, under that worker's secret)."""

    __lockgate_workflow__ = True  # the attacker's build seals its handovers as lockgate's own

    @workflow.run
    async def run(self, forged: dict[str, Any]) -> None:
        workflow.continue_as_new(
            workflow="ship:order", args=[StartGraphInput(version=1, carried=forged)]
        )


def versioned(deployment: str, build: str) -> WorkerDeploymentConfig:
    """Worker Versioning for one build of ``deployment``."""
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment, build), use_worker_versioning=True
    )


@asynccontextmanager
async def current_build(
    client: Client, task_queue: str, deployment: str, build: str, plugin: LockgatePlugin
) -> AsyncIterator[Worker]:
    """A worker of ``build``, made the deployment's current version the way an operator (or
    anyone with namespace access) does: ``temporal worker deployment set-current-version``."""
    async with Worker(
        client,
        task_queue=task_queue,
        plugins=[plugin],
        deployment_config=versioned(deployment, build),
        max_cached_workflows=0,
    ) as worker:
        await set_current_version(client, deployment, build)
        yield worker

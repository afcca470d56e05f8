"""lockgate on a worker that uses Temporal's Worker Versioning: its workflow types carry the
behaviour auto-upgrade there and none elsewhere, and ``lockgate worker`` takes a deployment and a
build together or not at all."""

from __future__ import annotations

import asyncio
import sys

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import Worker, WorkerDeploymentConfig

from lockgate import LockgatePlugin
from lockgate.testing import Identities
from tests.helpers.reliability_graphs import DocReviewV1, DocReviewV2
from tests.helpers.support import REPOSITORY


@workflow.defn(name="shop.unversioned", sandboxed=False)
class ShopWorkflow:
    @workflow.run
    async def run(self) -> str:
        return "done"


def _versioning(build: str = "b1") -> WorkerDeploymentConfig:
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion("essays", build), use_worker_versioning=True
    )


def _behaviours(worker: Worker) -> dict[str, VersioningBehavior | None]:
    behaviours = {}
    for cls in worker.config(active_config=True).get("workflows", []):
        definition = workflow._Definition.must_from_class(cls)
        behaviours[str(definition.name)] = definition.versioning_behavior
    return behaviours


def _plugin() -> LockgatePlugin:
    people = Identities({"ed": {"roles": ["editor"]}})
    return LockgatePlugin(
        graphs=[DocReviewV1, DocReviewV2], directory=people.directory, secret=people.secret
    )


async def test_every_lockgate_workflow_type_on_a_versioned_worker_is_auto_upgrade(
    temporal_client: Client, task_queue: str
) -> None:
    # No default behaviour: the SDK refuses a worker with any workflow type that lacks one.
    worker = Worker(
        temporal_client, task_queue=task_queue, plugins=[_plugin()], deployment_config=_versioning()
    )

    assert _behaviours(worker) == {
        "doc:review": VersioningBehavior.AUTO_UPGRADE,
        "lockgate.tool_call": VersioningBehavior.AUTO_UPGRADE,
        "lockgate.notify": VersioningBehavior.AUTO_UPGRADE,
        "lockgate.catalogue": VersioningBehavior.AUTO_UPGRADE,
    }


async def test_lockgate_types_stay_auto_upgrade_where_the_shops_default_is_pinned(
    temporal_client: Client, task_queue: str
) -> None:
    pinned = WorkerDeploymentConfig(
        version=WorkerDeploymentVersion("essays", "b1"),
        use_worker_versioning=True,
        default_versioning_behavior=VersioningBehavior.PINNED,
    )
    worker = Worker(
        temporal_client,
        task_queue=task_queue,
        workflows=[ShopWorkflow],
        plugins=[_plugin()],
        deployment_config=pinned,
    )

    behaviours = _behaviours(worker)
    assert behaviours.pop("shop.unversioned") == VersioningBehavior.UNSPECIFIED  # the default's
    assert set(behaviours.values()) == {VersioningBehavior.AUTO_UPGRADE}


async def test_a_worker_without_versioning_gives_lockgate_types_no_behaviour(
    temporal_client: Client, task_queue: str
) -> None:
    """The server refuses every task a worker without versioning completes with a behaviour."""
    worker = Worker(temporal_client, task_queue=task_queue, plugins=[_plugin()])

    assert set(_behaviours(worker).values()) == {VersioningBehavior.UNSPECIFIED}


async def test_a_shops_own_workflow_without_a_behaviour_is_still_refused_by_the_sdk(
    temporal_client: Client, task_queue: str
) -> None:
    with pytest.raises(ValueError, match=r"Workflow shop\.unversioned must specify a versioning"):
        Worker(
            temporal_client,
            task_queue=task_queue,
            workflows=[ShopWorkflow],
            plugins=[_plugin()],
            deployment_config=_versioning(),
        )


@pytest.mark.parametrize("given", [["--deployment", "essays"], ["--build-id", "b1"]])
async def test_lockgate_worker_refuses_a_deployment_without_a_build_and_the_reverse(
    given: list[str],
) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lockgate.cli",
        "worker",
        "--graphs",
        "tests.helpers.reliability_graphs",
        *given,
        cwd=REPOSITORY,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)

    assert process.returncode == 2
    assert "--deployment and --build-id go together" in err.decode()
    assert out == b""

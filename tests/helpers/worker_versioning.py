"""Worker Versioning as an operator drives it: making a build of a worker deployment current."""

from __future__ import annotations

import asyncio

from temporalio.api.enums.v1 import RoutingConfigUpdateState
from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentRequest
from temporalio.client import Client

from lockgate.devserver import temporal_binary

__all__ = ["set_current_version"]


async def set_current_version(client: Client, deployment: str, build: str) -> None:
    """``temporal worker deployment set-current-version``, tried until the build has polled (the
    server refuses a build none of whose workers has), then waits until the routing reached the
    task queues."""
    command = [
        str(temporal_binary()),
        "worker",
        "deployment",
        "set-current-version",
        "--deployment-name",
        deployment,
        "--build-id",
        build,
        "--yes",
        "--address",
        client.service_client.config.target_host,
        "--namespace",
        client.namespace,
    ]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        process = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        _, err = await asyncio.wait_for(process.communicate(), 60)
        if process.returncode == 0:
            break
        assert loop.time() < deadline, err.decode()
        await asyncio.sleep(0.2)
    request = DescribeWorkerDeploymentRequest(
        namespace=client.namespace, deployment_name=deployment
    )
    completed = RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED
    while True:
        info = (
            await client.workflow_service.describe_worker_deployment(request)
        ).worker_deployment_info
        current = info.routing_config.current_deployment_version.build_id
        if current == build and info.routing_config_update_state == completed:
            return
        assert loop.time() < deadline, f"{build} never became current"
        await asyncio.sleep(0.1)

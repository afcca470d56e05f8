"""What lockgate needs of a namespace: its search attributes checked, added, or asked for.

Each check runs against a real server; the one thing no dev server can show (a server that
refuses the operator service, like Temporal Cloud) is covered by the visibility check, which
such a server allows, and by the commands printed for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from lockgate.devserver import temporal_binary
from lockgate.namespace import (
    SearchAttributesMissingError,
    add_search_attributes,
    check_search_attributes,
    how_to_add,
    is_temporal_cloud,
)

NAMES = ("LockgateGraph", "LockgateState", "LockgateAwaiting")
CLOUD = "orders.a1b2c.tmprl.cloud:7233"


@pytest_asyncio.fixture
async def bare() -> AsyncIterator[WorkflowEnvironment]:
    """A server lockgate did not start: none of its search attributes are there."""
    async with await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_binary()),
        ui=False,
        dev_server_extra_args=[
            "--dynamic-config-value",
            "system.forceSearchAttributesCacheRefreshOnRead=true",
        ],
    ) as environment:
        yield environment


async def test_a_bare_namespace_lacks_all_three_whichever_way_it_is_asked(
    bare: WorkflowEnvironment,
) -> None:
    through_operator = await check_search_attributes(bare.client, through="operator")
    through_visibility = await check_search_attributes(bare.client, through="visibility")

    assert through_operator.missing == through_visibility.missing == NAMES
    assert (through_operator.read_from, through_visibility.read_from) == ("operator", "visibility")
    assert not through_operator.ok and not through_visibility.ok


async def test_adding_them_adds_the_missing_ones_once_and_both_checks_then_pass(
    bare: WorkflowEnvironment,
) -> None:
    added = await add_search_attributes(bare.client)
    added_again = await add_search_attributes(bare.client)

    assert added == list(NAMES)
    assert added_again == []
    assert (await check_search_attributes(bare.client, through="operator")).ok
    assert (await check_search_attributes(bare.client, through="visibility")).ok


async def test_the_lockgate_test_server_has_them(temporal_client: Client) -> None:
    check = await check_search_attributes(temporal_client)

    assert check.ok and check.explain() == ""


async def test_one_made_with_another_type_is_named_and_not_added_over(
    bare: WorkflowEnvironment,
) -> None:
    made = await asyncio.create_subprocess_exec(
        str(temporal_binary()), "operator", "search-attribute", "create",
        "--address", bare.client.service_client.config.target_host,
        "--namespace", "default", "--name", "LockgateState", "--type", "Text",
    )  # fmt: skip
    assert await made.wait() == 0

    check = await check_search_attributes(bare.client)
    with pytest.raises(SearchAttributesMissingError) as refused:
        await add_search_attributes(bare.client)

    assert check.mistyped == ("LockgateState",)
    assert check.missing == ("LockgateGraph", "LockgateAwaiting")
    assert "Already there with a type other than Keyword: LockgateState." in str(refused.value)
    assert "temporal operator search-attribute remove" in str(refused.value)


def test_temporal_cloud_is_told_from_its_address() -> None:
    assert is_temporal_cloud(CLOUD)
    assert is_temporal_cloud("us-east-1.aws.api.temporal.io:7233")
    assert not is_temporal_cloud("localhost:7233")
    assert not is_temporal_cloud("temporal.internal.example:7233")


def test_on_temporal_cloud_the_tcld_command_is_given_and_no_operator_command() -> None:
    told = how_to_add("orders.a1b2c", NAMES, CLOUD)

    assert (
        "tcld namespace search-attributes add --namespace orders.a1b2c "
        '--search-attribute "LockgateGraph=Keyword" --search-attribute "LockgateState=Keyword" '
        '--search-attribute "LockgateAwaiting=Keyword"'
    ) in told
    assert "UpdateNamespace" in told and "temporalcloud_namespace_search_attribute" in told
    assert "temporal operator" not in told


def test_elsewhere_the_operator_commands_come_first_and_the_cloud_one_after() -> None:
    told = how_to_add("default", NAMES, "temporal.internal.example:7233")

    operator = [
        f"temporal operator search-attribute create --namespace default --name {name} "
        "--type Keyword"
        for name in NAMES
    ]
    assert all(line in told for line in operator)
    assert told.index(operator[0]) < told.index("tcld namespace search-attributes add")

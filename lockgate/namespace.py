"""What lockgate needs of a namespace: its three search attributes, checked, added, or asked for.

Graph runs write ``LockgateGraph``, ``LockgateState`` and ``LockgateAwaiting`` (all Keyword; the
keys :data:`LOCKGATE_GRAPH`, :data:`LOCKGATE_STATE` and :data:`LOCKGATE_AWAITING` list runs by
them). A run that upserts an attribute the namespace lacks is stuck retrying its task, so a worker
with graphs refuses to start without them. Everything about them lives here:

- :func:`check_search_attributes` reads them through the operator service, or, where that is
  not allowed (Temporal Cloud, a server behind an authorizer), asks the visibility store, which
  names an unknown attribute in a query it refuses.
- :func:`add_search_attributes` adds the missing ones through the operator service; where the
  server does not allow it, :class:`SearchAttributesMissingError` carries the exact commands:
  ``tcld namespace search-attributes add`` on Temporal Cloud (or its Cloud Ops API and
  Terraform provider), ``temporal operator search-attribute create`` on a self-hosted server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from lockgate._errors import SetupError
from lockgate.workflows._search_attributes import (
    LOCKGATE_SEARCH_ATTRIBUTES,
)

__all__ = [
    "LOCKGATE_SEARCH_ATTRIBUTES",
    "SearchAttributeCheck",
    "SearchAttributesMissingError",
    "add_search_attributes",
    "check_search_attributes",
]

_KEYWORD = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
_NOT_ALLOWED = (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED)
_CLOUD_HOSTS = (".tmprl.cloud", ".api.temporal.io")


class SearchAttributesMissingError(SetupError):
    """The namespace lacks lockgate's search attributes; the message says how to add them."""


@dataclass(frozen=True, slots=True)
class SearchAttributeCheck:
    """What a namespace has of lockgate's search attributes.

    Attributes:
        namespace: The namespace checked.
        target: The address of the server it lives on.
        missing: Attributes the namespace does not have at all.
        mistyped: Attributes it has with a type other than Keyword (only seen where the
            operator service may be read).
        read_from: ``"operator"`` (the operator service listed them) or ``"visibility"`` (the
            operator service was not allowed; a query on each told).
    """

    namespace: str
    target: str
    missing: tuple[str, ...]
    mistyped: tuple[str, ...]
    read_from: str

    @property
    def ok(self) -> bool:
        """True when every attribute is there, as a Keyword."""
        return not self.missing and not self.mistyped

    def explain(self) -> str:
        """What is wrong and the commands that put it right (empty when :attr:`ok`)."""
        if self.ok:
            return ""
        lines = [
            f"Namespace '{self.namespace}' lacks lockgate's search attributes "
            f"({', '.join(self.missing + self.mistyped)}): without them every graph run would "
            "wedge on its first upsert."
        ]
        if self.mistyped:
            lines.append(
                f"Already there with a type other than Keyword: {', '.join(self.mistyped)}. "
                "Remove each (`temporal operator search-attribute remove`) before adding it "
                "again."
            )
        lines.append(how_to_add(self.namespace, self.missing + self.mistyped, self.target))
        return "\n".join(lines)


def is_temporal_cloud(target: str) -> bool:
    """Whether ``target`` (``host:port``) is a Temporal Cloud endpoint."""
    host = target.rsplit(":", 1)[0].lower()
    return host.endswith(_CLOUD_HOSTS)


def how_to_add(namespace: str, names: Sequence[str], target: str) -> str:
    """The commands that add ``names`` (as Keyword) to ``namespace``, for the server at ``target``.

    On Temporal Cloud the operator service may not add search attributes; ``tcld`` (or the Cloud
    Ops API's ``UpdateNamespace``, or the ``temporalcloud_namespace_search_attribute`` Terraform
    resource) does. Elsewhere, ``lockgate setup`` or the ``temporal`` CLI does.
    """
    tcld = f"  tcld namespace search-attributes add --namespace {namespace} " + " ".join(
        f'--search-attribute "{name}=Keyword"' for name in names
    )
    temporal = "\n".join(
        f"  temporal operator search-attribute create --namespace {namespace} "
        f"--name {name} --type Keyword"
        for name in names
    )
    cloud = (
        "On Temporal Cloud, an account or namespace admin runs (or adds them in the Cloud UI, "
        "the Cloud Ops API's UpdateNamespace, or Terraform's "
        f"temporalcloud_namespace_search_attribute):\n{tcld}"
    )
    self_hosted = (
        "On a self-hosted server, run `lockgate setup` with operator access, or ask an "
        f"operator to run:\n{temporal}"
    )
    if is_temporal_cloud(target):
        return cloud
    return f"{self_hosted}\n{cloud}"


async def check_search_attributes(
    client: Client, *, through: Literal["operator", "visibility"] | None = None
) -> SearchAttributeCheck:
    """What the client's namespace has of lockgate's search attributes.

    Args:
        client: A client of the namespace to check.
        through: ``"operator"`` reads them through the operator service; ``"visibility"`` asks
            the visibility store instead (a list query naming an unknown attribute is refused),
            which any client allowed to list the namespace's workflows may do. By default the
            operator service is asked first, and visibility where the server does not allow it.
    """
    if through == "visibility":
        return await _check_through_visibility(client)
    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError as error:
        if error.status not in _NOT_ALLOWED or through == "operator":
            raise
        return await _check_through_visibility(client)
    known = dict(response.custom_attributes)
    return SearchAttributeCheck(
        namespace=client.namespace,
        target=client.service_client.config.target_host,
        missing=tuple(key.name for key in LOCKGATE_SEARCH_ATTRIBUTES if key.name not in known),
        mistyped=tuple(
            key.name
            for key in LOCKGATE_SEARCH_ATTRIBUTES
            if key.name in known and known[key.name] != _KEYWORD
        ),
        read_from="operator",
    )


async def _check_through_visibility(client: Client) -> SearchAttributeCheck:
    missing: list[str] = []
    for key in LOCKGATE_SEARCH_ATTRIBUTES:
        try:
            await client.count_workflows(f"{key.name} = 'lockgate-probe'")
        except RPCError as error:
            if error.status != RPCStatusCode.INVALID_ARGUMENT or key.name not in error.message:
                raise
            missing.append(key.name)
    return SearchAttributeCheck(
        namespace=client.namespace,
        target=client.service_client.config.target_host,
        missing=tuple(missing),
        mistyped=(),
        read_from="visibility",
    )


async def add_search_attributes(client: Client) -> list[str]:
    """Adds the search attributes the client's namespace is missing; returns their names.

    Raises:
        SearchAttributesMissingError: The server does not allow adding them here (Temporal
            Cloud, no operator access), or some exist with another type; the message has the
            commands that do it.
    """
    check = await check_search_attributes(client)
    if check.mistyped:
        raise SearchAttributesMissingError(check.explain())
    if not check.missing:
        return []
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=client.namespace,
                search_attributes=dict.fromkeys(check.missing, _KEYWORD),
            )
        )
    except RPCError as error:
        if error.status not in _NOT_ALLOWED:
            raise
        raise SearchAttributesMissingError(
            f"This server does not let this client add search attributes ({error.message}).\n"
            + check.explain()
        ) from None
    return list(check.missing)

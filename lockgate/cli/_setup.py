"""``lockgate setup``: registers lockgate's search attributes on the namespace."""

from __future__ import annotations

import argparse
import sys

from lockgate.cli._settings import connect
from lockgate.namespace import SearchAttributesMissingError, add_search_attributes

__all__ = ["set_up_namespace"]


async def set_up_namespace(arguments: argparse.Namespace) -> int:
    """Adds the search attributes the namespace lacks; exits 1 when they cannot be added."""
    client = await connect(arguments)
    try:
        added = await add_search_attributes(client)
    except SearchAttributesMissingError as error:
        print(error, file=sys.stderr)
        return 1
    if added:
        print(f"added to namespace '{client.namespace}': {', '.join(added)}")
    else:
        print(f"namespace '{client.namespace}' has lockgate's search attributes")
    return 0

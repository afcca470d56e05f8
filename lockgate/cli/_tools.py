"""``lockgate tools list``, ``tools call`` and ``tools confirm``: tools through Temporal."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from lockgate.cli._arguments import json_argument
from lockgate.cli._output import is_refused, print_json, report_result
from lockgate.cli._settings import operations, signer

__all__ = ["use_tools"]


async def use_tools(arguments: argparse.Namespace) -> int:
    """Lists the served tools, calls one, or confirms a call that asked for confirmation."""
    # Unsigned, a call is the `temporal` CLI's: `unverified:temporal`, as the workers judge it.
    door = await operations(arguments, signer(arguments), channel="temporal")
    if arguments.tools_command == "list":
        listed = await door.list_tools()
        if is_refused(listed):
            return report_result(listed, arguments)
        if arguments.json:
            print_json(listed)  # {ok, count, tools}: every --json answer is one object
        else:
            for definition in listed["tools"]:
                schema = definition["inputSchema"].get("properties", {})
                print(f"{definition['name']}({', '.join(schema)})  {definition['description']}")
        return 0
    result: Mapping[str, Any]
    if arguments.tools_command == "confirm":
        result = await door.confirm_tool(arguments.request_id, arguments.token)
    else:
        call_arguments = json_argument(arguments.args, "--args")
        result = await door.call_tool(
            arguments.name, call_arguments, request_id=arguments.request_id
        )
    if arguments.json:
        print_json(result)
        return 1 if is_refused(result) else 0
    if is_refused(result):
        return report_result(result, arguments)
    data = result.get("data")
    if isinstance(data, dict) and data.get("requires_confirmation"):
        print(f"? confirm {data['action_summary']} before {data['expires_at']}:")
        print(f"  lockgate tools confirm {data['request_id']} {data['confirm_token']}")
        return 0
    print_json(data)
    return 0

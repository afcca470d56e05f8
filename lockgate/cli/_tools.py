"""``lockgate tools list``, ``tools call`` and ``tools confirm``: tools through Temporal."""

from __future__ import annotations

import argparse

from lockgate.cli._arguments import json_argument
from lockgate.cli._output import CommandError, is_refused, print_json, report_result
from lockgate.cli._settings import connect, signer
from lockgate.clients._tool_client import ToolClient
from lockgate.workflows._catalogue import CatalogueError

__all__ = ["use_tools"]


async def use_tools(arguments: argparse.Namespace) -> int:
    """Lists the served tools, calls one, or confirms a call that asked for confirmation."""
    client = await connect(arguments)
    tools = ToolClient(client, arguments.task_queue, signer(arguments), channel="temporal")
    if arguments.tools_command == "list":
        try:
            listed = await tools.list()
        except CatalogueError as error:
            raise CommandError(str(error)) from None
        if arguments.json:
            print_json(listed)
        else:
            for definition in listed:
                schema = definition["inputSchema"].get("properties", {})
                print(f"{definition['name']}({', '.join(schema)})  {definition['description']}")
        return 0
    if arguments.tools_command == "confirm":
        result = await tools.confirm(arguments.request_id, arguments.token)
    else:
        call_arguments = json_argument(arguments.args, "--args")
        result = await tools.call(arguments.name, call_arguments, request_id=arguments.request_id)
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

"""Whether the framework's Temporal plugin reached the worker through its client."""

from __future__ import annotations

from temporalio import workflow
from temporalio.converter import CompositePayloadConverter
from temporalio.exceptions import ApplicationError

from lockgate.tools._tool_result import ErrorCode

__all__ = ["require_client_plugin"]


def require_client_plugin(converter: type[CompositePayloadConverter], plugin: str) -> None:
    """Fails the run, with the fix, on a worker whose client lacks the framework's plugin.

    The plugin sets a payload converter, which only a plugin on the client can do; without it
    a model activity's input cannot be decoded, the activity retries, and the run waits for
    ever. The workflow's converter wraps the client's (for Temporal's own transfer types) in an
    attribute the SDK keeps private; a converter this cannot see into is let through rather
    than refused on a guess.

    Args:
        converter: The payload converter the plugin installs.
        plugin: The plugin as the user constructs it (``OpenAIAgentsPlugin()``).
    """
    found = workflow.payload_converter()
    found = getattr(found, "_inner_payload_converter", found)
    if isinstance(found, CompositePayloadConverter) and not isinstance(found, converter):
        raise ApplicationError(
            f"run_agent needs {plugin} on the Client the worker is built from, but this "
            f"worker's payload converter is {type(found).__name__}, not {converter.__name__}: "
            f"Client.connect(..., plugins=[{plugin}]); a plugin given only to a Worker cannot "
            "set the converter.",
            type=ErrorCode.INTERNAL_ERROR.value,
            non_retryable=True,
        )

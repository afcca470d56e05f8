"""Tools: declaring them, and the pipeline every call passes in process, with its rules.

``@tool`` and ``Param`` (and tools described by a JSON Schema), the ``ToolRegistry`` that runs
each call through one pipeline, and the rules it applies: the context a call is judged in, the
authorizer, rate limits, confirmations, the audit record and where it goes, the result and its
error codes, the one shape of a verdict, and the checks of what a user configures.

Above identity, below everything else; it never imports temporalio, so the same pipeline runs in
process, inside an activity and inside the workflow sandbox. Its modules are private; lockgate
imports each name from the module that defines it.
"""

__all__: list[str] = []

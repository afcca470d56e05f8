"""Clients: what people and programs use to reach lockgate's runs on a Temporal server.

``GraphClient`` starts, answers, resumes and cancels graph runs and lists their open gates, with
the views it reads them through; ``ToolClient`` makes durable tool calls; and the gate notifier a
worker runs to announce gates. They run outside any workflow.

The top layer below the worker: it imports the workflows' names and inputs, and nothing imports
it but the worker and the door (:mod:`lockgate.operations`), through which every surface (CLI,
MCP and HTTP, the inbox) reaches runs. Its modules are private; lockgate imports each name from
the module that defines it.
"""

__all__: list[str] = []

"""lockgate's verified gates and governed tools inside the agent frameworks Temporal runs.

Each adapter is a module of its own, needing its framework's extra:

- :mod:`lockgate.adapters.langgraph` (``lockgate[langgraph]``): LangGraph's ``interrupt()``
  under Temporal's LangGraph plugin, answered by a lockgate gate; lockgate tools as LangChain
  tools.
- :mod:`lockgate.adapters.openai_agents` (``lockgate[openai-agents]``): the OpenAI Agents SDK's
  tool approvals (``needs_approval``) under Temporal's plugin, answered by lockgate gates;
  lockgate tools as its function tools.
- :mod:`lockgate.adapters.pydantic_ai` (``lockgate[pydantic-ai]``): Pydantic AI's deferred
  tools (``requires_approval``) under its Temporal integration, answered by lockgate gates;
  lockgate tools as a toolset.

Every gate is :func:`lockgate.gate` and every tool call
:func:`lockgate.call_tool`: the same rules, trail, ``pending`` and audit as a
declared graph's.
"""

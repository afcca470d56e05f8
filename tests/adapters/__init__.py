"""Tests of lockgate.adapters: lockgate's gates and tools in LangGraph, the OpenAI Agents SDK and
Pydantic AI, each on Temporal's own plugin."""

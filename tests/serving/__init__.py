"""Tests of the surfaces agents and people reach runs through: MCP and the JSON HTTP API
(lockgate.serving), and the web inbox (lockgate.inbox)."""

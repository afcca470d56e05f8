"""Tests of lockgate.examples: the payment release and the LangGraph support agent, end to end
(the other examples run throughout the suite)."""

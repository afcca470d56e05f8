"""Tests of lockgate.clients: what a client checks before it starts a run or answers a gate."""

"""Tests of lockgate.workflows: graph runs, sub-graphs, agent steps, long runs, the durable tool
call, workflows of your own, what callers send a run, and saved histories that must replay."""

"""Tests of lockgate.tools: declaring tools and the pipeline's rules (policy, rate limits,
confirmation, audit, configuration checks), in process and on a worker."""

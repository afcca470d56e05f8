"""Tests of lockgate.gates: who may answer a gate and what answers decide (approval policies,
evidence, waivers, deadlines), races, notifications, and authority per node."""

"""Tests of lockgate.graphs: what a graph may declare, and every refusal of the compiler."""

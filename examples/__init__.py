"""Example graphs and tools that `lockgate dev` serves."""

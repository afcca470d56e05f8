"""Tests of lockgate.cli: the lockgate command run as people run it, its help, and lockgate dev."""

"""Tests of lockgate.encryption: payload encryption on the server and from the command line,
the codec server, and the Temporal UI reading runs through it."""

"""Tests of lockgate.activities: tools as Temporal activities, local activities among them."""

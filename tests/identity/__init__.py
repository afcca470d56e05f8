"""Tests of lockgate.identity: keys, proofs and their verification (on Temporal too), passkeys."""

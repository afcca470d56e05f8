"""An attacker with namespace access, and no private key or worker secret, plays each finding of
the security review across lockgate's layers: answers, proofs, handovers, payloads, the inbox."""

"""Identity: who a caller is, proven, and what the deployment's workers vouch for.

Ed25519 keys and keyrings, the signed proofs and what each authorizes (its binding, in canonical
JSON), their verification (keys and passkeys), the principals of the Directory and their
enrolment, and the worker secret's seals. The words and quoting of its errors live here too.

The bottom layer: it imports no other layer of lockgate, and never temporalio. Its modules are
private; lockgate imports each name from the module that defines it.
"""

__all__: list[str] = []

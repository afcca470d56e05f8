"""The TypeScript signer (signers/typescript): its Node test against the conformance vectors.

Node and the signer's npm packages come from `make signers` (``npm ci`` from the committed lock
file). Where there is no npm they are skipped and say so; with ``CI`` set they fail instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil

import pytest

from tests.helpers.support import REPOSITORY

SIGNER = REPOSITORY / "signers" / "typescript"
NODE = shutil.which("node")
_INSTALLED = SIGNER / "node_modules" / "@temporalio" / "client"
_BUILT = SIGNER / "dist" / "src" / "index.js"

if NODE is None or not _INSTALLED.exists() or not _BUILT.exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI must install node and the signer's packages (`make signers`)")
    pytest.skip(
        "no node, or the TypeScript signer's packages are not installed: `make signers` installs "
        "them for these tests",
        allow_module_level=True,
    )
assert NODE is not None


async def test_the_signer_reproduces_every_conformance_vector_in_node() -> None:
    process = await asyncio.create_subprocess_exec(
        "npm",
        "test",
        cwd=SIGNER,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=120)
    report = out.decode()
    assert process.returncode == 0, report
    assert "# fail 0" in report
    vectors = json.loads((REPOSITORY / "docs" / "proof-vectors.json").read_text())
    assert "not ok" not in report
    for vector in vectors["proofs"]:
        assert f" - the signer makes the vector byte for byte: {vector['name']}\n" in report
    for case in vectors["canonical"]:
        assert f" - canonical JSON: {case['name']}\n" in report

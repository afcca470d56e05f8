"""A usage mistake exits 2: as argparse's usage and sentence for a person, and under `--json` as
the one refusal shape every other refusal prints, so a script reads every failure one way."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.support import REPOSITORY


def _lockgate(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lockgate.cli", *arguments],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPOSITORY,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    [
        (["--json", "list", "--bogus"], "unrecognized arguments: --bogus (see `lockgate --help`)"),
        (
            ["start", "--json"],
            "the following arguments are required: graph (see `lockgate start --help`)",
        ),
        (
            ["--json", "start", "essay:review", "--inputs", "{"],
            "--inputs is not valid JSON (Expecting property name enclosed in double quotes at 1)",
        ),
    ],
)
def test_a_usage_mistake_under_json_prints_the_refusal_shape_and_exits_two(
    arguments: list[str], sentence: str
) -> None:
    ran = _lockgate(*arguments)

    refused = json.loads(ran.stdout)
    assert ran.returncode == 2
    assert set(refused) == {"ok", "error"} and refused["ok"] is False
    assert refused["error"]["code"] == "VALIDATION_ERROR"
    assert refused["error"]["message"].startswith(sentence)
    assert ran.stderr == ""


def test_a_usage_mistake_without_json_prints_the_usage_and_the_sentence() -> None:
    ran = _lockgate("start")

    assert ran.returncode == 2 and ran.stdout == ""
    assert ran.stderr.startswith("usage: lockgate start ")
    assert ran.stderr.rstrip().endswith(
        "\nlockgate: the following arguments are required: graph (see `lockgate start --help`)"
    )

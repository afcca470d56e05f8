"""deploy/Dockerfile stays true: it passes hadolint, builds from the wheel on a base pinned by
digest, and its default command uses only ``lockgate worker`` flags that exist. The Helm chart's
tests are in test_chart.py."""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lockgate.cli._arguments import build_parser
from tests.helpers.support import REPOSITORY

# hadolint and the manifests' schemas judge the deploy files: the same on every Python (see the
# python_agnostic marker).
pytestmark = pytest.mark.python_agnostic

DEPLOY = REPOSITORY / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"


def _tool(name: str) -> str:
    """A linter the dev extra installs, beside this Python or on the PATH."""
    found = Path(sys.executable).parent / name
    if found.exists():
        return str(found)
    on_path = shutil.which(name)
    assert on_path is not None, f"{name} is missing: pip install -e '.[dev]'"
    return on_path


def _instruction(name: str) -> list[str]:
    """The words of the Dockerfile's (exec-form) ``name`` instruction."""
    found = re.search(rf"^{name} (\[.*\])$", DOCKERFILE.read_text(), flags=re.MULTILINE)
    assert found is not None, f"the Dockerfile has no exec-form {name}"
    words: list[str] = yaml.safe_load(found[1])
    return words


def _worker_command_in_dockerfile() -> list[str]:
    return [*_instruction("ENTRYPOINT"), *_instruction("CMD")]


def _flag(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_the_dockerfile_passes_hadolint() -> None:
    linted = subprocess.run(
        [_tool("hadolint"), "--no-color", str(DOCKERFILE)], capture_output=True, text=True
    )

    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_every_worker_flag_the_image_passes_is_one_lockgate_worker_takes() -> None:
    command = _worker_command_in_dockerfile()
    assert command[:2] == ["lockgate", "worker"]
    parser = build_parser()
    (commands,) = [
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    ]
    known = {
        flag for action in commands.choices["worker"]._actions for flag in action.option_strings
    }
    used = [word for word in command[2:] if word.startswith("--")]

    assert [flag for flag in used if flag not in known] == []
    assert parser.parse_args(command[1:]).command == "worker"


def test_the_image_exposes_the_ports_its_worker_serves() -> None:
    exposed = re.search(r"^EXPOSE (.*)$", DOCKERFILE.read_text(), flags=re.MULTILINE)
    command = _worker_command_in_dockerfile()

    assert exposed is not None
    assert sorted(shlex.split(exposed[1])) == sorted(
        [_flag(command, "--health-port"), _flag(command, "--metrics-port")]
    )


def _stages() -> list[str]:
    """The Dockerfile's build stages, each from its FROM line on."""
    text = DOCKERFILE.read_text()
    starts = [found.start() for found in re.finditer(r"^FROM ", text, flags=re.MULTILINE)]
    return [text[start:end] for start, end in zip(starts, [*starts[1:], len(text)], strict=True)]


def test_the_image_pins_its_base_by_digest() -> None:
    base = re.search(r"^ARG BASE=(\S+)$", DOCKERFILE.read_text(), flags=re.MULTILINE)

    assert base is not None
    assert re.fullmatch(r"python:3\.\d+-slim@sha256:[0-9a-f]{64}", base[1])
    assert [stage.split()[1] for stage in _stages()] == ["${BASE}", "${BASE}"]


def test_the_image_installs_the_built_wheel_and_not_the_source_tree() -> None:
    building, image = _stages()

    assert "pip wheel" in building
    assert "COPY lockgate" in building
    assert "COPY lockgate" not in image
    assert "COPY --from=wheel /dist /dist" in image
    assert "pip install --no-cache-dir --requirement /dist/requirements.txt" in image

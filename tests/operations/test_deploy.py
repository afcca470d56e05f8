"""deploy/ stays true: its Dockerfile and Kubernetes manifests pass their linters, use only
``lockgate worker`` flags that exist, and set only environment variables something reads."""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.envconfig import ClientConfig

from lockgate.cli._arguments import build_parser
from tests.helpers.support import REPOSITORY

DEPLOY = REPOSITORY / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))


def _tool(name: str) -> str:
    """A linter the dev extra installs, beside this Python or on the PATH."""
    found = Path(sys.executable).parent / name
    if found.exists():
        return str(found)
    on_path = shutil.which(name)
    assert on_path is not None, f"{name} is missing: pip install -e '.[dev]'"
    return on_path


def _documents() -> list[dict[str, Any]]:
    return [
        document
        for manifest in MANIFESTS
        for document in yaml.safe_load_all(manifest.read_text())
        if document
    ]


def _worker_container() -> dict[str, Any]:
    (deployment,) = [document for document in _documents() if document["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def _worker_command_in_manifest() -> list[str]:
    container = _worker_container()
    return [str(word) for word in [*container["command"], *container["args"]]]


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


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda path: path.name)
def test_a_kubernetes_manifest_is_valid_strictly(manifest: Path) -> None:
    validated = subprocess.run(
        [_tool("kubernetes-validate"), "--strict", "--quiet", str(manifest)],
        capture_output=True,
        text=True,
    )

    assert validated.returncode == 0, validated.stdout + validated.stderr


@pytest.mark.parametrize(
    "command",
    [_worker_command_in_manifest(), _worker_command_in_dockerfile()],
    ids=["manifest", "dockerfile"],
)
def test_every_worker_flag_deploy_uses_is_one_lockgate_worker_takes(command: list[str]) -> None:
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


def test_the_probes_and_the_metrics_annotation_name_the_ports_the_worker_serves() -> None:
    (deployment,) = [document for document in _documents() if document["kind"] == "Deployment"]
    template = deployment["spec"]["template"]
    container = _worker_container()
    command = _worker_command_in_manifest()
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}

    assert ports == {
        "health": int(_flag(command, "--health-port")),
        "metrics": int(_flag(command, "--metrics-port")),
    }
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] == "health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert template["metadata"]["annotations"]["prometheus.io/port"] == str(ports["metrics"])


def test_the_pod_outlasts_the_workers_grace() -> None:
    (deployment,) = [document for document in _documents() if document["kind"] == "Deployment"]
    grace = float(_flag(_worker_command_in_manifest(), "--grace-seconds"))

    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > grace + 5


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


def _lockgate_reads(name: str) -> bool:
    """Whether lockgate's source names the variable ``name`` as a string."""
    return any(f'"{name}"' in path.read_text() for path in (REPOSITORY / "lockgate").rglob("*.py"))


def _temporal_reads(name: str) -> bool:
    """Whether temporalio's env config takes ``name``: setting it changes the connection."""
    value = "deploy-test"
    loaded = ClientConfig.load_client_connect_config(
        disable_file=True, override_env_vars={name: value}
    )
    return loaded != ClientConfig.load_client_connect_config(
        disable_file=True, override_env_vars={}
    )


def test_every_variable_the_manifest_sets_is_one_lockgate_or_temporal_reads() -> None:
    names = [variable["name"] for variable in _worker_container()["env"]]

    assert names
    unread = [
        name
        for name in names
        if not (_lockgate_reads(name) if name.startswith("LOCKGATE_") else _temporal_reads(name))
    ]
    assert unread == []


def test_an_api_key_in_the_environment_connects_with_tls() -> None:
    loaded = ClientConfig.load_client_connect_config(
        disable_file=True, override_env_vars={"TEMPORAL_API_KEY": "key"}
    )

    assert loaded.get("api_key") == "key"
    assert loaded.get("tls") is True

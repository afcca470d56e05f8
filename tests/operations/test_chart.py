"""deploy/helm/lockgate stays true: it passes ``helm lint``, every scenario renders what it
promises, every rendered resource is valid against the Kubernetes API's schemas (and the CRDs'
for the Prometheus Operator's and KEDA's kinds), and every flag and variable it passes is one
lockgate or temporalio reads."""

from __future__ import annotations

import argparse
import copy
import functools
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from temporalio.envconfig import ClientConfig

from lockgate.authorization import ChannelPolicy
from lockgate.cli._arguments import build_parser
from lockgate.cli._worker import channel_policies_of
from tests.helpers.docs import documentation
from tests.helpers.helm import HELM
from tests.helpers.support import REPOSITORY

# Helm renders the chart: the same on every Python (see the python_agnostic marker).
pytestmark = pytest.mark.python_agnostic

CHART = REPOSITORY / "deploy" / "helm" / "lockgate"
SCENARIOS = REPOSITORY / "deploy" / "helm" / "examples"
CRD_SCHEMAS = Path(__file__).parent / "crd_schemas"
NAMESPACE = "shop"

RENDERED = ["default", "worker-only", "cloud-full-stack", "cloud-mtls"]
"""The scenarios that render: the chart's defaults, and each values file but SSO's."""

PENDING = {"sso": "inbox.sso is set, but the inbox does not sign people in with SSO yet"}
"""Scenarios the chart refuses until what they need is in lockgate, with the refusal's words."""

RESOURCES = {
    "default": {
        "Deployment": 1,
        "Job": 1,
        "PodDisruptionBudget": 1,
        "ServiceAccount": 1,
    },
    "worker-only": {
        "Deployment": 1,
        "Job": 1,
        "NetworkPolicy": 2,
        "PodDisruptionBudget": 1,
        "PodMonitor": 1,
        "PrometheusRule": 1,
        "ServiceAccount": 1,
    },
    "cloud-full-stack": {
        "Deployment": 4,
        "Ingress": 2,
        "NetworkPolicy": 4,
        "PodDisruptionBudget": 1,
        "PrometheusRule": 1,
        "ScaledObject": 1,
        "Service": 4,
        "ServiceAccount": 1,
        "ServiceMonitor": 1,
    },
    "cloud-mtls": {
        "Deployment": 1,
        "PodDisruptionBudget": 1,
        "ScaledObject": 1,
        "ServiceAccount": 1,
        "TriggerAuthentication": 1,
    },
}
"""What each scenario renders, by kind."""


def _values(scenario: str) -> list[str]:
    return [] if scenario == "default" else ["--values", str(SCENARIOS / f"{scenario}.yaml")]


def _helm(*arguments: str) -> subprocess.CompletedProcess[str]:
    assert HELM is not None
    return subprocess.run([str(HELM), *arguments], capture_output=True, text=True)


@functools.cache
def _rendered_text(scenario: str) -> str:
    rendered = _helm(
        "template", "lockgate", str(CHART), "--namespace", NAMESPACE, *_values(scenario)
    )
    assert rendered.returncode == 0, rendered.stderr
    return rendered.stdout


def _rendered(scenario: str) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(_rendered_text(scenario)) if document]


def _custom_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """The CRD schemas beside this file, by (apiVersion, kind in lowercase): their names are
    ``<kind>-<group>-<version>.json``."""
    schemas = {}
    for path in CRD_SCHEMAS.glob("*.json"):
        kind, rest = path.stem.split("-", 1)
        group, version = rest.rsplit("-", 1)
        schemas[(f"{group}/{version}", kind)] = _strict(json.loads(path.read_text()))
    return schemas


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` refusing properties it does not list, as a strict API server refuses unknown
    fields (an object that keeps unknown fields, or lists none, stays open)."""
    strict = copy.deepcopy(schema)

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if (
                "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(strict)
    return strict


def _containers(scenario: str) -> list[dict[str, Any]]:
    """Every container of every pod the scenario renders."""
    found = []
    for document in _rendered(scenario):
        if document["kind"] in ("Deployment", "Job"):
            containers: list[dict[str, Any]] = document["spec"]["template"]["spec"]["containers"]
            found.extend(containers)
    return found


def _worker(scenario: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The worker's Deployment and its container."""
    (deployment,) = [
        document
        for document in _rendered(scenario)
        if document["kind"] == "Deployment"
        and document["metadata"]["labels"]["app.kubernetes.io/component"] == "worker"
    ]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return deployment, container


def _flag(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


@pytest.mark.parametrize("scenario", RENDERED)
def test_the_chart_passes_helm_lint_strictly(scenario: str) -> None:
    linted = _helm("lint", "--strict", str(CHART), "--namespace", NAMESPACE, *_values(scenario))

    assert linted.returncode == 0, linted.stdout + linted.stderr


@pytest.mark.parametrize("scenario", RENDERED)
def test_a_scenario_renders_the_resources_it_promises(scenario: str) -> None:
    kinds = Counter(document["kind"] for document in _rendered(scenario))

    assert dict(kinds) == RESOURCES[scenario]


@pytest.mark.parametrize("scenario", RENDERED)
def test_every_kubernetes_resource_a_scenario_renders_is_valid_strictly(
    scenario: str, tmp_path: Path
) -> None:
    custom = {api for api, _ in _custom_schemas()}
    builtin = [document for document in _rendered(scenario) if document["apiVersion"] not in custom]
    manifest = tmp_path / f"{scenario}.yaml"
    manifest.write_text(yaml.safe_dump_all(builtin))

    validated = subprocess.run(
        [
            str(Path(sys.executable).parent / "kubernetes-validate"),
            "--strict",
            "--quiet",
            str(manifest),
        ],
        capture_output=True,
        text=True,
    )

    # A kind it has no schema for is only a warning to kubernetes-validate: here it fails.
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "WARN" not in validated.stdout, validated.stdout


@pytest.mark.parametrize("scenario", RENDERED)
def test_every_custom_resource_a_scenario_renders_is_valid_against_its_crd(
    scenario: str,
) -> None:
    schemas = _custom_schemas()
    custom = [
        document
        for document in _rendered(scenario)
        if document["apiVersion"] in {api for api, _ in schemas}
    ]

    for document in custom:
        schema = schemas[(document["apiVersion"], document["kind"].lower())]
        errors = [
            f"{document['kind']} {'.'.join(map(str, error.absolute_path))}: {error.message}"
            for error in jsonschema.Draft7Validator(schema).iter_errors(document)
        ]
        assert errors == []


def test_a_resource_with_a_field_its_crd_lacks_is_refused() -> None:
    schemas = _custom_schemas()
    (rule,) = [
        document for document in _rendered("worker-only") if document["kind"] == "PrometheusRule"
    ]
    rule["spec"]["groups"][0]["rules"][0]["severity"] = "warning"  # belongs under labels
    schema = schemas[("monitoring.coreos.com/v1", "prometheusrule")]

    assert not jsonschema.Draft7Validator(schema).is_valid(rule)


def _takes(command: str) -> set[str]:
    """The flags ``lockgate COMMAND`` takes."""
    (commands,) = [
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    return {flag for action in commands.choices[command]._actions for flag in action.option_strings}


@pytest.mark.parametrize("scenario", RENDERED)
def test_every_lockgate_flag_a_scenario_passes_is_one_its_command_takes(scenario: str) -> None:
    for container in _containers(scenario):
        command = [str(word) for word in [*container["command"], *container.get("args", [])]]
        assert command[0] == "lockgate"
        used = [word for word in command[2:] if word.startswith("--")]

        # Exact names: argparse would also take an abbreviation.
        assert [flag for flag in used if flag not in _takes(command[1])] == []
        assert build_parser().parse_args(command[1:]).command == command[1]


def _lockgate_reads(name: str) -> bool:
    """Whether lockgate's source names the variable ``name`` as a string."""
    return any(f'"{name}"' in path.read_text() for path in (REPOSITORY / "lockgate").rglob("*.py"))


def _temporal_reads(name: str, folder: Path) -> bool:
    """Whether temporalio's env config takes ``name``: setting it changes the connection. A
    variable naming a file is given one (the config reads it at once)."""
    value = "deploy-test"
    if name.endswith("_PATH"):
        file = folder / name
        file.write_text("deploy-test")
        value = str(file)
    loaded = ClientConfig.load_client_connect_config(
        disable_file=True, override_env_vars={name: value}
    )
    return loaded != ClientConfig.load_client_connect_config(
        disable_file=True, override_env_vars={}
    )


@pytest.mark.parametrize("scenario", RENDERED)
def test_every_variable_a_scenario_sets_is_one_lockgate_or_temporal_reads(
    scenario: str, tmp_path: Path
) -> None:
    names = {variable["name"] for c in _containers(scenario) for variable in c.get("env", [])}

    assert names
    unread = [
        name
        for name in sorted(names)
        if not (
            _lockgate_reads(name)
            if name.startswith("LOCKGATE_")
            else _temporal_reads(name, tmp_path)
        )
    ]
    assert unread == []


def test_the_scenarios_between_them_set_every_temporal_connection_variable_the_chart_knows() -> (
    None
):
    names = {
        variable["name"]
        for scenario in RENDERED
        for container in _containers(scenario)
        for variable in container.get("env", [])
    }

    assert {
        "TEMPORAL_ADDRESS",
        "TEMPORAL_NAMESPACE",
        "TEMPORAL_API_KEY",
        "TEMPORAL_TLS_CLIENT_CERT_PATH",
        "TEMPORAL_TLS_CLIENT_KEY_PATH",
    } <= names


def test_an_api_key_in_the_environment_connects_with_tls() -> None:
    loaded = ClientConfig.load_client_connect_config(
        disable_file=True, override_env_vars={"TEMPORAL_API_KEY": "key"}
    )

    assert loaded.get("api_key") == "key"
    assert loaded.get("tls") is True


def test_the_channels_a_scenario_declares_reach_the_worker_as_their_policies() -> None:
    _, container = _worker("cloud-full-stack")
    command = [*container["command"], *container["args"]]

    assert channel_policies_of(build_parser().parse_args(command[1:])) == {
        "slack": ChannelPolicy(require_auth=True, block_mutating=True)
    }


def test_a_channel_flag_the_policy_lacks_is_refused_by_the_schema() -> None:
    refused = _helm(
        "template", "lockgate", str(CHART), "--set", "worker.channels.slack={require_auht}"
    )

    assert refused.returncode != 0
    assert "/worker/channels/slack/0" in refused.stderr, refused.stderr


@pytest.mark.parametrize("scenario", RENDERED)
def test_the_worker_probes_and_monitors_name_the_ports_it_serves(scenario: str) -> None:
    _, container = _worker(scenario)
    command = [*container["command"], *container["args"]]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    monitors = [
        document
        for document in _rendered(scenario)
        if document["kind"] in ("PodMonitor", "ServiceMonitor")
    ]

    assert ports == {
        "health": int(_flag(command, "--health-port")),
        "metrics": int(_flag(command, "--metrics-port")),
    }
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] == "health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    for monitor in monitors:
        endpoints = monitor["spec"].get("podMetricsEndpoints") or monitor["spec"]["endpoints"]
        assert [(e["port"], e["path"]) for e in endpoints] == [("metrics", "/metrics")]


@pytest.mark.parametrize("scenario", RENDERED)
def test_the_worker_pod_outlasts_the_workers_grace(scenario: str) -> None:
    deployment, container = _worker(scenario)
    grace = float(_flag(container["args"], "--grace-seconds"))

    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > grace + 5


def test_the_sso_scenario_is_refused_until_the_inbox_signs_in_with_sso() -> None:
    rendered = _helm("template", "lockgate", str(CHART), *_values("sso"))

    assert rendered.returncode != 0
    assert PENDING["sso"] in rendered.stderr
    assert "Leave inbox.sso empty until then" in rendered.stderr


def test_without_payload_keys_no_part_mounts_or_names_them() -> None:
    text = _rendered_text("worker-only")

    assert "payload-keys" not in text
    assert "LOCKGATE_PAYLOAD_KEYS_FILE" not in text


def test_a_codec_server_without_payload_keys_is_refused() -> None:
    rendered = _helm(
        "template",
        "lockgate",
        str(CHART),
        "--set",
        "codecServer.enabled=true,codecServer.token.secretName=codec-token",
    )

    assert rendered.returncode != 0
    assert "codecServer.enabled needs secrets.payloadKeys.secretName" in rendered.stderr


def test_a_value_the_chart_does_not_know_is_refused_by_its_schema() -> None:
    rendered = _helm("template", "lockgate", str(CHART), "--set", "worker.graph=myapp.graphs")

    assert rendered.returncode != 0
    assert "additional properties 'graph' not allowed" in rendered.stderr


def test_the_setup_job_adds_the_search_attributes_before_install_and_upgrade() -> None:
    (job,) = [document for document in _rendered("worker-only") if document["kind"] == "Job"]
    (container,) = job["spec"]["template"]["spec"]["containers"]

    assert container["command"] == ["lockgate", "setup"]
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"


def test_the_keda_trigger_reads_the_variables_the_worker_connects_with() -> None:
    (scaled,) = [
        document for document in _rendered("cloud-full-stack") if document["kind"] == "ScaledObject"
    ]
    deployment, container = _worker("cloud-full-stack")
    (trigger,) = scaled["spec"]["triggers"]
    from_environment = {
        value for key, value in trigger["metadata"].items() if key.endswith("FromEnv")
    }

    assert scaled["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert trigger["metadata"]["taskQueue"] == _flag(container["args"], "--task-queue")
    assert from_environment == {"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY"}
    assert from_environment <= {variable["name"] for variable in container["env"]}
    assert "replicas" not in deployment["spec"]


def test_every_values_file_the_docs_name_is_a_scenario_these_tests_render_or_refuse() -> None:
    named = set(re.findall(r"deploy/helm/examples/([\w-]+)\.yaml", documentation()))
    present = {path.stem for path in SCENARIOS.glob("*.yaml")}

    assert named
    assert named <= present
    assert present == (set(RENDERED) - {"default"}) | set(PENDING)

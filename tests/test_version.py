"""The version is written once, in ``lockgate/_version.py``: the installed distribution carries
it, and the copies that cannot read it (the chart's ``appVersion``, the docs' image tags, the
CHANGELOG's first section) are held to it, so a release that moves it is told of each."""

from __future__ import annotations

import importlib.metadata
import re

import yaml

import lockgate
from tests.helpers.docs import documentation
from tests.helpers.support import REPOSITORY


def test_the_installed_distribution_carries_the_packages_version() -> None:
    assert importlib.metadata.version("lockgate") == lockgate.__version__


def test_the_charts_app_version_is_the_packages_version() -> None:
    # Helm reads Chart.yaml as it is: the default image tag (`appVersion`) is a copy.
    chart = yaml.safe_load((REPOSITORY / "deploy/helm/lockgate/Chart.yaml").read_text())

    assert chart["appVersion"] == lockgate.__version__


def test_the_docs_image_tags_name_the_packages_version() -> None:
    tags = re.findall(r"/lockgate:(\S+)", documentation())

    assert tags
    assert set(tags) == {lockgate.__version__}


def test_the_changelogs_first_section_is_the_packages_version() -> None:
    sections = re.findall(r"^## \[([^\]]+)\]", (REPOSITORY / "CHANGELOG.md").read_text(), re.M)

    assert sections[0] == lockgate.__version__

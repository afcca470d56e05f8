"""The ``helm`` the chart's tests render with: on the PATH, or where ``make helm`` puts it.

Where there is none the tests that need it are skipped, with the command that installs it; with
``CI`` set they fail instead. A test module imports :data:`HELM` from here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.support import REPOSITORY, require_installed

_INSTALLED = REPOSITORY / ".tools" / "helm"

HELM: Path | None = (
    Path(found) if (found := shutil.which("helm")) else _INSTALLED if _INSTALLED.exists() else None
)
"""The helm binary, or None (then importing this module skips the importing tests)."""

require_installed(HELM is None, "helm", "`make helm`")

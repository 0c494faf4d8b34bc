"""The command as an assistant gets it (issue 24): the wheel built from this checkout, installed
in a fresh venv with nothing but the core (what ``pipx install`` and ``uv tool install`` do),
and run by its absolute path from ``/``, as assistants start servers.

The wheel is built and installed once for the module (about half a minute from a warm pip
cache); what is missing is really missing here, no import is blocked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ECHO_SERVER = ROOT / "bench" / "echo_server.py"
OPTIONAL = ("hypothesis", "hypothesis-jsonschema", "psycopg", "redis", "PyJWT", "cryptography")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "assistant", "version": "1.0.0"},
    },
}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel of this checkout, core only."""
    scratch = tmp_path_factory.mktemp("install")
    wheels = scratch / "dist"
    pip = [sys.executable, "-m", "pip"]
    subprocess.run(
        [*pip, "wheel", "-q", "--no-deps", str(ROOT), "-w", str(wheels)], check=True, timeout=300
    )
    (wheel,) = wheels.glob("strictmcp-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(scratch / "venv")], check=True)
    python = scratch / "venv" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=600)
    return scratch / "venv"


def run(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        command, check=False, capture_output=True, text=True, cwd="/", timeout=60, **options
    )


def test_the_core_leaves_the_extras_out(venv: Path) -> None:
    done = run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"])
    installed = {row["name"].lower() for row in json.loads(done.stdout)}
    assert "strictmcp" in installed
    assert not installed & {name.lower() for name in OPTIONAL}
    assert len(installed - {"pip", "setuptools"}) <= 30, sorted(installed)


def test_help_from_the_root_directory(venv: Path) -> None:
    done = run([str(venv / "bin" / "strictmcp"), "--help"])
    assert done.returncode == 0, done.stderr
    assert "strictmcp proxy -- COMMAND" in done.stdout


def test_the_proxy_answers_initialize_from_the_root_directory(venv: Path) -> None:
    command = [str(venv / "bin" / "strictmcp"), "proxy", "--", sys.executable, str(ECHO_SERVER)]
    done = run(command, input=json.dumps(INITIALIZE) + "\n")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["id"] == 1
    assert answer["result"]["protocolVersion"] == "2025-06-18"


def test_check_names_its_extra(venv: Path) -> None:
    command = [str(venv / "bin" / "strictmcp"), "check", "--", sys.executable, str(ECHO_SERVER)]
    done = run(command)
    assert done.returncode == 2
    assert done.stderr == (
        "strictmcp check: generating inputs from schemas needs the [check] extra: "
        "pip install 'strictmcp[check]'\n"
    )

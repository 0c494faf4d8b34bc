"""``strictmcp check`` on real servers nobody here wrote: no false failures.

npm ``@modelcontextprotocol/server-everything`` and PyPI ``mcp-server-time``, started as in
tests/test_proxy_third_party.py (missing ones fail, with how to install them). ``--call``
runs only tools that touch neither the network nor the environment: ``get-env`` would put
environment variables in results, ``gzip-file-as-resource`` fetches URLs, and the
long-running and sampling tools only wait.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from check_fixtures.support import check, check_json, failing
from test_proxy_third_party import everything_command, time_command

SAFE_EVERYTHING = (
    "echo",
    "get-annotated-message",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
)
CASES = ("--cases", "3", "--timeout", "20")


def _tools(*names: str) -> list[str]:
    return [arg for name in names for arg in ("--tool", name)]


def test_time_server_default_mode() -> None:
    report = check_json(*CASES, "--", *time_command(), status=0)
    assert report["server"]["name"] == "mcp-time"
    assert {t["name"] for t in report["tools"]} == {"get_current_time", "convert_time"}
    assert report["verdict"] == "skip"  # no validate tool: every case judged locally only
    assert report["lint"]["ran"] is True


def test_time_server_call_has_no_failures() -> None:
    report = check_json(*CASES, "--call", "--", *time_command(), status=0)
    assert failing(report) == {}
    assert report["restarts"] == 0
    assert report["summary"]["passed"] > 0


def test_everything_default_mode() -> None:
    report = check_json(*CASES, "--", *everything_command(), status=0)
    assert failing(report) == {}
    assert len(report["tools"]) >= len(SAFE_EVERYTHING)


def test_everything_call_on_safe_tools_has_no_failures() -> None:
    report = check_json(
        *CASES, "--call", *_tools(*SAFE_EVERYTHING), "--", *everything_command(), status=0
    )
    assert failing(report) == {}
    assert [t["name"] for t in report["tools"]] == list(SAFE_EVERYTHING)
    assert report["restarts"] == 0
    assert report["summary"]["passed"] > 0


def test_same_seed_same_report_across_processes(tmp_path: Path) -> None:
    """Hash randomisation differs between processes, and this test process has imported
    plenty of local modules (Hypothesis likes their constants); the cases must not care. The
    runs also leave nothing in the working directory."""
    args = ["check", "--format", "json", "--seed", "5", *CASES, "--", *time_command()]
    strictmcp = str(Path(sys.executable).with_name("strictmcp"))
    outputs = []
    for hash_seed in ("1", "2"):
        completed = subprocess.run(
            [strictmcp, *args],
            capture_output=True,
            check=False,
            timeout=120,
            cwd=tmp_path,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        assert completed.returncode == 0, completed.stderr.decode()
        outputs.append(completed.stdout.decode())
    outputs.append(check(*args[1:]).stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert json.loads(outputs[0])["seed"] == 5
    assert list(tmp_path.iterdir()) == []

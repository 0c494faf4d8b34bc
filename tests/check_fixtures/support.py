"""Running ``strictmcp check`` in-process for the tests, and reading its JSON report."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from strictmcp.cli import main

FIXTURES = Path(__file__).resolve().parent
SLOPPY = [sys.executable, str(FIXTURES / "sloppy_server.py")]


def check(*args: str) -> Result:
    """``strictmcp check ARGS`` in-process."""
    return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)


def check_json(*args: str, status: int | None = None) -> dict[str, Any]:
    """The JSON report of ``strictmcp check --format json ARGS``; ``status`` is asserted."""
    result = check("--format", "json", *args)
    if status is not None:
        assert result.exit_code == status, result.stderr + result.stdout
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def failing(report: dict[str, Any]) -> dict[str, set[str]]:
    """Tool name to the kinds of its failing cases."""
    out: dict[str, set[str]] = {}
    for tool in report["tools"]:
        kinds = {case["kind"] for case in tool["cases"] if case["status"] == "fail"}
        if kinds:
            out[tool["name"]] = kinds
    return out


@contextmanager
def http_sloppy(*flags: str) -> Iterator[str]:
    """``http_sloppy.py`` running on a loopback port; its URL."""
    process = subprocess.Popen(
        [sys.executable, str(FIXTURES / "http_sloppy.py"), *flags],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)

"""The README's main job: the proxy demo, run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DEMO = EXAMPLES / "proxy" / "demo.py"
SCHEDULER = EXAMPLES / "scheduler"


def test_proxy_demo_lets_the_good_call_through_and_keeps_the_bad_one_out() -> None:
    run = subprocess.run(
        [sys.executable, str(DEMO)], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tools through the proxy: get_weather, validate" in run.stdout
    assert "valid call   -> Paris: 18.5 degrees, cloudy" in run.stdout
    assert "[pattern-mismatch]" in run.stdout
    assert "calls that reached the server: 1" in run.stdout
    assert "sk-live" not in run.stdout + run.stderr
    assert "refused" in run.stderr


def test_scheduler_demo_finds_every_planted_deep_fault() -> None:
    run = subprocess.run(
        [sys.executable, str(SCHEDULER / "scheduler_demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count(": found (") == 5
    assert "MISSED" not in run.stdout
    assert "real call with the faulty query: refused by the proxy" in run.stdout
    assert "jobs in the database: 1" in run.stdout


def test_make_demo_check_step_on_the_scheduler(tmp_path: Path) -> None:
    policy = str(SCHEDULER / "policy.toml")
    server = [sys.executable, "-m", "strictmcp", "proxy", "--policy", policy, "--"]
    server += [sys.executable, str(SCHEDULER / "scheduler_server.py")]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "strictmcp",
            "check",
            "--cases",
            "5",
            "--policy",
            policy,
            "--",
            *server,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "SCHEDULER_DB": str(tmp_path / "jobs.db")},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "validate refuses it by its guards or deep checks" in run.stdout
    assert "deep-cron-invalid" in run.stdout
    assert "SMT30" not in run.stdout  # the policy guards the path and the query

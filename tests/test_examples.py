"""The README's main job: the proxy demo, run as a user runs it."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def test_gateway_demo_serves_both_servers_and_keeps_the_escape_out() -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "gateway" / "gateway_demo.py")],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    tools = "tools through the gateway: weather__get_weather, scheduler__schedule_job, validate"
    assert tools in run.stdout
    assert "scheduler -> job 1 scheduled" in run.stdout
    assert "[path-outside-roots] (isError)" in run.stdout
    assert 'strictmcp gateway: c2s tools/call "scheduler__schedule_job" refused' in run.stderr


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


def _demo_faults() -> list[tuple[str, dict[str, str], str]]:
    """The faults scheduler_demo.py plants, each with the code that must find it."""
    spec = importlib.util.spec_from_file_location("scheduler_demo", SCHEDULER / "scheduler_demo.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    faults: list[tuple[str, dict[str, str], str]] = module.FAULTS
    return faults


def _check_scheduler(tmp_path: Path, *options: str, proxied: bool = True) -> tuple[int, Any]:
    """``strictmcp check --format json --policy policy.toml`` on the scheduler (through the
    proxy, as ``make demo`` runs it, or bare): its exit status and its report."""
    policy = str(SCHEDULER / "policy.toml")
    server = [sys.executable, str(SCHEDULER / "scheduler_server.py")]
    if proxied:
        server = [sys.executable, "-m", "strictmcp", "proxy", "--policy", policy, "--", *server]
    report = tmp_path / "report.json"
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
            "--format",
            "json",
            "--output",
            str(report),
            *options,
            "--",
            *server,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "SCHEDULER_DB": str(tmp_path / "jobs.db")},
    )
    assert report.exists(), run.stdout + run.stderr
    return run.returncode, json.loads(report.read_text(encoding="utf-8"))


def _planted(report: Any) -> list[dict[str, Any]]:
    return [case for case in report["tools"][0]["cases"] if case["kind"] == "planted"]


def test_make_demo_check_step_finds_every_planted_deep_fault(tmp_path: Path) -> None:
    status, report = _check_scheduler(tmp_path)
    assert status == 0, report
    planted = _planted(report)
    # Every fault the demo plants by hand, check plants from the policy and finds caught by
    # the check that must catch it, at the argument it is in.
    for what, change, code in _demo_faults():
        (pointer,) = ["/" + name for name in change]
        found = [c for c in planted if c["pointer"] == pointer and c["fault"]["code"] == code]
        assert found, f"{what}: no planted fault with {code}"
        assert all(c["status"] == "pass" and code in c["caughtBy"] for c in found), found
    # And so is every other fault planted: the SQL check on the database, for one.
    assert {c["status"] for c in planted} == {"pass"}
    assert all(c["fault"]["code"] in c["caughtBy"] for c in planted)
    codes = {c["fault"]["code"] for c in planted}
    assert {"deep-sql-unknown-table", "deep-sql-unknown-column"} <= codes
    # Generated inputs the checks refuse before the server sees them pass: the proxy's job.
    assert report["verdict"] == "pass"
    refused = [c for t in report["tools"] for c in t["cases"] if c["expect"] == "valid"]
    assert any("guards or deep checks" in " ".join(c["messages"]) for c in refused)
    assert not any(f["code"].startswith("SMT30") for f in report["lint"]["findings"])


def test_check_on_the_bare_scheduler_fails_on_every_planted_fault(tmp_path: Path) -> None:
    # Without the proxy in front, the scheduler accepts every fault: each is a finding.
    status, report = _check_scheduler(tmp_path, "--call", proxied=False)
    assert status == 1
    planted = _planted(report)
    assert len(planted) >= len(_demo_faults())
    for case in planted:
        assert case["caughtBy"] == []
        # A check that only warns would let the call go ahead too: a warning, not a failure.
        assert case["status"] == ("warn" if case["fault"]["warning"] else "fail"), case
        assert "the call accepts" in case["messages"][0]


def test_check_text_report_says_which_check_caught_what(tmp_path: Path) -> None:
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
            "2",
            "--policy",
            policy,
            "--tool",
            "schedule_job",
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
    assert "Planted faults (from the policy; 10 of 10 caught by their check):" in run.stdout
    assert (
        "schedule_job /cron: a cron expression that never parses: caught by deep-cron-invalid"
        in run.stdout
    )
    assert (
        "schedule_job /query: a column the database lacks: caught by deep-sql-unknown-column"
        in run.stdout
    )
    assert "Warnings:" not in run.stdout

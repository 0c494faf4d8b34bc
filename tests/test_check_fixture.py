"""``strictmcp check`` against a server written to be wrong in known ways (and right in
others): every planted fault is found, nothing is found where there is none."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from typing import Any

import pytest

from check_fixtures.support import SLOPPY, check, check_json, failing, http_sloppy

CASES = ("--cases", "4", "--timeout", "20")


@pytest.fixture(scope="module")
def faulty_call() -> dict[str, Any]:
    return check_json(*CASES, "--call", "--", *SLOPPY, "--faults", status=1)


def _messages(report: dict[str, Any], tool: str) -> str:
    cases = next(t for t in report["tools"] if t["name"] == tool)["cases"]
    return "\n".join(m for case in cases if case["status"] == "fail" for m in case["messages"])


def test_call_finds_every_planted_fault(faulty_call: dict[str, Any]) -> None:
    found = failing(faulty_call)
    assert set(found) == {"extra_args", "crash_long", "bad_output"}
    assert found["extra_args"] == {"extra-property"}
    assert "max-length" in found["crash_long"]
    assert found["bad_output"] == {"valid"}
    assert "accepted invalid input" in _messages(faulty_call, "extra_args")
    crash = _messages(faulty_call, "crash_long")
    assert "crashed" in crash
    assert "name buffer overflow" in crash
    assert "does not match the outputSchema" in _messages(faulty_call, "bad_output")
    # The server was restarted after each crash, and the run went on to the last tool.
    assert faulty_call["restarts"] >= 1
    assert faulty_call["aborted"] is None
    assert [t["name"] for t in faulty_call["tools"]][-1] == "bad_output"


def test_call_report_shape(faulty_call: dict[str, Any]) -> None:
    assert faulty_call["format"] == 1
    assert faulty_call["mode"] == "call"
    assert faulty_call["verdict"] == "fail"
    assert faulty_call["server"]["name"] == "check-fixture"
    assert faulty_call["lint"]["ran"] is True
    tool = faulty_call["tools"][0]
    assert set(tool) == {"name", "verdict", "counts", "kinds", "notes", "cases"}
    case = tool["cases"][0]
    assert set(case) == {
        "id",
        "kind",
        "pointer",
        "label",
        "expect",
        "arguments",
        "localValid",
        "status",
        "messages",
    }


def test_well_behaved_tools_have_no_failures(faulty_call: dict[str, Any]) -> None:
    for tool in faulty_call["tools"]:
        if tool["name"] in ("add", "greet"):
            assert tool["verdict"] == "pass", tool


def test_well_behaved_server_passes_with_call() -> None:
    report = check_json(*CASES, "--call", "--", *SLOPPY, status=0)
    assert failing(report) == {}
    assert report["restarts"] == 0
    assert report["summary"]["passed"] > 0


def test_default_mode_asks_the_validate_tool() -> None:
    report = check_json(*CASES, "--", *SLOPPY, "--validate", status=0)
    assert report["validateTool"] == "validate"
    assert report["mode"] == "validate"
    assert [t["name"] for t in report["tools"]] == ["add", "greet"]
    assert failing(report) == {}
    assert report["summary"]["passed"] > 0


def test_default_mode_catches_a_validate_tool_that_lies() -> None:
    report = check_json(*CASES, "--", *SLOPPY, "--faults", "--lying-validate", status=1)
    messages = "\n".join(
        m
        for t in report["tools"]
        for c in t["cases"]
        if c["status"] == "fail"
        for m in c["messages"]
    )
    assert "validate says valid for an input the schema refuses" in messages
    # No tool ran: the crash tool never crashed.
    assert report["restarts"] == 0


def test_default_mode_without_validate_tool_runs_nothing() -> None:
    report = check_json(*CASES, "--", *SLOPPY, "--faults", status=0)
    assert report["verdict"] == "skip"
    assert report["restarts"] == 0
    assert report["summary"]["cases"] == report["summary"]["skipped"] > 0


def test_same_seed_same_cases_other_seed_other_cases() -> None:
    args = ("--cases", "3", "--tool", "greet", "--", *SLOPPY)
    one = check("--format", "json", "--seed", "7", *args)
    two = check("--format", "json", "--seed", "7", *args)
    other = check("--format", "json", "--seed", "8", *args)
    assert one.stdout == two.stdout
    assert one.stdout != other.stdout


def test_text_format_and_tool_selection() -> None:
    result = check(*CASES, "--call", "--tool", "extra_args", "--", *SLOPPY, "--faults")
    assert result.exit_code == 1
    assert "extra_args" in result.stdout
    assert "accepted invalid input" in result.stdout
    assert "strictmcp check --seed 0 --cases 4 --call --tool extra_args --" in result.stdout
    assert "warning: --call runs every tool" in result.stderr
    assert "checking extra_args" in result.stderr


def test_sarif_merges_lint_and_check() -> None:
    result = check(
        *CASES,
        "--call",
        "--format",
        "sarif",
        "--tool",
        "extra_args",
        "--select",
        "ALL",
        "--",
        *SLOPPY,
        "--faults",
    )
    assert result.exit_code == 1
    log = json.loads(result.stdout)
    run = log["runs"][0]
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert "check/extra-property" in rule_ids
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels["check/extra-property"] == "error"
    assert any(rule_id.startswith("SMT") for rule_id in levels)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give either"),
        (("--url", "http://127.0.0.1:9/mcp", "--", "x"), "give either"),
        (("--tool", "nope", "--", *SLOPPY), "no tool named nope"),
    ],
)
def test_usage_and_connection_errors_exit_2(args: tuple[str, ...], message: str) -> None:
    result = check(*args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_a_server_that_cannot_start_exits_127() -> None:
    result = check("--", "/nonexistent/server")
    assert result.exit_code == 127
    assert "cannot start" in result.stderr


def test_http_server_by_url() -> None:
    with http_sloppy("--faults") as url:
        tools = ("--tool", "add", "--tool", "extra_args", "--tool", "bad_output")
        report = check_json(*CASES, "--call", *tools, "--url", url, status=1)
    assert failing(report) == {"extra_args": {"extra-property"}, "bad_output": {"valid"}}
    assert report["target"] == {"url": [url]}


@pytest.mark.parametrize("terminal", [True, False], ids=["tty", "pipe"])
def test_progress_is_a_bar_on_a_terminal_and_plain_lines_otherwise(terminal: bool) -> None:
    leader, follower = pty.openpty() if terminal else os.pipe()
    try:
        process = subprocess.run(
            [sys.executable, "-m", "strictmcp", "check", *CASES, "--", *SLOPPY],
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=120,
            check=False,
        )
        os.close(follower)
        follower = -1
        progress = _read_all(leader).decode(errors="replace")
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert process.returncode == 0, progress
    if terminal:
        assert "100%" in progress
        assert "[####" in progress
    else:
        assert "checking add: " in progress
        assert "%" not in progress
    # The report itself goes to standard output either way.
    assert b"verdict:" in process.stdout


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # a pty whose other end is closed reads as EIO
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)

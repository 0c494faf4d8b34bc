"""``strictmcp check`` against hostile servers: a report, or exit 2 with a one-line reason,
never a traceback, in bounded time; and input generation bounded in time per tool."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from check_fixtures.raw_server import HOSTILE_NAME, HOSTILE_TOOLS, SLOW_ITEMS
from check_fixtures.support import FIXTURES, check, check_json
from strictmcp.check.generate import generate_valid
from strictmcp.schema import compile_schema

RAW = [sys.executable, str(FIXTURES / "raw_server.py")]
TIMEOUT = ("--timeout", "3")


def test_generation_stops_at_its_time_budget() -> None:
    # Every example of this schema is too big to finish drawing: without a budget,
    # hypothesis spends minutes on it and never once calls the test.
    started = time.monotonic()
    generated = generate_valid(
        SLOW_ITEMS, compile_schema(SLOW_ITEMS), count=5, seed_value=0, budget=1
    )
    assert time.monotonic() - started < 15
    assert generated.inputs == ()
    assert generated.note == "input generation ran out of time after 0 of 5 inputs"


def test_generation_within_its_budget_has_no_note() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    generated = generate_valid(schema, compile_schema(schema), count=5, seed_value=0, budget=60)
    assert len(generated.inputs) == 5
    assert generated.note is None


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("tools-not-list", "strictmcp check: the tools/list result has no tools array"),
        ("exit-now", "strictmcp check: initialize failed: the server is gone (exit status 3)"),
        (
            "wrong-id",
            "strictmcp check: initialize failed: no answer to initialize within 3 seconds",
        ),
        ("silent", "strictmcp check: initialize failed: no answer to initialize within 3 seconds"),
        ("flood", "strictmcp check: initialize failed: no answer to initialize within 3 seconds"),
    ],
)
def test_a_server_that_cannot_be_checked_is_one_line(mode: str, reason: str) -> None:
    started = time.monotonic()
    result = check(*TIMEOUT, "--", *RAW, mode)
    assert time.monotonic() - started < 30
    # 127: the server did not start (no handshake); 2: it started but its listing is broken.
    assert result.exit_code == (2 if mode == "tools-not-list" else 127)
    assert result.stderr.splitlines() == [reason]
    assert result.stdout == ""


def test_a_huge_line_is_skipped() -> None:
    report = check_json(*TIMEOUT, "--tool", "tiny_multiple", "--", *RAW, "huge-line", status=0)
    assert [tool["name"] for tool in report["tools"]] == ["tiny_multiple"]


def test_hostile_tools_get_notes_not_crashes() -> None:
    started = time.monotonic()
    # All but huge_pattern, which spends the whole time budget as slow does.
    names = [tool["name"] for tool in HOSTILE_TOOLS[1:] if isinstance(tool, dict)]
    only = [arg for name in names if name != "huge_pattern" for arg in ("--tool", name)]
    budget = ("--budget", "6")
    report = check_json(
        *TIMEOUT, *budget, "--cases", "3", *only, "--", *RAW, "tools-hostile", status=0
    )
    # slow spends the time budget it is given; the others end at once.
    assert time.monotonic() - started < 6 + 30
    notes = {tool["name"]: " ".join(tool["notes"]) for tool in report["tools"]}
    assert "definition was refused" in notes["no_schema"]
    assert "definition was refused" in notes["schema_not_object"]
    for name in ("long_string", "many_items", "contradiction"):
        assert "could not generate inputs" in notes[name]
    assert "ran out of time" in notes["slow"]
    assert "SMT100" in {finding["code"] for finding in report["lint"]["findings"]}


def test_an_unwritable_output_is_one_line(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "report.json"
    only = ("--tool", "tiny_multiple", "--cases", "1")
    result = check(*TIMEOUT, *only, "--output", str(target), "--", *RAW, "tools-hostile")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"strictmcp check: cannot write {target}: No such file or directory"
    )


def test_names_from_the_server_are_escaped_in_text() -> None:
    result = check(*TIMEOUT, "--cases", "2", "--", *RAW, "names-hostile")
    assert result.exit_code == 0, result.output
    for stream in (result.stdout, result.stderr):
        assert HOSTILE_NAME not in stream
        assert "\u202e" not in stream
        assert "\x1b" not in stream
    assert "x\\u202e\\u001b]0;title" in result.stdout


def test_a_server_error_is_one_escaped_line() -> None:
    result = check(*TIMEOUT, "--", *RAW, "list-error")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "strictmcp check: list failed: boom\\nx\\u202e\\u001b]0;title\\u0007\\u001b[31m (-32603)"
    ]

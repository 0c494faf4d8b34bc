"""``strictmcp policy init`` and ``policy check``: a starting policy from a tools file or a live
server (the npm server-filesystem and server-everything), which loads, guards every argument
lint takes for a path, URL, command or SQL, and runs in the proxy once filled in."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from strictmcp.cli import main
from strictmcp.connect.tool_source import load_live
from strictmcp.lint import lint_tools
from strictmcp.policy import Policy
from strictmcp.policy_cmd.draft import draft
from strictmcp.protocol import LATEST
from test_proxy_third_party import (
    everything_command,
    filesystem_command,
    make_tree,
    run,
    session_with,
    text_of,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

TOOLS = [
    {
        "name": "read_file",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "archive",
        "inputSchema": {
            "type": "object",
            "properties": {"files": {"type": "array", "items": {"type": "string"}}},
        },
    },
    {
        "name": "fetch",
        "inputSchema": {
            "type": "object",
            "properties": {"target": {"type": "string", "format": "uri"}},
        },
    },
    {
        "name": "run_sql",
        "inputSchema": {"type": "object", "properties": {"sql": {"type": "string"}}},
    },
    {
        "name": "exec",
        "inputSchema": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
    {
        "name": "weather",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def unguarded(tools: list[Any], policy: Policy) -> list[str]:
    """The SMT3xx findings lint still has with ``policy``."""
    report = lint_tools(tools, revision=LATEST, policy=policy)
    return [f"{f.code} {f.pointer}" for f in report.findings if f.code.startswith("SMT3")]


def flat(text: str) -> str:
    """The draft's words, comments unwrapped."""
    return " ".join(word for word in text.split() if word != "#")


def uncommented(text: str) -> str:
    """The draft with its commented deep checks enabled."""
    return re.sub(r"^# (\[\[deep\]\]|\w+ = )", r"\1", text, flags=re.MULTILINE)


def test_init_from_a_tools_file_guards_every_candidate(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": TOOLS}))
    out = tmp_path / "policy.toml"
    result = invoke(
        "policy", "init", "--tools", str(tools), "--root", str(tmp_path), "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    text = out.read_text()
    policy = Policy.load(out)
    assert unguarded(TOOLS, policy) == []
    assert [(r.method, r.tool, r.argument, r.guard.kind) for r in policy.rules] == [
        ("tools/call", "read_file", "/path", "path"),
        ("tools/call", "archive", "/files/*", "path"),
        ("tools/call", "fetch", "/target", "url"),
        ("tools/call", "run_sql", "/sql", "sql"),
        ("tools/call", "exec", "/command", "argv"),
        # Files read as resources get the tools' root too (SMT305).
        ("resources/read", "*", "/uri", "path"),
        ("resources/subscribe", "*", "/uri", "path"),
    ]
    assert "REPLACE" in text
    assert all(line.startswith("#") for line in text.splitlines() if "weather" in line)
    # The deep checks that fit, commented out; enabled, they load (DSNs are read at check time).
    assert policy.deep == ()
    enabled = tmp_path / "enabled.toml"
    enabled.write_text(uncommented(text))
    assert {r.guard.kind for r in Policy.load(enabled).deep} == {"path", "url", "sql"}
    # And the policy has no problem with these tools.
    checked = invoke("policy", "check", str(out), "--tools", str(tools))
    assert checked.exit_code == 0, checked.output
    assert "no problems" in checked.output


def test_check_reports_what_protects_nothing(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    bad = tmp_path / "bad.toml"
    bad.write_text(
        f"""
[[guard]]
tool = "read_fil"
argument = "/path"
kind = "path"
roots = [{json.dumps(str(tmp_path))}]

[[guard]]
tool = "read_*"
argument = "/file"
kind = "path"
roots = [{json.dumps(str(tmp_path))}]

[[guard]]
tool = "archive"
argument = "/files"
kind = "url"

[[deep]]
tool = "weather"
argument = "/city"
kind = "cron"
"""
    )
    result = invoke("policy", "check", str(bad), "--tools", str(tools))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == [
        f"{bad}: [[guard]] #1 (path): tool 'read_fil' matches no tool of the server",
        f"{bad}: [[guard]] #2 (path): argument '/file' matches no argument of 'read_file'",
        f"{bad}: [[guard]] #3 (url): a url check does not fit argument '/files' of 'archive',"
        " which is array",
        # Its paths are confined (guard #2 is on it), but not the files read as resources.
        f"{bad}: tool 'read_file': SMT305 resources-unguarded: a path guard confines this tool"
        " to its roots, but no path guard is on the URI of resources/read or"
        " resources/subscribe: a client reads any file as a resource instead",
    ]
    broken = tmp_path / "broken.toml"
    broken.write_text('[[deep]]\ntool = "x"\nargument = "/a"\nkind = "sql"\ndsn = "secret"\n')
    refused = invoke("policy", "check", str(broken), "--tools", str(tools))
    assert refused.exit_code == 2
    assert "unknown keys: dsn" in refused.output
    assert invoke("policy", "check", str(bad)).exit_code == 2  # no tools given


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "strictmcp", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )


@pytest.mark.parametrize("server", ["filesystem", "everything"])
def test_init_from_the_npm_servers(tmp_path: Path, server: str) -> None:
    root = tmp_path / "data"
    root.mkdir()
    command = filesystem_command(root) if server == "filesystem" else everything_command()
    out = tmp_path / "policy.toml"
    done = cli("policy", "init", "--root", str(root), "-o", str(out), "--", *command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    policy = Policy.load(out)
    # Listed by the same client the commands use.
    assert unguarded(load_live(command).tools, policy) == []
    if server == "filesystem":
        pointers = {rule.argument for rule in policy.rules}
        assert {"/path", "/paths/*", "/source", "/destination"} <= pointers
        assert {rule.guard.kind for rule in policy.rules} == {"path"}
    checked = cli("policy", "check", str(out), "--", *command, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def valid(tool: dict[str, Any], **given: Any) -> dict[str, Any]:
    """Arguments ``tool``'s schema accepts: ``given``, and a plain value for the rest."""
    schema = tool["inputSchema"]
    plain = {"string": "x", "array": [], "boolean": False, "number": 1}
    required = {
        name: plain[schema["properties"][name]["type"]] for name in schema.get("required", [])
    }
    return {**required, **given}


def test_the_filesystem_draft_runs_in_the_proxy(tmp_path: Path) -> None:
    root, sibling = make_tree(tmp_path.resolve())
    command = filesystem_command(root)
    out = tmp_path / "policy.toml"
    done = cli("policy", "init", "--root", str(root), "-o", str(out), "--", *command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # One glob for the /path every tool shares, not one copy per tool: a screen, not 274 lines.
    text = out.read_text()
    assert len(text.splitlines()) <= 65
    calls = [(r.tool, r.argument) for r in Policy.load(out).rules if r.method == "tools/call"]
    assert calls == [
        ("*", "/path"),
        ("read_multiple_files", "/paths/*"),
        ("move_file", "/source"),
        ("move_file", "/destination"),
    ]
    tools = load_live(command).tools
    with_path = [t for t in tools if "path" in t["inputSchema"].get("properties", {})]
    assert len(with_path) >= 10
    secret = str(sibling / "key.txt")
    escapes = [
        *[(tool["name"], valid(tool, path=secret)) for tool in with_path],
        *[(tool["name"], valid(tool, path=str(root / "link" / "key.txt"))) for tool in with_path],
        ("write_file", {"path": str(sibling / "new.txt"), "content": "x"}),
        ("create_directory", {"path": str(sibling / "made")}),
        ("read_multiple_files", {"paths": [str(root / "hello.txt"), secret]}),
        ("move_file", {"source": secret, "destination": str(root / "stolen.txt")}),
        ("move_file", {"source": str(root / "hello.txt"), "destination": str(sibling / "h.txt")}),
    ]

    async def body() -> None:
        proxied = ("--policy", str(out))
        async with session_with(command, tmp_path / "proxy.stderr", *proxied) as session:
            inside = await session.call_tool("read_text_file", {"path": str(root / "hello.txt")})
            assert "hello from inside" in text_of(inside)
            for name, arguments in escapes:
                refused = await session.call_tool(name, arguments)
                assert refused.is_error, name
                said = text_of(refused)
                assert "[path-outside-roots]" in said or "[path-symlink-escape]" in said, name

    run(body)
    # Nothing was written or moved outside the root.
    assert sorted(p.name for p in sibling.iterdir()) == ["key.txt"]
    assert (root / "hello.txt").exists()
    assert not (root / "stolen.txt").exists()


@pytest.mark.parametrize("glob", ["*", "[rw]*", "[ra]*"])
def test_check_accepts_a_glob_some_tools_lack_the_argument_of(tmp_path: Path, glob: str) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    policy = tmp_path / "glob.toml"
    root = json.dumps(str(tmp_path))
    policy.write_text(
        f'[[guard]]\ntool = "{glob}"\nargument = "/path"\nkind = "path"\nroots = [{root}]\n'
        f'[[guard]]\nmethod = "resources/read"\nargument = "/uri"\nkind = "path"\n'
        f"roots = [{root}]\n"
        f'[[guard]]\nmethod = "resources/subscribe"\nargument = "/uri"\nkind = "path"\n'
        f"roots = [{root}]\n"
    )
    result = invoke("policy", "check", str(policy), "--tools", str(tools))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{policy}: no problems with the tools of {tools}"


@pytest.mark.parametrize(("glob", "count"), [("*", 6), ("[aw]*", 2), ("*e*", 5)])
def test_check_reports_a_glob_no_tool_has_the_argument_of(
    tmp_path: Path, glob: str, count: int
) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    policy = tmp_path / "glob.toml"
    policy.write_text(f'[[guard]]\ntool = "{glob}"\nargument = "/table_name"\nkind = "text"\n')
    result = invoke("policy", "check", str(policy), "--tools", str(tools))
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"{policy}: [[guard]] #1 (text): argument '/table_name' matches no argument of any of"
        f" the {count} tools {glob!r} matches"
    ]


def test_init_suggests_a_schema_guard_for_each_unbounded_string(tmp_path: Path) -> None:
    tools = [
        *TOOLS,
        {
            "name": "describe_table",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "table_name": {"type": "string"},
                    "schema": {"type": "string", "maxLength": 63},  # bounded already
                    "columns": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    ]
    file = tmp_path / "tools.json"
    file.write_text(json.dumps(tools))
    out = tmp_path / "policy.toml"
    result = invoke("policy", "init", "--tools", str(file), "--root", str(tmp_path), "-o", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    # Commented out: the draft loads as written, with no schema guard in force.
    assert "schema" not in {rule.guard.kind for rule in Policy.load(out).rules}
    # One entry to copy, for the first of them, and every one listed: not read_file /path
    # (a path guard), not /schema (bounded).
    enabled = tmp_path / "enabled.toml"
    enabled.write_text(
        re.sub(r"^#   (\[\[guard\]\]|\w+ = )", r"\1", text, flags=re.MULTILINE).replace(
            "^REPLACE$", "^x$"
        )
    )
    suggested = [
        (rule.tool, rule.argument, dict(rule.guard.schema))  # type: ignore[attr-defined]
        for rule in Policy.load(enabled).rules
        if rule.guard.kind == "schema"
    ]
    assert suggested == [("weather", "/city", {"maxLength": 256, "pattern": "^x$"})]
    listed = " ".join(
        line.removeprefix("#   ") for line in text.split("# They are:\n")[1].splitlines()
    )
    assert listed == "weather /city; describe_table /table_name; describe_table /columns/*."


SQLITE = Path(__file__).resolve().parent / "proxy_fixtures" / "sqlite_server.py"


def sqlite_command(workspace: Path) -> list[str]:
    """The mcp-server-sqlite look-alike on ``workspace``'s database, recording its calls."""
    database = workspace / "shop.sqlite"
    return [sys.executable, str(SQLITE), str(workspace / "calls"), "--db-path", str(database)]


def test_the_sqlite_draft_lets_writers_write_in_sqlite(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "shop.sqlite") as db:
        db.execute("CREATE TABLE items (id INTEGER, name TEXT)")
        db.execute("INSERT INTO items VALUES (1, 'a')")
    command = sqlite_command(tmp_path)
    out = tmp_path / "policy.toml"
    done = cli("policy", "init", "-o", str(out), "--", *command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    sql = {
        rule.tool: (rule.guard.dialect, rule.guard.read_only)  # type: ignore[attr-defined]
        for rule in Policy.load(out).rules
        if rule.guard.kind == "sql"
    }
    assert sql == {
        "read_query": ("sqlite", True),
        "write_query": ("sqlite", False),
        "create_table": ("sqlite", False),
    }
    # Each choice says why: where the dialect came from, and that the tool writes.
    assert text.count('dialect = "sqlite"  # named in the server\'s command or name') == 3
    assert text.count("read_only = false  # it writes (by its name)") == 2
    assert "REPLACE: your database" not in text
    checked = cli("policy", "check", str(out), "--", *command, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    passing = [
        ("read_query", "SELECT name FROM items WHERE name GLOB 'a*'"),  # SQLite's, not Postgres'
        ("write_query", "INSERT OR REPLACE INTO items VALUES (2, 'b')"),
        ("write_query", "UPDATE items SET name = 'c' WHERE id = 2"),
        ("create_table", "CREATE TABLE notes (body TEXT)"),
    ]
    refused = [
        ("read_query", "DELETE FROM items"),
        ("read_query", "SELECT 1; DROP TABLE items"),
        ("write_query", "DELETE FROM items; DROP TABLE items"),
        ("write_query", "INSERT INTO items SELECT 3, load_extension('/tmp/x.so')"),
        ("create_table", "CREATE TABLE t AS SELECT readfile('/etc/passwd') AS body"),
    ]
    outcomes: list[bool] = []

    async def body() -> None:
        async with session_with(command, tmp_path / "proxy.stderr", "--policy", str(out)) as s:
            for tool, query in [*passing, *refused]:
                outcomes.append((await s.call_tool(tool, {"query": query})).is_error)

    run(body)
    assert outcomes == [False] * len(passing) + [True] * len(refused)
    arrived = [json.loads(line) for line in (tmp_path / "calls").read_text().splitlines() if line]
    assert [(c["name"], c["arguments"]["query"]) for c in arrived] == passing
    with sqlite3.connect(tmp_path / "shop.sqlite") as db:
        assert db.execute("SELECT * FROM items ORDER BY id").fetchall() == [(1, "a"), (2, "c")]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert tables == {"items", "notes"}


def sql_tool(name: str, description: str = "", **annotations: bool) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {"sql": {"type": "string"}}},
    }
    if annotations:
        tool["annotations"] = annotations
    return tool


@pytest.mark.parametrize(
    ("tools", "hints", "dialect"),
    [
        ([sql_tool("query", "Run SQL on the MySQL server")], [], "mysql"),
        ([sql_tool("query", "Query MariaDB")], [], "mysql"),
        ([sql_tool("duckdb_query")], [], "duckdb"),
        (
            [sql_tool("run", "Runs SQL")],
            ["uvx", "mcp-server-sqlite", "--db-path", "x.db"],
            "sqlite",
        ),
        # The command decides before the descriptions; a DSN in it is never written out.
        (
            [sql_tool("run", "Also works on SQLite")],
            ["mcp-pg", "postgresql://app:hunter2@db.internal/shop"],
            "postgres",
        ),
        ([sql_tool("run", "Works with PostgreSQL or MySQL")], [], None),  # two: no guess
        ([sql_tool("run", "Runs SQL"), sql_tool("mysqlclient_run")], [], None),  # not a word
    ],
)
def test_init_infers_the_dialect(
    tools: list[dict[str, Any]], hints: list[str], dialect: str | None
) -> None:
    text, _ = draft(tools, LATEST, server="test", root="/srv", hints=hints)
    rules = Policy.from_dict(tomllib.loads(text)).rules
    assert {rule.guard.dialect for rule in rules} == {dialect or "postgres"}  # type: ignore[attr-defined]
    assert ("REPLACE: your database" in text) == (dialect is None)
    assert "hunter2" not in text
    assert "db.internal" not in text


@pytest.mark.parametrize(
    ("tool", "read_only", "why"),
    [
        (sql_tool("delete_rows"), False, "by its name"),
        (sql_tool("insertRecord"), False, "by its name"),
        (sql_tool("run_sql", destructiveHint=True), False, "by its annotations"),
        (sql_tool("run_sql", readOnlyHint=False), False, "by its annotations"),
        (sql_tool("update_stats", readOnlyHint=True), True, None),  # annotated: reads
        (sql_tool("run_sql"), True, None),
        (sql_tool("select_rows", destructiveHint=False), True, None),
    ],
)
def test_init_lets_writers_write(tool: dict[str, Any], read_only: bool, why: str | None) -> None:
    text, _ = draft([tool], LATEST, server="test", root="/srv")
    (rule,) = Policy.from_dict(tomllib.loads(text)).rules
    assert rule.guard.read_only is read_only  # type: ignore[attr-defined]
    if why is None:
        assert "writes are refused (read_only = false lets them through)" in flat(text)
    else:
        assert f"read_only = false  # it writes ({why})" in text


def path_tool(name: str, kind: str = "string") -> dict[str, Any]:
    return {
        "name": name,
        "inputSchema": {"type": "object", "properties": {"path": {"type": kind}}},
    }


@pytest.mark.parametrize(
    ("tools", "globs"),
    [
        ([path_tool("read_file"), path_tool("list_dir"), path_tool("ping")], ["*"]),
        # "*" would reach set_depth's integer /path: a common prefix, or suffix, does not.
        (
            [path_tool("read_file"), path_tool("read_dir"), path_tool("set_depth", "integer")],
            ["read_*"],
        ),
        (
            [path_tool("open_file"), path_tool("stat_file"), path_tool("set_depth", "integer")],
            ["*_file"],
        ),
        # No glob fits: one entry each, under one comment.
        ([path_tool("open"), path_tool("stat"), path_tool("depth", "integer")], ["open", "stat"]),
    ],
)
def test_init_collapses_identical_guards_into_a_glob(
    tmp_path: Path, tools: list[dict[str, Any]], globs: list[str]
) -> None:
    text, _ = draft(tools, LATEST, server="test", root=str(tmp_path))
    policy = Policy.from_dict(tomllib.loads(text))
    paths = [rule for rule in policy.rules if rule.method == "tools/call"]
    assert [rule.tool for rule in paths] == globs
    assert unguarded(tools, policy) == []
    # Every tool it guarded is refused a traversal; one whose /path is a number is not reached.
    for tool in tools:
        name, declared = tool["name"], tool["inputSchema"]["properties"]["path"]["type"]
        for outside in ("../../etc/passwd", "/etc/passwd", str(tmp_path) + "/../x"):
            assert bool(policy.check(name, {"path": outside})) == (declared == "string"), name
        if declared == "integer":
            assert policy.check(name, {"path": 3}) == []


@pytest.mark.parametrize("name", ["read[1]", "get*", "what?", "a[!b]"])
def test_init_guards_a_tool_whose_name_holds_glob_characters(tmp_path: Path, name: str) -> None:
    tools = [path_tool(name), path_tool("read1"), path_tool("other", "integer")]
    text, _ = draft(tools, LATEST, server="test", root=str(tmp_path))
    policy = Policy.from_dict(tomllib.loads(text))
    assert policy.check(name, {"path": "/etc/passwd"}) != []
    assert unguarded(tools, policy) == []

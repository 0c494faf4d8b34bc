"""``strictmcp policy init`` and ``policy check``: a starting policy from a tools file or a live
server (the npm server-filesystem and server-everything), which loads, guards every argument
lint takes for a path, URL, command or SQL, and runs in the proxy once filled in."""

from __future__ import annotations

import json
import re
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
from strictmcp.protocol import LATEST
from test_proxy_third_party import (
    everything_command,
    filesystem_command,
    make_tree,
    run,
    session_with,
    text_of,
)

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


def test_the_filesystem_draft_runs_in_the_proxy(tmp_path: Path) -> None:
    root, sibling = make_tree(tmp_path.resolve())
    command = filesystem_command(root)
    out = tmp_path / "policy.toml"
    done = cli("policy", "init", "--root", str(root), "-o", str(out), "--", *command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    async def body() -> None:
        proxied = ("--policy", str(out))
        async with session_with(command, tmp_path / "proxy.stderr", *proxied) as session:
            inside = await session.call_tool("read_text_file", {"path": str(root / "hello.txt")})
            assert "hello from inside" in text_of(inside)
            outside = await session.call_tool("read_text_file", {"path": str(sibling / "key.txt")})
            assert outside.is_error
            assert "path-outside-roots" in text_of(outside)

    run(body)


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
    enabled = tmp_path / "enabled.toml"
    enabled.write_text(re.sub(r"^#   ", "", text, flags=re.MULTILINE).replace("^REPLACE$", "^x$"))
    suggested = [
        (rule.tool, rule.argument, dict(rule.guard.schema))  # type: ignore[attr-defined]
        for rule in Policy.load(enabled).rules
        if rule.guard.kind == "schema"
    ]
    bound = {"maxLength": 256, "pattern": "^x$"}
    # Every unbounded string without a guard of its own; not read_file /path (a path guard).
    assert suggested == [
        ("weather", "/city", bound),
        ("describe_table", "/table_name", bound),
        ("describe_table", "/columns/*", bound),
    ]
    assert "describe_table /table_name: a string with no bound (lint's SMT201)" in text

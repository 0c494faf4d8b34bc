"""The SQL function list and the argv subcommand and operand checks through the real stdio
proxy, in front of a server that does what it is asked (tests/proxy_fixtures/exec_server.py):
a real ``git`` in a scratch repository, a real PostgreSQL cluster. A refused call never
reaches the server, and the repository and the database show it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psycopg
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from postgres_cluster import Cluster, scratch_cluster
from strictmcp.protocol import VALIDATION_META_KEY

FIXTURE = Path(__file__).resolve().parent / "proxy_fixtures" / "exec_server.py"
ENV = "STRICTMCP_TEST_PG_DSN"

POLICY = """
[[guard]]
tool = "git"
argument = "/argv"
kind = "argv"
allow_options = ["--oneline", "--no-pager", "-c"]
allow_subcommands = ["status", "log", "diff"]
operand_schemes = ["https"]

[[guard]]
tool = "query"
argument = "/sql"
kind = "sql"
denied_functions = []        # the read-only list alone decides
allow_functions = ["lower"]
"""


def git(repo: Path, *argv: str) -> str:
    done = subprocess.run(
        ["git", *argv],
        cwd=repo,
        env={"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"},
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    return done.stdout


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with scratch_cluster() as running:
        with psycopg.connect(running.dsn, autocommit=True) as connection:
            connection.execute("CREATE SEQUENCE counter")
        yield running


@pytest.fixture
def workspace(tmp_path: Path, cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (tmp_path / "policy.toml").write_text(POLICY, encoding="utf-8")
    monkeypatch.setenv(ENV, cluster.dsn)
    return tmp_path


@asynccontextmanager
async def client(workspace: Path) -> AsyncIterator[ClientSession]:
    upstream = [sys.executable, str(FIXTURE), str(workspace / "calls"), str(workspace / "repo")]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "strictmcp.proxy", "--policy", "policy.toml", "--", *upstream],
        cwd=str(workspace),
        # The client passes on only a few variables; the server needs the DSN's.
        env={**os.environ},
    )
    with (workspace / "stderr").open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            yield session


def calls(workspace: Path) -> list[dict[str, Any]]:
    path = workspace / "calls"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def codes_of(result: types.CallToolResult) -> list[str]:
    assert result.is_error
    return list((result.meta or {})[VALIDATION_META_KEY]["codes"])


def run_calls(workspace: Path, tool: str, key: str, values: list[Any]) -> list[Any]:
    """Each value through the proxy as ``{key: value}``: the codes a refusal names, or None."""
    outcomes: list[Any] = []

    async def body() -> None:
        async with client(workspace) as session:
            for value in values:
                result = await session.call_tool(tool, {key: value})
                outcomes.append(codes_of(result) if result.is_error else None)

    async def bounded() -> None:
        with anyio.fail_after(60):
            await body()

    anyio.run(bounded)
    return outcomes


ALLOWED_GIT = [["status"], ["--no-pager", "log", "--oneline"], ["diff", "HEAD:README"]]
REFUSED_GIT = {
    # Another subcommand, and one that writes the configuration a later command runs.
    "config": ["config", "core.pager", "touch PWNED"],
    "config spelled upper": ["CONFIG", "core.pager", "touch PWNED"],
    # A global option's value as its own item takes the subcommand's place.
    "-c value": ["-c", "core.sshCommand=touch PWNED", "status"],
    "-c joined": ["-ccore.pager=touch PWNED", "status"],
    "--exec-path": ["--exec-path=/tmp", "status"],
    "no subcommand": ["--no-pager"],
    "clone over ext::": ["clone", "ext::sh -c touch% PWNED", "x"],
    "ext:: after an allowed subcommand": ["diff", "ext::sh -c touch% PWNED"],
    "fd:: transport": ["log", "fd::7"],
    "file URL": ["log", "file:///etc"],
    "option in a URL host": ["log", "https://-oProxyCommand=touch%20PWNED/x"],
}


def test_refused_git_vectors_never_reach_git(workspace: Path) -> None:
    repo = workspace / "repo"
    config = (repo / ".git" / "config").read_bytes()
    outcomes = run_calls(workspace, "git", "argv", [*ALLOWED_GIT, *REFUSED_GIT.values()])
    assert outcomes[: len(ALLOWED_GIT)] == [None] * len(ALLOWED_GIT)
    refused = dict(zip(REFUSED_GIT, outcomes[len(ALLOWED_GIT) :], strict=True))
    assert refused == {
        "config": ["argv-subcommand-not-allowed"],
        "config spelled upper": ["argv-subcommand-not-allowed"],
        "-c value": ["argv-subcommand-not-allowed"],
        "-c joined": ["argv-option-injection"],
        "--exec-path": ["argv-option-injection"],
        "no subcommand": ["argv-subcommand-not-allowed"],
        "clone over ext::": ["argv-subcommand-not-allowed", "argv-operand-scheme-not-allowed"],
        "ext:: after an allowed subcommand": ["argv-operand-scheme-not-allowed"],
        "fd:: transport": ["argv-operand-scheme-not-allowed"],
        "file URL": ["argv-operand-scheme-not-allowed"],
        "option in a URL host": ["argv-operand-scheme-not-allowed"],
    }
    assert [call["arguments"]["argv"] for call in calls(workspace)] == ALLOWED_GIT
    assert (repo / ".git" / "config").read_bytes() == config
    assert not (repo / "PWNED").exists()
    # What the refused config call would have done, run directly on a copy: git writes it.
    copy = workspace / "copy"
    copy.mkdir()
    git(copy, "init", "-q")
    git(copy, *REFUSED_GIT["config"])
    assert "touch PWNED" in git(copy, "config", "core.pager")


def test_refused_sql_functions_never_reach_the_database(workspace: Path, cluster: Cluster) -> None:
    def last_value() -> tuple[Any, ...]:
        with psycopg.connect(cluster.dsn) as connection:
            row = connection.execute("SELECT last_value, is_called FROM counter").fetchone()
        assert row is not None
        return tuple(row)

    before = last_value()
    allowed = ["SELECT lower('A'), count(*), now() FROM generate_series(1, 3)"]
    refused = [
        "SELECT nextval('counter')",
        "SELECT pg_catalog.NEXTVAL('counter')",
        "SELECT \"nextval\"('counter')",
        "SELECT * FROM ts_stat('SELECT nextval(''counter'')::text::tsvector')",
        "SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, nextval(''counter'')::text')",
        "SELECT pg_advisory_lock(1)",
        "SELECT set_config('application_name', 'x', false)",
        "SELECT pg_sleep(30)",
        "SELECT txid_current()",
    ]
    outcomes = run_calls(workspace, "query", "sql", [*allowed, *refused])
    assert outcomes == [None] + [["sql-function-not-allowed"]] * len(refused)
    assert [call["arguments"]["sql"] for call in calls(workspace)] == allowed
    assert last_value() == before

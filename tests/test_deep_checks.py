"""Built-in deep checks declared in a policy (``[[deep]]``): SQLite planned for real, paths
with real permissions, cron and time; run by the dry run, by the enforcer's deep stage before
real calls, and by the proxy. PostgreSQL has its own file (tests/test_deep_postgres.py)."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import pwd
import shutil
import socket
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from strictmcp.enforce import Auditor, Enforcer
from strictmcp.guards import GuardCode, GuardFinding, PathGuard, SqlGuard
from strictmcp.guards.database import SqlDatabaseCheck
from strictmcp.guards.schedule import CronCheck, TimeCheck
from strictmcp.policy import Policy, PolicyError
from strictmcp.protocol import CallCheck, Revision, Severity, ToolRegistry
from strictmcp.proxy import ProxySession
from strictmcp.proxy.session import settled
from strictmcp.schema import IssueCode

C = GuardCode
SECRET = "s3cr3t-literal-4711"
ENV = "STRICTMCP_TEST_SQLITE_DSN"
NOW = datetime(2026, 1, 5, 12, 0, tzinfo=timezone.utc)


def codes(findings: list[GuardFinding]) -> list[GuardCode | IssueCode]:
    for finding in findings:
        assert SECRET not in finding.message
    return [f.code for f in findings]


# --- SQLite, for real ------------------------------------------------------------------------


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "jobs.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        connection.executemany("INSERT INTO jobs (name) VALUES (?)", [("a",), ("b",)])
    connection.close()
    monkeypatch.setenv(ENV, str(path))
    return path


def sqlite_check(read_only: bool = True) -> SqlDatabaseCheck:
    guard = SqlGuard(dialect="sqlite", read_only=read_only)
    return SqlDatabaseCheck(database="sqlite", guard=guard, dsn_env=ENV)


def rows(path: Path) -> list[Any]:
    with sqlite3.connect(path) as connection:
        found = connection.execute("SELECT id, name FROM jobs ORDER BY id").fetchall()
    connection.close()
    return found


def test_sqlite_valid_unknown_table_column_and_syntax(database: Path) -> None:
    check = sqlite_check()
    assert check.check(f"SELECT name FROM jobs WHERE name = '{SECRET}'") == []
    [table] = check.check("SELECT * FROM nosuch")
    assert (table.code, table.message) == (
        C.DEEP_SQL_UNKNOWN_TABLE,
        "the database refuses the query: no such table: nosuch",
    )
    [column] = check.check("SELECT nosuch FROM jobs")
    assert column.code is C.DEEP_SQL_UNKNOWN_COLUMN
    assert "no such column: nosuch" in column.message
    # sqlglot reads two adjacent literals as one; SQLite refuses them, in its words, the
    # literal elided.
    [syntax] = check.check(f"SELECT name FROM jobs WHERE name = 'x' '{SECRET}'")
    assert codes([syntax]) == [C.DEEP_SQL_SYNTAX]
    assert '"(a literal)": syntax error' in syntax.message


def test_sqlite_nothing_changes(database: Path) -> None:
    before, stamp = rows(database), database.stat().st_mtime_ns
    assert codes(sqlite_check().check("DELETE FROM jobs")) == [C.SQL_NOT_READ_ONLY]
    # Allowed by the guard, the writes are planned only, on a database opened read-only.
    for sql in ("DELETE FROM jobs", "UPDATE jobs SET name = 'x'", "DROP TABLE jobs"):
        sqlite_check(read_only=False).check(sql)
    assert rows(database) == before
    assert database.stat().st_mtime_ns == stamp
    assert not Path(f"{database}-journal").exists()


def test_sqlite_connection_failures(database: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, str(database.parent / "missing.db"))
    [missing] = sqlite_check().check("SELECT 1")
    assert missing.code is C.DEEP_SQL_CONNECTION
    assert str(database.parent) not in missing.message
    assert not (database.parent / "missing.db").exists()  # never created
    garbage = database.parent / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    monkeypatch.setenv(ENV, str(garbage))
    assert codes(sqlite_check().check("SELECT 1")) == [C.DEEP_SQL_CONNECTION]
    monkeypatch.delenv(ENV)
    [unset] = sqlite_check().check("SELECT 1")
    assert (unset.code, ENV in unset.message) == (C.DEEP_SQL_DSN, True)


# --- paths, with real permissions ------------------------------------------------------------


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory an unprivileged user owns (pytest's own tmp_path is root's, mode 0700)."""
    base = Path(tempfile.mkdtemp(prefix="strictmcp-deep-"))
    base.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(base, "nobody", "nogroup")
    yield base
    for path in [base, *base.rglob("*")]:
        path.chmod(0o755)
    shutil.rmtree(base)


def as_unprivileged(action: Callable[[], list[GuardCode | IssueCode]]) -> list[str]:
    """``action``'s codes as an unprivileged user sees them: root passes every access check,
    so as root the action runs in a child that became ``nobody``."""
    if os.geteuid() != 0:
        return [str(code.value) for code in action()]
    nobody = pwd.getpwnam("nobody")
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        status = 1
        try:
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            os.write(write, json.dumps([code.value for code in action()]).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    _, status = os.waitpid(child, 0)
    assert status == 0, "the unprivileged check failed"
    return list(json.loads(answer))


def owned_by_nobody(*paths: Path) -> None:
    if os.geteuid() == 0:
        for path in paths:
            shutil.chown(path, "nobody", "nogroup")


def test_path_checks_on_real_permissions(shared_dir: Path) -> None:
    locked, sealed = shared_dir / "locked.txt", shared_dir / "sealed"
    locked.write_text("x")
    sealed.mkdir()
    owned_by_nobody(locked, sealed)
    locked.chmod(0)
    sealed.chmod(0o555)
    readable = PathGuard((str(shared_dir),), readable=True)
    writable = PathGuard((str(shared_dir),), writable=True)
    assert as_unprivileged(lambda: codes(readable.check(str(locked)))) == ["path-not-readable"]
    assert as_unprivileged(lambda: codes(writable.check(f"{sealed}/new.txt"))) == [
        "path-not-writable"
    ]
    # A missing parent under a read-only directory cannot be created either.
    assert as_unprivileged(lambda: codes(writable.check(f"{sealed}/missing/new.txt"))) == [
        "path-not-writable"
    ]
    # Under a writable one it can (as `mkdir -p` would); it does not exist to read.
    assert as_unprivileged(lambda: codes(writable.check(f"{shared_dir}/missing/new.txt"))) == []
    assert as_unprivileged(lambda: codes(readable.check(f"{shared_dir}/missing/new.txt"))) == [
        "path-not-found"
    ]


def test_free_space_and_size_warnings(shared_dir: Path) -> None:
    big = shared_dir / "big.bin"
    big.write_bytes(b"\0" * 4096)
    roots = (str(shared_dir),)
    [large] = PathGuard(roots, max_file_bytes=1000).check(str(big))
    assert (large.code, large.severity) == (C.PATH_FILE_LARGE, Severity.WARNING)
    assert PathGuard(roots, max_file_bytes=4096).check(str(big)) == []
    assert PathGuard(roots, max_file_bytes=1).check(str(shared_dir)) == []  # not a file
    [low] = PathGuard(roots, min_free_bytes=2**62).check(f"{shared_dir}/to-create/x")
    assert (low.code, low.severity) == (C.PATH_LOW_SPACE, Severity.WARNING)
    assert PathGuard(roots, min_free_bytes=1).check(str(big)) == []
    assert str(shared_dir) not in low.message + large.message


# --- cron and time ---------------------------------------------------------------------------


def test_cron() -> None:
    check = CronCheck(min_interval_seconds=600, next_runs=2, clock=lambda: NOW)
    [runs] = check.check("0 3 * * *")
    assert runs.code is C.DEEP_CRON_NEXT_RUNS
    assert runs.message == "next runs: 2026-01-06T03:00:00+00:00, 2026-01-07T03:00:00+00:00"
    often = check.check("*/5 * * * *")
    assert codes(often) == [C.DEEP_CRON_TOO_FREQUENT, C.DEEP_CRON_NEXT_RUNS]
    assert all(f.severity is Severity.WARNING for f in often)
    # The short gap hides in the middle of a day: 02:00 and 02:01.
    assert C.DEEP_CRON_TOO_FREQUENT in codes(check.check("0,1 2 * * *"))
    for bad in ("61 * * * *", "* * *", "every day", "", "* * 31 2 *"):
        assert codes(CronCheck(clock=lambda: NOW).check(bad)) == [C.DEEP_CRON_INVALID]
    assert CronCheck(next_runs=0).check("0 0 * * *") == []


def test_time() -> None:
    check = TimeCheck(min_ahead_seconds=60, max_ahead_seconds=86_400, clock=lambda: NOW)
    assert check.check("2026-01-05T13:00:00Z") == []
    assert check.check("2026-01-05T14:00:00+01:00") == []
    assert codes(check.check("2026-01-05T12:00:30Z")) == [C.DEEP_TIME_NOT_FUTURE]
    assert codes(check.check("2025-12-31T00:00:00Z")) == [C.DEEP_TIME_NOT_FUTURE]
    assert codes(check.check("2026-01-07T00:00:00Z")) == [C.DEEP_TIME_TOO_FAR]
    for bad in ("2026-01-05T13:00:00", "tomorrow", "2026-13-01T00:00:00Z"):
        assert codes(check.check(bad)) == [C.DEEP_TIME_INVALID]


# --- the policy, the enforcer, the proxy -----------------------------------------------------

TOOL = {
    "name": "schedule_job",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "cron": {"type": "string"},
            "at": {"type": "string"},
        },
    },
}


def policy(on_calls: bool = True, mode: str = "enforce") -> Policy:
    return Policy.from_dict(
        {
            "mode": mode,
            "deep": [
                {
                    "tool": "schedule_*",
                    "argument": "/query",
                    "kind": "sql",
                    "database": "sqlite",
                    "dsn_env": ENV,
                    "on_calls": on_calls,
                    "timeout": 5,
                },
                {"tool": "schedule_job", "argument": "/cron", "kind": "cron", "next_runs": 0},
                {"tool": "schedule_job", "argument": "/at", "kind": "time"},
            ],
        }
    )


def registry() -> ToolRegistry:
    tools = ToolRegistry(Revision.V2025_06_18)
    tools.update({"tools": [TOOL]})
    return tools


def test_the_dry_run_answers_with_the_deep_checks(database: Path) -> None:
    dry = Enforcer(policy=policy()).dry_run(registry())
    verdict = asyncio.run(
        dry.check(
            "schedule_job",
            {"query": "SELECT nosuch FROM jobs", "cron": "nonsense", "at": "2000-01-01T00:00Z"},
        )
    )
    assert not verdict.valid
    assert sorted(verdict.errors) == [
        "/at: the time is not in the future [deep-time-not-in-future]",
        "/cron: the cron expression is not valid [deep-cron-invalid]",
        "/query: the database refuses the query: no such column: nosuch [deep-sql-unknown-column]",
    ]
    good = asyncio.run(dry.check("schedule_job", {"query": "SELECT name FROM jobs"}))
    assert good.valid
    # An audit-mode policy reports its deep findings as warnings.
    audit = Enforcer(policy=policy(mode="audit")).dry_run(registry())
    warned = asyncio.run(audit.check("schedule_job", {"query": "SELECT * FROM nosuch"}))
    assert warned.valid
    assert warned.warnings


def deep_decision(enforcer: Enforcer, arguments: dict[str, Any]) -> CallCheck:
    tools = registry()
    decision = enforcer.check_call(tools, "schedule_job", arguments)
    return asyncio.run(enforcer.check_deep(tools, "schedule_job", arguments, decision))


def test_real_calls_run_the_checks_declared_on_calls(database: Path) -> None:
    refused = deep_decision(Enforcer(policy=policy()), {"query": "SELECT * FROM nosuch"})
    assert refused.error_result is not None
    assert "deep-sql-unknown-table" in json.dumps(refused.error_result)
    # Declared for the dry run only: a real call is not held up.
    assert Enforcer(policy=policy(on_calls=False)).has_deep("schedule_job") is False
    passed = deep_decision(Enforcer(policy=policy(on_calls=False)), {"query": "SELECT * FROM x"})
    assert passed.allowed
    assert deep_decision(Enforcer(policy=policy()), {"query": "SELECT name FROM jobs"}).allowed


def test_the_proxy_refuses_a_call_its_deep_checks_refuse(database: Path) -> None:
    log: list[str] = []

    class Sink:
        def write(self, text: str) -> None:
            log.append(text)

        def flush(self) -> None:
            return None

    proxy = ProxySession(Auditor(Sink()), policy=policy())  # type: ignore[arg-type]

    def send(message: dict[str, Any], direction: Any) -> Any:
        line = json.dumps({"jsonrpc": "2.0", **message}).encode()
        return asyncio.run(settled(proxy.decide(line, direction)))

    revision = "2025-06-18"
    info = {"protocolVersion": revision, "capabilities": {}}
    send({"id": 0, "method": "initialize", "params": {**info, "clientInfo": {"name": "c"}}}, "c2s")
    send({"id": 0, "result": {**info, "serverInfo": {"name": "s"}}}, "s2c")
    send({"id": 1, "method": "tools/list", "params": {}}, "c2s")
    send({"id": 1, "result": {"tools": [TOOL]}}, "s2c")
    call = {"name": "schedule_job", "arguments": {"query": "SELECT * FROM nosuch"}}
    refused = send({"id": 2, "method": "tools/call", "params": call}, "c2s")
    assert not refused.forward
    assert json.loads(refused.reply[0])["result"]["isError"] is True
    assert any('"stage": "deep"' in line for line in log)
    call["arguments"] = {"query": "SELECT name FROM jobs"}
    sent = send({"id": 3, "method": "tools/call", "params": call}, "c2s")
    assert sent.forward
    assert not sent.reply
    assert sent.sent == [3]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"kind": "bogus"}, "unknown kind 'bogus'"),
        ({"kind": "sql", "database": "sqlite"}, "exactly one of dsn_env and dsn_file"),
        (
            {"kind": "sql", "database": "sqlite", "dsn_env": "A", "dsn_file": "/b"},
            "exactly one of dsn_env and dsn_file",
        ),
        ({"kind": "sql", "database": "oracle", "dsn_env": "A"}, "database must be one of"),
        ({"kind": "sql", "database": "sqlite", "dsn": "file.db"}, "unknown keys: dsn"),
        ({"kind": "sql", "dsn_env": "A"}, "missing options: database"),
        ({"kind": "cron", "timeout": "fast"}, "timeout must be a number"),
        ({"kind": "cron", "on_calls": 1}, "on_calls must be a boolean"),
        ({"kind": "time", "max_ahead_seconds": -1}, "max_ahead_seconds must not be less"),
        ({"kind": "path"}, "missing options: roots"),
        ({"kind": "url", "reachable": True, "timeout": 1}, "must exceed request_timeout_ms"),
        ({"kind": "cron", "timeout": 0}, "timeout must be positive"),
    ],
)
def test_bad_deep_entries_are_refused_at_load(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError, match="deep") as raised:
        Policy.from_dict({"deep": [{"tool": "t", "argument": "/a", **entry}]})
    assert message in str(raised.value)


# --- url reachability, against a loopback server the test's policy allows explicitly ---------


@pytest.fixture
def loopback() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1: ``/ok`` answers 200, ``/gone`` 404, ``/hop`` redirects to
    ``/ok``, ``/out`` to a private address, ``/loop`` to itself; the paths asked are kept."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            asked.append(f"{self.command} {self.path}")
            targets = {"/hop": "/ok", "/out": "http://10.0.0.1/", "/loop": "/loop"}
            if self.path in targets:
                self.send_response(302)
                self.send_header("Location", targets[self.path])
            else:
                self.send_response(200 if self.path == "/ok" else 404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


def reach(**options: Any) -> Any:
    entry = {"tool": "t", "argument": "/url", "kind": "url", "reachable": True, "timeout": 30}
    entry.update(options)
    [rule] = Policy.from_dict({"deep": [entry]}).deep
    return rule.guard


def test_url_reachability_through_the_guard(loopback: tuple[str, list[str]]) -> None:
    base, asked = loopback
    # Loopback only because this policy allows it, and that one host only.
    allowed = {"schemes": ["http"], "allow_private": True, "hosts": ["127.0.0.1"]}
    check = reach(**allowed)
    assert check.check(f"{base}/ok") == []
    assert check.check(f"{base}/hop") == []
    [gone] = check.check(f"{base}/gone")
    assert (gone.code, gone.severity) == (C.DEEP_URL_STATUS, Severity.WARNING)
    [out] = check.check(f"{base}/out")
    assert out.code is C.URL_REDIRECT_NOT_ALLOWED
    [loop] = reach(**allowed, max_redirects=2).check(f"{base}/loop")
    assert loop.code is C.DEEP_URL_UNREACHABLE
    assert asked == [
        "HEAD /ok",
        "HEAD /hop",
        "HEAD /ok",
        "HEAD /gone",
        "HEAD /out",
        "HEAD /loop",
        "HEAD /loop",
        "HEAD /loop",
    ]
    # The default guard refuses loopback: no request is made at all.
    asked.clear()
    assert codes(reach(schemes=["http"]).check(f"{base}/ok")) == [C.URL_PRIVATE_ADDRESS]
    assert codes(reach(**allowed, reachable=False).check(f"{base}/gone")) == []
    assert asked == []


def test_an_unreachable_url(loopback: tuple[str, list[str]]) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    check = reach(schemes=["http"], allow_private=True, request_timeout_ms=500)
    [finding] = check.check(f"http://127.0.0.1:{port}/")
    assert finding.code is C.DEEP_URL_UNREACHABLE
    assert str(port) not in finding.message

"""The deep SQL check against a real PostgreSQL server (tests/postgres_cluster.py's scratch
cluster): the database's own reasons, a read-only transaction always rolled back, bounded
planning, and the guard agreeing with the server's parser."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from importlib import resources
from typing import Any

import psycopg
import pytest

from postgres_cluster import Cluster, scratch_cluster
from strictmcp.guards import GuardCode, GuardFinding, SqlGuard, sql_postgres
from strictmcp.guards.database import SqlDatabaseCheck
from strictmcp.guards.sql_functions import POSTGRES_EXCLUDED, allowed_functions, postgres_file
from strictmcp.guards.sql_postgres import POSTGRESQL_MAJOR
from strictmcp.policy import Policy, PolicyError
from test_guard_sql import OFF_THE_POSTGRES_LIST, POSTGRES_REJECTS

C = GuardCode
SECRET = "s3cr3t-literal-4711"
ENV = "STRICTMCP_TEST_PG_DSN"

SETUP = """
CREATE TABLE orders (id int PRIMARY KEY, customer text NOT NULL, total numeric NOT NULL);
INSERT INTO orders SELECT g, 'c' || (g % 10), g FROM generate_series(1, 5000) AS g;
CREATE TABLE audit (n int);
CREATE TABLE docs (v tsvector);
INSERT INTO docs VALUES ('secret words');
CREATE SEQUENCE counter;
-- Writes when run: EXPLAIN never runs a volatile function.
CREATE FUNCTION bump() RETURNS int LANGUAGE plpgsql VOLATILE AS
  $$ BEGIN INSERT INTO audit VALUES (1); RETURN 1; END $$;
-- Claims to be immutable, so the planner runs it while planning: it sleeps.
CREATE FUNCTION slow() RETURNS int LANGUAGE plpgsql IMMUTABLE AS
  $$ BEGIN PERFORM pg_sleep(30); RETURN 1; END $$;
-- Claims to be immutable and writes: the read-only transaction stops it at planning.
CREATE FUNCTION sneaky() RETURNS int LANGUAGE sql IMMUTABLE AS
  $$ SELECT nextval('counter')::int $$;
ANALYZE orders;
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with scratch_cluster() as running:
        with psycopg.connect(running.dsn, autocommit=True) as connection:
            connection.execute(SETUP)
        yield running


@pytest.fixture
def dsn(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENV, cluster.dsn)
    return cluster.dsn


def checker(**options: Any) -> SqlDatabaseCheck:
    guard = SqlGuard(
        dialect="postgres",
        read_only=options.pop("read_only", True),
        allow_functions=options.pop("allow_functions", ()),
    )
    return SqlDatabaseCheck(database="postgres", guard=guard, dsn_env=ENV, **options)


def found(check: SqlDatabaseCheck, sql: str) -> list[GuardFinding]:
    findings = check.check(sql)
    for finding in findings:
        assert SECRET not in finding.message
        assert "host=" not in finding.message
    return findings


def state(dsn: str) -> tuple[Any, ...]:
    """What a check must never change: rows, the sequence, open transactions."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        row = connection.execute(
            "SELECT (SELECT count(*) FROM orders), (SELECT sum(total) FROM orders),"
            " (SELECT count(*) FROM audit), (SELECT last_value FROM counter),"
            " (SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%')"
        ).fetchone()
    assert row is not None
    return tuple(row)


def test_the_server_is_the_major_the_guard_parses_with(cluster: Cluster) -> None:
    assert cluster.major == POSTGRESQL_MAJOR


def test_a_valid_query_passes(dsn: str) -> None:
    assert found(checker(), "SELECT customer, sum(total) FROM orders GROUP BY customer") == []
    assert found(checker(), f"SELECT * FROM orders WHERE customer = '{SECRET}'") == []


def test_unknown_table_and_column_with_the_database_reason(dsn: str) -> None:
    [table] = found(checker(), "SELECT * FROM nosuch")
    assert table.code is C.DEEP_SQL_UNKNOWN_TABLE
    assert 'relation "nosuch" does not exist' in table.message
    [column] = found(checker(), "SELECT nosuch FROM orders")
    assert column.code is C.DEEP_SQL_UNKNOWN_COLUMN
    assert 'column "nosuch" does not exist' in column.message


def test_a_syntax_error_the_guard_lets_through_is_reported_by_the_database(dsn: str) -> None:
    # Parses (an unknown type name is grammar), fails at analysis with the server's reason.
    [finding] = found(checker(), f"SELECT '{SECRET}'::nosuchtype")
    assert finding.code is C.DEEP_SQL_REJECTED
    assert 'type "nosuchtype" does not exist' in finding.message
    # Syntax the guard refuses never reaches the database.
    [refused] = found(checker(), f"SELECT '{SECRET}' FROM WHERE")
    assert refused.code is C.SQL_UNPARSEABLE


@pytest.mark.parametrize("sql", POSTGRES_REJECTS)
def test_what_the_guard_refuses_as_unparseable_the_server_rejects(dsn: str, sql: str) -> None:
    assert [f.code for f in SqlGuard().check(sql)] == [C.SQL_UNPARSEABLE]
    with (
        psycopg.connect(dsn, autocommit=True) as connection,
        pytest.raises(psycopg.errors.SyntaxError),
    ):
        connection.execute(("EXPLAIN " + sql).encode())


def test_a_write_is_refused_before_any_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    # No DSN at all: the guard's refusal comes first.
    monkeypatch.delenv(ENV, raising=False)
    findings = found(checker(), "DELETE FROM orders")
    assert [f.code for f in findings] == [C.SQL_NOT_READ_ONLY]
    assert [f.code for f in found(checker(), "SELECT 1")] == [C.DEEP_SQL_DSN]


def test_nothing_changes_and_every_transaction_ends(dsn: str) -> None:
    before = state(dsn)
    # The guard refuses a function off its list before any connection...
    [refused] = found(checker(), "SELECT bump()")
    assert refused.code is C.SQL_FUNCTION_NOT_ALLOWED
    # ...and the database bounds what a policy allows on purpose.
    users = checker(allow_functions=("bump", "sneaky"))
    assert found(users, "SELECT bump()") == []  # planned, never run
    [sneaky] = found(users, "SELECT sneaky()")  # run while planning, and stopped
    assert sneaky.code is C.DEEP_SQL_WRITES
    assert "read-only transaction" in sneaky.message
    # Even a write the guard was told to allow is only planned, read-only.
    found(checker(read_only=False), "DELETE FROM orders")
    found(checker(read_only=False), "UPDATE orders SET total = 0")
    found(checker(read_only=False), "INSERT INTO audit SELECT bump()")
    assert state(dsn) == before


def test_a_long_statement_is_bounded(dsn: str) -> None:
    [finding] = found(checker(statement_timeout_ms=300, allow_functions=("slow",)), "SELECT slow()")
    assert finding.code is C.DEEP_SQL_TIMEOUT
    assert state(dsn)[-1] == 0


def test_an_estimate_above_max_rows_is_a_warning(dsn: str) -> None:
    [many] = found(checker(max_rows=100), "SELECT * FROM orders")
    assert many.code is C.DEEP_SQL_MANY_ROWS
    assert many.severity.value == "warning"
    assert found(checker(max_rows=100), "SELECT * FROM orders WHERE id = 1") == []


def test_a_connection_failure_is_reported_as_such(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, f"host={cluster.directory} port=1 user=postgres dbname=postgres")
    [finding] = found(checker(), "SELECT 1")
    assert finding.code is C.DEEP_SQL_CONNECTION
    assert ENV in finding.message
    assert str(cluster.directory) not in finding.message
    monkeypatch.setenv(ENV, f"host={cluster.directory} user=postgres dbname=nosuchdb")
    [finding] = found(checker(), "SELECT 1")
    assert finding.code is C.DEEP_SQL_CONNECTION


def test_the_dsn_may_come_from_a_file(cluster: Cluster, tmp_path: Any) -> None:
    secret = tmp_path / "dsn"
    secret.write_text(cluster.dsn + "\n")
    guard = SqlGuard()
    check = SqlDatabaseCheck(database="postgres", guard=guard, dsn_file=str(secret))
    assert check.check("SELECT id FROM orders") == []
    [missing] = SqlDatabaseCheck(
        database="postgres", guard=guard, dsn_file=str(tmp_path / "none")
    ).check("SELECT 1")
    assert missing.code is C.DEEP_SQL_DSN


def test_the_policy_bounds_a_check_by_its_timeout(dsn: str) -> None:
    entry = {
        "tool": "report",
        "argument": "/sql",
        "kind": "sql",
        "database": "postgres",
        "dsn_env": ENV,
        "statement_timeout_ms": 500,
        "connect_timeout": 2,
        # Room for a loaded machine to connect and run it; slow() sleeps 30 s, longer still.
        "timeout": 20,
        "allow_functions": ["slow"],
    }
    policy = Policy.from_dict({"deep": [entry]})
    started = time.monotonic()
    [violation] = asyncio.run(policy.check_deep("report", {"sql": "SELECT slow()"}))
    assert time.monotonic() - started < 20
    assert (violation.code, violation.pointer) == (C.DEEP_SQL_TIMEOUT, "/params/arguments/sql")
    assert asyncio.run(policy.check_deep("other", {"sql": "SELECT slow()"})) == []
    # A database bound the policy's would cut short is refused when the policy is loaded.
    with pytest.raises(PolicyError, match="must exceed connect_timeout plus"):
        Policy.from_dict({"deep": [{**entry, "statement_timeout_ms": 30_000}]})


def test_the_read_only_function_list_is_the_clusters(cluster: Cluster) -> None:
    # Generated from this very server's pg_proc: regenerate with
    # `STRICTMCP_PG_DSN=... python -m strictmcp.guards.sql_functions > .../postgres.txt`.
    shipped = resources.files("strictmcp.guards") / "sql_function_lists" / "postgres.txt"
    with psycopg.connect(cluster.dsn) as connection:
        assert postgres_file(connection) == shipped.read_text("utf-8")
    assert f"PostgreSQL {POSTGRESQL_MAJOR}:" in shipped.read_text("utf-8")


def test_what_the_list_refuses_is_volatile_excluded_or_no_catalog_function(dsn: str) -> None:
    listed = allowed_functions("postgres")
    with psycopg.connect(dsn, autocommit=True) as connection:
        for sql, _ in OFF_THE_POSTGRES_LIST:
            statements = sql_postgres.parse(sql)
            assert not isinstance(statements, str)
            for parts in sql_postgres.function_calls(statements[0]):
                name = parts[-1]
                if name in listed and parts[0] in (name, "pg_catalog"):
                    continue
                kinds = connection.execute(
                    "SELECT array_agg(DISTINCT provolatile::text) FROM pg_proc"
                    " WHERE proname = %s AND pronamespace = 'pg_catalog'::regnamespace",
                    (name,),
                ).fetchone()
                assert kinds is not None
                catalog = parts[0] in (name, "pg_catalog")
                # Volatile by the server's own word, excluded with a reason, or not a
                # catalog function at all (a user's, another schema's, a quoted other name).
                assert (
                    not catalog or kinds[0] is None or "v" in kinds[0] or name in POSTGRES_EXCLUDED
                ), name


# Each refused query does what the guard says it would: run here, as superuser, it changes
# the server's state or reads past the tables allowlist.
def test_refused_calls_would_have_had_side_effects(dsn: str) -> None:
    guard = SqlGuard(denied_functions=(), tables=("orders",))
    with psycopg.connect(dsn, autocommit=True) as connection:

        def last_value() -> int:
            row = connection.execute("SELECT last_value FROM counter").fetchone()
            assert row is not None
            return int(row[0])

        # A query string run by ts_stat or ts_rewrite: volatile functions in it run.
        for sql in (
            "SELECT * FROM ts_stat('SELECT nextval(''counter'')::text::tsvector"
            " FROM generate_series(1, 3)')",
            "SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery,"
            " nextval(''counter'')::text::tsquery')",
        ):
            assert [f.code for f in guard.check(sql)] == [C.SQL_FUNCTION_NOT_ALLOWED]
            before = last_value()
            connection.execute(sql.encode())
            assert last_value() > before
        # ...and reads a table the allowlist does not name.
        sql = "SELECT * FROM ts_stat('SELECT v FROM docs')"
        assert [f.code for f in guard.check(sql)] == [C.SQL_FUNCTION_NOT_ALLOWED]
        words = {row[0] for row in connection.execute(sql.encode()).fetchall()}
        assert words == {"secret", "words"}
        # A stable function that assigns the transaction an id: a write to the server.
        assert [f.code for f in guard.check("SELECT txid_current()")] == [
            C.SQL_FUNCTION_NOT_ALLOWED
        ]
        with connection.transaction():
            assert connection.execute("SELECT txid_current_if_assigned()").fetchone() == (None,)
            connection.execute("SELECT txid_current()")
            assert connection.execute("SELECT txid_current_if_assigned()").fetchone() != (None,)
        # A lock other sessions see, and a setting the session keeps.
        assert [f.code for f in guard.check("SELECT pg_advisory_lock(4711)")] == [
            C.SQL_FUNCTION_NOT_ALLOWED
        ]
        connection.execute("SELECT pg_advisory_lock(4711)")
        with psycopg.connect(dsn, autocommit=True) as other:
            held = other.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4711"
            ).fetchone()
        assert held == (1,)
        connection.execute("SELECT pg_advisory_unlock(4711)")
        sql = "SELECT set_config('application_name', 'x', false)"
        assert [f.code for f in guard.check(sql)] == [C.SQL_FUNCTION_NOT_ALLOWED]
        connection.execute(sql.encode())
        assert connection.execute("SELECT current_setting('application_name')").fetchone() == ("x",)
    # What the list allows, the database runs in a read-only transaction without complaint.
    with psycopg.connect(dsn) as connection:
        connection.execute("SET TRANSACTION READ ONLY")
        sql = "SELECT lower(customer), count(*), now(), max(total) FROM orders GROUP BY 1"
        assert guard.check(sql) == []
        assert connection.execute(sql.encode()).fetchall()

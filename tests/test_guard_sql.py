"""The SQL guard: one read-only statement, no denied function, allowed tables, nothing quoted."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from strictmcp.guards import GuardCode, GuardFinding
from strictmcp.guards.sql import DEFAULT_DENIED_FUNCTIONS, SqlGuard
from strictmcp.guards.sql_functions import allowed_functions, construct_types
from strictmcp.guards.sql_postgres import POSTGRESQL_MAJOR

SECRET = "s3cr3t-literal-4711"

C = GuardCode


def codes(guard: SqlGuard, sql: Any) -> set[str]:
    """The codes ``guard`` finds, after checking no message quotes a literal of the query."""
    findings = guard.check(sql)
    assert_quiet(findings)
    return {f.code for f in findings}


def assert_quiet(findings: list[GuardFinding]) -> None:
    for finding in findings:
        assert SECRET not in finding.message
        assert "'" not in finding.message  # no string literal, quoted


BENIGN = [
    "SELECT 1",
    "SELECT 1;",
    "  SELECT 1 ;  ",
    "select id, name from users where id = 1",
    "SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id"
    " WHERE o.total > 100 ORDER BY o.created_at DESC LIMIT 10 OFFSET 20",
    "SELECT c.name, count(*) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id"
    " GROUP BY c.name HAVING count(*) > 2",
    "SELECT name FROM users WHERE id IN (SELECT user_id FROM orders WHERE total > 10)",
    "SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id)",
    "SELECT (SELECT max(total) FROM orders) AS top",
    "WITH recent AS (SELECT * FROM orders WHERE created_at > now() - interval '7 days')"
    " SELECT customer_id, count(*) FROM recent GROUP BY customer_id",
    "WITH a AS (SELECT 1 AS x), b AS (SELECT x + 1 AS y FROM a) SELECT * FROM b",
    "WITH RECURSIVE r(n) AS (VALUES (1) UNION ALL SELECT n + 1 FROM r WHERE n < 10)"
    " SELECT * FROM r",
    "SELECT id, rank() OVER (PARTITION BY dept ORDER BY salary DESC) FROM employees",
    "SELECT id, sum(total) OVER w FROM orders WINDOW w AS (ORDER BY id)",
    "SELECT count(*) FILTER (WHERE total > 1) FROM orders",
    "SELECT DISTINCT ON (a) a, b FROM t ORDER BY a, b",
    "SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.id = t.id) x",
    "SELECT * FROM generate_series(1, 10) AS g(n)",
    "SELECT 1 UNION ALL SELECT 2",
    "SELECT 1 INTERSECT SELECT 2 EXCEPT SELECT 3",
    "(SELECT a FROM t) UNION (SELECT a FROM u) ORDER BY 1",
    "VALUES (1, 'a'), (2, 'b')",
    "TABLE users",
    "SELECT CASE WHEN a > 0 THEN 'pos' ELSE 'neg' END, a::int, CAST(b AS text) FROM t",
    "SELECT coalesce(a, b), lower(name), upper(name), length(name) FROM t",
    "SELECT date_trunc('day', now()), current_date, extract(year FROM created_at) FROM t",
    "SELECT data->>'name', data->'tags' FROM docs WHERE data ? 'name'",
    "SELECT a FROM t WHERE b ILIKE '%x%' AND c BETWEEN 1 AND 2 AND d IS NOT NULL",
    "SELECT * FROM t WHERE id = ANY($1) AND name = $2",
    "SELECT * FROM t WHERE id = %(id)s",
    "SELECT * FROM t WHERE id = :id",
    "SELECT 'a; DROP TABLE users; --' AS s",
    "SELECT 'DELETE FROM t' AS s, 'pg_sleep(10)' AS t",
    "SELECT 'it''s; DROP TABLE users'",
    "SELECT $$; DELETE FROM users; $$",
    "SELECT $tag$ '; DROP TABLE users; -- $tag$",
    "SELECT E'it\\'s; DROP TABLE users'",
    "SELECT 1 -- ; DROP TABLE users;\n",
    "/* DELETE FROM t; */ SELECT 1",
    "SELECT /* ; */ 1; -- trailing comment",
    "SELECT sleep, benchmark, nextval FROM naps",  # columns, not calls
    'SELECT "delete", "update" FROM "User Table"',
    "SELECT current_setting('timezone'), version(), pg_catalog.lower('A'), \"lower\"('A')",
    "SELECT substring(a from 2), trim(a), position('x' in a), a AT TIME ZONE 'UTC' FROM t",
]


@pytest.mark.parametrize("sql", BENIGN)
def test_ordinary_queries_pass(sql: str) -> None:
    assert SqlGuard().check(sql) == []


STACKED = [
    f"SELECT '{SECRET}'; DROP TABLE users",
    "COMMIT; DROP TABLE users",
    "SELECT 1;DELETE FROM t",
    f"SELECT ';{SECRET}' ; DROP TABLE t",
    "SELECT 1 /* x */; /* y */ DROP TABLE t",
    "SELECT 1 -- c\n; DROP TABLE t",
    "SELECT $$a$$; DROP TABLE t",
    "SELECT '\\'; DROP TABLE t; -- '",  # standard strings: the backslash does not escape
    "SELECT 1; SELECT 2",
]


@pytest.mark.parametrize("sql", STACKED)
def test_stacked_statements_are_refused(sql: str) -> None:
    assert C.SQL_MULTIPLE_STATEMENTS in codes(SqlGuard(), sql)


def test_every_stacked_statement_is_judged() -> None:
    findings = SqlGuard().check("SELECT 1; DROP TABLE users")
    assert [f.code for f in findings] == [C.SQL_MULTIPLE_STATEMENTS, C.SQL_NOT_READ_ONLY]
    assert "SELECT, DROP" in findings[0].message
    assert "DROP" in findings[1].message
    assert SqlGuard(read_only=False, single_statement=False).check("SELECT 1; SELECT 2") == []


NOT_READ_ONLY = [
    f"INSERT INTO users (name) VALUES ('{SECRET}')",
    f"UPDATE users SET name = '{SECRET}'",
    "DELETE FROM users",
    "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
    "CREATE TABLE t (a int)",
    "CREATE TABLE t AS SELECT * FROM users",
    "DROP TABLE users",
    "ALTER TABLE users ADD COLUMN a int",
    "TRUNCATE users",
    "GRANT ALL ON users TO public",
    "COPY users TO '/tmp/users.csv'",
    "COPY (SELECT 1) TO PROGRAM 'id'",
    "SET search_path TO evil",
    "SET ROLE admin",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "CALL refresh_everything()",
    "DO $$ BEGIN DELETE FROM users; END $$",
    "EXPLAIN SELECT 1",
    "EXPLAIN ANALYZE DELETE FROM users",
    "EXPLAIN (ANALYZE) DELETE FROM users",
    "SHOW ALL",
    "NOTIFY channel",
    "LISTEN channel",
    "VACUUM",
    "ANALYZE users",
    "LOCK TABLE users",
    "PREPARE p AS SELECT 1",
    "EXECUTE p",
    "DECLARE c CURSOR FOR SELECT 1",
    "REFRESH MATERIALIZED VIEW v",
    "WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d",
    f"WITH i AS (INSERT INTO t VALUES ('{SECRET}') RETURNING *) SELECT 1",
    "WITH u AS (UPDATE t SET a = 1 RETURNING *) SELECT * FROM u",
    "SELECT a FROM (WITH d AS (DELETE FROM t RETURNING a) SELECT a FROM d) s",
    "WITH x AS (SELECT 1), d AS (DELETE FROM t RETURNING *) SELECT * FROM x",
    "SELECT * INTO new_table FROM users",
    "SELECT * INTO TEMP t FROM users",
    "SELECT * FROM users FOR UPDATE",
    "SELECT * FROM users FOR SHARE",
    "SELECT * FROM users FOR NO KEY UPDATE",
    "SELECT * FROM users FOR KEY SHARE",
    "SELECT * FROM users FOR UPDATE SKIP LOCKED",
    "SELECT * FROM (SELECT * FROM users FOR UPDATE) s",
]


@pytest.mark.parametrize("sql", NOT_READ_ONLY)
def test_anything_but_a_pure_read_is_refused(sql: str) -> None:
    assert codes(SqlGuard(), sql) == {C.SQL_NOT_READ_ONLY}


def test_read_only_false_allows_writes_but_keeps_the_other_checks() -> None:
    g = SqlGuard(read_only=False, tables=("users",))
    assert g.check("DELETE FROM users WHERE id = 1") == []
    assert g.check("INSERT INTO users SELECT * FROM users") == []
    assert codes(g, "DELETE FROM secrets") == {C.SQL_IDENTIFIER_NOT_ALLOWED}
    assert codes(g, "UPDATE users SET a = pg_sleep(1)") == {C.SQL_DENIED_FUNCTION}
    assert codes(g, "DELETE FROM users; DROP TABLE users") == {C.SQL_MULTIPLE_STATEMENTS}


def test_messages_name_the_statement_type() -> None:
    [finding] = SqlGuard().check("WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d")
    assert "DELETE" in finding.message
    [finding] = SqlGuard().check("EXPLAIN ANALYZE DELETE FROM users")
    assert "EXPLAIN" in finding.message
    [finding] = SqlGuard().check("TRUNCATE users")
    assert "TRUNCATE" in finding.message


DENIED_CALLS = [
    ("SELECT pg_sleep(10)", "postgres", "pg_sleep"),
    ("SELECT pg_catalog.pg_sleep(10)", "postgres", "pg_catalog.pg_sleep"),
    ('SELECT "pg_sleep"(10)', "postgres", "pg_sleep"),
    ("SELECT PG_SLEEP(10)", "postgres", "pg_sleep"),
    ("SELECT pg_sleep_for('5 minutes')", "postgres", "pg_sleep_for"),
    ("SELECT pg_read_file('/etc/passwd')", "postgres", "pg_read_file"),
    ("SELECT pg_read_binary_file('/etc/passwd')", "postgres", "pg_read_binary_file"),
    ("SELECT * FROM pg_ls_dir('/')", "postgres", "pg_ls_dir"),
    ("SELECT lo_import('/etc/passwd')", "postgres", "lo_import"),
    ("SELECT lo_export(1, '/tmp/x')", "postgres", "lo_export"),
    ("SELECT * FROM dblink('host=evil', 'SELECT 1') AS t(a int)", "postgres", "dblink"),
    ("SELECT dblink_exec('host=evil', 'DROP TABLE t')", "postgres", "dblink_exec"),
    ("SELECT set_config('role', 'admin', false)", "postgres", "set_config"),
    ("SELECT nextval('orders_id_seq')", "postgres", "nextval"),
    ("SELECT setval('orders_id_seq', 1)", "postgres", "setval"),
    ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity", "postgres", "pg_terminate"),
    ("SELECT pg_advisory_lock(1)", "postgres", "pg_advisory_lock"),
    ("SELECT pg_notify('c', 'x')", "postgres", "pg_notify"),
    ("SELECT query_to_xml('DELETE FROM t RETURNING 1', true, true, '')", "postgres", "query"),
    ("SELECT table_to_xml('secrets', true, true, '')", "postgres", "table_to_xml"),
    ("SELECT * FROM t WHERE a = pg_sleep(1)", "postgres", "pg_sleep"),
    ("SELECT * FROM t ORDER BY pg_sleep(1)", "postgres", "pg_sleep"),
    ("SELECT lower(upper(pg_sleep(1)::text))", "postgres", "pg_sleep"),
    ("WITH x AS (SELECT pg_sleep(1)) SELECT * FROM x", "postgres", "pg_sleep"),
    ("SELECT (SELECT pg_sleep(1))", "postgres", "pg_sleep"),
    ("SELECT sleep(5)", "mysql", "sleep"),
    ("SELECT benchmark(1000000, md5('x'))", "mysql", "benchmark"),
    ("SELECT load_file('/etc/passwd')", "mysql", "load_file"),
    ("SELECT get_lock('x', 10)", "mysql", "get_lock"),
    ("SELECT xp_cmdshell('dir')", "tsql", "xp_cmdshell"),
    ("SELECT * FROM OPENQUERY(srv, 'SELECT 1')", "tsql", "openquery"),
    ("SELECT dbms_lock.sleep(5) FROM dual", "oracle", "dbms_lock.sleep"),
    ("SELECT utl_http.request('http://evil') FROM dual", "oracle", "utl_http.request"),
    ("SELECT load_extension('evil.so')", "sqlite", "load_extension"),
    ("SELECT writefile('/tmp/x', 'y')", "sqlite", "writefile"),
    ("SELECT * FROM read_csv('/etc/passwd')", "duckdb", "read_csv"),
    ("SELECT * FROM url('http://169.254.169.254/', CSV)", "clickhouse", "url"),
]


@pytest.mark.parametrize(("sql", "dialect", "name"), DENIED_CALLS)
def test_denied_functions_are_refused_by_name(sql: str, dialect: str, name: str) -> None:
    findings = SqlGuard(dialect=dialect).check(sql)
    assert_quiet(findings)
    assert [f.code for f in findings] == [C.SQL_DENIED_FUNCTION]
    assert name in findings[0].message


@pytest.mark.parametrize("entry", DEFAULT_DENIED_FUNCTIONS)
def test_every_default_entry_is_recognized_as_a_call(entry: str) -> None:
    # sqlglot turns known functions into typed nodes: the entry must still match them.
    name = entry.rstrip("*") + ("x" if entry.endswith("*") else "")
    checked = 0
    for dialect in ("postgres", "mysql", "sqlite", "duckdb", "tsql", "oracle", "clickhouse"):
        try:
            sqlglot.parse_one(f"SELECT {name}(1)", read=dialect)
        except sqlglot.errors.ParseError:
            continue  # not a function in this dialect's grammar: nothing to deny
        assert codes(SqlGuard(dialect=dialect), f"SELECT {name}(1)") == {C.SQL_DENIED_FUNCTION}
        checked += 1
    assert checked


def test_the_deny_list_is_configurable() -> None:
    assert SqlGuard(denied_functions=(), read_only=False).check("SELECT pg_sleep(1)") == []
    g = SqlGuard(denied_functions=("my_side_effect", "audit_*"), read_only=False)
    assert codes(g, "SELECT My_Side_Effect()") == {C.SQL_DENIED_FUNCTION}
    assert codes(g, "SELECT audit_write('x')") == {C.SQL_DENIED_FUNCTION}
    assert codes(g, "SELECT auditor()") == set()
    assert g.check("SELECT pg_sleep(1)") == []
    # Denied wins over allowed: a denied call is refused whatever else says yes.
    g = SqlGuard(denied_functions=("audit_*",), allow_functions=("audit_write",))
    assert codes(g, "SELECT audit_write('x')") == {C.SQL_DENIED_FUNCTION}


# What read_only refuses by what a function does: each is off PostgreSQL's list of immutable
# and stable catalog functions (tests/test_deep_postgres.py shows the server agrees), so it is
# refused even with an empty deny list; with the default deny list most are denied as well.
OFF_THE_POSTGRES_LIST = [
    ("SELECT ts_stat('DELETE FROM t RETURNING tsv')", "ts_stat"),
    ("SELECT * FROM ts_stat('DELETE FROM t RETURNING tsv')", "ts_stat"),
    ("SELECT * FROM ts_rewrite('a'::tsquery, 'DELETE FROM t RETURNING q, s')", "ts_rewrite"),
    ("SELECT ts_rewrite('a'::tsquery, 'a'::tsquery, 'b'::tsquery)", "ts_rewrite"),
    ("SELECT pg_sleep(10)", "pg_sleep"),
    ("SELECT pg_catalog.pg_sleep(10)", "pg_catalog.pg_sleep"),
    ("SELECT PG_CATALOG.Pg_Sleep(10)", "pg_catalog.pg_sleep"),
    ('SELECT "pg_catalog"."pg_sleep"(10)', "pg_catalog.pg_sleep"),
    ("SELECT set_config('role', 'admin', false)", "set_config"),
    ("SELECT pg_advisory_lock(1)", "pg_advisory_lock"),
    ("SELECT pg_try_advisory_xact_lock(1)", "pg_try_advisory_xact_lock"),
    ("SELECT lo_import('/etc/passwd')", "lo_import"),
    ("SELECT lo_get(1)", "lo_get"),
    ("SELECT nextval('s')", "nextval"),
    ("SELECT currval('s'), lastval()", "currval"),
    ("SELECT txid_current()", "txid_current"),
    ("SELECT pg_current_xact_id()", "pg_current_xact_id"),
    ("SELECT table_to_xml('secrets', true, true, '')", "table_to_xml"),
    ("SELECT database_to_xml(true, true, '')", "database_to_xml"),
    ("SELECT query_to_xml('DELETE FROM t RETURNING 1', true, true, '')", "query_to_xml"),
    ("SELECT pg_reload_conf()", "pg_reload_conf"),
    ("SELECT random(), clock_timestamp()", "random"),
    ("SELECT gen_random_uuid()", "gen_random_uuid"),
    ("SELECT pg_stat_file('/etc/passwd')", "pg_stat_file"),
    # Functions of no catalog: a user's, another schema's, a quoted name in another case.
    ("SELECT bump()", "bump"),
    ("SELECT public.lower('a')", "public.lower"),
    ("SELECT evil.count(*) FROM t", "evil.count"),
    ("SELECT \"LOWER\"('a')", "LOWER"),
    ('SELECT "Now"()', "Now"),
    ("SELECT information_schema._pg_truetypid(a, t) FROM t", "information_schema"),
    # Wherever the call is.
    ("SELECT * FROM t WHERE a = bump()", "bump"),
    ("SELECT * FROM t ORDER BY bump()", "bump"),
    ("SELECT lower(upper(bump()::text))", "bump"),
    ("WITH x AS (SELECT bump()) SELECT * FROM x", "bump"),
    ("SELECT * FROM t, LATERAL (SELECT bump()) s", "bump"),
    ("SELECT * FROM ROWS FROM (generate_series(1, 2), bump())", "bump"),
    ("SELECT count(*) FILTER (WHERE bump() > 0) FROM t", "bump"),
    ("SELECT 1 UNION SELECT bump()", "bump"),
]


@pytest.mark.parametrize(("sql", "name"), OFF_THE_POSTGRES_LIST)
def test_read_only_refuses_functions_off_the_list(sql: str, name: str) -> None:
    findings = SqlGuard(denied_functions=()).check(f"{sql} -- {SECRET}")
    assert_quiet(findings)
    assert {f.code for f in findings} == {C.SQL_FUNCTION_NOT_ALLOWED}
    assert any(name in f.message for f in findings)
    # With the default deny list, the call is refused too (denied or not allowed).
    default = codes(SqlGuard(), sql)
    assert default
    assert default <= {C.SQL_DENIED_FUNCTION, C.SQL_FUNCTION_NOT_ALLOWED}
    # Without read_only the list does not apply; the deny list still does.
    assert C.SQL_FUNCTION_NOT_ALLOWED not in codes(SqlGuard(read_only=False), sql)


def test_functions_that_run_a_query_string_are_denied_by_default() -> None:
    # Even where writes are allowed: the query inside escapes every other check.
    for sql in ("SELECT ts_stat('DELETE FROM t RETURNING v')", "SELECT ts_rewrite(q, 's') FROM t"):
        assert codes(SqlGuard(read_only=False), sql) == {C.SQL_DENIED_FUNCTION}


def test_allow_functions_opens_exactly_what_it_names() -> None:
    assert SqlGuard(allow_functions=("random",)).check("SELECT random()") == []
    assert SqlGuard(allow_functions=("RANDOM",)).check("SELECT Random()") == []
    assert SqlGuard(allow_functions=("random",)).check("SELECT pg_catalog.random()") != []
    qualified = SqlGuard(allow_functions=("app.safe_fn",))
    assert qualified.check("SELECT app.safe_fn(1)") == []
    assert codes(qualified, "SELECT safe_fn(1)") == {C.SQL_FUNCTION_NOT_ALLOWED}
    assert codes(qualified, "SELECT other.safe_fn(1)") == {C.SQL_FUNCTION_NOT_ALLOWED}
    prefix = SqlGuard(allow_functions=("st_*",))
    assert prefix.check("SELECT st_distance(a, b), st_x(a) FROM t") == []
    assert codes(prefix, "SELECT bump()") == {C.SQL_FUNCTION_NOT_ALLOWED}
    # The deny list still applies to what allow_functions names.
    assert codes(SqlGuard(allow_functions=("pg_sleep",)), "SELECT pg_sleep(1)") == {
        C.SQL_DENIED_FUNCTION
    }


SQLITE_ORDINARY = [
    "SELECT lower(name), upper(name), length(name), substr(name, 1, 2), ifnull(a, 0) FROM t",
    "SELECT count(*), sum(total), avg(total), max(a, b), group_concat(name, ',') FROM t",
    "SELECT CAST(a AS INTEGER), CASE WHEN a > 0 THEN 'p' ELSE 'n' END, iif(a, 1, 2) FROM t",
    "SELECT date('now'), strftime('%Y', created), julianday(created), datetime(d, '+1 day')",
    "SELECT json_extract(doc, '$.a'), value FROM t, json_each(t.doc)",
    "SELECT row_number() OVER (ORDER BY a), lag(a) OVER (ORDER BY a) FROM t",
    "SELECT random(), printf('%d', a), trim(name), coalesce(a, b), nullif(a, b) FROM t",
]
MYSQL_ORDINARY = [
    "SELECT LOWER(name), UPPER(name), CONCAT(a, b), SUBSTRING(name, 1, 2), IFNULL(a, 0) FROM t",
    "SELECT COUNT(*), SUM(total), GROUP_CONCAT(name SEPARATOR ','), MAX(a) FROM t GROUP BY b",
    "SELECT CAST(a AS SIGNED), CONVERT(a, CHAR), IF(a, 1, 2), CASE WHEN a THEN 1 END FROM t",
    "SELECT NOW(), DATE_FORMAT(d, '%Y'), DATE_ADD(d, INTERVAL 1 DAY), EXTRACT(YEAR FROM d)",
    "SELECT JSON_EXTRACT(doc, '$.a'), JSON_UNQUOTE(doc), MD5(a), UUID() FROM t",
    "SELECT ROW_NUMBER() OVER (ORDER BY a), DENSE_RANK() OVER (ORDER BY a) FROM t",
    "SELECT * FROM t WHERE MATCH(a) AGAINST ('x') AND a REGEXP 'y' AND a IN (1, 2)",
]


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [(sql, "sqlite") for sql in SQLITE_ORDINARY] + [(sql, "mysql") for sql in MYSQL_ORDINARY],
)
def test_ordinary_sqlite_and_mysql_functions_pass(sql: str, dialect: str) -> None:
    assert SqlGuard(dialect=dialect).check(sql) == []


@pytest.mark.parametrize(
    ("sql", "dialect", "name"),
    [
        ("SELECT my_udf(a) FROM t", "sqlite", "my_udf"),
        ('SELECT "lower"(a) FROM t', "sqlite", "lower"),
        ("SELECT sqlite_offset(a) FROM t", "sqlite", "sqlite_offset"),
        ("SELECT pragma_table_info('t')", "sqlite", "pragma_table_info"),
        ("SELECT last_insert_id(5)", "mysql", "last_insert_id"),
        ("SELECT uuid_short()", "mysql", "uuid_short"),
        ("SELECT is_free_lock('x')", "mysql", "is_free_lock"),
        ("SELECT wait_for_executed_gtid_set('x', 10)", "mysql", "wait_for_executed_gtid_set"),
        ("SELECT shop.lower(a) FROM t", "mysql", "shop.lower"),
        ("SELECT `lower`(a) FROM t", "mysql", "lower"),
        ("SELECT sys_exec('id')", "mysql", "sys_exec"),
        # Doris and the others have no list: only what the policy allows.
        ("SELECT lower(a) FROM t", "doris", "lower"),
        ("SELECT lower(a) FROM t", "duckdb", "lower"),
        ("SELECT NEXT VALUE FOR s", "tsql", "next"),
    ],
)
def test_sqlite_mysql_and_other_dialects_refuse_what_is_not_listed(
    sql: str, dialect: str, name: str
) -> None:
    findings = SqlGuard(dialect=dialect, denied_functions=()).check(sql)
    assert_quiet(findings)
    assert {f.code for f in findings} == {C.SQL_FUNCTION_NOT_ALLOWED}
    assert any(name in f.message.lower() for f in findings)


def test_syntax_read_as_functions_passes_in_every_dialect() -> None:
    sql = "SELECT CAST(a AS INT), CASE WHEN a = 1 THEN 2 END, EXTRACT(YEAR FROM d) FROM t"
    for dialect in ("duckdb", "snowflake", "bigquery", "tsql", "doris"):
        assert SqlGuard(dialect=dialect).check(sql) == [], dialect


@pytest.mark.parametrize("dialect", ["sqlite", "mysql"])
def test_every_hand_listed_function_is_recognized_as_listed(dialect: str) -> None:
    # sqlglot reads some names as syntax: the list must still let them through.
    guard, checked = SqlGuard(dialect=dialect, denied_functions=()), 0
    for name in sorted(allowed_functions(dialect)):
        for arguments in ("a", "a, b", "", "a, b, c"):
            sql = f"SELECT {name}({arguments}) FROM t"
            try:
                sqlglot.parse(sql, read=dialect)
            except Exception:  # a ParseError, or sqlglot failing on an arity it did not expect
                continue
            assert guard.check(sql) == [], sql
            checked += 1
            break
    assert checked > len(allowed_functions(dialect)) * 0.95


def test_the_lists_are_lower_case_names() -> None:
    for names in (
        *(allowed_functions(d) for d in ("postgres", "sqlite", "mysql")),
        construct_types(),
    ):
        assert names
        assert all(name.isidentifier() and name == name.lower() for name in names)
    assert allowed_functions("duckdb") == frozenset()
    assert {"lower", "count", "now", "generate_series"} <= allowed_functions("postgres")
    assert not {"pg_sleep", "nextval", "ts_stat", "random"} & allowed_functions("postgres")


TABLES = ("orders", "public.customers", "Reporting.Daily")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM orders",
        "SELECT * FROM ORDERS",
        'SELECT * FROM "orders"',
        "SELECT * FROM public.customers",
        "SELECT * FROM PUBLIC.Customers",
        "SELECT * FROM reporting.daily",
        "SELECT * FROM orders o JOIN public.customers c ON o.customer_id = c.id",
        "SELECT * FROM orders WHERE customer_id IN (SELECT id FROM public.customers)",
        "WITH big AS (SELECT * FROM orders WHERE total > 100) SELECT * FROM big",
        "WITH a AS (SELECT 1), b AS (SELECT * FROM a) SELECT * FROM b, a",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT * FROM r",
        "WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a",
        "WITH big AS (SELECT 1) SELECT * FROM (SELECT * FROM big) s",
        "SELECT 1",
    ],
)
def test_allowed_tables_and_ctes_pass(sql: str) -> None:
    assert SqlGuard(tables=TABLES).check(sql) == []


@pytest.mark.parametrize(
    ("sql", "table"),
    [
        (f"SELECT * FROM secrets WHERE a = '{SECRET}'", "secrets"),
        ("SELECT * FROM customers", "customers"),  # only public.customers is allowed
        ("SELECT * FROM other.orders", "other.orders"),
        ("SELECT * FROM db.public.customers", "db.public.customers"),
        ('SELECT * FROM "public.customers"', "public.customers"),  # one name with a dot
        ("SELECT * FROM orders WHERE id IN (SELECT id FROM secrets)", "secrets"),
        ("SELECT (SELECT max(a) FROM secrets)", "secrets"),
        ("SELECT * FROM orders, LATERAL (SELECT * FROM secrets) s", "secrets"),
        ("SELECT * FROM orders UNION SELECT * FROM secrets", "secrets"),
        ("WITH x AS (SELECT * FROM secrets) SELECT * FROM x", "secrets"),
        # A CTE covers only what comes after it, unless RECURSIVE.
        ("WITH a AS (SELECT * FROM secrets), secrets AS (SELECT 1) SELECT * FROM a", "secrets"),
        ("WITH secrets AS (SELECT * FROM secrets) SELECT * FROM secrets", "secrets"),
        # A CTE in a subquery does not cover the outer query.
        ("SELECT * FROM secrets, (WITH secrets AS (SELECT 1) SELECT * FROM secrets) s", "secrets"),
        # Quoted names keep their case: "S" does not cover s.
        ('WITH "S" AS (SELECT 1) SELECT * FROM s', "s"),
        ("SELECT * FROM pg_catalog.pg_authid", "pg_catalog.pg_authid"),
    ],
)
def test_tables_outside_the_list_are_refused(sql: str, table: str) -> None:
    findings = SqlGuard(tables=TABLES).check(sql)
    assert_quiet(findings)
    assert [f.code for f in findings] == [C.SQL_IDENTIFIER_NOT_ALLOWED]
    assert f"table {table}," in findings[0].message
    assert "orders, public.customers, Reporting.Daily" in findings[0].message


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        (f"SELECT * FROM IDENTIFIER('{SECRET}')", "snowflake"),
        (f"SELECT * FROM TABLE('{SECRET}')", "snowflake"),
        ("SELECT * FROM TABLE($1)", "snowflake"),
        ("SELECT * FROM @stage", "snowflake"),
    ],
)
def test_tables_named_at_run_time_are_refused(sql: str, dialect: str) -> None:
    findings = SqlGuard(tables=TABLES, dialect=dialect, allow_functions=("identifier",)).check(sql)
    assert_quiet(findings)
    assert [f.code for f in findings] == [C.SQL_IDENTIFIER_NOT_ALLOWED]
    assert "cannot check" in findings[0].message


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("SELECT * FROM generate_series(1, 3) AS g(n)", "postgres"),
        ("SELECT * FROM ROWS FROM (generate_series(1, 2))", "postgres"),
        ("SELECT * FROM unnest(ARRAY[1, 2])", "postgres"),
        ("SELECT * FROM TABLE(GENERATOR(ROWCOUNT => 10))", "snowflake"),
        ("SELECT * FROM orders, LATERAL FLATTEN(input => orders.tags)", "snowflake"),
    ],
)
def test_table_functions_are_not_tables(sql: str, dialect: str) -> None:
    # Snowflake has no list of read-only functions: the policy names the ones it allows.
    guard = SqlGuard(tables=TABLES, dialect=dialect, allow_functions=("generator", "flatten"))
    assert guard.check(sql) == []


def test_an_empty_table_list_allows_no_table() -> None:
    assert codes(SqlGuard(tables=()), "SELECT * FROM orders") == {C.SQL_IDENTIFIER_NOT_ALLOWED}
    assert SqlGuard(tables=()).check("SELECT 1") == []


UNPARSEABLE = [
    "",
    "   ",
    ";",
    ";;",
    "-- only a comment",
    "/* only a comment */",
    "SELECT FROM WHERE (",
    f"SELECT '{SECRET}",  # unterminated string
    "SELECT 1 # ; DROP TABLE t",  # not a comment in PostgreSQL
    "SELEKT * FROM users",
    "SELECT " + "1 + " * 30_000 + "1",
]


@pytest.mark.parametrize("sql", UNPARSEABLE)
def test_what_cannot_be_parsed_is_refused(sql: str) -> None:
    assert codes(SqlGuard(), sql) == {C.SQL_UNPARSEABLE}


def test_nesting_is_judged_by_the_parser_of_the_dialect() -> None:
    nested = "SELECT " + "(" * 200 + "1" + ")" * 200
    # PostgreSQL's parser reads it (so does the server); sqlglot's recursion does not.
    assert SqlGuard().check(nested) == []
    assert codes(SqlGuard(dialect="mysql"), nested) == {C.SQL_UNPARSEABLE}
    assert codes(SqlGuard(tables=("t",)), nested.replace("1", "1 FROM t")) == {C.SQL_UNPARSEABLE}


# sqlglot's postgres dialect accepts each of these; PostgreSQL's parser (and the server,
# tests/test_deep_postgres.py) rejects it, so the guard refuses it.
POSTGRES_REJECTS = [
    "SELECT a FROM t LIMIT 1, 2",
    "SELECT a FROM t QUALIFY a > 1",
    "SELECT a FROM t WHERE a REGEXP 1",
    "SELECT a FROM t GROUP BY ALL",
    "SELECT [1,2]",
    'SELECT {"a": 1}',
    "SELECT a FROM t ORDER BY a NULLS LAST LIMIT 1 BY a",
    "SELECT a FROM t LEFT SEMI JOIN u ON true",
    "SELECT a FROM t STRAIGHT_JOIN u",
    "SELECT * EXCEPT (a) FROM t",
    "SELECT a FROM t ARRAY JOIN b",
    "SELECT 1 FROM dual CONNECT BY 1",
    "SELECT * REPLACE (1 AS a) FROM t",
    "SELECT a FROM t UNION BY NAME SELECT a FROM u",
    "FROM t SELECT a",
    "FROM t",
    "SELECT * FROM $1",
]


@pytest.mark.parametrize("sql", POSTGRES_REJECTS)
def test_what_postgresql_rejects_is_refused(sql: str) -> None:
    sqlglot.parse(sql, read="postgres")  # the generic reading accepts it
    [finding] = SqlGuard().check(sql)
    assert finding.code is C.SQL_UNPARSEABLE
    assert f"PostgreSQL {POSTGRESQL_MAJOR}" in finding.message


# What PostgreSQL's parser reads as a write or a side effect is refused even where sqlglot's
# reading misses it: the server's statements decide, sqlglot can only add findings.
@pytest.mark.parametrize(
    ("sql", "code"),
    [
        ("SELECT * FROM t WHERE id = %s", None),
        ("SELECT * FROM t WHERE id = %(id)s AND a::int = :b", None),
        ("SELECT a[1:2], a[lo:hi] FROM t", None),
        ("SELECT 1; SELECT 2", C.SQL_MULTIPLE_STATEMENTS),
        ("SELECT pg_catalog.PG_SLEEP(1)", C.SQL_DENIED_FUNCTION),
        ("SELECT * FROM pg_catalog.pg_read_file('x') AS f(a)", C.SQL_DENIED_FUNCTION),
    ],
)
def test_the_server_reading_decides(sql: str, code: GuardCode | None) -> None:
    assert codes(SqlGuard(), sql) == ({code} if code else set())


# MySQL runs an executable comment as code (a versioned one from that server version on);
# MariaDB also runs /*M! ... */. Every generic parser skips them, so they are refused.
EXECUTABLE_COMMENTS = [
    "SELECT 1 /*!, (DELETE FROM users) */",
    "SELECT 1 /*!50000 UNION SELECT load_file('/etc/passwd') */",
    "SELECT /*!SLEEP(10),*/ 1",
    "SELECT 1 /*!50000 INTO OUTFILE '/tmp/x' */",
    "SELECT * FROM t /*!40000 ; DROP TABLE users */",
    "SELECT 1 /*M!100000 , BENCHMARK(1000000, MD5(1)) */",
    "SELECT 1 /*!*/",
]


@pytest.mark.parametrize("dialect", ["mysql", "doris", "singlestore", "starrocks"])
@pytest.mark.parametrize("sql", EXECUTABLE_COMMENTS)
def test_mysql_executable_comments_are_refused(sql: str, dialect: str) -> None:
    assert codes(SqlGuard(dialect=dialect), sql) == {C.SQL_EXECUTABLE_COMMENT}


def test_only_executable_comments_are_refused() -> None:
    mysql = SqlGuard(dialect="mysql")
    assert mysql.check("SELECT '/*! not a comment */' FROM t") == []
    assert mysql.check("SELECT 1 /* ! a plain comment */ # !also plain") == []
    assert mysql.check("SELECT /*+ MAX_EXECUTION_TIME(100) */ 1") == []
    # PostgreSQL has no executable comments: there it is a comment, as the server reads it.
    assert SqlGuard().check("SELECT 1 /*!, (DELETE FROM users) */") == []


def test_a_parse_error_says_where() -> None:
    [finding] = SqlGuard().check(f"SELECT '{SECRET}' FROM WHERE")
    assert f"PostgreSQL {POSTGRESQL_MAJOR} SQL" in finding.message
    assert "at character 34" in finding.message
    [finding] = SqlGuard(dialect="mysql").check(f"SELECT '{SECRET}' FROM WHERE")
    assert "mysql SQL" in finding.message
    assert "line 1" in finding.message


def test_the_length_bound_is_configurable() -> None:
    assert codes(SqlGuard(max_length=10), "SELECT 1 + 1 + 1") == {C.SQL_UNPARSEABLE}
    assert SqlGuard(max_length=10).check("SELECT 1") == []


def test_the_dialect_decides_where_statements_end() -> None:
    # MySQL: '#' starts a comment, and a backslash escapes the quote.
    mysql = SqlGuard(dialect="mysql")
    assert mysql.check("SELECT 1 # ; DROP TABLE t") == []
    assert mysql.check("SELECT '\\'; DROP TABLE t; -- '") == []
    assert codes(SqlGuard(), "SELECT '\\'; DROP TABLE t; -- '") == {
        C.SQL_MULTIPLE_STATEMENTS,
        C.SQL_NOT_READ_ONLY,
    }
    assert codes(mysql, "SELECT * FROM t LOCK IN SHARE MODE") == {C.SQL_NOT_READ_ONLY}
    assert codes(SqlGuard(dialect="tsql"), "SELECT * INTO #t FROM users") == {C.SQL_NOT_READ_ONLY}
    assert codes(SqlGuard(dialect="tsql"), "EXEC xp_cmdshell 'dir'") == {C.SQL_NOT_READ_ONLY}


def test_sqlglot_logs_no_query_text(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    SqlGuard().check(f"EXPLAIN SELECT '{SECRET}'")
    SqlGuard(dialect="mysql").check(f"SELECT JSON_EXTRACT(x, '$.{SECRET}[[[')")
    assert SECRET not in caplog.text
    # Only the guard's own parsing is silenced: sqlglot still logs for everyone else.
    sqlglot.parse(f"EXPLAIN SELECT '{SECRET}'", read="postgres")
    assert "unsupported syntax" in caplog.text


@pytest.mark.parametrize(
    "options",
    [
        {"dialect": "no-such-dialect"},
        {"tables": "orders"},
        {"tables": ("a..b",)},
        {"tables": ("",)},
        {"denied_functions": "pg_sleep"},
        {"denied_functions": (1,)},
        {"allow_functions": "random"},
        {"allow_functions": ("",)},
        {"max_length": 0},
    ],
)
def test_invalid_configuration_is_refused_at_construction(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        SqlGuard(**options)


@pytest.mark.parametrize("value", [None, 1, b"SELECT 1", ["SELECT 1"], {"q": "SELECT 1"}])
def test_non_strings_are_reported(value: Any) -> None:
    assert codes(SqlGuard(), value) == {C.NOT_A_STRING}


SQL_WORDS = st.sampled_from(
    [
        "SELECT",
        "FROM",
        "WHERE",
        "WITH",
        "AS",
        "(",
        ")",
        ";",
        ",",
        "'",
        '"',
        "$$",
        "--",
        "/*",
        "*/",
        "\\",
        "DELETE",
        "INTO",
        "FOR",
        "UPDATE",
        "t",
        "x",
        "1",
        "pg_sleep",
        "UNION",
        "VALUES",
        "RECURSIVE",
        "#",
        "E'",
        "\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(SQL_WORDS, max_size=30).map(" ".join)))
def test_check_never_raises(sql: str) -> None:
    for guard in (SqlGuard(tables=("t",)), SqlGuard(dialect="mysql", read_only=False)):
        assert all(isinstance(f, GuardFinding) for f in guard.check(sql))


def test_guard_is_frozen_and_kind_is_sql() -> None:
    g = SqlGuard()
    assert g.kind == "sql"
    with pytest.raises(AttributeError):
        g.read_only = False  # type: ignore[misc]

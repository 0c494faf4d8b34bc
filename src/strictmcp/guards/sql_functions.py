"""The functions a ``read_only`` SQL guard lets a query call, per database: data files shipped
in ``sql_function_lists/``, read once.

- ``postgres.txt`` is generated from a cluster's ``pg_proc`` by :func:`postgres_functions`
  (``python -m strictmcp.guards.sql_functions`` with the DSN in ``STRICTMCP_PG_DSN``), and a
  test generates it again from the scratch cluster and compares: the list is PostgreSQL's
  own word on which functions are immutable or stable, never a guess.
- ``sqlite.txt`` and ``mysql.txt`` are kept by hand, and so is ``constructs.txt``: the
  syntax sqlglot reads as a function (``CAST``, ``CASE``, ...), by sqlglot's expression type,
  for every dialect but ``postgres`` (whose guard reads PostgreSQL's parse tree, where such
  syntax is no function call). Each file says why its entries are there and what was left
  out.

A name is on PostgreSQL's list only when *every* ``pg_catalog`` function of that name
qualifies, because the guard sees a call's name, never which overload its argument types pick
(``ts_rewrite(tsquery, tsquery, tsquery)`` is immutable, ``ts_rewrite(tsquery, text)`` runs
the text as a query).
"""

from __future__ import annotations

import os
import sys
from functools import cache
from importlib import resources
from typing import Any

from ..extras import needs

__all__ = [
    "LISTED_DIALECTS",
    "POSTGRES_EXCLUDED",
    "allowed_functions",
    "construct_types",
    "postgres_file",
    "postgres_functions",
]

LISTED_DIALECTS: tuple[str, ...] = ("postgres", "sqlite", "mysql")
"""The dialects with a list of functions; in every other one a query may call only the
functions a policy allows."""

POSTGRES_EXCLUDED: dict[str, str] = {
    "ts_rewrite": "one form runs its text argument as a query",
    "ts_stat": "runs its text argument as a query",
    "query_to_xml": "runs its text argument as a query",
    "query_to_xmlschema": "runs its text argument as a query",
    "query_to_xml_and_xmlschema": "runs its text argument as a query",
    "table_to_xml": "reads a whole table named by a string, past the tables allowlist",
    "table_to_xmlschema": "reads a table named by a string, past the tables allowlist",
    "table_to_xml_and_xmlschema": "reads a whole table named by a string, past the tables"
    " allowlist",
    "schema_to_xml": "reads every table of a schema, past the tables allowlist",
    "schema_to_xmlschema": "reads the tables of a schema, past the tables allowlist",
    "schema_to_xml_and_xmlschema": "reads every table of a schema, past the tables allowlist",
    "database_to_xml": "reads every table of the database, past the tables allowlist",
    "database_to_xmlschema": "reads the tables of the database, past the tables allowlist",
    "database_to_xml_and_xmlschema": "reads every table of the database, past the tables allowlist",
    "fmgr_c_validator": "checks a function definition for CREATE FUNCTION: server machinery",
    "fmgr_internal_validator": "checks a function definition for CREATE FUNCTION: server machinery",
    "fmgr_sql_validator": "checks a function definition for CREATE FUNCTION: server machinery",
    "txid_current": "assigns the transaction an id (stable, yet a write to the server's state)",
    "pg_current_xact_id": "assigns the transaction an id (stable, yet a write to the server's"
    " state)",
}
"""``pg_catalog`` names left off PostgreSQL's list although immutable or stable, with why."""

# Types that mark a function as machinery, not something a query calls: an argument or result
# of one of these cannot come from SQL (internal) or only makes sense to the server itself.
_MACHINERY_TYPES = (
    "internal",
    "trigger",
    "event_trigger",
    "language_handler",
    "fdw_handler",
    "index_am_handler",
    "table_am_handler",
    "tsm_handler",
    "pg_ddl_command",
)
# An input argument that holds a query or a cursor is a way to run any statement.
_QUERY_ARGUMENT_NAMES = ("query", "sqlquery")
_QUERY_ARGUMENT_TYPES = ("refcursor",)

# Every pg_catalog function, aggregate and window function (procedures are CALLed, refused as
# statements), one row per overload: whether it qualifies on its own. A name qualifies when
# all its rows do (see the module docstring).
_POSTGRES_QUERY = """
SELECT p.proname,
       p.provolatile IN ('i', 's')
       AND NOT EXISTS (
           SELECT FROM unnest(p.proargtypes::oid[] || p.prorettype) AS used(type)
           JOIN pg_type AS t ON t.oid = used.type
           WHERE t.typname = ANY(%(machinery)s) OR (
               used.type <> p.prorettype AND t.typname = ANY(%(query_types)s)))
       AND NOT EXISTS (
           SELECT FROM unnest(p.proargnames, coalesce(p.proargmodes, array_fill(
               'i'::"char", ARRAY[cardinality(coalesce(p.proargnames, '{}'))]))) AS a(name, mode)
           WHERE a.mode IN ('i', 'b', 'v') AND a.name = ANY(%(query_names)s))
FROM pg_proc AS p
WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prokind IN ('f', 'a', 'w')
"""

_HEADER = """\
# PostgreSQL {major}: the pg_catalog functions a read_only SQL guard lets a query call.
# Generated by `python -m strictmcp.guards.sql_functions` from pg_proc; do not edit.
# A name is here when every function of that name is immutable or stable, takes and returns
# no server machinery type, has no query or cursor argument, and is not excluded in
# strictmcp.guards.sql_functions.POSTGRES_EXCLUDED (documented in docs/policy.md).
"""


@cache
def allowed_functions(dialect: str) -> frozenset[str]:
    """The names a ``read_only`` guard of ``dialect`` lets a query call unqualified (or, in
    PostgreSQL, qualified by ``pg_catalog``): lower-case, as the database folds them."""
    return _read(f"{dialect}.txt") if dialect in LISTED_DIALECTS else frozenset()


@cache
def construct_types() -> frozenset[str]:
    """The sqlglot expression types (``exp.Cast.key``) of syntax read as a function that a
    ``read_only`` guard lets through in every dialect sqlglot decides."""
    return _read("constructs.txt")


def _read(name: str) -> frozenset[str]:
    text = (resources.files(__package__) / "sql_function_lists" / name).read_text("utf-8")
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return frozenset(line.lower() for line in lines if line)


def postgres_functions(connection: Any) -> list[str]:
    """PostgreSQL's list as the server ``connection`` (a psycopg connection) gives it, sorted."""
    rows = connection.execute(
        _POSTGRES_QUERY,
        {
            "machinery": list(_MACHINERY_TYPES),
            "query_types": list(_QUERY_ARGUMENT_TYPES),
            "query_names": list(_QUERY_ARGUMENT_NAMES),
        },
    ).fetchall()
    refused = {name for name, qualifies in rows if not qualifies} | set(POSTGRES_EXCLUDED)
    return sorted({name for name, _ in rows} - refused)


def postgres_file(connection: Any) -> str:
    """The text of ``postgres.txt`` for the server ``connection`` reaches."""
    major = connection.info.server_version // 10000
    names = "".join(f"{name}\n" for name in postgres_functions(connection))
    return _HEADER.format(major=major) + names


def _main() -> int:
    """Writes ``postgres.txt`` to standard output from the server ``STRICTMCP_PG_DSN`` names."""
    with needs("postgres"):
        import psycopg  # noqa: PLC0415 - only the generator connects

    dsn = os.environ.get("STRICTMCP_PG_DSN")
    if not dsn:
        print("set STRICTMCP_PG_DSN to the DSN of a fresh PostgreSQL cluster", file=sys.stderr)
        return 2
    with psycopg.connect(dsn) as connection:
        sys.stdout.write(postgres_file(connection))
    return 0


if __name__ == "__main__":
    sys.exit(_main())

"""PostgreSQL's own reading of a query, for the SQL guard: libpg_query (through pglast) is the
server's parser, extracted, so what it rejects the server rejects and the statements it
splits are the server's.

The raw parse tree is read as JSON: every node is ``{"TypeName": {...fields}}``, so a walk
sees every statement node wherever the grammar put it (a data-modifying CTE, the query
inside ``EXPLAIN``) without a list of where to look.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pglast import parser as pg_parser

from .base import GuardFinding
from .codes import GuardCode

__all__ = [
    "POSTGRESQL_MAJOR",
    "PgParse",
    "function_calls",
    "parse",
    "read_only_findings",
    "statement_name",
]

POSTGRESQL_MAJOR: int = pg_parser.get_postgresql_version()[0]
"""The PostgreSQL major whose grammar the guard decides with (pglast's libpg_query)."""

PgParse = list[dict[str, Any]]
"""The statements of a query, each the raw parse tree of one statement as JSON."""

# A pyformat, format or named placeholder (not a "::" cast, not an array slice's bound);
# padded with spaces when replaced, so that a neighbouring "$" cannot make a dollar quote.
_DRIVER_PLACEHOLDER = re.compile(r"%\(\w+\)s|%s|(?<![:\w]):[A-Za-z_]\w*")
# Statement nodes read in SQL words where dropping "Stmt" and upper-casing does not do it.
_NAMES = {
    "VariableSetStmt": "SET",
    "VariableShowStmt": "SHOW",
    "TransactionStmt": "transaction control",
    "CreateTableAsStmt": "CREATE TABLE AS",
    "CreateStmt": "CREATE TABLE",
    "CallStmt": "CALL",
    "DoStmt": "DO",
    "ExecuteStmt": "EXECUTE",
    "PrepareStmt": "PREPARE",
    "DeclareCursorStmt": "DECLARE",
    "RefreshMatViewStmt": "REFRESH MATERIALIZED VIEW",
    "VacuumStmt": "VACUUM",
    "LockStmt": "LOCK",
}


def parse(sql: str) -> PgParse | str:
    """The statements PostgreSQL's parser reads in ``sql``, or why it refuses the text (the
    character position of its error only: its reason quotes the query).

    A text the parser refuses only for client-side placeholders (``%s``, ``%(name)s``,
    ``:name``, which a driver or SQLAlchemy replaces before the server sees the query) is
    read with parameters in their place.
    """
    try:
        tree = json.loads(pg_parser.parse_sql_json(sql))
    except pg_parser.ParseError as error:
        placeholders = _DRIVER_PLACEHOLDER.sub(" $1 ", sql)
        if placeholders != sql:
            retried = parse(placeholders)
            if not isinstance(retried, str):
                return retried
        where = error.args[1] if len(error.args) > 1 and isinstance(error.args[1], int) else None
        at = f", at character {where}" if where is not None else ""
        return f"is not valid PostgreSQL {POSTGRESQL_MAJOR} SQL (by the server parser{at})"
    except RecursionError:
        return "is nested too deeply to parse"
    except Exception:
        # Whatever else the binding raises: refuse, never pass.
        return f"is not valid PostgreSQL {POSTGRESQL_MAJOR} SQL"
    return [entry["stmt"] for entry in tree.get("stmts", []) if "stmt" in entry]


def statement_name(statement: dict[str, Any]) -> str:
    """A statement's type in SQL words."""
    node = next(iter(statement), "")
    if node == "SelectStmt":
        return "SELECT"
    return _NAMES.get(node, node.removesuffix("Stmt").upper() or "statement")


def read_only_findings(statement: dict[str, Any]) -> Iterator[GuardFinding]:
    """Findings for everything in one statement that is not a pure read."""
    top = next(iter(statement), "")
    if top != "SelectStmt":
        yield GuardFinding(
            GuardCode.SQL_NOT_READ_ONLY,
            f"{statement_name(statement)} statements are not read-only queries",
        )
    for name, node in _nodes(statement):
        if name.endswith("Stmt") and name != "SelectStmt" and node is not statement[top]:
            yield GuardFinding(
                GuardCode.SQL_NOT_READ_ONLY,
                f"the query contains a nested {statement_name({name: node})} statement",
            )
        elif name == "SelectStmt" and "intoClause" in node:
            yield GuardFinding(GuardCode.SQL_NOT_READ_ONLY, "SELECT ... INTO creates a table")
        elif name == "SelectStmt" and "lockingClause" in node:
            yield GuardFinding(
                GuardCode.SQL_NOT_READ_ONLY, "a locking clause (FOR UPDATE / FOR SHARE) locks rows"
            )


def function_calls(statement: dict[str, Any]) -> Iterator[tuple[str, ...]]:
    """The name parts of every function call (``pg_catalog.pg_sleep`` is two), lower-case as
    the server folds them (quoted names keep their case: PostgreSQL's parser already folded
    the unquoted ones)."""
    for name, node in _nodes(statement):
        if name == "FuncCall":
            yield tuple(
                part["String"]["sval"]
                for part in node.get("funcname", [])
                if isinstance(part, dict) and "String" in part
            )


def _nodes(tree: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every typed node in a tree, as ``(type, fields)``; iterative, trees can be deep."""
    stack: list[Any] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                if key[:1].isupper() and isinstance(value, dict):
                    yield key, value
                stack.append(value)

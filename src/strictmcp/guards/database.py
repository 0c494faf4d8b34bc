"""The deep SQL check: a query planned by the live database it will run on, never run.

The query passes the :class:`~strictmcp.guards.SqlGuard` first, so a write is refused before
any connection is made. Then the database plans it (PostgreSQL ``EXPLAIN (FORMAT JSON)``,
SQLite ``EXPLAIN QUERY PLAN``), which is where unknown tables and columns and syntax errors
come out, in the database's own words, inside a read-only transaction that is always rolled
back, with a statement timeout. ``EXPLAIN`` without ``ANALYZE`` does not execute the query,
but PostgreSQL's planner may evaluate a function it believes immutable: the read-only
transaction is what stops one that writes.

The DSN is read when a check runs, from the environment variable or file the policy names,
and never appears in a finding: a connection failure says which variable or file it came
from, never what it holds nor the driver's message (which names hosts and users).
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import quote

from ..extras import needs, require
from ..protocol import Severity
from .base import GuardFinding, not_a_string
from .codes import GuardCode

if TYPE_CHECKING:
    from .sql import SqlGuard

__all__ = ["DATABASES", "SqlDatabaseCheck"]

DATABASES = ("postgres", "sqlite")
"""The databases a deep SQL check can ask (also the SQL guard's dialect for each)."""

# A double-quoted token in a database's message whose content is a literal, not a name: its
# text is replaced, since a literal of the query may be a secret.
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_LITERAL_START = re.compile(r"""^(?:[EeXxBbUuNn]?'|\$|[0-9.+-])""")

_POSTGRES_CODES = {
    "42601": GuardCode.DEEP_SQL_SYNTAX,
    "42P01": GuardCode.DEEP_SQL_UNKNOWN_TABLE,
    "42703": GuardCode.DEEP_SQL_UNKNOWN_COLUMN,
    "25006": GuardCode.DEEP_SQL_WRITES,
    "57014": GuardCode.DEEP_SQL_TIMEOUT,
}
_SQLITE_PREFIXES = (
    ("no such table", GuardCode.DEEP_SQL_UNKNOWN_TABLE),
    ("no such column", GuardCode.DEEP_SQL_UNKNOWN_COLUMN),
    ("interrupted", GuardCode.DEEP_SQL_TIMEOUT),
    ("attempt to write a readonly database", GuardCode.DEEP_SQL_WRITES),
)


@dataclass(frozen=True)
class SqlDatabaseCheck:
    """Plans a SQL argument on the live ``database`` (``"postgres"`` or ``"sqlite"``) whose
    DSN is in the environment variable ``dsn_env`` or the file ``dsn_file`` (exactly one).

    For SQLite the DSN is the database file's path (opened read-only, never created). The
    query must first pass ``guard`` (a :class:`SqlGuard` in the database's dialect).
    ``max_rows`` warns when PostgreSQL's estimate of the rows is larger (SQLite's planner gives
    no estimate). ``statement_timeout_ms`` bounds the planning on the server; ``connect_timeout``
    (seconds) the connection.

    Findings: the guard's; ``DEEP_SQL_DSN`` (nothing in the variable or file),
    ``DEEP_SQL_CONNECTION``; ``DEEP_SQL_SYNTAX``, ``DEEP_SQL_UNKNOWN_TABLE``,
    ``DEEP_SQL_UNKNOWN_COLUMN``, ``DEEP_SQL_WRITES`` (a write stopped by the read-only
    transaction), ``DEEP_SQL_TIMEOUT`` and ``DEEP_SQL_REJECTED`` (any other refusal) with the
    database's reason when it names only identifiers (a syntax error's literal is elided),
    else its SQLSTATE; ``DEEP_SQL_MANY_ROWS`` (warning).
    """

    kind: ClassVar[str] = "sql"

    database: Literal["postgres", "sqlite"]
    guard: SqlGuard
    dsn_env: str | None = None
    dsn_file: str | None = None
    max_rows: int | None = None
    statement_timeout_ms: int = 1000
    connect_timeout: int = 2

    def __post_init__(self) -> None:
        if self.database not in DATABASES:
            raise ValueError(f"database must be one of: {', '.join(DATABASES)}")
        if (self.dsn_env is None) == (self.dsn_file is None):
            raise ValueError("give the DSN as exactly one of dsn_env and dsn_file")
        if self.statement_timeout_ms < 1 or self.connect_timeout < 1:
            raise ValueError("statement_timeout_ms and connect_timeout must be positive")
        if self.max_rows is not None and self.max_rows < 0:
            raise ValueError("max_rows must not be negative")
        if self.database == "postgres":
            # When the policy loads, not at the first call: a check that cannot run must
            # stop the proxy from starting, not refuse every call later.
            require("postgres")

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about the query ``value``; never raises."""
        if not isinstance(value, str):
            return not_a_string(value, self.kind)
        findings = self.guard.check(value)
        if any(finding.severity is Severity.ERROR for finding in findings):
            return findings  # refused before any connection
        dsn = self._dsn()
        if isinstance(dsn, GuardFinding):
            return [*findings, dsn]
        plan = _postgres if self.database == "postgres" else _sqlite
        return findings + plan(self, dsn, value)

    @property
    def source(self) -> str:
        """Where the DSN comes from, as findings name it."""
        if self.dsn_env is not None:
            return f"environment variable {self.dsn_env}"
        return f"file {self.dsn_file}"

    def _dsn(self) -> str | GuardFinding:
        if self.dsn_env is not None:
            dsn = os.environ.get(self.dsn_env, "").strip()
        else:
            try:
                dsn = Path(str(self.dsn_file)).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                dsn = ""
        if not dsn:
            return GuardFinding(
                GuardCode.DEEP_SQL_DSN, f"no database DSN is set in the {self.source}"
            )
        return dsn

    def connection_failed(self) -> GuardFinding:
        """The finding for a database that cannot be reached (the driver's text is not given:
        it names hosts, users and files)."""
        return GuardFinding(
            GuardCode.DEEP_SQL_CONNECTION,
            f"cannot connect to the {self.database} database named by the {self.source}",
        )

    def too_many_rows(self, estimate: float) -> list[GuardFinding]:
        """The row-count warning, when the estimate is over ``max_rows``."""
        if self.max_rows is None or estimate <= self.max_rows:
            return []
        return [
            GuardFinding(
                GuardCode.DEEP_SQL_MANY_ROWS,
                f"the database estimates {int(estimate)} rows, more than {self.max_rows}",
                Severity.WARNING,
            )
        ]


def _postgres(check: SqlDatabaseCheck, dsn: str, query: str) -> list[GuardFinding]:
    """Plan ``query`` on PostgreSQL in a read-only transaction, then roll it back."""
    with needs("postgres"):
        import psycopg  # noqa: PLC0415 - only deployments with a PostgreSQL check need it

    try:
        connection = psycopg.connect(dsn, connect_timeout=check.connect_timeout)
    except Exception:
        return [check.connection_failed()]
    try:
        # psycopg opens a transaction at the first statement: READ ONLY from its BEGIN on.
        connection.read_only = True
        with connection.cursor() as cursor:
            timeout = str(check.statement_timeout_ms)
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [timeout])
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [timeout])
            # No parameters: psycopg sends the text as it is, so "%" in it means nothing.
            cursor.execute("EXPLAIN (FORMAT JSON) " + query)
            row = cursor.fetchone()
        estimate = _plan_rows(row[0] if row else None)
        return check.too_many_rows(estimate) if estimate is not None else []
    except psycopg.Error as error:
        if isinstance(error, psycopg.OperationalError) and error.sqlstate is None:
            return [check.connection_failed()]  # the connection broke, not the query
        return [_postgres_refusal(error)]
    finally:
        _quietly(connection.rollback)
        _quietly(connection.close)


def _postgres_refusal(error: Any) -> GuardFinding:
    state = error.sqlstate or "?????"
    code = _POSTGRES_CODES.get(state, GuardCode.DEEP_SQL_REJECTED)
    if state.startswith("42") or code is not GuardCode.DEEP_SQL_REJECTED:
        # Syntax and name errors: the reason names identifiers (and at most a token).
        reason = _without_literals(error.diag.message_primary or "")
    else:
        # Data errors and the like quote values of the query: only the condition is given.
        reason = f"SQLSTATE {state}, {type(error).__name__}"
    return GuardFinding(code, f"the database refuses the query: {reason}")


def _plan_rows(plan: Any) -> float | None:
    """The planner's row estimate at the top of an ``EXPLAIN (FORMAT JSON)`` answer."""
    try:
        rows = plan[0]["Plan"]["Plan Rows"]
    except (TypeError, KeyError, IndexError):
        return None
    return float(rows) if isinstance(rows, (int, float)) else None


def _sqlite(check: SqlDatabaseCheck, dsn: str, query: str) -> list[GuardFinding]:
    """Plan ``query`` on SQLite, opened read-only (never created), in a transaction rolled
    back; a progress handler interrupts it at the statement timeout."""
    path = dsn.removeprefix("sqlite:///") if dsn.startswith("sqlite:///") else dsn
    if not os.path.isfile(path):
        return [check.connection_failed()]  # mode=ro would not create it; say so plainly
    try:
        connection = sqlite3.connect(
            f"file:{quote(path)}?mode=ro",
            uri=True,
            timeout=check.connect_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error:
        return [check.connection_failed()]
    deadline = time.monotonic() + check.statement_timeout_ms / 1000
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
    try:
        # Reads the header: a file that is not a database fails here, as a connection.
        connection.execute("PRAGMA schema_version")
        connection.execute("PRAGMA query_only = ON")
        connection.execute("BEGIN")
        connection.execute("EXPLAIN QUERY PLAN " + query).fetchall()
        return []
    except sqlite3.DatabaseError as error:
        reason = str(error)
        if reason.startswith(("file is not a database", "unable to open")):
            return [check.connection_failed()]
        code = next(
            (code for prefix, code in _SQLITE_PREFIXES if reason.startswith(prefix)),
            GuardCode.DEEP_SQL_SYNTAX if "syntax error" in reason else GuardCode.DEEP_SQL_REJECTED,
        )
        return [GuardFinding(code, f"the database refuses the query: {_without_literals(reason)}")]
    except sqlite3.Error as error:
        # ProgrammingError and the like: the driver's own refusal (unbound parameters).
        return [
            GuardFinding(
                GuardCode.DEEP_SQL_REJECTED,
                f"the database driver refuses the query ({type(error).__name__})",
            )
        ]
    finally:
        _quietly(lambda: connection.execute("ROLLBACK") if connection.in_transaction else None)
        _quietly(connection.close)


def _without_literals(reason: str) -> str:
    """A database's message with every quoted token that is a literal replaced."""

    def replace(match: re.Match[str]) -> str:
        return '"(a literal)"' if _LITERAL_START.match(match.group(1)) else match.group(0)

    return _QUOTED.sub(replace, reason)


def _quietly(action: Callable[[], object]) -> None:
    """Clean-up that must not raise over the finding already made (a broken connection
    cannot roll back; the server rolls back a transaction whose connection is gone)."""
    try:
        action()
    except Exception:
        return

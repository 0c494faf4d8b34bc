"""The SQL guard: a query argument is parsed, never pattern-matched, and refused unless it is
one read-only statement over allowed tables that calls no side-effecting function.

For PostgreSQL the guard decides with PostgreSQL's own parser (libpg_query through pglast,
whose grammar is PostgreSQL :data:`POSTGRESQL_MAJOR`'s): a query that parser rejects is
refused, the statements are the ones it splits, and a statement it reads as a write, a
locking clause, ``SELECT ... INTO`` or a denied function call is refused even where sqlglot
reads it otherwise. sqlglot must parse the query too when ``tables`` is set (its scoping
decides which names are tables); where it cannot, the query is refused (fail closed).

For the MySQL family (``mysql``, ``doris``, ``singlestore``, ``starrocks``) an executable
comment (``/*! ... */``, ``/*!50000 ... */``, MariaDB's ``/*M! ... */``) is code to the server
and a comment to every generic parser, so the guard refuses it rather than guess which server
version would run it.

For the other dialects the parser is sqlglot, in the dialect of the database the query will
run on. The dialect
matters: statement splitting follows its comment and string rules (``#`` starts a comment in
MySQL, not in PostgreSQL; ``'\\'`` is a whole string in PostgreSQL and an open one in MySQL),
and a guard that splits differently from the database can be walked around. Comments,
dollar-quoted and escape strings containing ``;`` are therefore no trick: they are tokens of
the dialect, as they are to the database.

``read_only`` accepts exactly: ``SELECT`` (``TABLE t`` included), set operations of them,
``VALUES``, and ``WITH`` whose every subquery is one of those; and refuses, anywhere in the
tree, any statement that writes or changes state (``INSERT``/``UPDATE``/``DELETE``/``MERGE``
also as data-modifying CTEs, ``COPY``, DDL, ``SET``, transaction control, ``CALL``/``DO``/
``EXEC``), ``SELECT ... INTO`` (creates a table) and locking clauses (``FOR UPDATE``/``FOR
SHARE``, ``LOCK IN SHARE MODE``). ``EXPLAIN`` and ``SHOW`` are refused too: sqlglot reads them
as opaque commands, so the statement inside ``EXPLAIN`` (which ``EXPLAIN ANALYZE`` runs) could
not be checked. A query sqlglot cannot parse is refused (fail closed). ``read_only`` also
decides functions by what they do: a query may call only those on its database's list of
read-only, side-effect-free functions (:mod:`.sql_functions`) or in ``allow_functions``.

This is defence in depth, not the boundary: a read-only query can still read a view with
side effects, or reach a function through an operator or a cast. Run the queries under a role
that can only read, in a read-only transaction (PostgreSQL ``default_transaction_read_only``).

Messages name statement types, functions and tables (identifiers from the query, which are not
secrets the way values are) and never quote a literal.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeGuard

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from . import sql_functions, sql_postgres
from .base import GuardFinding, not_a_string
from .codes import GuardCode

__all__ = ["DEFAULT_DENIED_FUNCTIONS", "MYSQL_FAMILY", "SqlGuard"]

MYSQL_FAMILY: frozenset[str] = frozenset({"mysql", "doris", "singlestore", "starrocks"})
"""The sqlglot dialects whose servers run executable comments (``/*! ... */``) as code."""

DEFAULT_DENIED_FUNCTIONS: tuple[str, ...] = (
    # PostgreSQL: waiting, files, large objects, other servers, settings, sequences.
    "pg_sleep*",
    "pg_read_*",
    "pg_ls_*",
    "pg_stat_file",
    "pg_file_*",
    "pg_logdir_ls",
    "lo_*",
    "dblink*",
    "set_config",
    "nextval",
    "setval",
    # PostgreSQL: other sessions, server state, replication, locks, notifications.
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_promote",
    "pg_switch_wal",
    "pg_create_*",
    "pg_drop_replication_slot",
    "pg_copy_*",
    "pg_logical_*",
    "pg_replication_*",
    "pg_backup_*",
    "pg_start_backup",
    "pg_stop_backup",
    "pg_wal_replay_*",
    "pg_stat_reset*",
    "pg_advisory_*",
    "pg_try_advisory_*",
    "pg_notify",
    "pg_import_system_collations",
    # PostgreSQL: run a query given as a string, or read a table by name, past every check.
    "ts_stat",
    "ts_rewrite",
    "query_to_xml*",
    "cursor_to_xml*",
    "table_to_xml*",
    "schema_to_xml*",
    "database_to_xml*",
    # MySQL / MariaDB.
    "sleep",
    "benchmark",
    "load_file",
    "get_lock",
    "release_lock",
    "release_all_locks",
    "master_pos_wait",
    "source_pos_wait",
    "sys_exec",
    "sys_eval",
    # SQL Server.
    "xp_*",
    "openrowset",
    "opendatasource",
    "openquery",
    # SQLite.
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    # Oracle packages (matched as the qualifier of dbms_lock.sleep() and the like).
    "dbms_*",
    "utl_*",
    # DuckDB and ClickHouse: files and URLs as tables.
    "read_csv*",
    "read_json*",
    "read_ndjson*",
    "read_parquet",
    "read_text",
    "read_blob",
    "parquet_scan",
    "url",
    "file",
    "remote",
    "remotesecure",
    "s3*",
    "hdfs*",
    "executable",
)
"""Functions :class:`SqlGuard` refuses by default. An entry ending in ``*`` is a prefix. A
call matches by its name or any qualifier (``dbms_lock.sleep`` matches ``dbms_*`` and
``sleep``), case-insensitively. ``COPY``, ``CALL`` and ``EXEC`` are statements, refused by
``read_only``."""

# Nodes that write, change session or server state, or hide a statement sqlglot did not parse.
_STATEMENTS: tuple[type[exp.Expr], ...] = (
    exp.DML,
    exp.DDL,
    exp.Drop,
    exp.Alter,
    exp.TruncateTable,
    exp.Command,
    exp.Set,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Use,
    exp.Pragma,
    exp.Execute,
    exp.LoadData,
    exp.Grant,
    exp.Revoke,
    exp.Analyze,
    exp.Cache,
    exp.Uncache,
    exp.Refresh,
    exp.Kill,
    exp.Declare,
    exp.Comment,
    exp.Describe,
    exp.Summarize,
    exp.WhileBlock,
    exp.Block,
)
_QUERIES = (exp.Query, exp.Values)
_STATEMENT_NAMES = {"truncatetable": "TRUNCATE", "loaddata": "LOAD DATA", "whileblock": "WHILE"}
_KEYWORD = re.compile(r"[A-Za-z]+(?: [A-Za-z]+)*")


class _QuietParsing(logging.Filter):
    """Drops sqlglot's log records while this module parses, on the parsing thread only.

    sqlglot logs parts of the query (the text of a statement it falls back to a command for,
    an invalid JSON path literal): those must not reach anyone's logs.
    """

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(self._local, "active", False)

    def parse(self, sql: str, dialect: sqlglot.Dialect) -> list[exp.Expr | None]:
        self._local.active = True
        try:
            return dialect.parse(sql)
        finally:
            self._local.active = False


_QUIET = _QuietParsing()
logging.getLogger("sqlglot").addFilter(_QUIET)


@dataclass(frozen=True)
class _Call:
    """A function call: the names it goes by and the qualifiers it was called through."""

    names: tuple[str, ...]
    qualifiers: tuple[str, ...]


@dataclass(frozen=True)
class SqlGuard:
    """Checks that a SQL argument is one read-only statement within its allowlists.

    ``dialect`` is a sqlglot dialect name and must be the database's (default ``"postgres"``,
    the most common database behind MCP SQL tools; sqlglot's generic dialect accepts a
    mixture no database speaks). ``read_only`` is described in the module docstring.
    ``single_statement`` refuses stacked statements (``SELECT 1; DROP TABLE t``).
    ``denied_functions`` lists refused functions (default
    :data:`DEFAULT_DENIED_FUNCTIONS`), whatever ``read_only`` says. With ``read_only``, a
    call must also be of a function on the dialect's list (:mod:`.sql_functions`), or match
    ``allow_functions``: a name allows it unqualified, a dotted name exactly that qualified
    name, case-insensitively, ``*`` at the end a prefix. ``tables``, when set, lists the
    tables a query may use, matched case-insensitively on every name part: ``"orders"``
    allows an unqualified ``orders`` (whatever the search path makes of it),
    ``"public.orders"`` allows exactly that qualified name, so an entry allows no other
    schema's table of the same name. CTE names are not tables, with the database's scoping:
    a name a CTE does not cover where it is used is a table. ``max_length`` bounds the query
    in characters: parsing time grows with it.

    Invalid configuration raises ``ValueError`` at construction; :meth:`check` never raises.
    """

    kind: ClassVar[str] = "sql"

    dialect: str = "postgres"
    read_only: bool = True
    single_statement: bool = True
    denied_functions: tuple[str, ...] = DEFAULT_DENIED_FUNCTIONS
    allow_functions: tuple[str, ...] = ()
    tables: tuple[str, ...] | None = None
    max_length: int = 20_000
    _dialect: sqlglot.Dialect = field(init=False, repr=False, compare=False)
    _listed: frozenset[str] = field(init=False, repr=False, compare=False)
    _tables: frozenset[tuple[str, ...]] = field(init=False, repr=False, compare=False)
    _executable_comments: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Policies pass configuration from TOML: a string where a list belongs would
        # otherwise be iterated character by character into a very different list.
        for name in ("denied_functions", "allow_functions", "tables"):
            entries = getattr(self, name)
            if entries is not None and (
                isinstance(entries, str) or not all(isinstance(e, str) and e for e in entries)
            ):
                raise ValueError(f"{name} must be a list of non-empty strings")
        if self.max_length < 1:
            raise ValueError("max_length must be positive")
        try:
            dialect = sqlglot.Dialect.get_or_raise(self.dialect)
        except ValueError:
            raise ValueError(f"dialect: {self.dialect!r} is not a sqlglot dialect") from None
        object.__setattr__(self, "_dialect", dialect)
        tables = frozenset(tuple(p.lower() for p in t.split(".")) for t in self.tables or ())
        if any(not all(entry) for entry in tables):
            raise ValueError("tables: an entry has an empty name part")
        object.__setattr__(self, "_tables", tables)
        object.__setattr__(self, "_executable_comments", self.dialect in MYSQL_FAMILY)
        object.__setattr__(self, "_listed", sql_functions.allowed_functions(self.dialect))

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about the SQL text ``value``."""
        if not isinstance(value, str):
            return not_a_string(value, self.kind)
        if len(value) > self.max_length:
            return [
                GuardFinding(
                    GuardCode.SQL_UNPARSEABLE,
                    f"the query is longer than {self.max_length} characters and was not parsed",
                )
            ]
        if self._executable_comments and _has_executable_comment(value, self._dialect):
            return [
                GuardFinding(
                    GuardCode.SQL_EXECUTABLE_COMMENT,
                    "the query has an executable comment (/*! ... */), which the server runs"
                    " as code",
                )
            ]
        if self.dialect == "postgres":
            return self._check_postgres(value)
        statements = self._parse(value)
        if isinstance(statements, GuardFinding):
            return [statements]
        findings: list[GuardFinding] = []
        if self.single_statement and len(statements) > 1:
            findings.append(_stacked([_statement_name(s) for s in statements]))
        findings += self._sqlglot_findings(statements, value)
        return list(dict.fromkeys(findings))

    def _sqlglot_findings(self, statements: list[exp.Expr], sql: str) -> list[GuardFinding]:
        """What sqlglot's reading of each statement breaks: writes, denied or unlisted calls,
        tables. For ``postgres`` the server's parse tree decides which calls are listed."""
        findings: list[GuardFinding] = []
        for statement in statements:
            if self.read_only:
                findings += _writes(statement)
            findings += self._calls(statement, sql)
            if self.tables is not None:
                findings += self._unlisted_tables(statement)
        return findings

    def _check_postgres(self, sql: str) -> list[GuardFinding]:
        """PostgreSQL's parser decides what the query is; sqlglot adds its table scoping and
        its (often more specific) messages, and can only add findings, never remove one."""
        server = sql_postgres.parse(sql)
        if isinstance(server, str):
            return [self._unparseable(server)]
        if not server:
            return [self._unparseable("has no SQL statement")]
        findings: list[GuardFinding] = []
        if self.single_statement and len(server) > 1:
            findings.append(_stacked([sql_postgres.statement_name(s) for s in server]))
        ours = self._parse(sql)
        if isinstance(ours, GuardFinding) or len(ours) != len(server):
            if self.tables is not None:
                # The allowlist needs sqlglot's scoping of names; without it, refuse.
                findings.append(self._unparseable("cannot be read well enough to check its tables"))
            ours = []
        from_sqlglot = self._sqlglot_findings(ours, sql)
        found = {finding.code for finding in from_sqlglot}
        for statement in server:
            if self.read_only and GuardCode.SQL_NOT_READ_ONLY not in found:
                findings += sql_postgres.read_only_findings(statement)
            findings += self._postgres_calls(
                statement, deny=GuardCode.SQL_DENIED_FUNCTION not in found
            )
        return list(dict.fromkeys(findings + from_sqlglot))

    def _postgres_calls(self, statement: dict[str, Any], *, deny: bool) -> Iterator[GuardFinding]:
        """Denied calls (unless sqlglot found some already) and, with ``read_only``, calls of
        functions off PostgreSQL's list: a listed name called bare or through ``pg_catalog``,
        exactly as the server folds it (``"LOWER"`` is no catalog function)."""
        for parts in sql_postgres.function_calls(statement):
            name = ".".join(parts)
            entry = next(
                (e for e in self.denied_functions for p in parts if _matches(e, p.lower())), None
            )
            if entry is not None:
                if deny:
                    yield _denied(name, entry)
                continue
            if not self.read_only or self._allowed(name):
                continue
            catalog = len(parts) == 1 or (len(parts) == 2 and parts[0] == "pg_catalog")
            if not (catalog and parts[-1] in self._listed):
                yield self._not_listed(name)

    def _parse(self, sql: str) -> list[exp.Expr] | GuardFinding:
        """The statements, without the empty ones, or the finding that refuses the text."""
        try:
            parsed = _QUIET.parse(sql, self._dialect)
        except ParseError as error:
            where = error.errors[0] if error.errors else {}
            position = (
                f" (line {where['line']}, column {where['col']})"
                if isinstance(where.get("line"), int) and isinstance(where.get("col"), int)
                else ""
            )
            return self._unparseable(f"is not valid {self.dialect} SQL{position}")
        except RecursionError:
            return self._unparseable("is nested too deeply to parse")
        except Exception:
            # Tokenizer errors and whatever else the parser raises: refuse, never pass.
            return self._unparseable(f"is not valid {self.dialect} SQL")
        statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
        if not statements:
            return self._unparseable("has no SQL statement")
        return statements

    @staticmethod
    def _unparseable(what: str) -> GuardFinding:
        return GuardFinding(GuardCode.SQL_UNPARSEABLE, f"the query {what}")

    def _calls(self, statement: exp.Expr, sql: str) -> Iterator[GuardFinding]:
        """Denied calls and, with ``read_only`` outside ``postgres``, unlisted ones."""
        judge = self.read_only and self.dialect != "postgres"
        for node in statement.walk():
            if not isinstance(node, exp.Func):
                continue
            call = _call(node)
            name = ".".join((*call.qualifiers, call.names[0]))
            entry = next(
                (
                    e
                    for e in self.denied_functions
                    for part in (*call.names, *call.qualifiers)
                    if _matches(e, part)
                ),
                None,
            )
            if entry is not None:
                yield _denied(name, entry)
            elif judge and not _in_hint(node):
                written = _written(node, sql)
                if not self._listed_call(node, call, written):
                    yield self._not_listed(
                        name if written is None else ".".join((*call.qualifiers, written))
                    )

    def _listed_call(self, node: exp.Func, call: _Call, written: str | None) -> bool:
        """Whether a read-only query may make this call, as sqlglot reads it: a name the query
        writes must be on the database's list (unqualified, unquoted: a qualified or quoted
        name is a user's function) or allowed; syntax sqlglot reads as a function (no
        ``written`` name) is judged by its expression type."""
        if written is None:
            return node.key in sql_functions.construct_types() or any(
                self._allowed(n) for n in (node.key, *call.names)
            )
        if self._allowed(".".join((*call.qualifiers, written.strip('"`[]')))):
            return True
        return not call.qualifiers and written in self._listed

    def _allowed(self, name: str) -> bool:
        """Whether ``allow_functions`` lists ``name`` (dotted if qualified), case-insensitively."""
        return any(_matches(entry, name.lower()) for entry in self.allow_functions)

    def _not_listed(self, name: str) -> GuardFinding:
        return GuardFinding(
            GuardCode.SQL_FUNCTION_NOT_ALLOWED,
            f"the query calls {name}(), which is not a function read_only allows in"
            f" {self.dialect} (allow_functions may add it)",
        )

    def _unlisted_tables(self, statement: exp.Expr) -> Iterator[GuardFinding]:
        listed = ", ".join(self.tables or ()) or "(none)"
        for source in _tables(statement, self._dialect):
            if not _named_table(source):
                yield GuardFinding(
                    GuardCode.SQL_IDENTIFIER_NOT_ALLOWED,
                    "the query names a table with an expression (a string or a parameter),"
                    f" which the allowlist cannot check ({listed})",
                )
                continue
            parts = tuple(part.name for part in source.parts)
            if tuple(p.lower() for p in parts) not in self._tables:
                yield GuardFinding(
                    GuardCode.SQL_IDENTIFIER_NOT_ALLOWED,
                    f"the query uses table {'.'.join(parts)}, which is not allowed ({listed})",
                )


def _denied(name: str, entry: str) -> GuardFinding:
    return GuardFinding(
        GuardCode.SQL_DENIED_FUNCTION, f"the query calls {name}(), which is denied ({entry})"
    )


def _written(node: exp.Func, sql: str) -> str | None:
    """The name a call is written with, lower-case and with its quotes; ``None`` for syntax
    sqlglot reads as a function (``CAST``, ``CASE``) or a node it adds, which carry no
    position. sqlglot marks the name token's span on every call of a name it parses."""
    if isinstance(node, exp.Anonymous):
        own = node.this
        if isinstance(own, exp.Identifier):
            return f'"{own.name}"' if own.quoted else own.name.lower()
        return str(own).lower()
    start, end = node.meta.get("start"), node.meta.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    return sql[start : end + 1].lower()


def _in_hint(node: exp.Expr) -> bool:
    """Whether ``node`` is inside an optimizer hint (``/*+ MAX_EXECUTION_TIME(100) */``),
    whose entries sqlglot reads as calls but the server reads as directions to its planner."""
    return node.find_ancestor(exp.Hint) is not None


def _stacked(kinds: list[str]) -> GuardFinding:
    return GuardFinding(
        GuardCode.SQL_MULTIPLE_STATEMENTS,
        f"the query has {len(kinds)} statements ({', '.join(kinds)}); one is allowed",
    )


def _has_executable_comment(sql: str, dialect: sqlglot.Dialect) -> bool:
    """Whether a comment of ``sql``, as the dialect's tokenizer reads comments (so not inside a
    string), is one MySQL or MariaDB executes: ``/*!`` or ``/*M!``. A text that does not
    tokenize is left to the parser, which refuses it."""
    try:
        tokens = dialect.tokenize(sql)
    except Exception:
        return False
    return any(comment.startswith(("!", "M!")) for token in tokens for comment in token.comments)


def _writes(statement: exp.Expr) -> Iterator[GuardFinding]:
    """Findings for everything in ``statement`` that is not a pure read."""
    if isinstance(statement, _STATEMENTS):
        yield GuardFinding(
            GuardCode.SQL_NOT_READ_ONLY,
            f"{_statement_name(statement)} statements are not read-only queries",
        )
    elif not isinstance(statement, _QUERIES):
        yield GuardFinding(GuardCode.SQL_NOT_READ_ONLY, "the statement is not a query")
    for node in statement.walk():
        if node is statement:
            continue
        if isinstance(node, _STATEMENTS):
            yield GuardFinding(
                GuardCode.SQL_NOT_READ_ONLY,
                f"the query contains a nested {_statement_name(node)} statement",
            )
        elif isinstance(node, exp.Into):
            yield GuardFinding(GuardCode.SQL_NOT_READ_ONLY, "SELECT ... INTO creates a table")
        elif isinstance(node, exp.Lock):
            yield GuardFinding(
                GuardCode.SQL_NOT_READ_ONLY, "a locking clause (FOR UPDATE / FOR SHARE) locks rows"
            )
        elif isinstance(node, exp.CTE) and not isinstance(node.this, (*_QUERIES, *_STATEMENTS)):
            yield GuardFinding(
                GuardCode.SQL_NOT_READ_ONLY, "a WITH clause holds something not a query"
            )


def _statement_name(node: exp.Expr) -> str:
    """A statement's type in SQL words: the leading keyword of one sqlglot left unparsed."""
    if isinstance(node, exp.Command):
        keyword = str(node.this).strip()
        return keyword.upper() if _KEYWORD.fullmatch(keyword) else "command"
    if isinstance(node, (*_STATEMENTS, *_QUERIES)):
        return _STATEMENT_NAMES.get(node.key, node.key.upper())
    return "expression"


def _call(node: exp.Func) -> _Call:
    """The names a call goes by.

    sqlglot keeps an unknown function's name in ``this`` (``Anonymous`` and the anonymous
    aggregates; an identifier when quoted) and turns a known one into a typed node, named by
    its class.
    """
    own = node.args.get("this")
    if isinstance(own, exp.Identifier):
        own = own.name
    names = (own,) if isinstance(own, str) else tuple(node.sql_names())
    parent = node.parent
    qualifiers: tuple[str, ...] = ()
    if isinstance(parent, exp.Dot) and parent.expression is node:
        qualifiers = tuple(part.name for part in parent.this.find_all(exp.Identifier) if part.name)
    return _Call(tuple(n.lower() for n in names), tuple(q.lower() for q in qualifiers))


def _matches(entry: str, name: str) -> bool:
    entry = entry.lower()
    return name.startswith(entry[:-1]) if entry.endswith("*") else name == entry


def _named_table(node: exp.Expr) -> TypeGuard[exp.Table]:
    return isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier)


def _dynamic_source(node: exp.Expr) -> bool:
    """A FROM source whose table is chosen at run time (Snowflake ``IDENTIFIER('t')``,
    ``TABLE('t')``, a parameter): it cannot be checked, so it is never a table function."""
    if not isinstance(node, (exp.Table, exp.TableFromRows)) or _named_table(node):
        return False
    inner = node.this
    if inner is None and isinstance(node, exp.Table):
        return False  # a wrapper such as ROWS FROM (...): its functions are checked inside
    return isinstance(inner, exp.DynamicIdentifier) or not isinstance(inner, exp.Func)


def _tables(statement: exp.Expr, dialect: sqlglot.Dialect) -> Iterator[exp.Expr]:
    """The tables ``statement`` uses: table nodes that no visible CTE name covers, and the
    sources that name a table at run time (which :func:`_named_table` tells apart).

    Scoping follows PostgreSQL, the strictest common rule: a CTE is visible in the body of
    its statement and in the CTEs after it, and in its own and every sibling's body only
    under ``WITH RECURSIVE``. Where a database is laxer, a CTE reference reads as a table
    (refused unless listed), never the other way round. Names compare as the dialect
    resolves them (unquoted folded, quoted exact). Iterative: trees can be deep.
    """

    def normalized(identifier: exp.Expr) -> str:
        return dialect.normalize_identifier(identifier.copy()).name

    stack: list[tuple[exp.Expr, frozenset[str]]] = [(statement, frozenset())]
    while stack:
        node, visible = stack.pop()
        with_ = node.args.get("with_")
        if isinstance(with_, exp.With):
            ctes = [cte for cte in with_.expressions if isinstance(cte, exp.CTE)]
            names = [normalized(cte.args["alias"].this) for cte in ctes]
            for index, cte in enumerate(ctes):
                seen = names if with_.args.get("recursive") else names[:index]
                stack.append((cte.this, visible | frozenset(seen)))
            visible |= frozenset(names)
        if _named_table(node):
            parts = node.parts
            if len(parts) > 1 or normalized(parts[0]) not in visible:
                yield node
        elif _dynamic_source(node):
            yield node
        stack.extend((child, visible) for child in node.iter_expressions() if child is not with_)

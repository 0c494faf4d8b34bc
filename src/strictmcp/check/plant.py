"""Planted faults: for each guard and deep check a policy puts on a tool, inputs the schema
allows and that check must refuse, one fault at a time.

Generated inputs find what a schema says; what a schema cannot say (a cron expression that
never parses, a column the database lacks, a file outside the reports directory) is what the
policy's checks are for, and a server that checks nothing accepts it. Each planted case is a
valid generated input with one argument replaced by a value the check at that argument's
pointer refuses with a known code; ``strictmcp check`` then asks whether the target refuses
it, and which checks did (the codes at that pointer).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping
from typing import Any

from ..guards import GuardCode
from ..guards.database import SqlDatabaseCheck
from ..guards.path import PathGuard
from ..guards.reach import UrlReachCheck
from ..guards.schedule import CronCheck, TimeCheck
from ..guards.sql import SqlGuard
from ..guards.url import UrlGuard
from ..policy import GuardRule, Policy
from ..protocol import CheckedTool
from .cases import PLANTED, Case, Fault

# Names no real schema is likely to hold: a fault is about the check, not the data.
_NO_SUCH_TABLE = "strictmcp_no_such_table"
_NO_SUCH_COLUMN = "strictmcp_no_such_column"
_FILE = "strictmcp-check.txt"


def plant(tool: CheckedTool, policy: Policy, base: Any) -> tuple[list[Case], list[str]]:
    """The planted-fault cases for ``tool`` from ``policy``'s guards and deep checks, each
    made from ``base`` (a valid generated input); and notes on faults that could not be
    planted (a pointer with ``*``, a value the schema refuses)."""
    validator = tool.input_validator
    if validator is None or not isinstance(base, Mapping):
        return [], []
    name = str(tool.name)
    cases: list[Case] = []
    notes: list[str] = []
    planted: set[tuple[str, Fault]] = set()
    rules = [rule for rule in (*policy.rules, *policy.deep) if rule.applies_to(name)]
    for rule in rules:
        for fault in faults_of(rule.guard, _tables(rules, rule.argument)):
            if (rule.argument, fault) in planted:
                continue  # a [[guard]] and a [[deep]] entry on one argument: planted once
            planted.add((rule.argument, fault))
            arguments = _replaced(base, rule, fault.value)
            if arguments is None:
                notes.append(f"{fault.label} not planted at {rule.argument}: not one argument")
            elif not validator.validate(arguments).valid:
                notes.append(
                    f"{fault.label} not planted at {rule.argument}: the inputSchema refuses it"
                )
            else:
                cases.append(Case(PLANTED, rule.argument, fault.label, arguments, "fault", fault))
    return cases, notes


def _tables(rules: list[GuardRule], argument: str) -> tuple[str, ...]:
    """The tables some SQL check on ``argument`` allows: a deep check against the database
    usually leaves naming them to the guard beside it."""
    found: list[str] = []
    for rule in rules:
        check = rule.guard.guard if isinstance(rule.guard, SqlDatabaseCheck) else rule.guard
        if rule.argument == argument and isinstance(check, SqlGuard) and check.tables:
            found += check.tables
    return tuple(dict.fromkeys(found))


def _replaced(base: Mapping[str, Any], rule: GuardRule, value: str) -> Any:
    """``base`` with ``value`` at the rule's pointer, or None when the pointer names no single
    place (``*``, the whole arguments, or a step through something not an object)."""
    tokens = rule.tokens
    if not tokens or "*" in tokens:
        return None
    arguments = copy.deepcopy(dict(base))
    parent: Any = arguments
    for token in tokens[:-1]:
        parent = parent.get(token) if isinstance(parent, dict) else None
    if not isinstance(parent, dict):
        return None
    parent[tokens[-1]] = value
    return arguments


def faults_of(check: Any, tables: tuple[str, ...] = ()) -> list[Fault]:
    """The faults ``check`` (a guard or a built-in deep check) must refuse, as it is
    configured; ``tables`` are tables known to exist, for SQL. None for the kinds whose
    faults depend on the data (argv, text) or a network (a URL's reachability)."""
    return list(_faults(check, tables))


def _faults(check: Any, tables: tuple[str, ...]) -> Iterator[Fault]:
    if isinstance(check, PathGuard):
        yield from _path_faults(check)
    elif isinstance(check, SqlDatabaseCheck):
        yield from _sql_faults(check.guard, tables)
        yield Fault(
            "a table the database lacks",
            f"SELECT * FROM {_NO_SUCH_TABLE}",
            GuardCode.DEEP_SQL_UNKNOWN_TABLE.value,
        )
        if tables:
            yield Fault(
                "a column the database lacks",
                f"SELECT {_NO_SUCH_COLUMN} FROM {tables[0]}",
                GuardCode.DEEP_SQL_UNKNOWN_COLUMN.value,
            )
    elif isinstance(check, SqlGuard):
        yield from _sql_faults(check, tables)
    elif isinstance(check, CronCheck):
        yield Fault(
            "a cron expression that never parses", "61 25 * * *", GuardCode.DEEP_CRON_INVALID.value
        )
        if check.min_interval_seconds is not None and check.min_interval_seconds > 60:
            yield Fault(
                f"a schedule more often than every {check.min_interval_seconds} s",
                "* * * * *",
                GuardCode.DEEP_CRON_TOO_FREQUENT.value,
                warning=True,
            )
    elif isinstance(check, TimeCheck):
        yield Fault("not a date-time", "next tuesday", GuardCode.DEEP_TIME_INVALID.value)
        yield Fault(
            "a time in the past", "2000-01-01T00:00:00Z", GuardCode.DEEP_TIME_NOT_FUTURE.value
        )
        if check.max_ahead_seconds is not None:
            yield Fault(
                "a time too far ahead", "9999-01-01T00:00:00Z", GuardCode.DEEP_TIME_TOO_FAR.value
            )
    elif isinstance(check, UrlReachCheck):
        yield from _url_faults(check.guard)
    elif isinstance(check, UrlGuard):
        yield from _url_faults(check)


def _path_faults(guard: PathGuard) -> Iterator[Fault]:
    root = guard.roots[0]
    outside = os.path.dirname(os.path.normpath(root))
    if outside != os.path.normpath(root):  # a root of "/" has no outside
        yield Fault(
            "a path outside its roots",
            os.path.join(outside, _FILE),
            GuardCode.PATH_OUTSIDE_ROOTS.value,
        )
    if not guard.allow_relative:
        yield Fault("a relative path", _FILE, GuardCode.PATH_RELATIVE.value)
    if guard.must_exist or guard.readable:
        yield Fault(
            "a path that does not exist",
            os.path.join(root, "strictmcp-no-such-file.txt"),
            GuardCode.PATH_NOT_FOUND.value,
        )


def _sql_faults(guard: SqlGuard, tables: tuple[str, ...]) -> Iterator[Fault]:
    table = tables[0] if tables else "t"
    yield Fault("a statement that does not parse", "SELEC 1", GuardCode.SQL_UNPARSEABLE.value)
    if guard.read_only:
        yield Fault(
            "a statement that writes", f"DELETE FROM {table}", GuardCode.SQL_NOT_READ_ONLY.value
        )
    if guard.single_statement:
        yield Fault(
            "two statements",
            f"SELECT 1; SELECT * FROM {table}",
            GuardCode.SQL_MULTIPLE_STATEMENTS.value,
        )
    if guard.tables:
        yield Fault(
            "a table outside the allowed ones",
            f"SELECT * FROM {_NO_SUCH_TABLE}",
            GuardCode.SQL_IDENTIFIER_NOT_ALLOWED.value,
        )


def _url_faults(guard: UrlGuard) -> Iterator[Fault]:
    if "ftp" not in guard.schemes:
        yield Fault(
            "a scheme not allowed", "ftp://example.com/", GuardCode.URL_SCHEME_NOT_ALLOWED.value
        )
    if not guard.allow_private:
        yield Fault("a loopback address", "https://127.0.0.1/", GuardCode.URL_PRIVATE_ADDRESS.value)
    if not guard.allow_userinfo:
        yield Fault(
            "credentials in the URL",
            "https://user:secret@example.com/",
            GuardCode.URL_USERINFO.value,
        )

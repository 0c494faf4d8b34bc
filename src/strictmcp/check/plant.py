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
from ..lint.walk import walk_schema
from ..policy import GuardRule, Policy
from ..policy.rules import pattern_matches
from ..protocol import CheckedTool
from ..schema import to_pointer
from .cases import PLANTED, Case, Fault

# Names no real schema is likely to hold: a fault is about the check, not the data.
_NO_SUCH_TABLE = "strictmcp_no_such_table"
_NO_SUCH_COLUMN = "strictmcp_no_such_column"
_FILE = "strictmcp-check.txt"


def plant(tool: CheckedTool, policy: Policy, base: Any) -> tuple[list[Case], list[str]]:
    """The planted-fault cases for ``tool`` from ``policy``'s guards and deep checks, each
    made from ``base`` (a valid generated input); and notes on faults that could not be
    planted (no place to put one, a value the schema refuses).

    A fault goes where the tool really has the argument: into its ``inputSchema``'s
    declared arguments (or the base's), an item of an array for a ``*`` (``/paths/*``
    plants into ``/paths/0``). A glob's rule on a tool without the argument plants nothing
    and says nothing (globs are how a policy covers many tools); a rule naming the tool
    says that it found no such argument."""
    validator = tool.input_validator
    if validator is None or not isinstance(base, Mapping):
        return [], []
    name = str(tool.name)
    declared = _declared(tool.definition.get("inputSchema"))
    cases: list[Case] = []
    notes: list[str] = []
    planted: set[tuple[str, Fault]] = set()
    rules = [rule for rule in (*policy.rules, *policy.deep) if rule.applies_to(name)]
    for rule in rules:
        faults = faults_of(rule.guard, _tables(rules, rule.argument))
        if not faults:
            continue
        if not _has(rule, declared, base):
            if rule.tool == name:
                notes.append(
                    f"no fault planted at {rule.argument}: the inputSchema declares no such "
                    "argument"
                )
            continue
        for fault in faults:
            if (rule.argument, fault) in planted:
                continue  # a [[guard]] and a [[deep]] entry on one argument: planted once
            planted.add((rule.argument, fault))
            place = _replaced(base, rule.tokens, fault.value)
            if place is None:
                notes.append(
                    f"{fault.label} not planted at {rule.argument}: no single value to replace"
                )
            elif not validator.validate(place[1]).valid:
                notes.append(
                    f"{fault.label} not planted at {rule.argument}: the inputSchema refuses it"
                )
            else:
                pointer, arguments = place
                cases.append(Case(PLANTED, pointer, fault.label, arguments, "fault", fault))
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


def _declared(schema: Any) -> list[str]:
    """The argument pointers a tool's ``inputSchema`` declares, as policies write them."""
    return [
        node.argument for node in walk_schema(schema, "/inputSchema") if node.argument is not None
    ]


def _has(rule: GuardRule, declared: list[str], base: Mapping[str, Any]) -> bool:
    """Whether the tool has the rule's argument: declared by its schema, or in the base (a
    schema may declare it where the walk does not look, behind a ``$ref``)."""
    if any(pattern_matches(rule.argument, argument) for argument in declared):
        return True
    return rule.tokens is not None and _present(base, rule.tokens)


def _present(base: Mapping[str, Any], tokens: tuple[str, ...]) -> bool:
    """Whether ``base`` holds a value the pattern ``tokens`` names (for ``*``, under its
    first array item or member)."""
    value: Any = base
    for token in tokens:
        if token == "*" and isinstance(value, list) and value:
            value = value[0]
        elif token == "*" and isinstance(value, dict) and value:
            value = next(iter(value.values()))
        elif token != "*" and isinstance(value, dict) and token in value:
            value = value[token]
        else:
            return False
    return True


def _replaced(
    base: Mapping[str, Any], tokens: tuple[str, ...] | None, value: str
) -> tuple[str, dict[str, Any]] | None:
    """``base`` with ``value`` at the pattern ``tokens``, and its pointer; None when the
    pattern names no single value (the whole arguments, or a step through something that is
    not an object or an array). A missing argument is added; a ``*`` replaces the first item
    of an array (or member of an object), or makes the array ``[value]`` when it is missing
    or empty."""
    if not tokens:
        return None
    arguments = copy.deepcopy(dict(base))
    parent: Any = arguments
    concrete: list[str] = []
    for index, token in enumerate(tokens):
        last = index == len(tokens) - 1
        if token == "*" and isinstance(parent, list):
            if not parent:
                parent.append(value if last else {})
            key: Any = 0
        elif token == "*" and isinstance(parent, dict) and parent:
            key = next(iter(parent))
        elif token != "*" and isinstance(parent, dict):
            key = token
            if not last and key not in parent:
                parent[key] = [] if tokens[index + 1] == "*" else {}
        else:
            return None
        concrete.append(str(key))
        if last:
            parent[key] = value
        else:
            parent = parent[key]
    return to_pointer(tuple(concrete)), arguments


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

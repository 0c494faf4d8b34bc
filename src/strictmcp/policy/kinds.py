"""The kinds a ``[[guard]]`` or ``[[deep]]`` entry names, each kind's options, and how an
entry becomes its rule.

Every key of an entry besides ``tool``, ``argument``, ``kind`` and ``method`` (``on_calls``
and ``timeout`` for a deep check) configures the guard or check itself (lists become
tuples). A guard's or check's own Python-only parameters (UrlGuard's ``resolver``) are not
reachable from a file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from ..guards.argv import ArgvGuard
from ..guards.base import Guard
from ..guards.claims import ClaimGuard, claims_in, substitute
from ..guards.database import SqlDatabaseCheck
from ..guards.path import PathGuard
from ..guards.reach import UrlReachCheck
from ..guards.schedule import CronCheck, TimeCheck
from ..guards.schema_fragment import SchemaGuard
from ..guards.text import TextGuard
from ..guards.url import UrlGuard
from ..schema import from_fragment
from .options import Context, Option, PolicyError, checked
from .rules import DEFAULT_DEEP_TIMEOUT, GUARD_METHODS, TOOLS_CALL, DeepRule, GuardRule

RULE_OPTIONS = {
    "tool": Option(
        str,
        doc=(
            "A glob over tool names (`*`, `?`, `[abc]`; case-sensitive, like tool names): "
            "`read_*`, `*`; required for `tools/call`, refused with another `method`."
        ),
    ),
    "argument": Option(
        str,
        required=True,
        doc=(
            "A JSON Pointer into the call's arguments (`tools/call`), or into the request's "
            '`params` (any other method): `/path`, `""` for the arguments object itself; a '
            "`*` token stands for any array item or object key: `/files/*`."
        ),
    ),
    "kind": Option(str, required=True, doc="The guard or check: one of the kinds below."),
}
"""The keys that say where a ``[[guard]]`` or ``[[deep]]`` entry applies."""
GUARD_ENTRY = {
    "method": Option(
        str,
        choices=GUARD_METHODS,
        default='`"tools/call"`',
        doc="The request the guard checks: its `argument` reads into the request's `params`.",
    ),
}
"""The keys of a ``[[guard]]`` entry besides its place and its kind's options."""
GUARD_OPTIONS: dict[str, dict[str, Option]] = {
    "path": {
        "roots": Option(
            str,
            array=True,
            required=True,
            doc=(
                "Existing directories the path must stay in: absolute, or relative to the policy "
                "file's directory."
            ),
        ),
        "must_exist": Option(bool, default="`false`", doc="The path must exist."),
        "entry": Option(
            str,
            choices=("any", "file", "dir"),
            default='`"any"`',
            doc="What the path must be when it exists.",
        ),
        "readable": Option(
            bool,
            default="`false`",
            doc="The path must exist and be readable by the server.",
        ),
        "writable": Option(
            bool,
            default="`false`",
            doc="The path must be writable (or creatable, when it does not exist yet).",
        ),
        "allow_relative": Option(
            bool,
            default="`false`",
            doc="Accept relative paths, resolved against the first root.",
        ),
        "allow_home": Option(
            bool,
            default="`false`",
            doc="Expand a leading `~`; the home directory must be inside a root.",
        ),
        "max_length": Option(int, default="`4096`", doc="The most characters a path may have."),
        "max_components": Option(int, default="`256`", doc="The most components a path may have."),
        "min_free_bytes": Option(
            int,
            doc=(
                "Warn (`path-low-free-space`) when the filesystem the path is on, or would be "
                "created"
                " on, has less free for the server."
            ),
        ),
        "max_file_bytes": Option(
            int,
            doc="Warn (`path-file-large`) when the path is a regular file larger than this.",
        ),
    },
    "url": {
        "schemes": Option(str, array=True, default='`["https"]`', doc="The allowed schemes."),
        "hosts": Option(
            str,
            array=True,
            doc=(
                "An allowlist of exact names, IP addresses and `*.example.com` wildcards (strict "
                "subdomains). It does not lift the address checks."
            ),
        ),
        "resolve": Option(
            bool,
            default="`true`",
            doc="Resolve host names and refuse one whose addresses include a refused one.",
        ),
        "allow_private": Option(
            bool,
            default="`false`",
            doc=(
                "Turn the private-address and local-name checks off (for tools meant to reach an "
                "internal network)."
            ),
        ),
        "allow_ports": Option(
            int,
            array=True,
            doc="The ports a URL may use, explicitly or by its scheme's default.",
        ),
        "allow_userinfo": Option(bool, default="`false`", doc="Let `user:pass@` through."),
        "max_length": Option(int, default="`8192`", doc="The most characters a URL may have."),
    },
    "sql": {
        "dialect": Option(str, default='`"postgres"`', doc="The sqlglot dialect of the database."),
        "read_only": Option(
            bool,
            default="`true`",
            doc="Refuse writes, data-modifying CTEs, `SELECT ... INTO` and locking.",
        ),
        "single_statement": Option(
            bool,
            default="`true`",
            doc="Refuse stacked statements (`SELECT 1; DROP TABLE t`).",
        ),
        "denied_functions": Option(
            str,
            array=True,
            default="`strictmcp.guards.sql.DEFAULT_DENIED_FUNCTIONS`",
            doc=(
                "Refused functions, as globs (`pg_sleep*`); giving the option replaces the default "
                "list. Applies with or without `read_only`, and before `allow_functions`."
            ),
        ),
        "allow_functions": Option(
            str,
            array=True,
            default="`[]`",
            doc=(
                "With `read_only`, functions a query may call besides the database's list: a name "
                "(`random`) allows it unqualified, a dotted one (`app.safe_fn`) exactly that "
                "qualified name; case-insensitive; `*` at the end is a prefix (`st_*`)."
            ),
        ),
        "tables": Option(
            str,
            array=True,
            doc=(
                "The tables a query may use, matched case-insensitively on every name part "
                "(`orders`,"
                " `public.orders`)."
            ),
        ),
        "max_length": Option(int, default="`20000`", doc="The most characters a query may have."),
    },
    "argv": {
        "allow_options": Option(
            str,
            array=True,
            default="`[]`",
            doc=(
                "Option names allowed to start with `-` (`-n`, `--oneline`); `--` allows the "
                "operands"
                " after it."
            ),
        ),
        "executables": Option(
            str,
            array=True,
            doc="The programs the first item may name (with `first_is_executable`).",
        ),
        "first_is_executable": Option(
            bool,
            default="`false`",
            doc="The first item must be one of `executables`.",
        ),
        "match_basename": Option(
            bool,
            default="`false`",
            doc=(
                "A bare name (`git`) may match the last component of a listed path "
                "(`/usr/bin/git`)."
            ),
        ),
        "allow_subcommands": Option(
            str,
            array=True,
            doc=(
                "The first operand (the first item after the executable that is not an option) "
                "must "
                "be exactly one of these (`argv-subcommand-not-allowed`); a vector without one is "
                "refused."
            ),
        ),
        "operand_schemes": Option(
            str,
            array=True,
            doc=(
                "An operand written as a URL (`scheme://...`) or a transport address "
                "(`transport::address`) must use one of these schemes, case-insensitively, and a "
                "URL's host must not start with `-` (`argv-operand-scheme-not-allowed`); `[]` "
                "refuses"
                " every URL and transport address."
            ),
        ),
    },
    "text": {
        "min_length": Option(int, default="`0`", doc="The fewest characters (code points)."),
        "max_length": Option(int, doc="The most characters (code points)."),
        "allow_newlines": Option(
            bool,
            default="`true`",
            doc="Accept line feed, carriage return, U+2028 and U+2029.",
        ),
        "forbid_control": Option(bool, default="`true`", doc="Refuse control characters."),
        "forbid_invisible": Option(
            bool,
            default="`true`",
            doc=(
                "Refuse invisible format characters (zero-width, tags, ...); the tags of an "
                "allowed "
                "subdivision flag stay (`allow_subdivision_flags`, above)."
            ),
        ),
        "forbid_bidi": Option(
            bool,
            default="`true`",
            doc="Refuse bidirectional controls (turn off for right-to-left scripts).",
        ),
    },
    "schema": {
        "schema": Option(
            dict,
            required=True,
            doc=(
                "A JSON Schema (2020-12) the argument's value must match, on top of the "
                'server\'s `inputSchema`: `schema = { pattern = "^[a-z_]{1,63}$", maxLength = 63 '
                "}`, `enum`, `minimum`, `maxItems`, `items`, ... Findings carry the engine's "
                "codes (`pattern-mismatch`, `not-in-enum`, `too-long`). A fragment the engine "
                "refuses, or with a `$ref` outside itself, refuses the policy."
            ),
        ),
    },
}
"""Each guard kind's options, as a policy may set them."""
_REACH = {
    "reachable": Option(
        bool,
        default="`false`",
        doc="Send one `HEAD` request per hop; off, the check is the guard alone.",
    ),
    "request_timeout_ms": Option(int, default="`2000`", doc="Per request."),
    "max_redirects": Option(
        int,
        default="`3`",
        doc="Redirects are followed here, each target through the guard's redirect check first.",
    ),
}
_DATABASE = {
    "database": Option(
        str,
        choices=("postgres", "sqlite"),
        required=True,
        doc=(
            "The database. For SQLite the DSN is the database file, opened read-only and never "
            "created."
        ),
    ),
    "dsn_env": Option(
        str,
        doc="The environment variable or the file that holds the DSN, read at each check.",
    ),
    "dsn_file": Option(
        str,
        doc="The environment variable or the file that holds the DSN, read at each check.",
    ),
    "max_rows": Option(
        int,
        doc=(
            "Warn (`deep-sql-many-rows`) when PostgreSQL estimates more rows (SQLite gives no "
            "estimate)."
        ),
    ),
    "statement_timeout_ms": Option(
        int,
        default="`1000`",
        doc=(
            "PostgreSQL's `statement_timeout` and `lock_timeout`; SQLite's planning is "
            "interrupted then."
        ),
    ),
    "connect_timeout": Option(int, default="`2`", doc="Seconds to connect."),
}
DEEP_OPTIONS: dict[str, dict[str, Option]] = {
    # A path deep check is the path guard (its free-space and size warnings are what a guard
    # entry rarely wants on every call); a sql one takes the SQL guard's options, its dialect
    # the database's.
    "path": GUARD_OPTIONS["path"],
    "sql": {
        **{name: option for name, option in GUARD_OPTIONS["sql"].items() if name != "dialect"},
        **_DATABASE,
    },
    "url": {**GUARD_OPTIONS["url"], **_REACH},
    "cron": {
        "min_interval_seconds": Option(
            int,
            doc="Warn (`deep-cron-too-frequent`) when two runs come closer.",
        ),
        "next_runs": Option(
            int,
            default="`3`",
            doc="List the next run times (UTC) as a warning (`deep-cron-next-runs`); `0` does not.",
        ),
    },
    "time": {
        "min_ahead_seconds": Option(
            int,
            default="`0`",
            doc="At least this far ahead (`deep-time-not-in-future`).",
        ),
        "max_ahead_seconds": Option(int, doc="At most this far ahead (`deep-time-too-far`)."),
    },
}
"""Each built-in deep check's options."""
DEEP_ENTRY = {
    "on_calls": Option(
        bool,
        default="`false`",
        doc="Also run before real calls, not only in the dry run.",
    ),
    "timeout": Option(
        float,
        default="`5`, or one second more than the check's own bound when that is longer",
        doc=(
            "Seconds the check may take. For `sql` it must exceed `connect_timeout` plus "
            "`statement_timeout_ms`, for `url` with `reachable` `request_timeout_ms` times "
            "`max_redirects + 1`: the check then ends on its own, never left running after it is "
            "reported."
        ),
    ),
}
"""The keys of a ``[[deep]]`` entry besides its place and its kind's options."""


_LIGHT_GUARD_KINDS: dict[str, Callable[..., Guard]] = {
    "argv": ArgvGuard,
    "path": PathGuard,
    "schema": SchemaGuard,
    "text": TextGuard,
    "url": UrlGuard,
}
"""Every guard kind but ``sql``, whose parsers (sqlglot, pglast) take longer to import than the
rest of the proxy: that one is imported when a policy names it."""


def guard_kinds() -> dict[str, Callable[..., Guard]]:
    """The guard kinds a policy can name, by ``kind``."""
    from ..guards.sql import SqlGuard  # noqa: PLC0415 - see _LIGHT_GUARD_KINDS

    return {**_LIGHT_GUARD_KINDS, "sql": SqlGuard}


def _url_check(**options: Any) -> Guard:
    reach = {name: options.pop(name) for name in _REACH if name in options}
    return UrlReachCheck(UrlGuard(**options), **reach)


def _sql_check(**options: Any) -> Guard:
    from ..guards.sql import SqlGuard  # noqa: PLC0415 - see _LIGHT_GUARD_KINDS

    database = {name: options.pop(name) for name in _DATABASE if name in options}
    return SqlDatabaseCheck(guard=SqlGuard(dialect=database["database"], **options), **database)


_DEEP_CHECKS: dict[str, Callable[..., Guard]] = {
    "path": PathGuard,
    "sql": _sql_check,
    "url": _url_check,
    "cron": CronCheck,
    "time": TimeCheck,
}
"""How each deep check kind is built from its options (ValueError for a configuration it
refuses): the reach and database options go to the check, the rest to the guard it wraps."""


_Build = Callable[[str, str, str, dict[str, Any], Mapping[str, Any]], GuardRule]


def guard_rule(where: str, entry: Any, context: Context) -> GuardRule:
    """The rule of one ``[[guard]]`` entry."""
    return _rule(where, entry, context, GUARD_OPTIONS, GUARD_ENTRY, partial(_guard, context.flags))


def deep_rule(where: str, entry: Any, context: Context) -> GuardRule:
    """The rule of one ``[[deep]]`` entry."""
    return _rule(where, entry, context, DEEP_OPTIONS, DEEP_ENTRY, _deep)


def _guard(
    flags: tuple[str, ...],
    tool: str,
    argument: str,
    kind: str,
    options: dict[str, Any],
    entry: Mapping[str, Any],
) -> GuardRule:
    # One list for the whole policy: a flag a text guard lets through is one hygiene and the
    # listing stage let through too.
    text = {"allow_subdivision_flags": flags} if flags and kind == "text" else {}
    factory = _LIGHT_GUARD_KINDS.get(kind) or guard_kinds()[kind]
    guard = factory(**options, **text)
    return GuardRule(tool, argument, guard, entry.get("method", TOOLS_CALL))


def _deep(
    tool: str, argument: str, kind: str, options: dict[str, Any], entry: Mapping[str, Any]
) -> DeepRule:
    check = _DEEP_CHECKS[kind](**options)
    # A check abandoned at its timeout would go on in its thread, holding a connection: its
    # own bounds (the database's, the HTTP client's) must end it first.
    bound, what = 0.0, ""
    if isinstance(check, SqlDatabaseCheck):
        bound = check.connect_timeout + check.statement_timeout_ms / 1000
        what = "connect_timeout plus statement_timeout_ms"
    elif isinstance(check, UrlReachCheck) and check.reachable:
        bound = check.request_timeout_ms / 1000 * (check.max_redirects + 1)
        what = "request_timeout_ms for each of max_redirects + 1 requests"
    # Unsaid, the timeout leaves the check's own bounds a second to end it.
    timeout = float(entry.get("timeout", max(DEFAULT_DEEP_TIMEOUT, bound + 1)))
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    if bound >= timeout:
        raise ValueError(
            f"timeout ({timeout:g} s) must exceed {what} ({bound:g} s), so that the check"
            " ends on its own before it is abandoned"
        )
    return DeepRule(tool, argument, check, on_calls=entry.get("on_calls", False), timeout=timeout)


def _rule(
    where: str,
    entry: Any,
    context: Context,
    kinds: Mapping[str, Mapping[str, Option]],
    common: Mapping[str, Option],
    build: _Build,
) -> GuardRule:
    """An entry checked and then built from its tool, argument, kind, options (lists as
    tuples) and the entry itself; a guard or check that refuses its configuration is
    reported as the entry's."""
    tool, argument, kind, options = _entry(where, entry, kinds, common)
    if kind == "path" and context.base is not None:
        # A policy kept beside the server it protects names its roots relative to itself.
        options["roots"] = tuple(str(context.base / root) for root in options["roots"])
    try:
        claims = tuple(dict.fromkeys(n for v in options.values() for n in claims_in(v)))
        if not claims:
            return build(tool, argument, kind, options, entry)
        # Settings that name claims are checked now with a stand-in value (a templated root
        # with "/", which exists), and built for each caller's values at call time.
        sample = substitute(options, dict.fromkeys(claims, "x"))
        if kind == "path":
            sample["roots"] = tuple("/" if claims_in(r) else r for r in options["roots"])
        rule = build(tool, argument, kind, sample, entry)
    except ValueError as error:
        raise PolicyError(f"{where} ({kind}): {error}") from None
    per_caller = partial(_guard_of, build, tool, argument, kind, entry=entry)
    return replace(rule, guard=ClaimGuard(kind, options, per_caller, claims))


def _guard_of(
    build: _Build,
    tool: str,
    argument: str,
    kind: str,
    options: dict[str, Any],
    *,
    entry: Mapping[str, Any],
) -> Guard:
    """The guard ``build`` makes of an entry's ``options`` (a caller's claims filled in)."""
    return build(tool, argument, kind, options, entry).guard


_PLACE = ("tool", "argument", "kind")


def _entry(
    where: str,
    entry: Any,
    kinds: Mapping[str, Mapping[str, Option]],
    common: Mapping[str, Option],
) -> tuple[str, str, str, dict[str, Any]]:
    if not isinstance(entry, Mapping):
        raise PolicyError(f"{where} must be a table")
    method = entry.get("method", TOOLS_CALL)
    # A guard on another request checks every one of them: it names no tool.
    required = _PLACE if method == TOOLS_CALL else _PLACE[1:]
    missing = [key for key in required if not isinstance(entry.get(key), str)]
    if missing:
        raise PolicyError(f"{where} needs string values for: {', '.join(missing)}")
    argument = entry["argument"]
    if argument and from_fragment("#" + argument) is None:
        raise PolicyError(f"{where}: argument must be a JSON Pointer such as /path or /files/*")
    kind = entry["kind"]
    if kind not in kinds:
        raise PolicyError(f"{where}: unknown kind {kind!r} (known: {', '.join(kinds)})")
    where = f"{where} ({kind})"
    # The rule's own keys are declared with the kind's options, so that an unknown key's
    # message lists them all; they were checked above.
    options = checked(where, entry, {**RULE_OPTIONS, **common, **kinds[kind]})
    if method != TOOLS_CALL and "tool" in entry:
        raise PolicyError(
            f'{where}: tool only for method = "{TOOLS_CALL}"; a guard on {method} checks every '
            "such request"
        )
    tool = entry.get("tool", "*")
    return tool, argument, kind, {k: v for k, v in options.items() if k in kinds[kind]}

"""``strictmcp policy init``: a starting policy for a server's tools, short enough to read.

Every argument lint's SMT3xx rules take for a path, URL, command or SQL
(:func:`strictmcp.lint.families.guards.candidates`, the one detection) gets a ``[[guard]]``
of that kind, with the values only the user can choose marked ``REPLACE``. Tools that share
an identical guard on the same argument share one entry, its ``tool`` a glob (``*``, or a
common prefix or suffix) chosen to reach no other tool's argument of that name; where no glob
fits, each tool keeps its own entry under one comment. With a path among them, the resource
requests that open files get path guards too (lint's SMT305). One deep check per kind is
written out commented. The strings lint finds unbounded (SMT201) are listed, with a ``schema``
guard to copy for them: only the user knows their shape.

A SQL guard fits the server: its dialect is the one the server's command, name, tool names or
descriptions name (:func:`infer_dialect`), and a tool whose name or annotations say it writes
(:func:`writes`) gets ``read_only = false``, with a comment saying why, instead of a guard that
would refuse its every call. The draft loads as written: path roots are the directory given
(by default the working directory), which the user then narrows.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from ..lint.context import LintContext, ToolView
from ..lint.families.bounds import unbounded_strings
from ..lint.families.guards import RESOURCE_READS, URI, Candidate, candidates, words
from ..policy.rules import pattern_matches
from ..protocol import Revision

__all__ = ["draft", "infer_dialect", "writes"]

# Each kind's options in the draft; {root} and {dialect} are filled in.
_GUARD_LINES: dict[str, tuple[str, ...]] = {
    "path": ("roots = [{root}]  # REPLACE: the directories these tools may use",),
    "url": (
        'schemes = ["https"]',
        '# hosts = ["api.example.com"]  # REPLACE: the hosts these tools may fetch',
    ),
    "sql": ("dialect = {dialect}", '# tables = ["REPLACE"]  # the tables a query may use'),
    "argv": (
        "# first_is_executable = true",
        '# executables = ["/usr/bin/REPLACE"]  # the programs the command may run',
        '# allow_subcommands = ["REPLACE"]  # the subcommands it may run (status, log, ...)',
    ),
}
# A deep check's options, the first entry of each kind gets one written out commented.
_DEEP_LINES: dict[str, tuple[str, ...]] = {
    "path": (
        "roots = [{root}]",
        "min_free_bytes = 1073741824  # warn below 1 GiB free",
        "max_file_bytes = 104857600  # warn above 100 MiB",
    ),
    "url": ('schemes = ["https"]', "reachable = true  # one HEAD request, through the guard"),
    "sql": (
        "database = {database}",
        'dsn_env = "REPLACE_DSN"  # the variable holding the DSN, never the DSN itself',
        "on_calls = true  # also before real calls",
    ),
}
_DEEP_DATABASES = ("postgres", "sqlite")
_DEFAULT_DIALECT = "postgres"

# The databases a server's words may name, each with the sqlglot dialect its SQL is in.
_DIALECTS: dict[str, str] = {
    "sqlite": "sqlite",
    "sqlite3": "sqlite",
    "postgres": "postgres",
    "postgresql": "postgres",
    "psql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "duckdb": "duckdb",
    "motherduck": "duckdb",
    "mssql": "tsql",
    "sqlserver": "tsql",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "clickhouse": "clickhouse",
    "oracle": "oracle",
    "redshift": "redshift",
    "trino": "trino",
}
# Whole words only: "mysqlclient" names no database, "mcp_server_sqlite" does.
_DATABASE_WORD = re.compile(
    r"(?<![a-z])(" + "|".join(sorted(_DIALECTS, key=len, reverse=True)) + r")(?![a-z])"
)
# Verbs in a tool's name that say it changes what it works on.
_WRITE_WORDS = frozenset(
    {
        "write",
        "insert",
        "update",
        "upsert",
        "delete",
        "create",
        "drop",
        "alter",
        "modify",
        "truncate",
        "remove",
        "mutate",
    }
)


def infer_dialect(views: Sequence[ToolView], hints: Sequence[str] = ()) -> tuple[str, str] | None:
    """The SQL dialect the server's words name and where they name it, or None when they name
    none or more than one. ``hints`` are the server's command line, or its URL, and its name;
    they are asked first, then the tool names, then the descriptions: the first of these that
    names exactly one database decides. Only the word is used, never the text around it (a
    command line may hold a DSN)."""
    sources = (
        ("the server's command or name", hints),
        ("the tool names", [view.name or "" for view in views]),
        ("the tool descriptions", [_description(view) for view in views]),
    )
    for where, texts in sources:
        named = {_DIALECTS[word] for text in texts for word in _DATABASE_WORD.findall(text.lower())}
        if len(named) == 1:
            return named.pop(), where
        if named:
            return None
    return None


def writes(view: ToolView) -> str | None:
    """Why the tool changes what it works on (``by its name``, ``by its annotations``), or
    None. A tool annotated ``readOnlyHint: true`` reads, whatever its name."""
    annotations = view.definition.get("annotations") if view.is_object else None
    hints = annotations if isinstance(annotations, Mapping) else {}
    if hints.get("readOnlyHint") is True:
        return None
    if set(words(view.name or "")) & _WRITE_WORDS:
        return "by its name"
    if hints.get("readOnlyHint") is False or hints.get("destructiveHint") is True:
        return "by its annotations"
    return None


@dataclass
class _Group:
    """Tools that get the same guard on the same argument: one entry, or one per tool."""

    argument: str
    kind: str
    options: tuple[str, ...]
    why: str
    tools: list[str] = field(default_factory=list)


def draft(
    tools: Sequence[Any],
    revision: Revision,
    *,
    server: str,
    root: str,
    hints: Sequence[str] = (),
) -> tuple[str, list[Candidate]]:
    """The commented TOML policy for ``tools`` (listed at ``revision`` by ``server``, as
    reports name it) and the arguments it guards. ``hints`` are the server's command line (or
    URL) and name, for :func:`infer_dialect`; they are never written out."""
    context = LintContext(revision=revision, policy=None, results={}, tools=tools)
    views = [ToolView(index, tool, context) for index, tool in enumerate(tools)]
    named = [view for view in views if view.name is not None]
    inferred = infer_dialect(named, hints)
    fill = {"root": json.dumps(root), "dialect": _dialect_line(inferred)}
    groups: dict[tuple[str, str, tuple[str, ...]], _Group] = {}
    unbounded: dict[str, _Group] = {}
    found: list[Candidate] = []
    for view in named:
        assert view.name is not None
        guarded: set[tuple[str, str]] = set()
        for candidate in candidates(view):
            argument = _pointer(candidate)
            if (argument, candidate.kind) in guarded:
                continue
            guarded.add((argument, candidate.kind))
            found.append(candidate)
            options = tuple(line.format(**fill) for line in _GUARD_LINES[candidate.kind])
            why = f"{candidate.noun} ({candidate.reason})"
            if candidate.kind == "sql":
                options, why = _sql_fitted(view, options, why)
            key = (argument, candidate.kind, options)
            groups.setdefault(key, _Group(argument, candidate.kind, options, why))
            groups[key].tools.append(view.name)
        arguments = {argument for argument, _ in guarded}
        for node in unbounded_strings(view):
            if node.argument is not None and node.argument not in arguments:
                arguments.add(node.argument)
                group = unbounded.setdefault(node.argument, _Group(node.argument, "schema", (), ""))
                group.tools.append(view.name)
    lines = [
        f"# A starting strictmcp policy for {server}, written by `strictmcp policy init`.",
        "# Fill in every REPLACE, then: strictmcp policy check THIS-FILE (with the server).",
        'mode = "enforce"  # "audit" reports every finding and refuses nothing (to roll out)',
    ]
    deep_written: set[str] = set()
    for group in groups.values():
        lines += _guard_entries(group, named)
        if group.kind in _DEEP_LINES and group.kind not in deep_written:
            deep_written.add(group.kind)
            lines += _deep_entry(group, named, fill | {"database": _database_line(inferred)})
    if not groups:
        lines += ["", "# No argument of these tools looks like a path, URL, command or SQL."]
    if any(candidate.kind == "path" for candidate in found):
        lines += ["", "# Files read as resources, around the tools' path guards (lint's SMT305)."]
        for method in RESOURCE_READS:
            lines += [
                "[[guard]]",
                f"method = {json.dumps(method)}",
                f"argument = {json.dumps(URI)}",
                'kind = "path"',
                _GUARD_LINES["path"][0].format(**fill),
            ]
    if unbounded:
        lines += _suggested(list(unbounded.values()), named)
    return "\n".join(lines) + "\n", found


def _pointer(candidate: Candidate) -> str:
    """Where the guard goes: on each item of an argument that is only ever an array."""
    return candidate.argument + "/*" if candidate.types == {"array"} else candidate.argument


def _description(view: ToolView) -> str:
    description = view.definition.get("description") if view.is_object else None
    return description[:4096] if isinstance(description, str) else ""


def _dialect_line(inferred: tuple[str, str] | None) -> str:
    if inferred is None:
        return (
            f"{json.dumps(_DEFAULT_DIALECT)}  # REPLACE: your database (sqlite, mysql, ...); "
            "the server names none"
        )
    dialect, where = inferred
    return f"{json.dumps(dialect)}  # named in {where}"


def _database_line(inferred: tuple[str, str] | None) -> str:
    if inferred is not None and inferred[0] in _DEEP_DATABASES:
        return json.dumps(inferred[0])
    return f'{json.dumps(_DEFAULT_DIALECT)}  # REPLACE: or "sqlite"'


def _sql_fitted(view: ToolView, options: tuple[str, ...], why: str) -> tuple[tuple[str, ...], str]:
    """A SQL guard's options for this tool: a writer's lets its writes through, with why."""
    reason = writes(view)
    if reason is None:
        return options, why + "; writes are refused (read_only = false lets them through)"
    writer = f"read_only = false  # it writes ({reason}): read-only would refuse every call"
    return (
        (options[0], writer, *options[1:]),
        why + "; writes pass, stacked statements and denied functions do not (or delete the "
        "entry to leave the tool to the database's own grants)",
    )


def _glob(group: _Group, views: Sequence[ToolView]) -> str | None:
    """A glob matching every tool of ``group`` and reaching the argument of no other tool:
    ``*``, else the tools' common prefix or suffix; None when none does."""
    if len(group.tools) == 1:
        return _literal(group.tools[0])
    members = set(group.tools)
    prefix = _literal(_common(group.tools))
    suffix = _literal(_common([name[::-1] for name in group.tools])[::-1])
    for glob in ("*", f"{prefix}*" if prefix else None, f"*{suffix}" if suffix else None):
        if glob is not None and not any(
            _reaches(glob, group.argument, view) for view in views if view.name not in members
        ):
            return glob
    return None


def _literal(name: str) -> str:
    """A glob matching exactly ``name``: a listed name may hold ``*``, ``?`` or ``[``, which
    would otherwise make the entry match other tools, or not this one."""
    return "".join(f"[{char}]" if char in "*?[" else char for char in name)


def _common(names: Sequence[str]) -> str:
    """The longest prefix of every name that ends at a word boundary (``read_``)."""
    first, last = min(names), max(names)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    cut = max(first.rfind(sep, 0, length) for sep in "_-.") + 1
    return first[:cut]


def _reaches(glob: str, argument: str, view: ToolView) -> bool:
    """Whether an entry on ``glob`` and ``argument`` would check an argument ``view`` has."""
    if view.name is None or not fnmatchcase(view.name, glob) or view.input is None:
        return False
    return any(
        node.argument is not None and pattern_matches(argument, node.argument)
        for node in view.input.nodes
    )


def _heading(group: _Group, glob: str | None) -> str:
    """Which tools an entry is for, as a comment's subject."""
    count = len(group.tools)
    if glob == "*" and count > 1:
        return f"{group.argument} of all {count} tools that have it"
    if glob is not None and count > 1:
        return f"{group.argument} of the {count} tools {glob} matches"
    return f"{', '.join(group.tools)} {group.argument}"


def _guard_entries(group: _Group, views: Sequence[ToolView]) -> list[str]:
    glob = _glob(group, views)
    lines = ["", *_wrapped(f"{_heading(group, glob)}: {group.why}", "# ")]
    for tool in [glob] if glob is not None else [_literal(name) for name in group.tools]:
        lines += [
            "[[guard]]",
            f"tool = {json.dumps(tool)}",
            f"argument = {json.dumps(group.argument)}",
            f"kind = {json.dumps(group.kind)}",
            *group.options,
        ]
    return lines


def _deep_entry(group: _Group, views: Sequence[ToolView], fill: dict[str, str]) -> list[str]:
    tool = _glob(group, views) or _literal(group.tools[0])
    body = [
        "[[deep]]",
        f"tool = {json.dumps(tool)}",
        f"argument = {json.dumps(group.argument)}",
        f"kind = {json.dumps(group.kind)}",
        *(line.format(**fill) for line in _DEEP_LINES[group.kind]),
    ]
    return [
        f"# A deep check of {group.kind} arguments (docs/policy.md), to enable once filled in:",
        *(f"# {line}" for line in body),
    ]


def _suggested(groups: list[_Group], views: Sequence[ToolView]) -> list[str]:
    """The unbounded strings, listed, and a schema guard to copy for each: commented out,
    their shape is the user's to say."""
    first = groups[0]
    entry = [
        "[[guard]]",
        f"tool = {json.dumps(_glob(first, views) or _literal(first.tools[0]))}",
        f"argument = {json.dumps(first.argument)}",
        'kind = "schema"',
        'schema = { maxLength = 256, pattern = "^REPLACE$" }  # what a valid value looks like',
    ]
    named = [_heading(group, _glob(group, views)) for group in groups]
    listed = _wrapped("; ".join(named) + ".", "#   ")
    return [
        "",
        "# Strings with no bound (lint's SMT201); to give one a shape, copy, fill in and",
        "# uncomment this entry for it:",
        *(f"#   {line}" for line in entry),
        "# They are:",
        *listed,
    ]


def _wrapped(text: str, indent: str, width: int = 88) -> list[str]:
    return textwrap.wrap(
        text, width=width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    )

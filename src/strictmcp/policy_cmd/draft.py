"""``strictmcp policy init``: a starting policy for a server's tools.

Every argument lint's SMT3xx rules take for a path, URL, command or SQL
(:func:`strictmcp.lint.families.guards.candidates`, the one detection) gets a ``[[guard]]``
of that kind, with the values only the user can choose marked ``REPLACE``, and the deep
checks that fit the kind written out commented. With a path among them, the resource
requests that open files get path guards too (lint's SMT305). Every other string lint finds
unbounded (SMT201) gets a ``schema`` guard suggested, commented out: only the user knows its
shape. The draft loads as written:
path roots are the directory given (by default the working directory), which the user then
narrows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..lint.context import LintContext, ToolView
from ..lint.families.bounds import unbounded_strings
from ..lint.families.guards import RESOURCE_READS, URI, Candidate, candidates
from ..protocol import Revision

__all__ = ["draft"]

# Each kind's options in the draft, then its deep check's extra lines (commented out).
_GUARD_LINES: dict[str, tuple[str, ...]] = {
    "path": ("roots = [{root}]  # REPLACE: the directories this tool may use",),
    "url": (
        'schemes = ["https"]',
        '# hosts = ["api.example.com"]  # REPLACE: the hosts this tool may fetch',
    ),
    "sql": (
        'dialect = "postgres"  # REPLACE: your database (sqlite, mysql, ...)',
        '# tables = ["REPLACE"]  # the tables a query may use',
        "# allow_functions = []  # functions beyond the database's read-only list",
    ),
    "argv": (
        "# first_is_executable = true",
        '# executables = ["/usr/bin/REPLACE"]  # the programs the command may run',
        "# allow_options = []  # the options it may pass",
        '# allow_subcommands = ["REPLACE"]  # the subcommands it may run (status, log, ...)',
        '# operand_schemes = ["https"]  # the URL schemes an operand may use',
    ),
}
_DEEP_LINES: dict[str, tuple[str, ...]] = {
    "path": (
        "roots = [{root}]",
        "min_free_bytes = 1073741824  # warn below 1 GiB free",
        "max_file_bytes = 104857600  # warn above 100 MiB",
    ),
    "url": ('schemes = ["https"]', "reachable = true  # one HEAD request, through the guard"),
    "sql": (
        'database = "postgres"  # REPLACE: or "sqlite"',
        'dsn_env = "REPLACE_DSN"  # the variable holding the DSN, never the DSN itself',
        "max_rows = 100000",
        "on_calls = true  # also before real calls",
    ),
}


def draft(
    tools: Sequence[Any], revision: Revision, *, server: str, root: str
) -> tuple[str, list[Candidate]]:
    """The commented TOML policy for ``tools`` (listed at ``revision`` by ``server``, as
    reports name it) and the arguments it guards."""
    context = LintContext(revision=revision, policy=None, results={}, tools=tools)
    lines = [
        f"# A starting strictmcp policy for {server}, written by `strictmcp policy init`.",
        "# Fill in every REPLACE, then: strictmcp policy check THIS-FILE (with the server).",
        "# docs/policy.md documents every key.",
        'mode = "enforce"  # "audit" reports every finding and refuses nothing (to roll out)',
    ]
    found: list[Candidate] = []
    seen: set[tuple[str, str, str]] = set()
    for index, tool in enumerate(tools):
        view = ToolView(index, tool, context)
        if view.name is None:
            continue
        for candidate in candidates(view):
            argument = _pointer(candidate)
            if (view.name, argument, candidate.kind) in seen:
                continue
            seen.add((view.name, argument, candidate.kind))
            found.append(candidate)
            lines += _entries(view.name, argument, candidate, json.dumps(root))
        guarded = {argument for tool, argument, _ in seen if tool == view.name}
        for node in unbounded_strings(view):
            if node.argument is not None and node.argument not in guarded:
                guarded.add(node.argument)
                lines += _suggested(view.name, node.argument)
    if not found:
        lines += ["", "# No argument of these tools looks like a path, URL, command or SQL."]
    if any(candidate.kind == "path" for candidate in found):
        lines += ["", "# Files read as resources, around the tools' path guards (lint's SMT305)."]
        for method in RESOURCE_READS:
            lines += [
                "[[guard]]",
                f"method = {json.dumps(method)}",
                f"argument = {json.dumps(URI)}",
                'kind = "path"',
                _GUARD_LINES["path"][0].format(root=json.dumps(root)),
            ]
    return "\n".join(lines) + "\n", found


def _pointer(candidate: Candidate) -> str:
    """Where the guard goes: on each item of an argument that is only ever an array."""
    return candidate.argument + "/*" if candidate.types == {"array"} else candidate.argument


def _suggested(tool: str, argument: str) -> list[str]:
    """A schema guard for an unbounded string, commented out: its shape is the user's to say."""
    entry = [
        "[[guard]]",
        f"tool = {json.dumps(tool)}",
        f"argument = {json.dumps(argument)}",
        'kind = "schema"',
        'schema = { maxLength = 256, pattern = "^REPLACE$" }  # what a valid value looks like',
    ]
    return [
        "",
        f"# {tool} {argument}: a string with no bound (lint's SMT201); to give it one, fill in",
        "# and uncomment:",
        *(f"#   {line}" for line in entry),
    ]


def _entries(tool: str, argument: str, candidate: Candidate, root: str) -> list[str]:
    head = [f"tool = {json.dumps(tool)}", f"argument = {json.dumps(argument)}"]
    kind = f"kind = {json.dumps(candidate.kind)}"
    lines = [
        "",
        f"# {tool} {argument or '(arguments)'}: {candidate.noun} ({candidate.reason})",
        "[[guard]]",
        *head,
        kind,
        *(line.format(root=root) for line in _GUARD_LINES[candidate.kind]),
    ]
    deep = _DEEP_LINES.get(candidate.kind)
    if deep:
        body = ["[[deep]]", *head, kind, *(line.format(root=root) for line in deep)]
        lines += ["# A deep check (docs/policy.md), to enable once filled in:"]
        lines += [f"# {line}" for line in body]
    return lines

"""SMT3xx: arguments that look like paths, URLs, commands or SQL with no guard on them.

A schema proves shape, not safety: a valid string can still be ``../../etc/passwd``. These
rules find the arguments that most need a guard, by name (split into words, so ``filePath``,
``file_path`` and ``source-file`` all count) and by ``format``, and ask the policy given with
``--policy`` whether a guard of that kind covers each one (:meth:`Policy.covers`). Without a
policy, every such argument is reported. ``query`` alone is taken for SQL only when the tool's
name or description mentions a database: most ``query`` arguments are search terms; likewise
``source``, ``destination``, ``src``, ``dest`` and ``target`` are paths only in a tool whose
name is about files (``move_file``).

SMT305 asks the other way round: a tool whose paths the policy confines to roots, while
``resources/read`` or ``resources/subscribe`` has no path guard on its URI, is confined only
until a client reads ``file:///etc/passwd`` as a resource.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ...protocol import Severity
from ..context import ToolView
from ..model import Example, Hit, LintRule
from ..walk import Node, argument_label, declared_types

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SQL_CONTEXT = re.compile(
    r"\b(sql|sqlite|postgres(ql)?|mysql|mariadb|duckdb|database|databases|db)\b", re.IGNORECASE
)
_URL_FORMATS = frozenset({"uri", "uri-reference", "iri", "iri-reference", "uri-template"})
# Types whose values a guard of these kinds can check: strings, lists of strings, or an
# argument that declares no type at all (it accepts strings too).
_GUARDABLE = frozenset({"string", "array"})


def words(name: str) -> list[str]:
    """``filePath`` → ``["file", "path"]``; ``SQL_query`` → ``["sql", "query"]``."""
    return [word.lower() for word in _WORD.findall(name)]


@dataclass(frozen=True)
class _Kind:
    kind: str
    words: frozenset[str]
    noun: str


_PATH = _Kind(
    "path",
    frozenset(
        {
            "path",
            "paths",
            "pathname",
            "file",
            "files",
            "filename",
            "filenames",
            "filepath",
            "dir",
            "dirs",
            "dirname",
            "directory",
            "directories",
            "folder",
            "folders",
        }
    ),
    "a file system path",
)
_URL = _Kind(
    "url",
    frozenset({"url", "urls", "uri", "uris", "href", "endpoint", "webhook"}),
    "a URL",
)
_ARGV = _Kind(
    "argv",
    frozenset({"cmd", "command", "commands", "argv", "cmdline", "shell", "exec"}),
    "a command line",
)
_SQL = _Kind("sql", frozenset({"sql"}), "SQL")
_KINDS = (_PATH, _URL, _ARGV, _SQL)
# Names that are paths in a tool about files only: elsewhere a "source" is a news outlet.
_ENDPOINTS = frozenset({"source", "destination", "src", "dest", "target"})


def _matches(tool: ToolView, node: Node, kind: _Kind) -> str | None:
    """Why ``node`` looks like an argument of ``kind``, or None."""
    if node.argument is None:
        return None
    schema = node.schema
    root = tool.input.schema if tool.input is not None else None
    types = declared_types(schema, root)
    if types and not types & _GUARDABLE:
        return None
    if kind is _URL and isinstance(schema.get("format"), str) and schema["format"] in _URL_FORMATS:
        return f'its format is "{schema["format"]}"'
    if node.name is None:
        return None
    found = set(words(node.name))
    if found & kind.words:
        return "by its name"
    if kind is _SQL and "query" in found and _mentions_database(tool):
        return "by its name, in a tool about a database"
    if kind is _PATH and found & _ENDPOINTS and _about_files(tool):
        return "by its name, in a tool about files"
    return None


def _about_files(tool: ToolView) -> bool:
    """Whether the tool's name is about files (``move_file``, ``copy_dir``): there a
    ``source`` or ``destination`` is a path."""
    return bool(set(words(tool.name or "")) & _PATH.words)


def _mentions_database(tool: ToolView) -> bool:
    text = " ".join(words(tool.name or ""))
    description = tool.definition.get("description")
    if isinstance(description, str):
        text += " " + description[:4096]
    return _SQL_CONTEXT.search(text) is not None


@dataclass(frozen=True)
class Candidate:
    """An argument that looks like it needs a guard of ``kind``, and why (``reason``)."""

    kind: str
    noun: str
    node: Node
    argument: str
    reason: str
    types: frozenset[str]


KINDS: tuple[str, ...] = ("path", "url", "argv", "sql")
"""The guard kinds the SMT3xx rules look for, in rule order."""


def candidates(tool: ToolView, kinds: tuple[str, ...] = KINDS) -> Iterator[Candidate]:
    """Every argument of ``tool`` that looks like a path, URL, command or SQL (the SMT3xx
    rules' detection, and ``strictmcp policy init``'s)."""
    if tool.input is None:
        return
    root = tool.input.schema
    for kind in _KINDS:
        if kind.kind not in kinds:
            continue
        for node in tool.input.nodes:
            reason = _matches(tool, node, kind)
            if reason is not None and node.argument is not None:
                types = declared_types(node.schema, root)
                yield Candidate(kind.kind, kind.noun, node, node.argument, reason, types)


def _unguarded(kind: _Kind) -> Callable[[ToolView], Iterator[Hit]]:
    def check(tool: ToolView) -> Iterator[Hit]:
        policy = tool.context.guards_of_kind(kind.kind)
        for candidate in candidates(tool, (kind.kind,)):
            node, reason = candidate.node, candidate.reason
            # A guard may be written on the argument or on each of its items.
            where = (candidate.argument, candidate.argument + "/*")
            if (
                policy is not None
                and tool.name is not None
                and any(policy.covers(tool.name, pointer) for pointer in where)
            ):
                continue
            missing = "no --policy was given" if policy is None else "the policy has none"
            yield Hit(
                node.pointer,
                f"{argument_label(node)} looks like {kind.noun} ({reason}) and no "
                f"{kind.kind} guard covers it: {missing}",
            )

    return check


RESOURCE_READS = ("resources/read", "resources/subscribe")
"""The resource requests that make a server open a file (unsubscribing opens nothing)."""
URI = "/uri"
"""Where they carry the resource's URI, in their params."""


def _resources_unguarded(tool: ToolView) -> Iterator[Hit]:
    paths = tool.context.guards_of_kind("path")
    if paths is None or tool.name is None:
        return
    if not any(rule.applies_to(tool.name) for rule in paths.rules):
        return
    open_ = [method for method in RESOURCE_READS if not paths.covers_request(method, URI)]
    if open_:
        yield Hit(
            "",
            "a path guard confines this tool to its roots, but no path guard is on the URI "
            f"of {' or '.join(open_)}: a client reads any file as a resource instead",
        )


def _resource_examples() -> tuple[Example, Example]:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    definition = {"name": "read_file", "inputSchema": schema}
    guard = {"tool": "read_file", "argument": "/path", "kind": "path", "roots": ["/tmp"]}
    resources = [
        {"method": method, "argument": URI, "kind": "path", "roots": ["/tmp"]}
        for method in RESOURCE_READS
    ]
    return (
        Example((definition,), policy={"guard": [guard]}),
        Example((definition,), policy={"guard": [guard, *resources]}),
    )


def _examples(tool: str, argument: str, **options: Any) -> tuple[Example, Example]:
    """A tool with one string ``argument``, alone (bad) and with a policy whose guard
    (``options``, its kind among them) covers the argument (good)."""
    schema = {"type": "object", "properties": {argument: {"type": "string"}}}
    definition = {"name": tool, "inputSchema": schema}
    guard = {"tool": tool, "argument": "/" + argument, **options}
    return Example((definition,)), Example((definition,), policy={"guard": [guard]})


def _rule(
    code: str,
    kind: _Kind,
    name: str,
    summary: str,
    why: str,
    examples: tuple[Example, Example],
) -> LintRule:
    return LintRule(
        code=code,
        name=name,
        severity=Severity.WARNING,
        family="guards",
        summary=summary,
        why=why,
        fix=(
            f'Add a [[guard]] with kind = "{kind.kind}" for this tool and argument to the '
            "policy (strictmcp proxy --policy), or rename the argument if the guess is wrong."
        ),
        bad=examples[0],
        good=examples[1],
        check=_unguarded(kind),
        # An unguarded path, URL, command or SQL argument is the attack surface itself.
        default=True,
    )


RULES: tuple[LintRule, ...] = (
    _rule(
        "SMT301",
        _PATH,
        "path-unguarded",
        "Argument named like a file path with no path guard",
        "A path argument is how a model, or text injected into it, reads ~/.ssh/id_rsa or "
        "writes outside the directory the tool was meant for: '..', absolute paths and "
        "symlinks all pass a schema. A path guard confines it to allowed roots.",
        _examples("read_file", "path", kind="path", roots=["/tmp"]),
    ),
    _rule(
        "SMT302",
        _URL,
        "url-unguarded",
        "Argument named like a URL (or with format uri) with no url guard",
        "A URL argument makes the server fetch whatever it is given: the cloud metadata "
        "service, localhost admin ports, internal hosts (server-side request forgery). A "
        "url guard allows schemes and hosts and refuses private addresses.",
        _examples("fetch_page", "url", kind="url"),
    ),
    _rule(
        "SMT303",
        _ARGV,
        "command-unguarded",
        "Argument named like a command with no argv guard",
        "A command argument is remote code execution by design; at the least, arguments "
        "starting with '-' inject options (--output=..., -oProxyCommand=...). An argv guard "
        "restricts executables and options.",
        _examples("run", "command", kind="argv", executables=["git"], first_is_executable=True),
    ),
    _rule(
        "SMT304",
        _SQL,
        "sql-unguarded",
        "Argument named like SQL with no sql guard",
        "A SQL argument runs whatever statement the model writes: DROP TABLE, writes to a "
        "read-only tool's database, or functions that read files. A sql guard allows one "
        "read-only statement and denies dangerous functions.",
        _examples("query_db", "sql", kind="sql", read_only=True),
    ),
    LintRule(
        code="SMT305",
        name="resources-unguarded",
        severity=Severity.WARNING,
        family="guards",
        summary="A path guard confines the tool, but resources/read has no path guard",
        why="A server that exposes files as tools usually exposes them as resources too, and "
        "resources/read (or resources/subscribe) of file:///etc/passwd goes straight to it: "
        "a path guard on the tools' arguments confines nothing while the resource requests "
        "are unguarded.",
        fix='Add a [[guard]] with method = "resources/read", argument = "/uri", kind = "path" '
        'and the same roots, and another with method = "resources/subscribe".',
        bad=_resource_examples()[0],
        good=_resource_examples()[1],
        check=_resources_unguarded,
        default=True,
    ),
)

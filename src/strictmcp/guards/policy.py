"""Policies: which guard checks which argument of which tool, and whether findings block.

A policy attaches guards to arguments by a tool name glob and a JSON Pointer into the
arguments, where a ``*`` token stands for any array item or object key, so it protects servers
whose code we do not control::

    mode = "enforce"                 # or "audit": log and allow
    [[guard]]
    tool = "read_*"
    argument = "/path"
    kind = "path"
    roots = ["/srv/data"]

Every key of a ``[[guard]]`` entry besides ``tool``, ``argument`` and ``kind`` configures the
guard itself (lists become tuples). This module owns the file's whole format: every table and
every key is declared here (``_TOP_KEYS``, ``_RULE_KEYS``, ``_OPTIONS``), and a policy with an
unknown table or key, or a value of the wrong type, is refused when it is loaded, never at the
first call. ``docs/policy.md`` documents the format; sections to come (identity, output
integrity, deep validation) are declared here too, and name secrets by environment variable or
file (``..._env``, ``..._file``), never as literal values.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from ..protocol import Severity, Violation
from ..protocol.tool_calls import ARGUMENTS
from ..schema import from_fragment, to_pointer
from .base import Guard

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

Mode = Literal["enforce", "audit"]
_TOP_KEYS = ("guard", "listing", "mode")
_RULE_KEYS = ("tool", "argument", "kind")


@dataclass(frozen=True)
class _Option:
    """One option of a guard kind: a TOML ``type`` (an array of it when ``array``), the values
    allowed when only some are, and whether the entry must give it."""

    type: type[bool | int | str]
    array: bool = False
    choices: tuple[str, ...] = ()
    required: bool = False

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not fit, or None."""
        single, plural = _TYPE_NAMES[self.type]
        expected = f"an array of {plural}" if self.array else single
        if self.array and not isinstance(value, list):
            return f"must be {expected}"
        for item in value if self.array else [value]:
            # bool is an int in Python, never in TOML: `max_length = true` is refused.
            if not isinstance(item, self.type) or (self.type is int and isinstance(item, bool)):
                return f"must be {expected}"
            if self.choices and item not in self.choices:
                return f"must be one of: {', '.join(self.choices)}"
        return None


_TYPE_NAMES = {
    bool: ("a boolean", "booleans"),
    int: ("an integer", "integers"),
    str: ("a string", "strings"),
}
_FLAG, _INT, _STR, _STRS = _Option(bool), _Option(int), _Option(str), _Option(str, array=True)
#: The ``[listing]`` table: the lint rules (codes or prefixes) run on every tool listing; the
#: codes are checked by whoever runs them, lint being a higher layer than the policy.
_LISTING_KEYS = {"rules": _STRS}
#: Each guard kind's options, as a policy may set them: the guards' own Python-only
#: parameters (UrlGuard's ``resolver``) are not reachable from a file.
_OPTIONS: dict[str, dict[str, _Option]] = {
    "argv": {
        "allow_options": _STRS,
        "executables": _STRS,
        "first_is_executable": _FLAG,
        "match_basename": _FLAG,
    },
    "path": {
        "roots": _Option(str, array=True, required=True),
        "must_exist": _FLAG,
        "entry": _Option(str, choices=("any", "file", "dir")),
        "readable": _FLAG,
        "writable": _FLAG,
        "allow_relative": _FLAG,
        "allow_home": _FLAG,
        "max_length": _INT,
        "max_components": _INT,
    },
    "sql": {
        "dialect": _STR,
        "read_only": _FLAG,
        "single_statement": _FLAG,
        "denied_functions": _STRS,
        "tables": _STRS,
        "max_length": _INT,
    },
    "text": {
        "min_length": _INT,
        "max_length": _INT,
        "allow_newlines": _FLAG,
        "forbid_control": _FLAG,
        "forbid_invisible": _FLAG,
        "forbid_bidi": _FLAG,
    },
    "url": {
        "schemes": _STRS,
        "hosts": _STRS,
        "resolve": _FLAG,
        "allow_private": _FLAG,
        "allow_ports": _Option(int, array=True),
        "allow_userinfo": _FLAG,
        "max_length": _INT,
    },
}


class PolicyError(ValueError):
    """A policy that cannot be loaded; the message says which entry and which key."""


@dataclass(frozen=True)
class GuardRule:
    """One guard on the arguments of the tools whose names match ``tool``."""

    tool: str
    argument: str
    guard: Guard

    def applies_to(self, tool: str) -> bool:
        """Whether this rule's glob matches a tool name (case-sensitive, like tool names)."""
        return fnmatchcase(tool, self.tool)

    @cached_property
    def tokens(self) -> tuple[str, ...] | None:
        """The argument pointer's tokens, parsed once: the policy runs on every call."""
        return from_fragment("#" + self.argument) if self.argument else ()


@dataclass(frozen=True)
class Policy:
    """Guards on tool arguments, and what their findings do.

    In ``enforce`` mode a call with an error finding is refused; in ``audit`` mode every
    finding is reported and the call goes ahead (shadow mode, for rolling a policy out).
    ``listing_rules`` are the ``[listing]`` table's lint selectors (None: the default).
    """

    rules: tuple[GuardRule, ...] = ()
    mode: Mode = "enforce"
    listing_rules: tuple[str, ...] | None = None

    def check(self, tool: str, arguments: Any, *, pointer: str = ARGUMENTS) -> list[Violation]:
        """Every finding of every guard that applies to this call, pointing into the message.

        Arguments a pattern does not reach (absent, or not a container where one is needed)
        are not checked: whether they must exist is the schema's business.
        """
        violations: list[Violation] = []
        for rule in self.rules:
            if not rule.applies_to(tool):
                continue
            for where, value in _select(arguments, rule.tokens):
                violations += [finding.at(pointer + where) for finding in rule.guard.check(value)]
        return violations

    def blocks(self, violations: list[Violation]) -> bool:
        """Whether these findings refuse the call under this policy's mode."""
        return self.mode == "enforce" and any(v.severity is Severity.ERROR for v in violations)

    def covers(self, tool: str, argument: str) -> bool:
        """Whether some rule guards this argument pointer of this tool (for lint)."""
        return any(
            rule.applies_to(tool) and _pattern_matches(rule.argument, argument)
            for rule in self.rules
        )

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """Read a policy from a TOML file."""
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as error:
            raise PolicyError(f"cannot read the policy: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise PolicyError(f"the policy is not valid TOML: {error}") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        """Build a policy from its TOML form (a mapping with ``mode`` and ``guard`` entries)."""
        unknown = set(data) - set(_TOP_KEYS)
        if unknown:
            raise PolicyError(
                f"unknown top-level keys: {', '.join(sorted(unknown))} "
                f"(known: {', '.join(_TOP_KEYS)})"
            )
        mode = data.get("mode", "enforce")
        if mode not in ("enforce", "audit"):
            raise PolicyError('mode must be "enforce" or "audit"')
        entries = data.get("guard", [])
        if not isinstance(entries, list):
            raise PolicyError("guard must be a list of [[guard]] tables")
        rules = tuple(_rule(index, entry) for index, entry in enumerate(entries, start=1))
        return cls(rules=rules, mode=mode, listing_rules=_listing(data.get("listing")))


def _listing(table: Any) -> tuple[str, ...] | None:
    """The ``[listing]`` table's rule selectors, or None when it does not set them."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise PolicyError("listing must be a table ([listing])")
    unknown = set(table) - set(_LISTING_KEYS)
    if unknown:
        raise PolicyError(
            f"[listing]: unknown keys: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(_LISTING_KEYS)})"
        )
    if "rules" not in table:
        return None
    why = _LISTING_KEYS["rules"].problem(table["rules"])
    if why is not None:
        raise PolicyError(f"[listing]: rules {why}")
    return tuple(table["rules"])


def _rule(index: int, entry: Any) -> GuardRule:
    where = f"[[guard]] #{index}"
    if not isinstance(entry, Mapping):
        raise PolicyError(f"{where} must be a table")
    missing = [key for key in _RULE_KEYS if not isinstance(entry.get(key), str)]
    if missing:
        raise PolicyError(f"{where} needs string values for: {', '.join(missing)}")
    argument = entry["argument"]
    if argument and from_fragment("#" + argument) is None:
        raise PolicyError(f"{where}: argument must be a JSON Pointer such as /path or /files/*")
    kind = entry["kind"]
    if kind not in _OPTIONS:
        raise PolicyError(f"{where}: unknown kind {kind!r} (known: {', '.join(_OPTIONS)})")
    where = f"{where} ({kind})"
    known = _OPTIONS[kind]
    unknown = sorted(key for key in entry if key not in _RULE_KEYS and key not in known)
    if unknown:
        raise PolicyError(
            f"{where}: unknown keys: {', '.join(unknown)} "
            f"(known: {', '.join((*_RULE_KEYS, *known))})"
        )
    missing = [name for name, option in known.items() if option.required and name not in entry]
    if missing:
        raise PolicyError(f"{where}: missing options: {', '.join(missing)}")
    for name, option in known.items():
        problem = option.problem(entry[name]) if name in entry else None
        if problem is not None:
            raise PolicyError(f"{where}: {name} {problem}")
    options = {name: _frozen(entry[name]) for name in known if name in entry}
    try:
        guard = guard_kinds()[kind](**options)
    except ValueError as error:
        raise PolicyError(f"{where}: {error}") from None
    return GuardRule(tool=entry["tool"], argument=argument, guard=guard)


def _frozen(value: Any) -> Any:
    # Guards are frozen dataclasses: TOML arrays become tuples so the guard stays hashable.
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


def guard_kinds() -> dict[str, Callable[..., Guard]]:
    """The guard kinds a policy can name, by ``kind``."""
    from .argv import ArgvGuard  # noqa: PLC0415 - import cycles: kinds import base
    from .path import PathGuard  # noqa: PLC0415
    from .sql import SqlGuard  # noqa: PLC0415
    from .text import TextGuard  # noqa: PLC0415
    from .url import UrlGuard  # noqa: PLC0415

    return {
        "argv": ArgvGuard,
        "path": PathGuard,
        "sql": SqlGuard,
        "text": TextGuard,
        "url": UrlGuard,
    }


def select(arguments: Any, pattern: str) -> Iterator[tuple[str, Any]]:
    """Each value a pattern reaches, with its exact JSON Pointer; ``*`` is any item or key.

    ``""`` is the arguments object itself. Iterative over an explicit frontier: the
    arguments were bounded by the schema engine, but a pattern may fan out over every item.
    """
    yield from _select(arguments, from_fragment("#" + pattern) if pattern else ())


def _select(arguments: Any, tokens: tuple[str, ...] | None) -> Iterator[tuple[str, Any]]:
    if tokens is None:
        return
    frontier: list[tuple[tuple[str | int, ...], Any]] = [((), arguments)]
    for token in tokens:
        step: list[tuple[tuple[str | int, ...], Any]] = []
        for path, value in frontier:
            step += list(_children(path, value, token))
        frontier = step
    for path, value in frontier:
        yield to_pointer(path), value


def _children(
    path: tuple[str | int, ...], value: Any, token: str
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(value, Mapping):
        if token == "*":
            yield from (((*path, key), item) for key, item in value.items())
        elif token in value:
            yield (*path, token), value[token]
    elif isinstance(value, list):
        if token == "*":
            yield from (((*path, index), item) for index, item in enumerate(value))
        elif token.isdigit() and int(token) < len(value):
            yield (*path, int(token)), value[int(token)]


def _pattern_matches(pattern: str, pointer: str) -> bool:
    pattern_tokens = from_fragment("#" + pattern) if pattern else ()
    pointer_tokens = from_fragment("#" + pointer) if pointer else ()
    if pattern_tokens is None or pointer_tokens is None:
        return False
    return len(pattern_tokens) == len(pointer_tokens) and all(
        p in ("*", q) for p, q in zip(pattern_tokens, pointer_tokens, strict=True)
    )

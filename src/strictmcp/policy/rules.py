"""The rules a policy's entries become: guards and deep checks on arguments
(:class:`GuardRule`, :class:`DeepRule`), what is done to results (:class:`ResultRule`) and
to tools (:class:`ToolRule`), and how a rule's argument pattern reaches into a call."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from ..guards.base import Guard, GuardFinding
from ..guards.claims import ClaimGuard
from ..schema import from_fragment, to_pointer
from .callers import Identity
from .names import tool_matches

TOOLS_CALL = "tools/call"
"""The method a ``[[guard]]`` or ``[[result]]`` entry is about unless it says ``method``."""
GUARD_METHODS = (
    TOOLS_CALL,
    "completion/complete",
    "prompts/get",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
)
"""The requests a ``[[guard]]`` may name as its ``method``: its ``argument`` reads into the
call's arguments for ``tools/call``, into the request's ``params`` for the others."""
RESULT_METHODS = (
    TOOLS_CALL,
    "completion/complete",
    "initialize",
    "notifications/message",
    "notifications/progress",
    "notifications/tasks/status",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "server/discover",
    "tasks/cancel",
    "tasks/get",
    "tasks/list",
)
"""What a ``[[result]]`` entry may name as its ``method``: the answers to these requests
(their errors too) and these notifications."""
DEFAULT_DEEP_TIMEOUT = 5.0
"""Seconds a policy's deep check may take unless its entry says ``timeout``."""
Hygiene = Literal["flag", "strip", "off"]


@dataclass(frozen=True)
class GuardRule:
    """One guard on the arguments of the tools whose names match ``tool``."""

    tool: str
    argument: str
    guard: Guard
    #: The request whose params ``argument`` reads (for ``tools/call``, its arguments).
    method: str = TOOLS_CALL

    def applies_to(self, tool: str) -> bool:
        """Whether this rule is on ``tools/call`` and its glob matches a tool name
        (case-sensitive, like tool names)."""
        return self.method == TOOLS_CALL and tool_matches(tool, self.tool)

    @cached_property
    def tokens(self) -> tuple[str, ...] | None:
        """The argument pointer's tokens, parsed once: the policy runs on every call."""
        return from_fragment("#" + self.argument) if self.argument else ()


@dataclass(frozen=True)
class DeepRule(GuardRule):
    """A built-in deep check on the arguments of the tools whose names match ``tool``: run by
    the ``validate`` tool's dry run, and before real calls too when ``on_calls``; abandoned
    and reported after ``timeout`` seconds."""

    on_calls: bool = False
    timeout: float = DEFAULT_DEEP_TIMEOUT


@dataclass(frozen=True)
class ResultRule:
    """What is done to the results of the tools whose names match ``tool`` (a glob), or,
    with ``method``, to what the server sends for that method (its results and errors, or
    the notification itself; ``hygiene`` and ``redact`` only).

    ``hygiene``: ``flag`` (the default) records hidden characters and terminal sequences and
    annotates the result's ``_meta``, changing no content; ``strip`` removes them; ``off``
    looks at nothing. ``label`` marks the result as untrusted content in ``_meta``;
    ``delimiter`` (a template holding ``{text}``) wraps each text item. ``max_bytes`` and
    ``max_items`` bound a result's size and its number of content items (None: unbounded).
    ``redact`` replaces secrets (private keys, cloud access keys, bearer tokens).
    """

    tool: str = "*"
    hygiene: Hygiene = "flag"
    label: bool = False
    delimiter: str | None = None
    max_bytes: int | None = None
    max_items: int | None = None
    redact: bool = False
    method: str = TOOLS_CALL

    def applies_to(self, tool: str) -> bool:
        """Whether the glob matches a tool name (case-sensitive)."""
        return tool_matches(tool, self.tool)


@dataclass(frozen=True)
class ToolRule:
    """Opt-in rewrites for the tools whose names match ``tool`` (a glob), both off by default.

    ``json_strings``: an argument the ``inputSchema`` wants as an object or an array, sent as
    a string holding its JSON (some models do), is decoded before validation; the decoded
    value is what is checked and forwarded. ``inline_refs``: local ``$ref`` in the tool's
    listed schemas are inlined, for clients that drop ``$defs``.
    """

    tool: str = "*"
    json_strings: bool = False
    inline_refs: bool = False

    def applies_to(self, tool: str) -> bool:
        """Whether the glob matches a tool name (case-sensitive)."""
        return tool_matches(tool, self.tool)


DEFAULT_TOOL_RULE = ToolRule()
"""What applies to a tool no ``[[tool]]`` entry matches: no rewrite."""

DEFAULT_RESULT_RULE = ResultRule()
"""What applies to a tool no ``[[result]]`` entry matches: hygiene flags, nothing more."""


def guard_for(guard: Guard, identity: Identity | None) -> Guard | GuardFinding:
    """The guard that checks a call by ``identity``: ``guard`` itself, or, for settings that
    name claims, the guard built for its claims (or the finding refusing the call)."""
    if not isinstance(guard, ClaimGuard):
        return guard
    return guard.bind(identity.claims if identity is not None else {})


def select(arguments: Any, pattern: str) -> Iterator[tuple[str, Any]]:
    """Each value a pattern reaches, with its exact JSON Pointer; ``*`` is any item or key.

    ``""`` is the arguments object itself. Iterative over an explicit frontier: the
    arguments were bounded by the schema engine, but a pattern may fan out over every item.
    """
    yield from values_at(arguments, from_fragment("#" + pattern) if pattern else ())


def values_at(arguments: Any, tokens: tuple[str, ...] | None) -> Iterator[tuple[str, Any]]:
    """Each value a parsed pattern (:attr:`GuardRule.tokens`) reaches, with its JSON Pointer;
    nothing for a pattern that is not a pointer."""
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


def pattern_matches(pattern: str, pointer: str) -> bool:
    """Whether ``pattern`` (``*`` for any token) names exactly the pointer ``pointer``."""
    pattern_tokens = from_fragment("#" + pattern) if pattern else ()
    pointer_tokens = from_fragment("#" + pointer) if pointer else ()
    if pattern_tokens is None or pointer_tokens is None:
        return False
    return len(pattern_tokens) == len(pointer_tokens) and all(
        p in ("*", q) for p, q in zip(pattern_tokens, pointer_tokens, strict=True)
    )

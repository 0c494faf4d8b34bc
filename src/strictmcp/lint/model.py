"""What lint is made of: rules with stable codes, the hits their checks return, findings."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..protocol import Severity

if TYPE_CHECKING:
    from .context import ToolView


def printable(text: str) -> str:
    """``text`` with each character that is not printable (controls, line breaks,
    bidirectional and other format characters, lone surrogates) written as its JSON escape
    (``\\u202e``). Pointers and engine messages carry names and values from the server:
    printed raw they could recolour a terminal, fake lines or reorder what a reader sees."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else json.dumps(char)[1:-1] for char in text)


@dataclass(frozen=True)
class Hit:
    """What a rule's check reports: where in the tool definition, and what.

    ``pointer`` is a JSON Pointer into the tool definition (``/inputSchema/properties/path``);
    ``severity`` overrides the rule's default severity for this hit only (a name that SEP-986
    forbids is an error from 2025-11-25 and a warning before).
    """

    pointer: str
    message: str
    severity: Severity | None = None


Check = Callable[["ToolView"], Iterable[Hit]]

#: Width that :func:`render_json` keeps a JSON value within when it can.
JSON_WIDTH = 88


def render_json(value: Any, width: int = JSON_WIDTH) -> str:
    """``value`` as indented JSON that keeps each object or array on one line when it fits
    in ``width`` columns, ASCII only (hidden characters show as their escapes)."""
    return _render(value, 0, 0, width)


def _render(value: Any, indent: int, used: int, width: int) -> str:
    """``value`` at ``indent`` spaces, its first line starting after ``used`` columns."""
    flat = json.dumps(value, ensure_ascii=True)
    if indent + used + len(flat) <= width or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = " " * (indent + 2)
    if isinstance(value, dict):
        lines = []
        for key, member in value.items():
            label = json.dumps(key, ensure_ascii=True) + ": "
            lines.append(inner + label + _render(member, indent + 2, len(label), width))
        opening, closing = "{", "}"
    else:
        lines = [inner + _render(item, indent + 2, 0, width) for item in value]
        opening, closing = "[", "]"
    return opening + "\n" + ",\n".join(lines) + "\n" + " " * indent + closing


@dataclass(frozen=True)
class Example:
    """What shows a rule at work: ``tools`` as a server lists them (one, unless the rule is
    about the listing), with what some rules judge besides the definitions: ``results``, the
    ``tools/call`` results observed per tool name (the output rules), and ``policy``, the
    guard policy given with ``--policy``, in its JSON form (the guard rules).

    :meth:`document` is what the docs and ``--explain`` show.
    """

    tools: tuple[Mapping[str, Any], ...]
    results: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    policy: Mapping[str, Any] | None = None

    def document(self) -> Any:
        """The tool alone when that is all there is; else an object with ``tools`` (a
        ``tools/list`` result) and whichever of ``results`` and ``policy`` are given."""
        if len(self.tools) == 1 and not self.results and self.policy is None:
            return self.tools[0]
        out: dict[str, Any] = {"tools": list(self.tools)}
        if self.results:
            out["results"] = {name: list(seen) for name, seen in self.results.items()}
        if self.policy is not None:
            out["policy"] = self.policy
        return out


@dataclass(frozen=True)
class LintRule:
    """One lint rule: a stable ``code`` (``SMT201``), a kebab-case ``name``, a default
    ``severity``, its ``family``, a one-line ``summary``, why it matters, how to fix it, and the
    check that finds it in one tool (with the whole listing at hand through the view).

    ``bad`` is an example the rule reports and ``good`` the same one fixed as ``fix`` says
    (a test lints both, so they cannot go stale).

    ``default`` says whether ``strictmcp lint`` runs the rule when no ``--select`` is given:
    true for what a user must act on (correctness and security), false for advice that is
    selected by code or prefix, or with ``--select ALL``.
    """

    code: str
    name: str
    severity: Severity
    family: str
    summary: str
    why: str
    fix: str
    check: Check
    bad: Example = field(compare=False)
    good: Example = field(compare=False)
    default: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (no check function)."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "family": self.family,
            "summary": self.summary,
            "why": self.why,
            "fix": self.fix,
            "bad": self.bad.document(),
            "good": self.good.document(),
            "default": self.default,
        }


@dataclass(frozen=True)
class LintFinding:
    """One hit of one rule on one tool.

    ``tool`` is the tool's name (None when it has no string name), ``tool_index`` its place
    in the listing, ``pointer`` a JSON Pointer into that tool's definition. Messages quote
    names only escaped and shortened, and never quote descriptions or other free text.
    """

    code: str
    name: str
    severity: Severity
    tool: str | None
    tool_index: int
    pointer: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The finding's JSON form (see :mod:`strictmcp.lint.report`)."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "tool": self.tool,
            "toolIndex": self.tool_index,
            "pointer": self.pointer,
            "message": self.message,
        }

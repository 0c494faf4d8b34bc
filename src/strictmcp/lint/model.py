"""What lint is made of: rules with stable codes, the hits their checks return, findings."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class LintRule:
    """One lint rule: a stable ``code`` (``SMT201``), a kebab-case ``name``, a default
    ``severity``, its ``family``, a one-line ``summary``, why it matters, how to fix it, and the
    check that finds it in one tool (with the whole listing at hand through the view).

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
    default: bool = False

    def to_dict(self) -> dict[str, str | bool]:
        """A JSON-ready description (no check function)."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "family": self.family,
            "summary": self.summary,
            "why": self.why,
            "fix": self.fix,
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

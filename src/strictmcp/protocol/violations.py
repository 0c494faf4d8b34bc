"""What every protocol check returns: violations with a rule, a place and a value-free message."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from ..schema import Issue
from .rules import Rule


class Severity(str, Enum):
    """How much a finding matters, for every layer: ``error`` > ``warning`` > ``info``.

    In a protocol check, errors make a message invalid and warnings are reported and let it
    through; protocol checks never say ``info``, which lint's advisory rules use.
    """

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """2 for errors, 1 for warnings, 0 for info: compare with ``>=`` for a threshold."""
        return _RANK[self]

    @property
    def sarif(self) -> str:
        """The SARIF ``level`` for this severity (SARIF calls info ``note``)."""
        return "note" if self is Severity.INFO else self.value


_RANK = {Severity.ERROR: 2, Severity.WARNING: 1, Severity.INFO: 0}


@dataclass(frozen=True)
class Violation:
    """One broken rule in one message.

    ``rule`` is a :class:`Rule`, or the code enum of a higher layer (guards bring their own).
    ``pointer`` is a JSON Pointer into the message (``/params/arguments/path``); ``issues``
    carries the schema engine's issues when the rule is a schema check. Messages quote names
    and schema facts, never values from the message.
    """

    rule: Rule | Enum
    message: str
    pointer: str = ""
    severity: Severity = Severity.ERROR
    issues: tuple[Issue, ...] = ()

    @property
    def code(self) -> str:
        """The rule's stable code."""
        return str(self.rule.value)

    def __str__(self) -> str:
        return f"{self.pointer or '(message)'}: {self.message} [{self.code}]"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "pointer": self.pointer,
        }
        if self.issues:
            out["issues"] = [issue.to_dict() for issue in self.issues]
        return out


def errors(violations: list[Violation] | tuple[Violation, ...]) -> list[Violation]:
    """Only the violations that make a message invalid."""
    return [v for v in violations if v.severity is Severity.ERROR]


def under(prefix: str, violations: Iterable[Violation]) -> list[Violation]:
    """Violations pointing into a part of a message, re-pointed into the whole message."""
    return [replace(v, pointer=prefix + v.pointer) for v in violations]

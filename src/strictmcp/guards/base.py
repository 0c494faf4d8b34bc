"""What every guard is: a side-effect-free check of what one argument value means."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..protocol import Severity, Violation
from ..schema import IssueCode
from .codes import GuardCode


@dataclass(frozen=True)
class GuardFinding:
    """One thing a guard found in one value: an error (reject) or a warning (allow, but say so).

    ``code`` is a guard's own, or the schema engine's for a schema guard (``pattern-mismatch``).
    ``message`` never quotes the value (it may be a secret, or a path the caller must not
    learn about); ``where`` is a JSON Pointer *inside* the value when the guard looked into
    it (an argv item), else ``""``.
    """

    code: GuardCode | IssueCode
    message: str
    severity: Severity = Severity.ERROR
    where: str = ""

    def at(self, pointer: str) -> Violation:
        """This finding as a protocol :class:`Violation` at ``pointer`` in the message."""
        return Violation(self.code, self.message, pointer + self.where, self.severity)


class Guard(Protocol):
    """Checks one argument value. Must not write, create, connect or run anything.

    ``check`` gets the value exactly as the call carries it (a guard that expects a string
    reports :attr:`GuardCode.NOT_A_STRING` for anything else) and returns every finding, or
    an empty list. It must be safe to call from any thread and must not raise on bad input.
    """

    @property
    def kind(self) -> str:
        """The name policies use for this kind of guard (``path``, ``url``, ...)."""

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about ``value``."""


def not_a_string(value: Any, kind: str) -> list[GuardFinding]:
    """The finding for a guard that checks strings and was given something else."""
    return [
        GuardFinding(
            GuardCode.NOT_A_STRING,
            f"a {kind} guard checks strings; this argument is a {type(value).__name__}",
        )
    ]

"""What validation returns: a verdict and structured, value-free issues."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .codes import IssueCode


class _Hidden:
    """Marks an issue whose instance value was not asked for."""

    def __repr__(self) -> str:
        return "<hidden>"


HIDDEN: Any = _Hidden()


@dataclass(frozen=True)
class Issue:
    """One reason an instance is invalid.

    - ``code``: stable, for programs; ``message``: for people, never quoting the instance.
    - ``instance_path``: JSON Pointer to the failing value (``""`` is the whole instance).
    - ``keyword``: the schema keyword that failed (``""`` for the engine's own bounds).
    - ``schema_path``: JSON Pointer to that keyword where it is written in the schema.
    - ``evaluation_path``: the path validation took to reach it, through any ``$ref``.
    - ``value``: the failing value, only when the caller asked for values; else ``HIDDEN``.
    """

    code: IssueCode
    message: str
    instance_path: str = ""
    keyword: str = ""
    schema_path: str = ""
    evaluation_path: str = ""
    value: Any = field(default=HIDDEN, compare=False)

    def __str__(self) -> str:
        return f"{self.instance_path or '(root)'}: {self.message} [{self.code.value}]"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, its keys in MCP's camelCase (``instancePath``, ``schemaPath``,
        ``evaluationPath``); ``value`` appears only when it was asked for."""
        out: dict[str, Any] = {
            "code": self.code.value,
            "message": self.message,
            "instancePath": self.instance_path,
            "keyword": self.keyword,
            "schemaPath": self.schema_path,
            "evaluationPath": self.evaluation_path,
        }
        if self.value is not HIDDEN:
            out["value"] = self.value
        return out


@dataclass(frozen=True)
class ValidationResult:
    """The verdict on one instance.

    ``truncated`` says that more issues existed than ``Limits.max_issues`` allowed to report.
    """

    valid: bool
    issues: tuple[Issue, ...] = ()
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "valid": self.valid,
            "issues": [issue.to_dict() for issue in self.issues],
            "truncated": self.truncated,
        }


VALID = ValidationResult(valid=True)

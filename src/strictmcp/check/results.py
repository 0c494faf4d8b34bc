"""What a check found: per case, per tool, and for the whole server, in a stable JSON shape."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from .cases import KINDS, Case
from .lint_bridge import LintOutcome

Status = Literal["pass", "fail", "warn", "skip"]
_RANK: dict[str, int] = {"skip": 0, "pass": 1, "warn": 2, "fail": 3}
FORMAT_VERSION = 1


def worst(statuses: Iterable[Status]) -> Status:
    """The verdict of several statuses: fail over warn over pass; ``skip`` when none ran."""
    return max(statuses, key=lambda status: _RANK[status], default="skip")


@dataclass(frozen=True)
class CaseResult:
    """The verdict on one case: ``messages`` say why it is not a plain pass; ``caught_by``
    the codes the target refused a planted fault with, at its argument."""

    id: int
    case: Case
    local_valid: bool
    status: Status
    messages: tuple[str, ...] = ()
    caught_by: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "id": self.id,
            "kind": self.case.kind,
            "pointer": self.case.pointer,
            "label": self.case.label,
            "expect": self.case.expect,
            "arguments": self.case.arguments,
            "localValid": self.local_valid,
            "status": self.status,
            "messages": list(self.messages),
            **(
                {
                    "fault": {"code": fault.code, "warning": fault.warning},
                    "caughtBy": list(self.caught_by),
                }
                if (fault := self.case.fault) is not None
                else {}
            ),
        }


@dataclass
class ToolReport:
    """Every case run against one tool, and notes on what could not be done."""

    name: str
    cases: list[CaseResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Cases by outcome."""
        statuses = [result.status for result in self.cases]
        return {
            "cases": len(statuses),
            "passed": statuses.count("pass"),
            "failed": statuses.count("fail"),
            "warnings": statuses.count("warn"),
            "skipped": statuses.count("skip"),
        }

    @property
    def verdict(self) -> Status:
        """The worst status of its cases."""
        return worst([result.status for result in self.cases])

    def by_kind(self) -> dict[str, Status]:
        """The verdict for each kind of case that was made for this tool."""
        return {
            kind: worst([r.status for r in self.cases if r.case.kind == kind])
            for kind in KINDS
            if any(r.case.kind == kind for r in self.cases)
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "name": self.name,
            "verdict": self.verdict,
            "counts": self.counts(),
            "kinds": self.by_kind(),
            "notes": list(self.notes),
            "cases": [result.to_dict() for result in self.cases],
        }


@dataclass
class CheckReport:
    """The whole run. ``target`` is the server's command line or URL, already redacted."""

    target: list[str]
    via_url: bool
    mode: Literal["validate", "call"]
    seed: int
    per_kind: int
    revision: str = ""
    server: dict[str, Any] = field(default_factory=dict)
    validate_tool: str | None = None
    lint: LintOutcome = field(default_factory=LintOutcome)
    tools: list[ToolReport] = field(default_factory=list)
    selected: tuple[str, ...] = ()
    restarts: int = 0
    aborted: str | None = None

    @property
    def verdict(self) -> Status:
        """fail, warn, pass, or skip (nothing was checked against the server)."""
        verdict = worst([tool.verdict for tool in self.tools])
        return "fail" if self.aborted else verdict

    def totals(self) -> dict[str, int]:
        """Case counts over every tool."""
        totals = {"tools": len(self.tools)}
        for tool in self.tools:
            for key, value in tool.counts().items():
                totals[key] = totals.get(key, 0) + value
        return totals

    def reproducer(self, tool: str) -> str:
        """The command line that runs the same cases again on ``tool`` alone."""
        argv = ["strictmcp", "check", "--seed", str(self.seed), "--cases", str(self.per_kind)]
        if self.mode == "call":
            argv.append("--call")
        argv += ["--tool", tool]
        argv += ["--url", *self.target] if self.via_url else ["--", *self.target]
        return shlex.join(argv)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of ``--format json``."""
        return {
            "format": FORMAT_VERSION,
            "target": {"url" if self.via_url else "command": self.target},
            "server": self.server,
            "revision": self.revision,
            "mode": self.mode,
            "seed": self.seed,
            "casesPerKind": self.per_kind,
            "selectedTools": list(self.selected),
            "validateTool": self.validate_tool,
            "lint": {
                "ran": self.lint.ran,
                "note": self.lint.note,
                "rules": self.lint.rules,
                "findings": self.lint.findings,
            },
            "verdict": self.verdict,
            "summary": self.totals(),
            "restarts": self.restarts,
            "aborted": self.aborted,
            "tools": [tool.to_dict() for tool in self.tools],
        }

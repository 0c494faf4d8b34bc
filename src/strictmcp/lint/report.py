"""A lint run's result, as JSON and as text grouped by tool.

The JSON form (``--format json``) is stable; new keys may be added, none removed::

    {
      "version": 1,
      "source": {"kind": "file" | "command" | "url", "name": "tools.json"},
      "revision": "2026-07-28",
      "tools": 3,                                   # tools linted
      "rules": ["SMT001", ...],                     # codes of the rules that ran
      "summary": {"error": 1, "warning": 4, "info": 2},
      "byRule": {"SMT201": 3, ...},                # findings per rule that found any
      "findings": [
        {
          "code": "SMT201", "name": "string-unbounded", "severity": "warning",
          "tool": "read_file",                      # null when the tool has no string name
          "toolIndex": 0,
          "pointer": "/inputSchema/properties/path",  # JSON Pointer into that tool
          "line": 12,                               # only for file input, when known
          "message": "..."
        }
      ]
    }
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

import click

from ..protocol import Revision, Severity
from ..schema import quote_name
from .model import LintFinding, LintRule, printable

JSON_VERSION = 1
LineOf = Callable[[LintFinding], int | None]
_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


@dataclass(frozen=True)
class LintReport:
    """Every finding of a run, sorted by tool, then code, then pointer."""

    findings: tuple[LintFinding, ...]
    #: The name of each tool linted, by index (None for a tool without a string name).
    tools: tuple[str | None, ...]
    revision: Revision
    rules: tuple[LintRule, ...]

    def about(self, names: Collection[str]) -> LintReport:
        """This report with only the findings about the tools named ``names``."""
        kept = tuple(f for f in self.findings if f.tool is not None and f.tool in names)
        return replace(self, findings=kept)

    def counts(self) -> dict[str, int]:
        """Findings per severity, every severity present."""
        counts = {level.value: 0 for level in Severity}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts

    def by_rule(self) -> dict[str, int]:
        """Findings per rule code, for the rules that found any, in code order."""
        counts: dict[str, int] = {}
        for finding in sorted(self.findings, key=lambda f: f.code):
            counts[finding.code] = counts.get(finding.code, 0) + 1
        return counts

    def fails(self, threshold: Severity) -> bool:
        """Whether any finding is at ``threshold`` or above (``--fail-on``)."""
        return any(f.severity.rank >= threshold.rank for f in self.findings)

    def to_dict(
        self, *, source: Mapping[str, str] | None = None, line_of: LineOf | None = None
    ) -> dict[str, Any]:
        """The JSON form documented in this module."""
        findings = []
        for finding in self.findings:
            entry = finding.to_dict()
            line = line_of(finding) if line_of is not None else None
            if line is not None:
                entry["line"] = line
            findings.append(entry)
        out: dict[str, Any] = {"version": JSON_VERSION}
        if source is not None:
            out["source"] = dict(source)
        out.update(
            revision=self.revision.value,
            tools=len(self.tools),
            rules=[rule.code for rule in self.rules],
            summary=self.counts(),
            byRule=self.by_rule(),
            findings=findings,
        )
        return out


def render_text(
    report: LintReport, label: str, line_of: LineOf | None = None, *, of_rules: int | None = None
) -> list[str]:
    """Human-readable lines: a summary, each tool's findings under its name, then the count
    per rule (what a reader of a long run looks at first), and, when ``of_rules`` (how many
    rules exist) is more than ran, how to run the others.

    Severities are styled with ANSI colours; :func:`click.echo` drops them when the output
    is not a terminal. Pointers hold the server's property names: they are shown escaped.
    """
    counts = report.counts()
    summary = ", ".join(_plural(counts[level.value], level.value) for level in Severity)
    tools = _plural(len(report.tools), "tool")
    lines = [f"{printable(label)}: {tools}, revision {report.revision.value}: {summary}"]
    current: int | None = None
    for finding in report.findings:
        if finding.tool_index != current:
            current = finding.tool_index
            name = quote_name(finding.tool) if finding.tool is not None else "(no name)"
            lines.append(click.style(f"tool #{current} {name}", bold=True))
        line = line_of(finding) if line_of is not None else None
        where = printable(finding.pointer) or "(tool)"
        if line is not None:
            where += f" (line {line})"
        level = click.style(f"{finding.severity.value:<7}", fg=_COLOURS[finding.severity])
        lines.append(f"  {level} {finding.code} {where}: {finding.message} [{finding.name}]")
    by_rule = report.by_rule()
    if by_rule:
        rules = {rule.code: rule for rule in report.rules}
        width = max(len(rules[code].name) for code in by_rule)
        lines.append(click.style("findings per rule", bold=True))
        for code, count in by_rule.items():
            rule = rules[code]
            lines.append(f"  {code} {rule.name:<{width}} {count:>5}  {rule.severity.value}")
    if of_rules is not None and of_rules > len(report.rules):
        lines.append(
            f"{len(report.rules)} of {of_rules} rules ran; --select ALL runs every rule, "
            "`strictmcp lint rules` lists them"
        )
    return lines


def _plural(count: int, word: str) -> str:
    if word == "info":
        return f"{count} info"
    return f"{count} {word}{'' if count == 1 else 's'}"

"""``--format text``: a summary table, then every failure with its input and reproducer."""

from __future__ import annotations

import json

from ..lint.model import printable
from .judge import REFUSED_BY_CHECKS
from .results import CheckReport, ToolReport

_WARNINGS_SHOWN = 20
_INPUT_SHOWN = 400
_COLUMNS = ("cases", "passed", "failed", "warnings", "skipped")


def render_text(report: CheckReport) -> str:
    """The report for a terminal or a log."""
    lines = [_heading(report), *_lint_lines(report)]
    if report.validate_tool:
        lines.append(f"validate tool: {report.validate_tool} (Validation Protocol dry runs)")
    lines += ["", *_table(report.tools)]
    for tool in report.tools:
        lines += [f"note: {tool.name}: {note}" for note in tool.notes]
    lines += _checked_lines(report.tools)
    lines += _planted_lines(report.tools)
    failing = [tool for tool in report.tools if tool.verdict == "fail"]
    if failing:
        lines += ["", "Failures:"]
        for tool in failing:
            for result in tool.cases:
                if result.status == "fail":
                    lines += _case_lines(tool, result.id)
            lines.append(f"  reproduce: {report.reproducer(tool.name)}")
    warnings = [(t, r) for t in report.tools for r in t.cases if r.status == "warn"]
    if warnings:
        lines += ["", "Warnings:"]
        for tool, result in warnings[:_WARNINGS_SHOWN]:
            where = result.case.pointer or "(arguments)"
            lines.append(
                f"  {tool.name} #{result.id} {result.case.kind} {where}: "
                + "; ".join(result.messages)
            )
        if len(warnings) > _WARNINGS_SHOWN:
            lines.append(f"  ... and {len(warnings) - _WARNINGS_SHOWN} more (see --format json)")
    if report.aborted:
        lines += ["", f"aborted: {report.aborted}"]
    lines += ["", f"verdict: {report.verdict.upper()}"]
    # Names, pointers, messages and stderr all come from the server: escaped, they cannot
    # recolour, retitle or reorder the terminal or log they are read in.
    return "\n".join(printable(line) for line in lines) + "\n"


def _heading(report: CheckReport) -> str:
    server = " ".join(str(report.server.get(k, "")) for k in ("name", "version")).strip()
    mode = "tools called" if report.mode == "call" else "no tool called"
    return (
        f"strictmcp check: {server or 'server'} (MCP {report.revision}); {mode}; "
        f"seed {report.seed}, up to {report.per_kind} cases per kind"
        + (f"; server restarted {report.restarts}x" if report.restarts else "")
    )


def _lint_lines(report: CheckReport) -> list[str]:
    if not report.lint.ran:
        return [f"lint: not run ({report.lint.note})"]
    findings = report.lint.findings
    return [f"lint: {len(findings)} finding(s)"] + [
        f"  {f['code']} {f['severity']} {f['tool']}{f['pointer']}: {f['message']}" for f in findings
    ]


def _checked_lines(tools: list[ToolReport]) -> list[str]:
    """Generated inputs the schema allows that the target's checks refused: a pass, counted."""
    lines = []
    for tool in tools:
        refused = [
            r
            for r in tool.cases
            if r.status == "pass" and r.messages and r.messages[0].startswith(REFUSED_BY_CHECKS)
        ]
        if refused:
            lines.append(
                f"checked: {tool.name}: {len(refused)} generated input(s) the schema allows were"
                " refused by the guards or deep checks in front of the server"
            )
    return lines


def _planted_lines(tools: list[ToolReport]) -> list[str]:
    """Each planted fault: which checks caught it, or that it got through."""
    planted = [(t, r) for t in tools for r in t.cases if r.case.fault is not None]
    if not planted:
        return []
    caught = sum(1 for _, r in planted if r.case.fault and r.case.fault.code in r.caught_by)
    lines = [
        "",
        f"Planted faults (from the policy; {caught} of {len(planted)} caught by their check):",
    ]
    for tool, result in planted:
        fault = result.case.fault
        assert fault is not None
        if result.status == "skip":
            outcome = "not asked (no validate tool; --call sends them)"
        elif fault.code in result.caught_by:
            outcome = "caught by " + ", ".join(result.caught_by)
        elif result.status == "fail":
            outcome = f"ACCEPTED ({fault.code} expected)"
        else:
            outcome = "; ".join(result.messages) or "refused"
        lines.append(f"  {tool.name} {result.case.pointer}: {fault.label}: {outcome}")
    return lines


def _table(tools: list[ToolReport]) -> list[str]:
    rows: list[tuple[str, ...]] = [("tool", *_COLUMNS, "verdict")]
    for tool in tools:
        counts = tool.counts()
        rows.append((tool.name, *(str(counts[c]) for c in _COLUMNS), tool.verdict.upper()))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(_cells(row, widths)).rstrip() for row in rows]


def _cells(row: tuple[str, ...], widths: list[int]) -> list[str]:
    first, *rest = zip(row, widths, strict=True)
    return [first[0].ljust(first[1]), *(cell.rjust(width) for cell, width in rest)]


def _case_lines(tool: ToolReport, case_id: int) -> list[str]:
    result = next(r for r in tool.cases if r.id == case_id)
    case = result.case
    return [
        f"  {tool.name} #{result.id} {case.kind} {case.pointer or '(arguments)'}: {case.label}",
        *(f"    {message}" for message in result.messages),
        f"    input: {_shortened(json.dumps(case.arguments, ensure_ascii=True))}",
    ]


def _shortened(text: str) -> str:
    return text if len(text) <= _INPUT_SHOWN else text[:_INPUT_SHOWN] + " ... (see --format json)"

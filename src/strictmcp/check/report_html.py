"""``--format html``: one self-contained page (:mod:`strictmcp.html_page`).

Everything that came from the server or the user is escaped; inputs are ours and shown in
full; the command line and stderr were redacted before they got here.
"""

from __future__ import annotations

import json
from html import escape

from ..html_page import page
from .cases import KINDS
from .results import CaseResult, CheckReport, ToolReport

_CSS = """
th.tool,td.tool{text-align:left;font-family:ui-monospace,monospace}
.pass{background:#dff3e3;color:#135a22}.fail{background:#fbdcdc;color:#8a1212}
.warn{background:#fff1cc;color:#6b4d00}.skip{background:#eee;color:#666}.none{color:#bbb}
.verdict{display:inline-block;padding:.15em .6em;border-radius:4px;font-weight:700}
.case{border:1px solid #e0b4b4;border-left:6px solid #c62828;padding:.4em 1em;margin:1em 0}
.case.warn{border-color:#e8d49a;border-left-color:#b58900}
table.lint td{text-align:left}
"""
_SYMBOL = {"pass": "✓ pass", "fail": "✗ fail", "warn": "! warn", "skip": "- skip"}


def render_html(report: CheckReport) -> str:
    """The whole page."""
    server = " ".join(str(report.server.get(k, "")) for k in ("name", "version")).strip()
    title = f"strictmcp check report: {server or 'MCP server'}"
    return page(
        title,
        [
            _overview(report),
            _matrix(report.tools),
            _lint(report),
            _cases(report, "fail", "Failing cases", "failures"),
            _cases(report, "warn", "Warnings", "warnings"),
            _notes(report),
        ],
        css=_CSS,
    )


def _overview(report: CheckReport) -> str:
    totals = report.totals()
    target = " ".join(report.target)
    rows = [
        ("Verdict", _badge(report.verdict)),
        ("Server", escape(target)),
        ("Protocol revision", escape(report.revision)),
        ("Mode", "tools called (--call)" if report.mode == "call" else "no tool called"),
        ("Seed / cases per kind", f"{report.seed} / {report.per_kind}"),
        (
            "Cases",
            f"{totals.get('cases', 0)} in {totals['tools']} tools: "
            f"{totals.get('passed', 0)} passed, {totals.get('failed', 0)} failed, "
            f"{totals.get('warnings', 0)} warnings, {totals.get('skipped', 0)} skipped",
        ),
        ("Validate tool", escape(report.validate_tool or "none listed")),
        ("Lint", _lint_summary(report)),
    ]
    if report.restarts:
        rows.append(("Server restarts", str(report.restarts)))
    if report.aborted:
        rows.append(("Aborted", escape(report.aborted)))
    items = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows)
    return f'<section id="overview"><dl>{items}</dl></section>'


def _lint_summary(report: CheckReport) -> str:
    if not report.lint.ran:
        return f'<span class="muted">not run: {escape(report.lint.note or "")}</span>'
    count = len(report.lint.findings)
    return f'<a href="#lint">{count} finding(s)</a>' if count else "no findings"


def _lint(report: CheckReport) -> str:
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(str(finding.get(key) or ''))}</td>"
            for key in ("code", "severity", "tool", "pointer", "message")
        )
        + "</tr>"
        for finding in report.lint.findings
    )
    if not rows:
        return ""
    head = "".join(f"<th>{key}</th>" for key in ("code", "severity", "tool", "pointer", "message"))
    return (
        f'<h2 id="lint">Lint findings ({len(report.lint.findings)})</h2>'
        f'<table class="lint"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    )


def _matrix(tools: list[ToolReport]) -> str:
    kinds = [kind for kind in KINDS if any(kind in tool.by_kind() for tool in tools)]
    head = "".join(f'<th scope="col">{escape(kind)}</th>' for kind in kinds)
    rows = []
    for tool in tools:
        by_kind = tool.by_kind()
        cells = "".join(
            f'<td class="{by_kind[kind]}">{_SYMBOL[by_kind[kind]]}</td>'
            if kind in by_kind
            else '<td class="none">·</td>'
            for kind in kinds
        )
        counts = tool.counts()
        rows.append(
            f'<tr><th scope="row" class="tool">{escape(tool.name)}</th>{cells}'
            f"<td>{counts['cases']}</td><td>{counts['failed']}</td><td>{counts['warnings']}</td>"
            f'<td class="{tool.verdict}">{_SYMBOL[tool.verdict]}</td></tr>'
        )
    return (
        '<h2>Verdict matrix</h2><table id="verdict-matrix"><thead><tr>'
        f'<th class="tool">tool</th>{head}<th>cases</th><th>failed</th><th>warnings</th>'
        f"<th>verdict</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _cases(report: CheckReport, status: str, heading: str, anchor: str) -> str:
    found = [(t, r) for t in report.tools for r in t.cases if r.status == status]
    if not found:
        return ""
    body = "".join(_case(report, tool, result) for tool, result in found)
    return f'<h2 id="{anchor}">{heading} ({len(found)})</h2>{body}'


def _case(report: CheckReport, tool: ToolReport, result: CaseResult) -> str:
    case = result.case
    arguments = json.dumps(case.arguments, ensure_ascii=True)
    request = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool.name, "arguments": case.arguments},
        },
        ensure_ascii=True,
    )
    messages = "".join(f"<li>{escape(message)}</li>" for message in result.messages)
    return (
        f'<section class="case {result.status}" id="case-{escape(tool.name)}-{result.id}">'
        f"<h3>{escape(tool.name)} #{result.id}: {escape(case.kind)} "
        f"<code>{escape(case.pointer or '(arguments)')}</code></h3>"
        f"<p>{escape(case.label)}; expected: {escape(case.expect)}; "
        f"local engine: {'accepts' if result.local_valid else 'refuses'}</p>"
        f"<ul>{messages}</ul>"
        f'<p>Input (arguments):</p><pre class="input">{escape(arguments)}</pre>'
        f"<p>Reproduce (tool <code>{escape(tool.name)}</code>, case #{result.id}):</p>"
        f'<pre class="reproducer">{escape(report.reproducer(tool.name))}</pre>'
        f'<p>The request on its own:</p><pre class="request">{escape(request)}</pre>'
        "</section>"
    )


def _notes(report: CheckReport) -> str:
    items = [
        f"<li><code>{escape(tool.name)}</code>: {escape(note)}</li>"
        for tool in report.tools
        for note in tool.notes
    ]
    return f'<h2 id="notes">Notes</h2><ul>{"".join(items)}</ul>' if items else ""


def _badge(status: str) -> str:
    return f'<span class="verdict {status}">{_SYMBOL[status]}</span>'

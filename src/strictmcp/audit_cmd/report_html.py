"""``--format html``: the summary as one self-contained page (:mod:`strictmcp.html_page`),
its charts inline SVG drawn here, so that it works offline and runs nothing.

Every name on the page came from the log, which came from clients and servers: all escaped.
"""

from __future__ import annotations

from html import escape

from ..html_page import page
from .report_text import notes, overview
from .summary import AUDITED, AuditSummary, Refusal, TopCounter, duration, moment

REFUSED_COLOUR = "#c62828"
AUDITED_COLOUR = "#e0a100"

_CSS = f"""
.chart{{display:block;width:100%;max-width:960px;height:auto}}
.chart text{{font:12px system-ui,sans-serif;fill:#1d1d1f}}
.key{{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:-.1em}}
.refused{{background:{REFUSED_COLOUR}}}.audited{{background:{AUDITED_COLOUR}}}
table.newest td{{text-align:left;font-family:ui-monospace,monospace;font-size:.85em}}
table.newest td:first-child{{white-space:nowrap}}
"""
_WIDTH = 960
_LABEL = 300
"""Room for the names left of the bars."""
_ROW = 24
_LABEL_CHARS = 44


def render_html(summary: AuditSummary, name: str, top: int) -> str:
    """The page for the log ``name``: totals, the charts, and the newest refusals."""
    facts = "".join(f"<li>{escape(line)}</li>" for line in overview(summary))
    body = [f'<ul id="overview">{facts}</ul>']
    if summary.refusals or summary.would_deny:
        body.append(
            '<p><span class="key refused"></span>refusals (refused, withheld, replaced)'
            f'<span class="key audited"></span>{AUDITED} (audit mode)</p>'
        )
        body.append(_over_time(summary))
        for heading, counter in summary.dimensions():
            body.append(_bars(summary, heading, counter, top))
        body.append(_newest(summary))
    body += [f'<p class="muted">{escape(line)}</p>' for line in notes(summary)]
    return page(f"strictmcp audit report: {name}", body, css=_CSS)


def _over_time(summary: AuditSummary) -> str:
    series = summary.time.series()
    if not series:
        return '<h2 id="time">Refusals over time</h2><p>No record has a readable time.</p>'
    width = summary.time.width
    peak = max(refused + audited for _, refused, audited in series)
    left, top, height = 50, 10, 200
    step = (_WIDTH - left - 10) / len(series)
    shapes = [
        f'<line x1="{left}" y1="{top + height}" x2="{_WIDTH - 10}" y2="{top + height}"'
        ' stroke="#888"/>',
        f'<text x="{left - 6}" y="{top + 10}" text-anchor="end">{peak}</text>',
        f'<text x="{left - 6}" y="{top + height}" text-anchor="end">0</text>',
        f'<text x="{left}" y="{top + height + 18}">{escape(moment(series[0][0], width))}</text>',
        f'<text x="{_WIDTH - 10}" y="{top + height + 18}" text-anchor="end">'
        f"{escape(moment(series[-1][0], width))}</text>",
    ]
    for index, (start, refused, audited) in enumerate(series):
        x = left + index * step
        tip = f"{moment(start, width)}: {refused} refusals, {audited} {AUDITED}"
        base = float(top + height)
        for count, colour in ((refused, REFUSED_COLOUR), (audited, AUDITED_COLOUR)):
            if count:
                tall = count * height / peak
                base -= tall
                shapes.append(
                    f'<rect x="{x:.1f}" y="{base:.1f}" width="{max(step - 1, 1):.1f}"'
                    f' height="{tall:.1f}" fill="{colour}"><title>{escape(tip)}</title></rect>'
                )
    return (
        f'<h2 id="time">Refusals over time, per {duration(width)}</h2>'
        f'<svg id="chart-time" class="chart" viewBox="0 0 {_WIDTH} {top + height + 26}"'
        f' role="img" aria-label="refusals per {duration(width)}">{"".join(shapes)}</svg>'
    )


def _bars(summary: AuditSummary, heading: str, counter: TopCounter, top: int) -> str:
    rows = summary.ranked(counter, top)
    peak = max((refused + audited for _, refused, audited in rows), default=1) or 1
    room = _WIDTH - _LABEL - 70
    shapes = []
    for index, (name, refused, audited) in enumerate(rows):
        y = index * _ROW + 4
        label = name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "…"
        shapes.append(
            f'<text x="{_LABEL - 8}" y="{y + 15}" text-anchor="end">{escape(label)}'
            f"<title>{escape(name)}</title></text>"
        )
        x = float(_LABEL)
        for count, colour in ((refused, REFUSED_COLOUR), (audited, AUDITED_COLOUR)):
            if count:
                long = max(count * room / peak, 1)
                shapes.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{long:.1f}" height="{_ROW - 6}"'
                    f' fill="{colour}"/>'
                )
                x += long
        shapes.append(f'<text x="{x + 6:.1f}" y="{y + 15}">{refused} / {audited}</text>')
    anchor = heading.lower()
    return (
        f'<h2 id="{anchor}">{heading}</h2>'
        f'<svg id="chart-{anchor}" class="chart" viewBox="0 0 {_WIDTH} {len(rows) * _ROW + 8}"'
        f' role="img" aria-label="refusals by {anchor}">{"".join(shapes)}</svg>'
    )


_COLUMNS = (
    "time",
    "action",
    "stage",
    "direction",
    "method",
    "tool",
    "server",
    "identity",
    "code",
    "severity",
    "pointer",
)


def _newest(summary: AuditSummary) -> str:
    newest = summary.newest_first()
    head = "".join(f"<th>{column}</th>" for column in _COLUMNS)
    rows = "".join(f"<tr>{_row(refusal)}</tr>" for refusal in newest)
    total = summary.refusals + summary.would_deny
    return (
        f'<h2 id="newest">Newest refusals ({len(newest)} of {total})</h2>'
        f'<table class="newest"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    )


def _row(refusal: Refusal) -> str:
    cells = [
        refusal.time,
        refusal.action,
        refusal.stage,
        refusal.direction,
        refusal.method,
        refusal.tool,
        refusal.server,
        refusal.identity,
        refusal.code,
        refusal.severity,
        "; ".join([refusal.pointer or "(message)", *refusal.issues]),
    ]
    return "".join(f"<td>{escape(cell)}</td>" for cell in cells)

"""``--format text``: the summary for a terminal."""

from __future__ import annotations

from ..lint.model import printable
from .summary import AUDITED, ENFORCED, NONE, AuditSummary, Refusal, duration, moment

_BLOCKS = " ▁▂▃▄▅▆▇█"


def render_text(summary: AuditSummary, name: str, top: int) -> str:
    """The summary of the log ``name``: totals, refusals over time, the ``top`` names of
    each kind and the newest refusals."""
    lines = [f"strictmcp audit report: {name}", *overview(summary)]
    if summary.refusals or summary.would_deny:
        lines += ["", *_over_time(summary)]
        for heading, counter in summary.dimensions():
            lines += ["", *_table(heading, summary.ranked(counter, top))]
        newest = summary.newest_first()
        total = summary.refusals + summary.would_deny
        lines += ["", f"Newest refusals ({len(newest)} of {total}):"]
        lines += [f"  {_refusal(refusal)}" for refusal in newest]
    lines += ["", *notes(summary)]
    # Every name in the log came from a client or a server: escaped, it cannot recolour,
    # retitle or reorder the terminal it is read in.
    return "\n".join(printable(line) for line in lines) + "\n"


def overview(summary: AuditSummary) -> list[str]:
    """The totals, one fact a line (the HTML page shows the same lines)."""
    span = (
        f" from {moment(int(summary.first // 1))} to {moment(int(summary.last // 1))}"
        if summary.first is not None and summary.last is not None
        else ""
    )
    lines = [f"{summary.records} records{span}"]
    enforced = ", ".join(f"{action} {summary.actions.get(action, 0)}" for action in ENFORCED)
    lines.append(f"refusals (enforce mode): {summary.refusals} ({enforced})")
    lines.append(f"{AUDITED} (audit mode, let through): {summary.would_deny}")
    lines.append(f"allowed: {summary.actions.get('allowed', 0)}")
    known = {*ENFORCED, AUDITED, "allowed"}
    others = sorted((a, n) for a, n in summary.actions.items() if a not in known)
    if others:
        lines.append("other actions: " + ", ".join(f"{a} {n}" for a, n in others))
    if summary.events:
        lines.append("events: " + ", ".join(f"{e} {n}" for e, n in sorted(summary.events.items())))
    if summary.malformed:
        lines.append(f"malformed lines skipped: {summary.malformed} of {summary.lines}")
    if summary.untimed:
        lines.append(f"records without a readable time: {summary.untimed}")
    return lines


def notes(summary: AuditSummary) -> list[str]:
    """What the counts mean, and how far they can be trusted."""
    lines = [
        "Counts are audit records: one per finding, so a message refused for two reasons"
        " counts twice.",
    ]
    if summary.approximate:
        lines.append(
            "More names than the report keeps: a top count may be low by up to"
            f" {summary.approximate}; the rest is in (other)."
        )
    return lines


def _over_time(summary: AuditSummary) -> list[str]:
    series = summary.time.series()
    if not series:
        return ["Refusals over time: no record has a readable time."]
    width = summary.time.width
    peak = max(refused + audited for _, refused, audited in series)
    bars = "".join(
        _BLOCKS[-(-(refused + audited) * (len(_BLOCKS) - 1) // peak)]
        for _, refused, audited in series
    )
    return [
        f"Refusals and would-denies per {duration(width)}, {moment(series[0][0], width)}"
        f" to {moment(series[-1][0], width)} (peak {peak}):",
        f"  {bars}",
    ]


def _table(heading: str, rows: list[tuple[str, int, int]]) -> list[str]:
    # Long names push their own row's counts right rather than every row's.
    width = min(max([len(heading), *(len(name) for name, _, _ in rows)]), 48) + 2
    lines = [f"{heading:<{width}}{'refusals':>10}{AUDITED:>12}"]
    lines += [f"  {name:<{width - 2}}{refused:>10}{audited:>12}" for name, refused, audited in rows]
    return lines


def _refusal(refusal: Refusal) -> str:
    what = refusal.method if refusal.tool == NONE else f"{refusal.method} {refusal.tool}"
    server = "" if refusal.server == NONE else f" on {refusal.server}"
    pointer = refusal.pointer or "(message)"
    issues = "".join(f"; {issue}" for issue in refusal.issues)
    return (
        f"{refusal.time} {refusal.action} {refusal.direction} {what}{server}"
        f" by {refusal.identity}: {refusal.code} at {pointer}{issues}"
        f" ({refusal.stage} stage, {refusal.severity})"
    )

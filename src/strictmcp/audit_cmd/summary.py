"""Read an audit log once, line by line, into a summary of bounded size.

The log is the proxy's ``--audit-log`` (JSON Lines, one :func:`strictmcp.enforce.audit_records`
record per finding). It can be gigabytes and it is not trusted: a line may be anything, a name
may be megabytes long or new on every line. So nothing the summary holds grows with the log:
counters keep their most frequent names (:class:`TopCounter`), time is counted in at most
:data:`TIME_BARS` buckets whose width grows as the log's span does (:class:`TimeBuckets`), and
the newest refusals are a heap of :data:`NEWEST` (by default) short lines.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..enforce.audit import Action

ENFORCED: tuple[Action, ...] = ("refused", "withheld", "replaced")
"""The actions that stopped or changed something in enforce mode: the report's refusals."""

AUDITED: Action = "would deny"
"""What audit mode records instead; the report counts these beside the refusals, never in."""

MAX_LINE = 1 << 20
"""A line longer than this (bytes) is no record strictmcp writes: skipped, counted malformed."""

MAX_TEXT = 200
"""Longer names and pointers are cut here (with "…"), so each counter entry stays small."""

TIME_BARS = 120
"""At most this many time buckets, from the first record's to the last's."""

NEWEST = 20
"""How many of the newest refusals the summary keeps, by default."""

KEPT = 1000
"""How many names each :class:`TopCounter` keeps; it holds at most twice as many between
prunings."""

_KEPT_LINE = 4096
"""Lines up to this long are kept whole among the newest refusals (see
:attr:`AuditSummary.newest`); audit records are a few hundred bytes."""

_decode = json.JSONDecoder().decode

NONE = "(none)"
"""The name counted when a record has no tool, server, identity or code."""

_LADDER = (1, 5, 15, 30, 60, 300, 900, 1800, 3600, 10800, 21600, 43200, 86400)
"""Bucket widths in seconds, each a multiple of the one before, so that merging buckets into
the next width is exact; beyond a day the width doubles."""


class TopCounter:
    """Counts of refusals and would-denies per name, keeping the :data:`KEPT` most frequent.

    Exact until it has seen more than ``2 * kept`` names; then it drops all but the ``kept``
    largest, so that memory is bounded whatever the log holds. After a drop a kept name may
    be counted low by up to :attr:`error` (the largest total dropped at once: what the name
    may have had when it was dropped), and the names that were dropped are in nobody's count
    but the total's (the report's "(other)").
    """

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self.counts: dict[str, list[int]] = {}
        self.error = 0

    def add(self, name: str, audited: bool) -> None:
        """Count one refusal (``audited``: one would-deny) of ``name``."""
        count = self.counts.get(name)
        if count is None:
            count = self.counts[name] = [0, 0]
            if len(self.counts) > 2 * self.kept:
                self._prune()
                count = self.counts.setdefault(name, [0, 0])
        count[audited] += 1

    def _prune(self) -> None:
        ranked = sorted(self.counts.items(), key=lambda item: -sum(item[1]))
        self.error = max(self.error, sum(ranked[self.kept][1]))
        self.counts = dict(ranked[: self.kept])

    def top(self, n: int) -> list[tuple[str, int, int]]:
        """The ``n`` names with the most refusals and would-denies together: (name,
        refusals, would-denies), the most first, ties by name."""
        ranked = sorted(self.counts.items(), key=lambda item: (-sum(item[1]), item[0]))
        return [(name, count[0], count[1]) for name, count in ranked[:n]]


class TimeBuckets:
    """Refusals and would-denies per time bucket, in at most :data:`TIME_BARS` buckets.

    One pass, in any order: the width is the smallest of :data:`_LADDER` (then doubling) at
    which every bucket from the earliest record's to the latest's fits in ``bars``; when a
    record falls outside, the buckets merge into the next width. The result does not depend
    on the order of the records, and a log read from a pipe needs no second pass.
    """

    def __init__(self, bars: int = TIME_BARS) -> None:
        self.bars = bars
        self.width = _LADDER[0]
        self.counts: dict[int, list[int]] = {}
        self.first: int | None = None
        self.last: int | None = None

    def add(self, second: int, audited: bool) -> None:
        """Count one refusal (``audited``: one would-deny) at ``second`` (Unix time)."""
        self.first = second if self.first is None else min(self.first, second)
        self.last = second if self.last is None else max(self.last, second)
        while self.last // self.width - self.first // self.width >= self.bars:
            self._widen()
        bucket = self.counts.setdefault(second // self.width * self.width, [0, 0])
        bucket[audited] += 1

    def _widen(self) -> None:
        index = _LADDER.index(self.width) if self.width in _LADDER else len(_LADDER)
        width = _LADDER[index + 1] if index + 1 < len(_LADDER) else self.width * 2
        merged: dict[int, list[int]] = {}
        for start, (refused, audited) in self.counts.items():
            bucket = merged.setdefault(start // width * width, [0, 0])
            bucket[0] += refused
            bucket[1] += audited
        self.width, self.counts = width, merged

    def series(self) -> list[tuple[int, int, int]]:
        """Every bucket from the first to the last, empty ones included: (start, refusals,
        would-denies)."""
        if self.first is None or self.last is None:
            return []
        start = self.first // self.width * self.width
        return [
            (second, *self.counts.get(second, (0, 0)))
            for second in range(start, self.last // self.width * self.width + 1, self.width)
        ]


@dataclass(frozen=True)
class Refusal:
    """One refusal as the log holds it: codes, pointers and names, each cut at
    :data:`MAX_TEXT`; never a value from a message (the log holds none)."""

    time: str
    action: str
    stage: str
    direction: str
    method: str
    tool: str
    server: str
    identity: str
    code: str
    severity: str
    pointer: str
    issues: tuple[str, ...]
    """The schema issues, ``code at pointer``, at most five."""


@dataclass
class AuditSummary:
    """What :func:`summarize` found in one audit log."""

    lines: int = 0
    """Lines read, blank ones not counted."""
    malformed: int = 0
    """Lines that are no audit record (not UTF-8 JSON, not an object, neither an ``action``
    nor an ``event``, longer than :data:`MAX_LINE`): skipped, their content never shown."""
    records: int = 0
    untimed: int = 0
    """Records whose ``time`` is missing or not ISO 8601: counted, but in no time bucket."""
    actions: dict[str, int] = field(default_factory=dict)
    """Records per action. There are five; a log that holds more than :data:`KEPT` (not one
    strictmcp wrote) has the rest counted as "(other)"."""
    events: dict[str, int] = field(default_factory=dict)
    """Records of something the proxy did besides judging a message (``{time, event, ...}``:
    a policy reloaded), per event; bounded as :attr:`actions` is."""
    first: float | None = None
    """The earliest record's time (Unix time), of every action."""
    last: float | None = None
    time: TimeBuckets = field(default_factory=TimeBuckets)
    rules: TopCounter = field(default_factory=TopCounter)
    tools: TopCounter = field(default_factory=TopCounter)
    servers: TopCounter = field(default_factory=TopCounter)
    identities: TopCounter = field(default_factory=TopCounter)
    newest: list[tuple[float, int, bytes | Refusal]] = field(default_factory=list)
    """A min-heap of (time, line number, line or refusal): the newest :attr:`keep` refusals.
    A line of up to :data:`_KEPT_LINE` bytes is kept as it is and read again only if it is
    still among the newest at the end (most lines of a log in time order pass through here);
    a longer one is kept as its :class:`Refusal`, whose fields are cut short."""
    keep: int = NEWEST

    @property
    def refusals(self) -> int:
        """Records of the :data:`ENFORCED` actions."""
        return sum(self.actions.get(action, 0) for action in ENFORCED)

    @property
    def would_deny(self) -> int:
        """Records of audit mode's :data:`AUDITED` action."""
        return self.actions.get(AUDITED, 0)

    @property
    def approximate(self) -> int:
        """0 when every count is exact, else the most any top count may be low by."""
        return max(c.error for c in (self.rules, self.tools, self.servers, self.identities))

    def dimensions(self) -> list[tuple[str, TopCounter]]:
        """Each counter with its heading, in the order the reports show them."""
        return [
            ("Rules", self.rules),
            ("Tools", self.tools),
            ("Servers", self.servers),
            ("Identities", self.identities),
        ]

    def ranked(self, counter: TopCounter, n: int) -> list[tuple[str, int, int]]:
        """``counter``'s top ``n`` (name, refusals, would-denies), then "(other)" for the
        rest when there is any: the names not shown, dropped, or counted low."""
        top = counter.top(n)
        rest = (
            self.refusals - sum(row[1] for row in top),
            self.would_deny - sum(row[2] for row in top),
        )
        return [*top, ("(other)", *rest)] if any(rest) else top

    def newest_first(self) -> list[Refusal]:
        """The newest refusals, newest first (by time, then by place in the log)."""
        return [
            kept if isinstance(kept, Refusal) else _refusal(_record(kept) or {})
            for _, _, kept in sorted(self.newest, key=lambda entry: entry[:2], reverse=True)
        ]


def summarize(stream: IO[bytes], *, keep: int = NEWEST) -> AuditSummary:
    """Read ``stream`` (an audit log, opened in binary) to its end, keeping the ``keep``
    newest refusals; never raises on what the stream holds."""
    summary = AuditSummary(keep=keep)
    for number, line in enumerate(_lines(stream), 1):
        if line is not None and not line.strip():
            continue
        summary.lines += 1
        record = None if line is None else _record(line)
        if line is None or record is None:
            summary.malformed += 1
        elif isinstance(record.get("action"), str):
            _count(summary, record, number, line)
        else:
            _tally(summary.events, _text(record["event"]))
    return summary


def _lines(stream: IO[bytes]) -> Iterator[bytes | None]:
    """Each line of ``stream``, or None for one longer than :data:`MAX_LINE`, which is read
    past in pieces rather than held."""
    while line := stream.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while (rest := stream.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass
            yield None
        else:
            yield line


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        record = _decode(line.decode())
    except (ValueError, RecursionError):  # not UTF-8 JSON, or nested past the parser's depth
        return None
    if not isinstance(record, dict):
        return None
    if not isinstance(record.get("action"), str) and not isinstance(record.get("event"), str):
        return None
    return record


def _count(summary: AuditSummary, record: dict[str, Any], number: int, line: bytes) -> None:
    summary.records += 1
    action = _tally(summary.actions, _text(record["action"]))
    second = _time(record.get("time"))
    if second is None:
        summary.untimed += 1
    else:
        summary.first = second if summary.first is None else min(summary.first, second)
        summary.last = second if summary.last is None else max(summary.last, second)
    if action not in ENFORCED and action != AUDITED:
        return
    audited = action == AUDITED
    if second is not None:
        summary.time.add(int(second // 1), audited)
    summary.rules.add(_text(record.get("code")), audited)
    summary.tools.add(_text(record.get("tool")), audited)
    summary.servers.add(_text(record.get("server")), audited)
    summary.identities.add(_identity(record.get("identity")), audited)
    # Untimed records sort before every timed one: a log without times shows its last lines.
    key = (float("-inf") if second is None else second, number)
    if len(summary.newest) >= summary.keep and (not summary.keep or key <= summary.newest[0][:2]):
        return
    entry = (*key, line if len(line) <= _KEPT_LINE else _refusal(record))
    if len(summary.newest) < summary.keep:
        heapq.heappush(summary.newest, entry)
    else:
        heapq.heapreplace(summary.newest, entry)


def _tally(counts: dict[str, int], name: str) -> str:
    """Count ``name`` in ``counts``, or "(other)" once :data:`KEPT` names are counted; the
    name counted."""
    if name not in counts and len(counts) >= KEPT:
        name = "(other)"
    counts[name] = counts.get(name, 0) + 1
    return name


def _refusal(record: dict[str, Any]) -> Refusal:
    return Refusal(
        time=_text(record.get("time")),
        action=_text(record.get("action")),
        stage=_text(record.get("stage")),
        direction=_text(record.get("direction")),
        method=_text(record.get("method")),
        tool=_text(record.get("tool")),
        server=_text(record.get("server")),
        identity=_identity(record.get("identity")),
        code=_text(record.get("code")),
        severity=_text(record.get("severity")),
        pointer=_text(record.get("pointer"), empty=""),
        issues=_issues(record.get("issues")),
    )


def _text(value: object, *, empty: str = NONE) -> str:
    """A string field as the log holds it, cut at :data:`MAX_TEXT`; :data:`NONE` for a field
    that is missing, null or not a string (``empty`` for an empty string)."""
    if not isinstance(value, str):
        return NONE
    if not value:
        return empty
    return value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "…"


def _identity(value: object) -> str:
    """``subject``, with `` (client clientId)`` when the record names the client too."""
    if not isinstance(value, dict):
        return NONE
    subject, client = value.get("subject"), value.get("clientId")
    name = _text(subject) if isinstance(subject, str) and subject else NONE
    if isinstance(client, str) and client:
        name = f"{name} (client {_text(client)})"
    return name


def _issues(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(
        f"{_text(issue.get('code'))} at {_text(issue.get('pointer'), empty='')}"
        for issue in value[:5]
        if isinstance(issue, dict)
    )


def _time(value: object) -> float | None:
    """An ISO 8601 ``time`` (``Z`` or an offset; none means UTC) as Unix time, or None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def moment(second: int, width: int = 1) -> str:
    """The start of a bucket ``width`` seconds wide, in UTC, to the minute (to the second for
    buckets under a minute); the number of seconds when it is outside the years 1 to 9999."""
    try:
        when = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=second)
    except OverflowError:
        return f"{second} s"
    return when.strftime("%Y-%m-%d %H:%M:%S" if width < 60 else "%Y-%m-%d %H:%M") + "Z"


def duration(seconds: int) -> str:
    """A bucket width for people: ``5 s``, ``15 min``, ``3 h``, ``2 d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"

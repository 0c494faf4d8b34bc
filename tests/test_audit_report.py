"""``strictmcp audit report``: what an audit log says was refused, read in one bounded pass.

The logs are the real proxy's (its ``--audit-log``), or made of :func:`audit_records` records
as the proxy writes them, with the lines a damaged or hostile log may hold mixed in. The HTML
page is rendered by Debian's headless Chromium: its charts are measured where the browser
drew them and their pixels read back from a screenshot.
"""

from __future__ import annotations

import io
import json
import random
import re
import subprocess
import sys
from collections import Counter
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from browser_support import browser, measure, read_png
from strictmcp.audit_cmd import summarize
from strictmcp.audit_cmd.summary import MAX_LINE, TimeBuckets, TopCounter
from strictmcp.cli import main
from strictmcp.enforce import audit_records
from strictmcp.policy import Identity
from strictmcp.protocol import Violation
from test_gateway import fixture, gateway_session, run, server_table, write_policy
from test_proxy_http import FIXTURES, Process, processes  # noqa: F401 - processes is a fixture

_SECRET = "hunter2-do-not-show"


class _Code(Enum):
    ARGUMENTS = "invalid-arguments"
    ACCESS = "access-denied"
    GUARD = "path-outside-root"


def _records(
    code: _Code,
    action: str,
    *,
    tool: str | None = "files__read",
    time: str = "2026-05-01T10:00:00.000+00:00",
    subject: str | None = "ana",
    **extra: Any,
) -> list[dict[str, Any]]:
    """One finding's records, as the proxy's :class:`Auditor` writes them, plus ``extra``
    fields (the ones a later strictmcp may add)."""
    records = audit_records(
        [Violation(code, "a message", "/params/arguments/path")],
        direction="client->server",
        method="tools/call",
        tool=tool,
        stage="arguments",
        action=action,  # type: ignore[arg-type]  # unknown actions are part of the test
        mode="audit" if action == "would deny" else "enforce",
        time=time,
        identity=None if subject is None else Identity(subject, "desktop"),
    )
    return [{**record, **extra} for record in records]


def _write(path: Path, records: list[dict[str, Any]], *lines: bytes) -> Path:
    with path.open("wb") as log:
        log.writelines(json.dumps(record).encode() + b"\n" for record in records)
        log.writelines(lines)
    return path


def _report(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(main, ["audit", "report", *args], input=stdin)


def _table(text: str, heading: str) -> dict[str, tuple[int, int]]:
    """A table of the text report: name to (refusals, would-denies)."""
    section = text.split(f"\n{heading} ", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in section.splitlines()[1:]:
        found = re.fullmatch(r"  (.*?) +(\d+) +(\d+)", line)
        assert found, line
        rows[found[1]] = (int(found[2]), int(found[3]))
    return rows


# -- the real proxy's log ------------------------------------------------------------------

_POLICY = """
[identity]
subject = "ana"

[[access]]
tools = ["echo", "word_count"]
subject = "ana"

[[guard]]
tool = "echo"
argument = "/text"
kind = "text"
max_length = 5
"""
_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "/etc/hostname"}),  # the access rules
    ("echo", {"text": "far too long"}),  # the guard
    ("echo", {"text": 5}),  # the schema
    ("word_count", {"text": "one"}),  # a result that breaks its outputSchema: replaced
]


def _through_the_proxy(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    audit: Path,
    policy: str,
) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy, encoding="utf-8")
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    args = [sys.executable, "-m", "strictmcp.proxy", "--policy", str(policy_file)]
    proxy = Process(
        [*args, "--audit-log", str(audit), "--", *server], tmp_path, "stdout", stdin=True
    )
    processes.append(proxy)
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    proxy.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    assert json.loads(proxy.next_line())["id"] == 0
    proxy.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for number, (tool, arguments) in enumerate(_CALLS, 1):
        params = {"name": tool, "arguments": arguments}
        proxy.send({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params})
        assert json.loads(proxy.next_line())["id"] == number
    proxy.stop()


def test_the_real_proxys_log_is_counted_as_it_holds_it(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    audit = tmp_path / "audit.jsonl"
    _through_the_proxy(tmp_path, processes, audit, _POLICY)
    _through_the_proxy(tmp_path, processes, audit, 'mode = "audit"\n' + _POLICY)
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    actions = Counter(record["action"] for record in records)
    # Both runs were logged, each in its own words.
    assert all(actions[action] for action in ("refused", "replaced", "would deny")), actions

    result = _report(str(audit))
    assert result.exit_code == 0, result.output
    text = result.stdout
    enforced = actions["refused"] + actions["withheld"] + actions["replaced"]
    assert f"refusals (enforce mode): {enforced} (refused {actions['refused']}," in text
    assert f"would deny (audit mode, let through): {actions['would deny']}" in text
    by_code: dict[str, list[int]] = {}
    for record in records:
        by_code.setdefault(record["code"], [0, 0])[record["action"] == "would deny"] += 1
    assert _table(text, "Rules") == {code: tuple(n) for code, n in by_code.items()}
    assert _table(text, "Servers") == {"(none)": (enforced, actions["would deny"])}
    callers = {"ana" if "identity" in record else "(none)" for record in records}
    assert set(_table(text, "Identities")) == callers
    assert "ana" in callers
    assert set(_table(text, "Tools")) == {record["tool"] or "(none)" for record in records}
    newest = text.split("Newest refusals", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    last = records[-1]
    what = f"{last['action']} {last['direction']} {last['method']} {last['tool']}"
    assert newest[0].startswith(f"  {last['time']} {what} by ")
    assert len(newest) == len(records)  # fewer than the 20 shown


def test_the_real_gateways_log_names_each_server(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    guard = '[[guard]]\ntool = "*__echo"\nargument = "/text"\nkind = "schema"\n'
    policy = write_policy(
        tmp_path,
        server_table("trial", fixture("trial"), mode='"audit"'),
        server_table("live", fixture("live")),
        guard + "schema = { maxLength = 3 }\n",
    )

    async def calls() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", "--audit-log", str(audit)
        ) as session:
            await session.list_tools()
            for text in ("too long", "far too long", "ok"):
                await session.call_tool("trial__echo", {"text": text})
                await session.call_tool("live__echo", {"text": text})

    run(calls)
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    guarded = [record for record in records if record["stage"] == "policy"]
    assert {(r["server"], r["action"]) for r in guarded} == {
        ("trial", "would deny"),
        ("live", "refused"),
    }
    text = _report(str(audit)).stdout
    servers = _table(text, "Servers")
    assert servers["live"] == (2, 0)
    assert servers["trial"] == (0, 2)
    assert _table(text, "Tools")["live__echo"] == (2, 0)


# -- what is counted ------------------------------------------------------------------------


def test_refusals_would_denies_and_the_rest_are_counted_apart(tmp_path: Path) -> None:
    records = [
        *_records(_Code.ARGUMENTS, "refused", server="files"),
        *_records(_Code.ARGUMENTS, "refused", server="files"),
        *_records(_Code.ACCESS, "withheld", tool="db__query", server="db", subject="bo"),
        *_records(_Code.GUARD, "replaced", tool=None),
        *_records(_Code.ACCESS, "would deny", server="db"),
        *_records(_Code.GUARD, "allowed"),
        *_records(_Code.GUARD, "quarantined"),  # an action a later strictmcp may add
    ]
    # What the proxy did besides judging a message: no finding, no refusal.
    reload = {"time": "2026-05-01T10:00:00Z", "event": "policy-reload", "outcome": "applied"}
    records.append(reload)
    summary = summarize(io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in records)))
    assert (summary.records, summary.refusals, summary.would_deny) == (7, 4, 1)
    assert (summary.events, summary.malformed) == ({"policy-reload": 1}, 0)
    assert summary.actions == {
        "refused": 2,
        "withheld": 1,
        "replaced": 1,
        "would deny": 1,
        "allowed": 1,
        "quarantined": 1,
    }
    assert summary.ranked(summary.rules, 10) == [
        ("access-denied", 1, 1),
        ("invalid-arguments", 2, 0),
        ("path-outside-root", 1, 0),
    ]
    assert summary.ranked(summary.servers, 10) == [("db", 1, 1), ("files", 2, 0), ("(none)", 1, 0)]
    assert summary.ranked(summary.tools, 10) == [
        ("files__read", 2, 1),
        ("(none)", 1, 0),
        ("db__query", 1, 0),
    ]
    assert summary.ranked(summary.identities, 10) == [
        ("ana (client desktop)", 3, 1),
        ("bo (client desktop)", 1, 0),
    ]
    text = _report(str(_write(tmp_path / "a.jsonl", records))).stdout
    assert "refusals (enforce mode): 4 (refused 2, withheld 1, replaced 1)" in text
    assert "allowed: 1\nother actions: quarantined 1\nevents: policy-reload 1\n" in text


def test_past_the_top_names_the_rest_is_other(tmp_path: Path) -> None:
    records = [
        record
        for number, tool in enumerate(["a", "b", "c", "d", "e"])
        for _ in range(5 - number)
        for record in _records(_Code.ARGUMENTS, "refused", tool=tool)
    ]
    records += _records(_Code.ARGUMENTS, "would deny", tool="e")
    result = _report(str(_write(tmp_path / "a.jsonl", records)), "--top", "2")
    assert _table(result.stdout, "Tools") == {"a": (5, 0), "b": (4, 0), "(other)": (6, 1)}


def test_a_counter_keeps_the_frequent_names_however_many_come_once() -> None:
    counter = TopCounter(kept=10)
    for number in range(10_000):
        counter.add(f"once-{number}", False)
        if number % 10 == 0:
            counter.add("often", False)
        if number % 50 == 0:
            counter.add("sometimes", True)
    assert len(counter.counts) <= 21
    top = {name: (refused, audited) for name, refused, audited in counter.top(2)}
    assert set(top) == {"often", "sometimes"}
    # Counted low by at most the error it reports, never high.
    assert 1000 - counter.error <= top["often"][0] <= 1000
    assert 200 - counter.error <= top["sometimes"][1] <= 200
    assert 0 < counter.error <= 2


def test_the_newest_refusals_are_the_latest_by_time_in_any_order(tmp_path: Path) -> None:
    times = [f"2026-05-01T10:{minute:02d}:00Z" for minute in range(40)]
    random.Random(7).shuffle(times)
    records = [r for t in times for r in _records(_Code.ARGUMENTS, "refused", time=t)]
    records += _records(_Code.ARGUMENTS, "allowed", time="2026-05-01T11:00:00Z")
    log = _write(tmp_path / "a.jsonl", records)
    text = _report(str(log), "--newest", "3").stdout
    newest = text.split("Newest refusals (3 of 40):\n", 1)[1].splitlines()[:3]
    assert [line.split()[0] for line in newest] == [
        "2026-05-01T10:39:00Z",
        "2026-05-01T10:38:00Z",
        "2026-05-01T10:37:00Z",
    ]
    assert "Newest refusals (0 of 40)" in _report(str(log), "--newest", "0").stdout


def test_time_buckets_fit_the_span_whatever_the_order() -> None:
    seconds = [1_780_000_000 + 7 * n for n in range(3000)]  # about six hours
    forward, shuffled = TimeBuckets(), TimeBuckets()
    for second in seconds:
        forward.add(second, second % 3 == 0)
    random.Random(3).shuffle(seconds)
    for second in seconds:
        shuffled.add(second, second % 3 == 0)
    assert forward.series() == shuffled.series()
    assert forward.width == 300  # the narrowest width at which six hours fit in 120 bars
    series = forward.series()
    assert len(series) <= 120
    assert sum(refused + audited for _, refused, audited in series) == 3000
    assert [start for start, _, _ in series] == list(range(series[0][0], series[-1][0] + 1, 300))


def test_times_at_the_ends_of_the_calendar_and_none_at_all(tmp_path: Path) -> None:
    records = [
        *_records(_Code.ARGUMENTS, "refused", time="0001-01-01T00:00:00+05:00"),
        *_records(_Code.ARGUMENTS, "refused", time="9999-12-31T23:59:59-05:00"),
        *_records(_Code.ARGUMENTS, "refused", time="yesterday"),
        *_records(_Code.ARGUMENTS, "refused", time=5),  # type: ignore[arg-type]
    ]
    log = _write(tmp_path / "a.jsonl", records)
    for fmt in ("text", "html"):
        result = _report(str(log), "--format", fmt)
        assert result.exit_code == 0, result.output
    text = _report(str(log)).stdout
    assert "records without a readable time: 2" in text
    assert len(summarize(log.open("rb")).time.series()) <= 120


def test_an_empty_log_is_a_report_of_nothing(tmp_path: Path) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_bytes(b"\n\n")
    result = _report(str(log))
    assert result.exit_code == 0
    assert "0 records" in result.stdout
    assert "Rules" not in result.stdout


# -- what a damaged or hostile log cannot do --------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        f"not json {_SECRET}\n".encode(),
        f'["{_SECRET}"]\n'.encode(),  # JSON, but not an object
        f'{{"tool": "{_SECRET}", "code": "x"}}\n'.encode(),  # neither action nor event
        f'{{"action": ["{_SECRET}"]}}\n'.encode(),  # an action that is no string
        f'{{"event": {{"{_SECRET}": 1}}}}\n'.encode(),  # nor an event
        f'{{"action": "refused", "tool": "{_SECRET}"'.encode() + b"\xff}\n",  # not UTF-8
        b"[" * 100_000 + _SECRET.encode() + b"\n",  # nested past the parser's depth
        b'{"action": "refused", "tool": "' + _SECRET.encode() * (MAX_LINE // 10) + b'"}\n',
        f'{{"action": "refused", "tool": "{_SECRET}"'.encode(),  # cut off at the end
    ],
    ids=[
        "text",
        "array",
        "no-action",
        "action-list",
        "event-object",
        "latin-1",
        "deep",
        "too-long",
        "cut-off",
    ],
)
def test_a_malformed_line_is_counted_skipped_and_never_shown(tmp_path: Path, line: bytes) -> None:
    records = _records(_Code.ARGUMENTS, "refused") * 2
    log = _write(tmp_path / "a.jsonl", records, line)
    for fmt in ("text", "html"):
        result = _report(str(log), "--format", fmt)
        assert result.exit_code == 0, result.output
        assert _SECRET not in result.output
        assert "malformed lines skipped: 1 of 3" in result.stdout
    text = _report(str(log)).stdout
    assert "refusals (enforce mode): 2 (refused 2," in text


def test_fields_added_later_or_of_the_wrong_type_are_tolerated(tmp_path: Path) -> None:
    records = _records(
        _Code.ARGUMENTS,
        "refused",
        session="s-1",
        request=7,
        server="files",
        latency_ms=1.5,
        something_new={"nested": [1, 2]},
    )
    records += _records(_Code.ARGUMENTS, "refused", server=["files"], identity="ana")
    records += [{"action": "refused"}]  # the least a record can be
    text = _report(str(_write(tmp_path / "a.jsonl", records))).stdout
    assert "malformed" not in text
    assert _table(text, "Servers") == {"files": (1, 0), "(none)": (2, 0)}
    assert _table(text, "Identities") == {"ana (client desktop)": (1, 0), "(none)": (2, 0)}
    assert _table(text, "Rules") == {"invalid-arguments": (2, 0), "(none)": (1, 0)}


def test_names_from_the_log_are_escaped(tmp_path: Path) -> None:
    hostile = '<script>alert("x")</script>\x1b[2J\u202e'
    records = _records(_Code.ARGUMENTS, "refused", tool=hostile, server=hostile, subject=hostile)
    log = _write(tmp_path / "a.jsonl", records)
    text = _report(str(log)).stdout
    assert not {"\x1b", "\u202e"} & set(text)
    assert "\\u001b[2J\\u202e" in text
    html = _report(str(log), "--format", "html").stdout
    assert "<script" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


def test_a_huge_name_is_cut(tmp_path: Path) -> None:
    records = _records(_Code.ARGUMENTS, "refused", tool="t" * 100_000)
    text = _report(str(_write(tmp_path / "a.jsonl", records))).stdout
    assert "t" * 199 + "…" in text
    assert "t" * 201 not in text


# -- the command ---------------------------------------------------------------------------


def test_stdin_is_read_with_a_dash(tmp_path: Path) -> None:
    records = _records(_Code.ARGUMENTS, "refused")
    result = _report("-", stdin=json.dumps(records[0]).encode() + b"\n")
    assert result.exit_code == 0
    assert result.stdout.startswith("strictmcp audit report: stdin\n1 records")


def test_an_html_report_to_a_file_says_its_summary_on_stderr(tmp_path: Path) -> None:
    log = _write(tmp_path / "a.jsonl", _records(_Code.ARGUMENTS, "refused"))
    page = tmp_path / "report.html"
    result = _report(str(log), "--format", "html", "--output", str(page))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "refusals (enforce mode): 1" in result.stderr
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["missing.jsonl"], "strictmcp audit report: cannot read missing.jsonl: No such file"),
        (["."], "'AUDIT.jsonl': File '.' is a directory"),
        (["log.jsonl", "--output", "no/such/dir/r.html"], "cannot write no/such/dir/r.html"),
        (["log.jsonl", "--format", "pdf"], "Invalid value for '--format'"),
        (["log.jsonl", "--top", "0"], "Invalid value for '--top'"),
        ([], "Missing argument 'AUDIT.jsonl'"),
    ],
)
def test_what_cannot_be_used_is_one_line_and_status_2(
    tmp_path: Path, args: list[str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "log.jsonl", _records(_Code.ARGUMENTS, "refused"))
    result = _report(*args)
    assert result.exit_code == 2, result.output
    assert said in result.stderr
    assert "Traceback" not in result.stderr


# -- the page, in a browser --------------------------------------------------------------------


def _busy_log(path: Path) -> Path:
    """Six hours of refusals and would-denies across servers, tools and callers."""
    choice = random.Random(11).choice
    records = []
    for n in range(600):
        action = choice(["refused", "refused", "withheld", "replaced", "would deny"])
        server = choice(["files", "db", "web"])
        time = f"2026-05-01T{10 + n // 100:02d}:{n % 100 * 3 // 5:02d}:00Z"
        records += _records(
            choice(list(_Code)),
            action,
            tool=f"{server}__{choice(['read', 'write', 'list'])}",
            server=server,
            subject=choice(["ana", "bo", "ci-bot"]),
            time=time,
        )
    return _write(path, records, b"garbage\n")


def test_the_page_renders_offline_and_its_charts_draw(tmp_path: Path) -> None:
    log = _busy_log(tmp_path / "audit.jsonl")
    page = tmp_path / "report.html"
    result = _report(str(log), "--format", "html", "--output", str(page))
    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    # Self-contained: nothing to fetch, nothing to run.
    assert "<script" not in html
    assert 'src="' not in html
    assert "http" not in html.replace("http-equiv", "")

    size = (1000, 900)
    charts = {
        chart["id"]: chart for chart in measure(page, "svg.chart", tmp_path / "profile-1", size)
    }
    assert set(charts) == {
        "chart-time",
        "chart-rules",
        "chart-tools",
        "chart-servers",
        "chart-identities",
    }
    for chart in charts.values():
        assert chart["width"] > 300, chart
        assert chart["height"] > 40, chart
        assert chart["shapes"] > 0, chart
    assert charts["chart-rules"]["shapes"] >= 6  # three codes, refusals and would-denies each

    shot = tmp_path / "report.png"
    ran = browser(
        tmp_path / "profile-2",
        f"--screenshot={shot}",
        f"--window-size={size[0]},{size[1]}",
        page.as_uri(),
    )
    assert shot.is_file(), ran.stderr
    image = read_png(shot.read_bytes())
    time = charts["chart-time"]
    inside = [
        image.rows[y][x]
        for y in range(int(time["y"]) + 5, min(int(time["y"] + time["height"]) - 5, image.height))
        for x in range(int(time["x"]) + 5, min(int(time["x"] + time["width"]) - 5, image.width))
    ]
    colours = Counter(inside)
    assert len(colours) > 2, colours.most_common(3)
    red = sum(n for (r, g, b), n in colours.items() if r > 170 and g < 80 and b < 80)
    amber = sum(n for (r, g, b), n in colours.items() if r > 200 and 130 < g < 190 and b < 60)
    # The bars are drawn, in both colours, over a good part of the chart.
    assert red > len(inside) // 10, (red, len(inside))
    assert amber > len(inside) // 100, (amber, len(inside))


# -- a large log ---------------------------------------------------------------------------


_PEAK = """
import atexit, sys
from pathlib import Path
from strictmcp.cli import main
# The peak memory of this process since it started, said as it ends (ru_maxrss would count
# the test's own memory too: a child started with vfork inherits its parent's peak).
atexit.register(lambda: print(Path("/proc/self/status").read_text(), file=sys.stderr))
main()
"""


def test_a_large_log_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """200 MB whose every line names a new tool, server, identity and rule (a counter of
    every name would hold them all), spread over years, and a 30 MB line in the middle."""
    log = tmp_path / "large.jsonl"
    template = (
        json.dumps(_records(_Code.ARGUMENTS, "refused", server="S", tool="T", subject="I")[0])
        .replace("{", "{{")
        .replace("}", "}}")
        .replace('"invalid-arguments"', '"rule-{n}"')
        .replace('"S"', '"server-{n}"')
        .replace('"T"', '"tool-{n}"')
        .replace('"I"', '"who-{n}"')
        .replace('"2026-05-01T10:00:00.000+00:00"', '"{year}-0{month}-1{day}T10:00:00Z"')
    )
    chunk = []
    with log.open("w", encoding="utf-8") as out:
        for n in range(560_000):
            line = template.format(n=n, year=2000 + n % 26, month=1 + n % 9, day=n % 10) + "\n"
            chunk.append(line)
            if n == 280_000:
                chunk.append('{"action": "refused", "tool": "' + "x" * 30_000_000 + '"}\n')
            if len(chunk) >= 10_000:
                out.write("".join(chunk))
                chunk.clear()
        out.write("".join(chunk))
    assert log.stat().st_size > 200_000_000
    output = tmp_path / "report.txt"
    with output.open("wb") as out:
        ran = subprocess.run(
            [sys.executable, "-c", _PEAK, "audit", "report", str(log)],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    text = output.read_text(encoding="utf-8")
    assert ran.returncode == 0, ran.stderr
    # The command itself (Python, click, strictmcp) takes about 50 MB; holding the log, its
    # longest line or a count of every name would take hundreds.
    peak = int(re.findall(r"VmHWM:\s+(\d+) kB", ran.stderr)[-1])
    assert peak < 100_000, peak
    assert "560000 records from 2000-01-10 10:00:00Z to 2025-09-19 10:00:00Z" in text
    assert "malformed lines skipped: 1 of 560001" in text
    assert "a top count may be low" in text

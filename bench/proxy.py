"""Proxy benchmark: tools/call round trips straight to a server and through strictmcp's proxy.

Run ``python bench/proxy.py`` (``make bench``) for the full run (about a minute), ``--quick``
for a smoke run, ``--json FILE`` to keep the raw numbers, ``--check`` to exit 1 when a target
fails, ``--profile`` to profile the proxy even when every target passes. Figures and their
reading are in docs/benchmarks.md, section "Proxy".

Two peers run for the whole benchmark, each a subprocess on raw pipes: (direct) the echo
server, bench/echo_server.py, and (proxy) ``python -m strictmcp.proxy -- python
bench/echo_server.py``, enforce mode with default options. Each gets ``initialize``,
``notifications/initialized`` and ``tools/list`` first, as a client sends them. The client is
this process, writing raw JSON lines with ``os.write`` and reading answers with a blocking
buffered ``readline``: no SDK, no event loop, so that its own cost is small and the same for
both peers. Before any timing the script checks that every proxied answer equals the direct
one, that the proxy lists the tool, and that the proxy answers an invalid call itself.

Every round times, for each peer in turn (the order alternating round by round, so that
machine noise falls on both alike), a batch of sequential calls (send one, read its answer;
each call timed alone with ``time.perf_counter_ns``) and a batch of pipelined calls (16 in
flight: a new request is written as each answer is read; the batch is timed whole). The
client's cyclic garbage collector is off inside a batch. Latency figures are the median and
p10-p90 of all the per-call times; the added latency is proxy minus direct of the medians,
with the p10-p90 of the per-round differences of medians. Throughput is calls per second of
each pipelined batch: median and p10-p90 over rounds, and the ratio of medians (proxy/direct)
with the p10-p90 of the ratios paired by round. Also timed, for the reading: the proxy's
per-call decisions alone, ``ProxySession.from_client`` + ``from_server`` on recorded lines in
this process (no pipes, no transport), and the CPU time (user + system, from ``/proc``) each
peer's process spent per call over the timed rounds: unlike wall-clock figures, it barely moves
when other work on the machine delays the processes' wake-ups.

When a target fails (or with ``--profile``), a third proxied session runs under cProfile
(``python -m cProfile -o FILE -m strictmcp.proxy ...``), untimed, and the proxy's top costs
per call are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import (
    INVALID_INSTANCE,
    VALID_INSTANCE,
    Contender,
    Ratio,
    environment,
    fmt_time,
    ratio,
    write_numbers,
)
from strictmcp.enforce import Auditor
from strictmcp.proxy.session import ProxySession

BENCH = Path(__file__).resolve().parent
SERVER = [sys.executable, str(BENCH / "echo_server.py")]
PROXY = [sys.executable, "-m", "strictmcp.proxy", "--mode", "enforce", "--", *SERVER]
DEPTH = 16  # requests in flight in the pipelined batches
REVISION = "2025-06-18"
TOOL = "create_issue"

LATENCY_TARGET_US = 150.0  # added median latency per call, at most
THROUGHPUT_TARGET = 0.80  # proxy/direct calls per second, at least

_ARGUMENTS = json.dumps(VALID_INSTANCE, separators=(",", ":"))
_CALL = (
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"' + TOOL + '",'
    '"arguments":' + _ARGUMENTS.replace("%", "%%") + "}}\n"
)


def call_line(request_id: int, arguments: dict[str, Any] | None = None) -> bytes:
    """One ``tools/call`` request of the tool, as a client writes it."""
    if arguments is None:
        return (_CALL % request_id).encode()
    params = {"name": TOOL, "arguments": arguments}
    return _line({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def _line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


HANDSHAKE = [
    _line(
        {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": REVISION,
                "capabilities": {},
                "clientInfo": {"name": "strictmcp-bench", "version": "1.0.0"},
            },
        }
    ),
    _line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    _line({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}),
]


class Peer:
    """A stdio MCP server on raw pipes: blocking writes of whole lines, buffered reads."""

    def __init__(self, key: str, argv: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.key = key
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._fd = self.process.stdin.fileno()
        self._reader = self.process.stdout  # buffered; the writes go straight to the fd
        self.next_id = 1
        self.handshake: list[Any] = [self.ask(line) for line in HANDSHAKE]

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def read(self) -> bytes:
        line = self._reader.readline()
        if not line:
            raise SystemExit(f"{self.key}: the server closed its output")
        return line

    def ask(self, line: bytes) -> Any:
        """Send one line; the decoded answer, or None for a notification."""
        self.write(line)
        if b'"id"' not in line:
            return None
        return json.loads(self.read())

    def ids(self, n: int) -> range:
        first = self.next_id
        self.next_id += n
        return range(first, first + n)

    def sequential(self, n: int) -> list[float]:
        """``n`` calls one at a time: ns per call, each timed alone."""
        lines = [call_line(i) for i in self.ids(n)]
        write, read, clock = self.write, self._reader.readline, time.perf_counter_ns
        times: list[float] = []
        gc.disable()
        try:
            for line in lines:
                start = clock()
                write(line)
                read()
                times.append(clock() - start)
        finally:
            gc.enable()
        return times

    def pipelined(self, n: int, depth: int = DEPTH) -> float:
        """``n`` calls with ``depth`` in flight: ns per call over the whole batch."""
        lines = [call_line(i) for i in self.ids(n)]
        write, read = self.write, self._reader.readline
        gc.disable()
        try:
            start = time.perf_counter_ns()
            write(b"".join(lines[:depth]))
            for line in lines[depth:]:
                read()
                write(line)
            for _ in range(min(depth, n)):
                read()
            elapsed = time.perf_counter_ns() - start
        finally:
            gc.enable()
        return elapsed / n

    def cpu_seconds(self) -> float | None:
        """CPU time (user + system) the peer's own process has used; None off Linux."""
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return None
        # The fields after the command name, which is in parentheses and may hold spaces.
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def check_peers(direct: Peer, proxied: Peer) -> None:
    """Refuse to time anything unless the proxy passes the calls through unchanged."""
    listed = proxied.handshake[2]["result"]["tools"]
    if TOOL not in [tool["name"] for tool in listed]:
        raise SystemExit(f"the proxy withheld {TOOL} from tools/list: {listed}")
    minimal = {"repository": "octo/hello", "title": "x"}
    unicode = {**VALID_INSTANCE, "title": "Crash on startup — 設定ファイルが空 🙃", "labels": []}
    for variant, arguments in enumerate((None, minimal, unicode)):
        for request_id in range(10_000_000 + 1000 * variant, 10_000_050 + 1000 * variant):
            got = [peer.ask(call_line(request_id, arguments)) for peer in (direct, proxied)]
            if got[0] != got[1]:
                raise SystemExit(f"the proxy changed an answer:\n{got[0]}\n{got[1]}")
            if got[0].get("result", {}).get("isError") is not False:
                raise SystemExit(f"the echo server did not answer the call: {got[0]}")
    refused = proxied.ask(call_line(20_000_000, INVALID_INSTANCE))
    result = refused.get("result", {})
    if refused.get("id") != 20_000_000 or result.get("isError") is not True:
        raise SystemExit(f"the proxy did not refuse the invalid call: {refused}")
    if "structuredContent" in result:
        raise SystemExit(f"the invalid call reached the server: {refused}")
    # The proxy must still answer as before once it has refused a call.
    if proxied.ask(call_line(20_000_001)) != direct.ask(call_line(20_000_001)):
        raise SystemExit("the proxy answers differently after a refusal")


def recorded() -> tuple[list[bytes], dict[str, Any]]:
    """The echo server's answers to ``initialize`` and ``tools/list`` as lines (for
    :func:`opened`), and its answer to ``call_line(1)``: recorded once from a real one."""
    direct = Peer("direct", SERVER)
    try:
        replies = [_line(direct.handshake[0]), _line(direct.handshake[2])]
        return replies, direct.ask(call_line(1))
    finally:
        direct.close()


async def opened(session: ProxySession, replies: Sequence[bytes]) -> None:
    """Take an in-process ``session`` through :data:`HANDSHAKE`, ``replies`` being the
    echo server's answers to ``initialize`` and ``tools/list`` as recorded lines."""
    await session.from_client(HANDSHAKE[0])
    await session.from_server(replies[0])
    await session.from_client(HANDSHAKE[1])
    await session.from_client(HANDSHAKE[2])
    await session.from_server(replies[1])


def session_cost(calls: int, answer: bytes, profiler: cProfile.Profile | None = None) -> float:
    """ns per call of the proxy's decisions alone: ``from_client`` on a request and
    ``from_server`` on its answer, in this process, on recorded lines."""
    replies, _ = recorded()
    template = json.loads(answer)
    requests = [call_line(i) for i in range(1, calls + 1)]
    answers = [_line({**template, "id": i}) for i in range(1, calls + 1)]

    async def run() -> float:
        session = ProxySession(Auditor(None))
        await opened(session, replies)
        for request, reply in zip(requests[:50], answers[:50], strict=True):  # warm up
            await session.from_client(request)
            await session.from_server(reply)
        gc.disable()
        if profiler is not None:
            profiler.enable()
        start = time.perf_counter_ns()
        for request, reply in zip(requests[50:], answers[50:], strict=True):
            routed = await session.from_client(request)
            if routed.forward != [request]:
                raise SystemExit("the session did not forward the call unchanged")
            await session.from_server(reply)
        elapsed = time.perf_counter_ns() - start
        if profiler is not None:
            profiler.disable()
        gc.enable()
        return elapsed / (calls - 50)

    return asyncio.run(run())


@dataclass
class Profile:
    calls: int
    seconds: float
    rows: list[tuple[str, float, float, int]] = field(default_factory=list)  # name, tt, ct, n
    groups: list[tuple[str, float]] = field(default_factory=list)


_GROUPS = [
    ("ProxySession.decide (all decisions)", "strictmcp/proxy/session.py", "decide"),
    ("protocol decode", "strictmcp/protocol/", "decode"),
    ("Conversation.observe", "strictmcp/protocol/", "observe"),
    ("check_call", "strictmcp/protocol/", "check_call"),
    ("check_result", "strictmcp/protocol/", "check_result"),
    ("Auditor.record", "strictmcp/enforce/audit.py", "record"),
    ("LineSplitter.feed (cutting lines)", "strictmcp/connect/lines.py", "feed"),
    ("Relay._onward (timers)", "strictmcp/proxy/relay.py", "_onward"),
    ("Relay.flush (writes)", "strictmcp/proxy/relay.py", "flush"),
    ("drain (both sides)", "strictmcp/", "drain"),  # the proxy's stdio, connect's pipes
    ("event loop _run_once", "asyncio/base_events.py", "_run_once"),
    ("selector select (waiting)", "selectors.py", "select"),
    ("json loads", "json/__init__.py", "loads"),
    ("json dumps", "json/__init__.py", "dumps"),
]


def profile_proxy(sequential: int, pipelined: int, decisions: int, answer: bytes) -> Profile:
    """The proxy's costs, untimed: the groups from a proxied session run under cProfile (its
    start-up included, which none of the groups contain), the top functions from the
    in-process decisions (no start-up, no transport) run under cProfile."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "proxy.prof"
        argv = [sys.executable, "-m", "cProfile", "-o", str(out), *PROXY[1:]]
        peer = Peer("profiled proxy", argv)
        peer.sequential(sequential)
        peer.pipelined(pipelined)
        peer.close()
        stats = pstats.Stats(str(out))
    calls = sequential + pipelined
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    profile = Profile(calls, stats.total_tt)  # type: ignore[attr-defined]
    for label, where, function in _GROUPS:
        total = sum(
            ct
            for (path, _line_no, name), (_cc, _n, _tt, ct, _callers) in raw.items()
            if name == function and where in path.replace("\\", "/")
        )
        profile.groups.append((label, total))

    profiler = cProfile.Profile()
    session_cost(decisions, answer, profiler)
    inner = pstats.Stats(profiler)
    raw = inner.stats  # type: ignore[attr-defined]
    rows = []
    for (path, line, name), (_cc, count, tt, ct, _callers) in raw.items():
        short = "/".join(path.split("/")[-2:]) if "/" in path else path
        rows.append(
            (f"{short}:{line}({name})", tt / (decisions - 50), ct / (decisions - 50), count)
        )
    rows.sort(key=lambda row: row[1], reverse=True)
    profile.rows = rows[:15]
    return profile


@dataclass
class Check:
    name: str
    value: float
    bound: float
    at_most: bool
    unit: str
    low: float
    high: float

    @property
    def passed(self) -> bool:
        return self.value <= self.bound if self.at_most else self.value >= self.bound


def _p10_p90(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return deciles[0], deciles[8]


@dataclass
class Run:
    """The samples of a run: sequential and pipelined contenders, each peer's per-round
    sequential medians, one recorded answer to a call, and each peer's CPU time per call over
    the timed rounds (ns; None where it cannot be read)."""

    seq: dict[str, Contender]
    pipe: dict[str, Contender]
    round_medians: dict[str, list[float]]
    sample_answer: bytes
    cpu: dict[str, float | None]

    def __iter__(self) -> Any:
        return iter((self.seq, self.pipe, self.round_medians, self.sample_answer, self.cpu))


def measure(rounds: int, seq_n: int, pipe_n: int) -> Run:
    """Check both peers, warm them up, then time ``rounds`` interleaved rounds."""
    direct = Peer("direct", SERVER)
    proxied = Peer("proxy", PROXY)
    check_peers(direct, proxied)
    sample_answer = _line(direct.ask(call_line(30_000_000)))
    for peer in (direct, proxied):  # warm up, untimed
        peer.sequential(seq_n)
        peer.pipelined(pipe_n)

    seq = {p.key: Contender(p.key, "sequential", "", lambda n: None) for p in (direct, proxied)}
    pipe = {p.key: Contender(p.key, "pipelined", "", lambda n: None) for p in (direct, proxied)}
    round_medians: dict[str, list[float]] = {"direct": [], "proxy": []}
    gc.collect()
    cpu_before = {peer.key: peer.cpu_seconds() for peer in (direct, proxied)}
    for index in range(rounds):
        order = (direct, proxied) if index % 2 == 0 else (proxied, direct)
        for peer in order:
            times = peer.sequential(seq_n)
            seq[peer.key].samples += times
            round_medians[peer.key].append(statistics.median(times))
        for peer in order:
            pipe[peer.key].samples.append(peer.pipelined(pipe_n))
    cpu: dict[str, float | None] = {}
    for peer in (direct, proxied):
        before, after = cpu_before[peer.key], peer.cpu_seconds()
        timed = rounds * (seq_n + pipe_n)
        cpu[peer.key] = None if before is None or after is None else (after - before) / timed * 1e9
    statuses = [direct.close(), proxied.close()]
    if any(statuses):
        raise SystemExit(f"a peer exited with status {statuses}")

    return Run(seq, pipe, round_medians, sample_answer, cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fast smoke run (CI)")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write the raw numbers here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    parser.add_argument("--profile", action="store_true", help="profile the proxy in any case")
    args = parser.parse_args(argv)

    # rounds, sequential calls per peer per round, pipelined calls per peer per round
    rounds, seq_n, pipe_n = (6, 100, 500) if args.quick else (30, 300, 1000)
    started = time.perf_counter()
    seq, pipe, round_medians, sample_answer, cpu = measure(rounds, seq_n, pipe_n)
    elapsed = time.perf_counter() - started

    decisions = session_cost(2_000 if args.quick else 10_000, sample_answer)

    seq["direct"].label = "echo server, direct"
    seq["proxy"].label = "through `strictmcp.proxy` (enforce)"
    pipe["direct"].label = seq["direct"].label
    pipe["proxy"].label = seq["proxy"].label
    for contender in (*seq.values(), *pipe.values()):
        contender.batch = seq_n if contender.group == "sequential" else pipe_n
    added = [p - d for p, d in zip(round_medians["proxy"], round_medians["direct"], strict=True)]
    added_low, added_high = _p10_p90(added)
    added_median = seq["proxy"].median - seq["direct"].median
    throughput = ratio("throughput, proxy / direct", pipe["direct"], pipe["proxy"])
    latency_ratio = ratio("sequential latency, proxy / direct", seq["proxy"], seq["direct"])
    checks = [
        Check(
            "added median latency per call (proxy - direct)",
            added_median / 1_000,
            LATENCY_TARGET_US,
            True,
            "µs",
            added_low / 1_000,
            added_high / 1_000,
        ),
        Check(
            f"throughput with {DEPTH} in flight, proxy / direct",
            throughput.value,
            THROUGHPUT_TARGET,
            False,
            "x",
            throughput.low,
            throughput.high,
        ),
    ]

    env = environment()
    mode = "quick" if args.quick else "full"
    print(
        f"strictmcp proxy benchmark ({mode}): Python {env['python']}, {env['cpus']} CPUs "
        f"({env['processor']}); {rounds} rounds of {seq_n} sequential and {pipe_n} pipelined "
        f"calls per peer, {elapsed:.0f} s\n"
    )
    print(results_table(seq, pipe, added, added_median, latency_ratio, throughput, decisions, cpu))
    print(targets_list(checks))
    sys.stdout.flush()

    profile: Profile | None = None
    if args.profile or not all(check.passed for check in checks):
        sizes = (300, 2_000, 2_000) if args.quick else (500, 3_000, 5_000)
        profile = profile_proxy(*sizes, sample_answer)
        print(report_profile(profile))

    if args.json is not None:
        extra: dict[str, Any] = {
            "added_latency_ns": {"median": added_median, "per_round": added},
            "session_decisions_ns_per_call": decisions,
            "cpu_ns_per_call": cpu,
            "targets": [
                {"name": c.name, "value": c.value, "bound": c.bound, "passed": c.passed}
                for c in checks
            ],
        }
        if profile is not None:
            extra["profile"] = {
                "calls": profile.calls,
                "seconds": profile.seconds,
                "top_tottime": profile.rows,
                "groups_cumulative": profile.groups,
            }
        write_numbers(
            args.json,
            mode,
            rounds,
            elapsed,
            env,
            [*seq.values(), *pipe.values()],
            [latency_ratio, throughput],
            extra,
        )
    return 1 if args.check and not all(check.passed for check in checks) else 0


def results_table(
    seq: dict[str, Contender],
    pipe: dict[str, Contender],
    added: list[float],
    added_median: float,
    latency_ratio: Ratio,
    throughput: Ratio,
    decisions: float,
    cpu: dict[str, float | None],
) -> str:
    added_low, added_high = _p10_p90(added)
    lines = [
        "| case | peer | median | p10-p90 | calls/s (median) |",
        "|---|---|--:|--:|--:|",
    ]
    for group, label in ((seq, "latency per call, sequential"), (pipe, f"{DEPTH} in flight")):
        for contender in group.values():
            low, high = contender.spread
            per_second = 1e9 / contender.median
            if group is pipe:
                rates = sorted(1e9 / s for s in contender.samples)
                low_rate, high_rate = _p10_p90(rates)
                spread = f"{low_rate:,.0f} - {high_rate:,.0f} calls/s"
                shown = f"{per_second:,.0f} calls/s"
            else:
                spread = f"{fmt_time(low)} - {fmt_time(high)}"
                shown = fmt_time(contender.median)
            lines.append(
                f"| {label} | {contender.label} | {shown} | {spread} | {per_second:,.0f} |"
            )
    lines += [
        "",
        "| figure | median | p10-p90 (paired by round) |",
        "|---|--:|--:|",
        f"| added latency per call, proxy - direct | {added_median / 1_000:.0f} µs | "
        f"{added_low / 1_000:.0f} - {added_high / 1_000:.0f} µs |",
        f"| {latency_ratio.name} | {latency_ratio.value:.2f}x | "
        f"{latency_ratio.low:.2f}x - {latency_ratio.high:.2f}x |",
        f"| {throughput.name} | {throughput.value:.2f}x | "
        f"{throughput.low:.2f}x - {throughput.high:.2f}x |",
        f"| proxy decisions alone per call (in-process `ProxySession`, request + answer) | "
        f"{decisions / 1_000:.0f} µs | - |",
    ]
    for key, label in (("direct", "echo server"), ("proxy", "proxy process alone")):
        value = cpu[key]
        if value is not None:
            lines.append(
                f"| CPU time per call (user + system), {label}, timed rounds | "
                f"{value / 1_000:.0f} µs | - |"
            )
    return "\n".join(lines)


def targets_list(checks: list[Check]) -> str:
    lines = ["", "Targets:", ""]
    for check in checks:
        sign = "<=" if check.at_most else ">="
        fmt = "{:.0f} µs" if check.unit == "µs" else "{:.2f}x"
        lines.append(
            f"- **{'PASS' if check.passed else 'FAIL'}** {check.name}: "
            f"{fmt.format(check.value)} (target {sign} {fmt.format(check.bound)}; "
            f"p10-p90 {fmt.format(check.low)} - {fmt.format(check.high)})"
        )
    return "\n".join(lines)


def report_profile(profile: Profile) -> str:
    per = 1e6 / profile.calls  # seconds over the run -> µs per call
    lines = [
        "",
        f"Profile of the proxy process (cProfile, {profile.calls} calls, each a request and "
        f"its answer; {profile.seconds:.2f} s profiled, start-up included; cProfile's own "
        "overhead inflates every figure, small functions most):",
        "",
        "| where (cumulative) | µs per call | share of profiled time |",
        "|---|--:|--:|",
    ]
    for label, total in profile.groups:
        lines.append(f"| {label} | {total * per:.1f} | {total / profile.seconds:.0%} |")
    lines += [
        "",
        "Top costs of the decisions alone (in-process `ProxySession`, cProfile, per call):",
        "",
        "| function (top by own time) | own µs | cumulative µs | calls |",
        "|---|--:|--:|--:|",
    ]
    for name, tt, ct, count in profile.rows:
        lines.append(f"| `{name}` | {tt * 1e6:.1f} | {ct * 1e6:.1f} | {count:,} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

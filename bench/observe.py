"""Observability's cost (issue 25): the proxy's CPU per call with metrics and traces on, against
everything off, interleaved in one run.

Run ``python bench/observe.py`` (about a minute; ``--quick`` for a smoke run, ``--json FILE``
to keep the raw numbers, ``--check`` to exit 1 when a goal fails). Figures and their reading
are in docs/benchmarks.md, section "Observability cost (issue 25)".

Five ``strictmcp proxy`` processes over stdio (bench/proxy.py's :class:`~proxy.Peer`), each in
front of its own bench/echo_server.py, run for the whole benchmark:

- ``off``: no ``--metrics``, no OTLP endpoint (nothing is measured);
- ``off_again``: the same, a second process: what two identical proxies differ by, the floor
  under every other ratio;
- ``metrics``: ``--metrics 127.0.0.1:PORT``;
- ``traces``: metrics, and ``OTEL_EXPORTER_OTLP_ENDPOINT`` naming a receiver in this process
  on loopback that accepts every export and discards it; the default sampler (parent-based,
  ratio 0.01);
- ``traces_all``: the same at 100% sampling (``OTEL_TRACES_SAMPLER=always_on``).

Before any timing every contender must answer 150 calls as the echo server does and refuse an
invalid one (bench/proxy.py's ``check_peers``). Every round, the contenders' order rotating
round by round, each gets a batch of sequential calls and then a batch of pipelined calls (16
in flight), and the CPU time its process used over each batch is read (the kernel's per-process
CPU clock, nanoseconds, every thread of the process: the span exporter's thread counts). The
table gives each contender's median CPU per call over rounds, the ratio of medians to ``off``,
and the median and p10-p90 of the ratios paired round by round. After the rounds, the
``/metrics`` of the metric contenders must count the calls made, and the receiver must have
been sent spans by the traced ones.

``--decisions`` times the session's decisions alone instead, in this process
(``ProxySession.from_client`` + ``from_server`` on recorded lines, the observer attached as
the proxy attaches it): this thread's CPU time, no transport, no event loop wake-ups, the
contenders interleaved round by round. The span exporter's thread is not in it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import http.server
import json
import os
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import environment
from peers import free_port
from proxy import PROXY, SERVER, Peer, _line, _p10_p90, call_line, check_peers, opened, recorded
from strictmcp.enforce import Auditor
from strictmcp.proxy.session import ProxySession

CONTENDERS = ("off", "off_again", "metrics", "traces", "traces_all")
# Both off: what two identical proxy processes differ by is the floor under every ratio.
_OFF = frozenset({"off", "off_again"})
GOALS = {"metrics": 1.03, "traces": 1.10}  # CPU per call against off, at most (issue 25)


# --- the OTLP receiver ----------------------------------------------------------------------


class _Sink(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that accepts every export and keeps only how many came, by path."""

    received: dict[str, int]

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        self.received[self.path] = self.received.get(self.path, 0) + 1
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextlib.contextmanager
def receiver() -> Iterator[tuple[str, dict[str, int]]]:
    """An OTLP endpoint on loopback and the exports it was sent, by path."""
    received: dict[str, int] = {}
    handler = type("Sink", (_Sink,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()


def environments(endpoint: str) -> dict[str, dict[str, str]]:
    """Each contender's OTEL_* variables (on top of an environment that has none)."""
    traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "strictmcp-bench"}
    return {
        "off": {},
        "off_again": {},
        "metrics": {},
        "traces": traced,
        "traces_all": {**traced, "OTEL_TRACES_SAMPLER": "always_on"},
    }


# --- a process's CPU time -------------------------------------------------------------------

_LIBC = ctypes.CDLL(None, use_errno=True)


def cpu_clock(pid: int) -> int:
    """The kernel's CPU-time clock of process ``pid`` (every thread, nanoseconds), for
    :func:`time.clock_gettime_ns`: finer than ``/proc/PID/stat``'s clock ticks, which a batch
    of a few hundred calls would see as a handful."""
    clock = ctypes.c_int()
    error = _LIBC.clock_getcpuclockid(pid, ctypes.byref(clock))
    if error:
        raise SystemExit(f"cannot read the CPU clock of process {pid}: {os.strerror(error)}")
    return clock.value


# --- the proxy processes --------------------------------------------------------------------


@dataclass
class Proxy:
    """One contender: its proxy process, CPU clock and ``/metrics`` address (None: off)."""

    key: str
    peer: Peer
    clock: int
    metrics: str | None
    seq: list[float] = field(default_factory=list)  # CPU ns per call, one per round
    pipe: list[float] = field(default_factory=list)

    def cpu(self) -> int:
        return time.clock_gettime_ns(self.clock)


def start(key: str, otel: dict[str, str]) -> Proxy:
    """The proxy of contender ``key`` in front of its own echo server."""
    base = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    argv = list(PROXY)
    address = None
    if key not in _OFF:
        address = f"127.0.0.1:{free_port()}"
        argv[argv.index("--") : argv.index("--")] = ["--metrics", address]
    peer = Peer(key, argv, env={**base, **otel})
    return Proxy(key, peer, cpu_clock(peer.process.pid), address)


def scraped_calls(address: str) -> float:
    """The allowed calls ``/metrics`` at ``address`` counts."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("strictmcp_calls_total{") and 'strictmcp_decision="allowed"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def processes(rounds: int, seq_n: int, pipe_n: int) -> tuple[dict[str, Proxy], dict[str, int]]:
    """Check, warm up, then time ``rounds`` rounds of every contender; the contenders with
    their per-round figures, and the exports the receiver was sent."""
    with receiver() as (endpoint, received):
        otel = environments(endpoint)
        proxies = {key: start(key, otel[key]) for key in CONTENDERS}
        direct = Peer("direct", SERVER)
        try:
            for proxy in proxies.values():
                check_peers(direct, proxy.peer)
        finally:
            direct.close()
        for proxy in proxies.values():  # warm up, untimed
            proxy.peer.sequential(seq_n)
            proxy.peer.pipelined(pipe_n)
        made = {key: proxy.peer.next_id for key, proxy in proxies.items()}
        gc.collect()
        for index in range(rounds):
            shift = index % len(CONTENDERS)
            for key in CONTENDERS[shift:] + CONTENDERS[:shift]:
                proxy = proxies[key]
                before = proxy.cpu()
                proxy.peer.sequential(seq_n)
                middle = proxy.cpu()
                proxy.peer.pipelined(pipe_n)
                after = proxy.cpu()
                proxy.seq.append((middle - before) / seq_n)
                proxy.pipe.append((after - middle) / pipe_n)
        timed = rounds * (seq_n + pipe_n)
        for key, proxy in proxies.items():
            if proxy.metrics is None:
                continue
            counted = scraped_calls(proxy.metrics)
            if counted < timed:
                raise SystemExit(f"{key}: /metrics counts {counted} calls, fewer than {timed}")
            assert proxy.peer.next_id - made[key] == timed
        statuses = {key: proxy.peer.close() for key, proxy in proxies.items()}
        if any(statuses.values()):
            raise SystemExit(f"a proxy exited with a status: {statuses}")
        exports = dict(received)
    if not exports.get("/v1/traces"):
        raise SystemExit(f"the traced proxies sent no spans: {exports}")
    return proxies, exports


# --- the decisions alone --------------------------------------------------------------------


def decisions(rounds: int, calls: int) -> dict[str, list[float]]:
    """CPU ns per call of each contender's session decisions, one figure per round."""
    from strictmcp.proxy.observe import Telemetry  # noqa: PLC0415

    replies, answer = recorded()
    with receiver() as (endpoint, _):
        otel = environments(endpoint)
        telemetries: dict[str, Telemetry | None] = {}
        for key in CONTENDERS:
            saved = dict(os.environ)
            os.environ.update(otel[key])
            try:
                telemetries[key] = None if key in _OFF else Telemetry(traces=bool(otel[key]))
            finally:
                os.environ.clear()
                os.environ.update(saved)

        async def run() -> dict[str, list[float]]:
            sessions: dict[str, ProxySession] = {}
            for key, telemetry in telemetries.items():
                session = ProxySession(Auditor(None))
                if telemetry is not None:
                    telemetry.attach(session, "pipe")
                await opened(session, replies)
                sessions[key] = session
            next_id = 2
            costs: dict[str, list[float]] = {key: [] for key in CONTENDERS}
            for index in range(rounds + 1):  # the first round warms up, untimed
                shift = index % len(CONTENDERS)
                for key in CONTENDERS[shift:] + CONTENDERS[:shift]:
                    ids = range(next_id, next_id + calls)
                    next_id += calls
                    requests = [call_line(i) for i in ids]
                    answers = [_line({**answer, "id": i}) for i in ids]
                    session = sessions[key]
                    gc.disable()
                    begun = time.thread_time_ns()
                    for request, reply in zip(requests, answers, strict=True):
                        await session.from_client(request)
                        await session.from_server(reply)
                    elapsed = time.thread_time_ns() - begun
                    gc.enable()
                    if index:
                        costs[key].append(elapsed / calls)
            return costs

        try:
            return asyncio.run(run())
        finally:
            for telemetry in telemetries.values():
                if telemetry is not None:
                    telemetry.close()


# --- the table ------------------------------------------------------------------------------


def table(title: str, costs: dict[str, list[float]]) -> tuple[str, dict[str, dict[str, float]]]:
    """A Markdown table of each contender's median CPU ns per call and its ratios to off."""
    off = costs["off"]
    rows = [
        f"| {title} | CPU per call, median | ratio of medians | paired ratio, median "
        "(p10-p90) | goal |",
        "|---|--:|--:|--:|---|",
    ]
    figures: dict[str, dict[str, float]] = {}
    for key in CONTENDERS:
        mine = costs[key]
        paired = [a / b for a, b in zip(mine, off, strict=True)]
        low, high = _p10_p90(paired)
        median = statistics.median(mine)
        figures[key] = {
            "median_ns": median,
            "ratio": median / statistics.median(off),
            "paired": statistics.median(paired),
            "p10": low,
            "p90": high,
        }
        goal = GOALS.get(key)
        verdict = (
            ""
            if goal is None
            else (f"≤ {goal:.2f}: {'met' if figures[key]['paired'] <= goal else 'NOT met'}")
        )
        if key == "off":
            rows.append(f"| off | {median / 1000:.1f} µs | 1 | 1 | |")
            continue
        rows.append(
            f"| {key} | {median / 1000:.1f} µs | {figures[key]['ratio']:.3f} "
            f"| {figures[key]['paired']:.3f} ({low:.3f}-{high:.3f}) | {verdict} |"
        )
    return "\n".join(rows), figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--decisions", action="store_true", help="the decisions alone")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--json", metavar="FILE", help="write the raw numbers here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal fails")
    args = parser.parse_args(argv)
    env = environment()
    load = os.getloadavg()
    print(
        f"strictmcp observability cost: Python {env['python']}, {env['cpus']} CPUs "
        f"({env['processor']}), load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    numbers: dict[str, Any] = {"environment": env, "load_average": load}
    tables: list[dict[str, dict[str, float]]] = []
    if args.decisions:
        rounds = args.rounds or (5 if args.quick else 21)
        calls = 500 if args.quick else 3000
        costs = decisions(rounds, calls)
        print(f"\nIn-process decisions, {rounds} rounds of {calls} calls, this thread's CPU:\n")
        text, figures = table("decisions (request + answer)", costs)
        print(text)
        numbers["decisions"] = {"rounds": rounds, "calls": calls, "ns": costs, "figures": figures}
        tables.append(figures)
    else:
        rounds = args.rounds or (5 if args.quick else 21)
        seq_n, pipe_n = (200, 400) if args.quick else (600, 1500)
        proxies, exports = processes(rounds, seq_n, pipe_n)
        print(
            f"\nProxy processes over stdio, {rounds} rounds of {seq_n} sequential and {pipe_n} "
            f"pipelined calls (16 in flight); OTLP exports received: {exports}\n"
        )
        for name in ("sequential", "pipelined"):
            costs = {
                key: proxy.seq if name == "sequential" else proxy.pipe
                for key, proxy in proxies.items()
            }
            text, figures = table(name, costs)
            print(text + "\n")
            numbers[name] = {"ns": costs, "figures": figures}
            tables.append(figures)
        numbers.update(rounds=rounds, sequential_calls=seq_n, pipelined_calls=pipe_n)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=1) + "\n")
    failed = [
        key for figures in tables for key, goal in GOALS.items() if figures[key]["paired"] > goal
    ]
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())

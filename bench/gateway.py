"""The gateway (issue 22): its merged ``tools/list`` of many servers, and its memory.

Run ``python bench/gateway.py`` for both parts, ``--part listing`` or ``--part memory`` for one;
``--quick`` for a smoke run. The CPU per call through the gateway is bench/peers.py's (its rows
ending in ``-gateway``).

Listing (``--servers`` 20, ``--tools`` 50, ``--samples`` 120, ``--rounds`` 6): five rows in
interleaved rounds (the order rotating each round), each started once and listed once untimed
first, so that every server has answered its first listing:

- ``gateway``: ``strictmcp gateway --policy`` over stdio, in front of 20 bench/tools_server.py
  of 50 tools each;
- ``proxy``: ``strictmcp proxy`` in front of one tools_server.py of all 1,000 tools (the same
  bytes to check, from one server);
- ``gateway-no-lint``, ``proxy-no-lint``: the same with ``--listing-rules none`` (what the
  listing stage's lint rules cost);
- ``direct``: that server alone (the pipe and the bytes: the floor).

The client is this process on raw pipes: one request line written with ``os.write``, the
answer's line read with a blocking ``readline``; the clock stops when the line is read, and the
line is parsed and checked (its id, its 1,000 tools) after, untimed, so that the client's own
JSON is not in the figure. Figures: the median and p90 of the round trips per row.

The JSON itself: in this process, ``json.loads`` of the gateway's answer line and strictmcp's
own line encoder (``connect.lines.line_of``) of the parsed answer, the median of 20 each: what
one pass over the merged listing costs. With ``--profile FILE`` the gateway runs once more,
under cProfile (``python -m cProfile -o FILE -m strictmcp gateway ...``), for ``--samples``
listings; the functions taking the most time of their own are printed, and the time spent in
the ``json`` module's functions per listing.

Memory (``--counts`` 1 5 20, ``--sessions`` 8): the resident set (``VmRSS``) of the gateway's
own process, apart from its servers', which are summed separately:

- idle stdio servers: ``strictmcp gateway`` over stdio with N servers (bench/echo_server.py,
  one tool; and tools_server.py of 50 tools), after ``initialize``, one listing and one call,
  for each N of ``--counts``; the cost of one more idle server is the slope between the
  smallest and the largest N;
- HTTP sessions: ``strictmcp gateway --listen`` with 3 echo servers; one session opened to warm
  (``initialize``, ``notifications/initialized``, ``tools/list``, a call), then ``--sessions``
  more; the cost of one is the growth divided by their number. Each session has a gateway,
  and so servers, of its own: their processes and memory are given apart.
"""

from __future__ import annotations

import argparse
import contextlib
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

from engine import environment
from memory import children, rss_kib
from peers import (
    ECHO,
    GATEWAY,
    HttpClient,
    Launched,
    call_message,
    gateway_policy,
    initialize,
    launch,
    wait_announced,
)
from strictmcp.connect.lines import line_of

BENCH = Path(__file__).resolve().parent
TOOLS = [sys.executable, str(BENCH / "tools_server.py"), "--tools"]
PROXY = [sys.executable, "-m", "strictmcp.proxy"]
READ_SECONDS = 60.0


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


class Pipe:
    """A stdio MCP process driven on raw pipes, after its handshake."""

    def __init__(self, argv: Sequence[str], log: Path, cwd: Path) -> None:
        self.launched: Launched = launch(argv, log, stdio=True, env=None, cwd=cwd)
        process = self.launched.process
        assert process.stdin is not None
        assert process.stdout is not None
        self._fd = process.stdin.fileno()
        self._reader = process.stdout
        self.next_id = 1
        self.ask(initialize(0))
        self._write(_dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    @property
    def pid(self) -> int:
        return self.launched.process.pid

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def round_trip(self, message: dict[str, Any]) -> tuple[int, bytes]:
        """Send ``message``; the nanoseconds until its answer's line was read, and the line.
        Lines before it (a notification) are read in the time, and skipped."""
        request_id = message["id"]
        request = _dumps(message)
        read, clock = self._reader.readline, time.perf_counter_ns
        lines = []
        start = clock()
        self._write(request)
        while True:
            line = read()
            if not line:
                raise RuntimeError(f"it closed its output; {self.launched.failure()}")
            lines.append(line)
            if b'"method"' not in line[:200]:
                break
        elapsed = clock() - start
        answer = json.loads(lines[-1])
        if answer.get("id") != request_id:
            raise RuntimeError(f"an answer to another request: {lines[-1][:200]!r}")
        return elapsed, lines[-1]

    def ask(self, message: dict[str, Any]) -> Any:
        return json.loads(self.round_trip(message)[1])

    def listing(self) -> tuple[int, bytes]:
        self.next_id += 1
        return self.round_trip({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/list"})

    def close(self) -> int | None:
        """Close its input and wait for it to end (so that a profile is written)."""
        with contextlib.suppress(OSError):
            os.close(self._fd)
        try:
            return self.launched.process.wait(60)
        except subprocess.TimeoutExpired:
            self.launched.stop()
            return None


def tool_count(line: bytes) -> int:
    """The tools of a ``tools/list`` answer that are the servers' (not strictmcp's own)."""
    tools = json.loads(line)["result"]["tools"]
    return sum(1 for tool in tools if "tool_" in tool["name"])


# ---------------------------------------------------------------------------------------------
# The listing


def listing_rows(tmp: Path, servers: int, tools: int) -> dict[str, list[str]]:
    policy = gateway_policy(
        tmp, [(f"s{number:02d}", [*TOOLS, str(tools)]) for number in range(servers)]
    )
    everything = [*TOOLS, str(servers * tools)]
    gateway = [*GATEWAY, "--policy", str(policy)]
    return {
        "gateway": gateway,
        "gateway-no-lint": [*gateway, "--listing-rules", "none"],
        "proxy": [*PROXY, "--", *everything],
        "proxy-no-lint": [*PROXY, "--listing-rules", "none", "--", *everything],
        "direct": everything,
    }


def run_listing(args: argparse.Namespace, tmp: Path) -> None:
    servers, tools = args.servers, args.tools
    rows = listing_rows(tmp, servers, tools)
    expected = servers * tools
    pipes: dict[str, Pipe] = {}
    times: dict[str, list[int]] = {name: [] for name in rows}
    answers: dict[str, bytes] = {}
    try:
        for name, argv in rows.items():
            pipe = Pipe(argv, tmp / f"{name}.stderr", tmp)
            pipes[name] = pipe
            _, line = pipe.listing()  # the first listing, untimed
            if tool_count(line) != expected:
                raise RuntimeError(f"{name}: {tool_count(line)} tools, not {expected}")
        per_round = -(-args.samples // args.rounds)
        names = list(rows)
        for index in range(args.rounds):
            order = names[index % len(names) :] + names[: index % len(names)]
            for name in order:
                gc.collect()
                gc.disable()
                try:
                    got = [pipes[name].listing() for _ in range(per_round)]
                finally:
                    gc.enable()
                for elapsed, line in got:
                    if tool_count(line) != expected:
                        raise RuntimeError(f"{name}: a listing of {tool_count(line)} tools")
                    times[name].append(elapsed)
                answers[name] = got[-1][1]
            print(f"round {index + 1}/{args.rounds}", flush=True)
    finally:
        for pipe in pipes.values():
            pipe.close()

    print(
        f"\n`tools/list` round trip, {servers} servers of {tools} tools "
        f"({len(answers['gateway']):,} bytes answered), {len(times['gateway'])} samples per row:\n"
    )
    print("| row | median | p90 |")
    print("|---|--:|--:|")
    for name in rows:
        print(f"| {name} | {_ms(statistics.median(times[name]))} | {_ms(_p90(times[name]))} |")
    loads, dumps = json_pass(answers["gateway"])
    print(
        f"\nOne pass of JSON over the gateway's answer, in this process (median of 20): "
        f"json.loads {_ms(loads)}, line_of {_ms(dumps)}, together {_ms(loads + dumps)}."
    )
    if args.profile is not None:
        profile(args, rows["gateway"], args.profile, tmp, expected)


def json_pass(line: bytes) -> tuple[float, float]:
    """The median nanoseconds of ``json.loads(line)`` and of ``line_of`` of its object."""
    obj = json.loads(line)
    loads, dumps = [], []
    for _ in range(20):
        start = time.perf_counter_ns()
        json.loads(line)
        loads.append(time.perf_counter_ns() - start)
        start = time.perf_counter_ns()
        line_of(obj)
        dumps.append(time.perf_counter_ns() - start)
    return statistics.median(loads), statistics.median(dumps)


def profile(args: argparse.Namespace, argv: list[str], out: Path, tmp: Path, expected: int) -> None:
    """The gateway under cProfile for ``--samples`` listings after the first; its top
    functions by their own time, and the ``json`` module's share."""
    profiled = [sys.executable, "-m", "cProfile", "-o", str(out), *argv[1:]]
    pipe = Pipe(profiled, tmp / "profile.stderr", tmp)
    try:
        pipe.listing()
        started = time.perf_counter_ns()
        for _ in range(args.samples):
            _, line = pipe.listing()
        elapsed = time.perf_counter_ns() - started
        if tool_count(line) != expected:
            raise RuntimeError("the profiled gateway lost tools")
    finally:
        status = pipe.close()
    if status is None or not out.exists():
        print(f"\nno profile written (status {status})")
        return
    stats = pstats.Stats(str(out))
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    # The json module's functions hold the C parser's and encoder's time (cProfile does not
    # see a call of the scanner or encoder object); the duplicate-key hook is strictmcp's.
    json_time = sum(
        entry[2]
        for key, entry in raw.items()
        if f"{os.sep}json{os.sep}" in key[0] or key[2] == "_unique_keys"
    )
    listings = args.samples + 1  # the untimed first one is in the profile too
    each = elapsed / args.samples / 1e6
    print(
        f"\nProfiled gateway: {args.samples} listings, {each:.1f} ms each under the profiler; "
        f"JSON (the json module's functions and the duplicate-key hook) "
        f"{json_time / listings * 1e3:.1f} ms of it per listing "
        f"({json_time / listings * 1e3 / each:.0%}; start-up included)."
    )
    stats.sort_stats("tottime").print_stats(25)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def _p90(values: list[int]) -> float:
    return statistics.quantiles(values, n=10)[-1]


# ---------------------------------------------------------------------------------------------
# Memory


@dataclass
class Sample:
    label: str
    servers: int
    gateway_kib: int
    servers_kib: int
    processes: int
    notes: list[str] = field(default_factory=list)


def settle() -> None:
    time.sleep(1.0)  # the servers' start-up and the gateway's allocations are over


def tree_rss(pid: int) -> tuple[int, int]:
    """The summed resident sets (KiB) of ``pid``'s descendants, and how many there are."""
    total = count = 0
    pending = children(pid)
    while pending:
        child = pending.pop()
        with contextlib.suppress(OSError, RuntimeError):
            total += rss_kib(child)
            count += 1
            pending += children(child)
    return total, count


def idle_servers(tmp: Path, label: str, server: list[str], count: int) -> Sample:
    policy = gateway_policy(tmp, [(f"s{number:02d}", server) for number in range(count)])
    pipe = Pipe([*GATEWAY, "--policy", str(policy)], tmp / f"memory-{label}-{count}.stderr", tmp)
    try:
        pipe.listing()
        tool = "s00__tool_000" if "tools_server" in label else "s00__create_issue"
        answer = pipe.ask(call_message(99, {"repository": "octo/hello", "title": "x"}, tool))
        if "result" not in answer:
            raise RuntimeError(f"the call failed: {str(answer)[:200]}")
        settle()
        servers_kib, processes = tree_rss(pipe.pid)
        return Sample(label, count, rss_kib(pipe.pid), servers_kib, processes)
    finally:
        pipe.close()


def run_memory(args: argparse.Namespace, tmp: Path) -> None:
    samples = []
    for label, server in (("echo_server.py", ECHO), ("tools_server.py 50", [*TOOLS, "50"])):
        for count in args.counts:
            samples.append(idle_servers(tmp, label, server, count))
            print(f"{label} x {count}: done", flush=True)
    single = Pipe([*PROXY, "--", *ECHO], tmp / "memory-proxy.stderr", tmp)
    try:
        single.listing()
        settle()
        proxy_kib = rss_kib(single.pid)
    finally:
        single.close()

    print("\nIdle stdio servers behind `strictmcp gateway` (resident set, KiB):\n")
    print("| servers | each server's tools | gateway process | its servers, summed | processes |")
    print("|--:|---|--:|--:|--:|")
    for sample in samples:
        print(
            f"| {sample.servers} | {sample.label} | {sample.gateway_kib:,} | "
            f"{sample.servers_kib:,} | {sample.processes} |"
        )
    print(f"\n`strictmcp proxy` in front of one echo_server.py: {proxy_kib:,} KiB.")
    for label in ("echo_server.py", "tools_server.py 50"):
        mine = [s for s in samples if s.label == label]
        low, high = mine[0], mine[-1]
        if high.servers > low.servers:
            each = (high.gateway_kib - low.gateway_kib) / (high.servers - low.servers)
            theirs = (high.servers_kib - low.servers_kib) / (high.servers - low.servers)
            print(
                f"One more idle server ({label}): the gateway {each:,.0f} KiB, "
                f"the server's own process {theirs:,.0f} KiB."
            )
    sessions(args, tmp)


def sessions(args: argparse.Namespace, tmp: Path) -> None:
    servers = [(name, ECHO) for name in ("one", "two", "three")]
    policy = gateway_policy(tmp, servers)
    argv = [*GATEWAY, "--policy", str(policy), "--listen", "127.0.0.1:0"]
    launched = launch(argv, tmp / "memory-http.stderr", stdio=False, env=None, cwd=tmp)
    clients: list[HttpClient] = []
    try:
        url = wait_announced(launched)
        pid = launched.process.pid

        def open_session() -> None:
            client = HttpClient(url, modern=False)
            client.tool = "one__create_issue"
            client.ask({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
            client.ask(call_message(1, tool=client.tool))
            clients.append(client)

        open_session()  # the first pays for imports and caches
        settle()
        before, (kids_before, count_before) = rss_kib(pid), tree_rss(pid)
        for _ in range(args.sessions):
            open_session()
        settle()
        after, (kids_after, count_after) = rss_kib(pid), tree_rss(pid)
    finally:
        for client in clients:
            client.close()
        launched.stop()
    n = args.sessions
    print(
        f"\nHTTP sessions of `strictmcp gateway --listen` with 3 echo servers, {n} sessions "
        f"after one to warm: the gateway process {before:,} -> {after:,} KiB, "
        f"{(after - before) / n:,.0f} KiB per session; its servers {count_before} -> "
        f"{count_after} processes, {kids_before:,} -> {kids_after:,} KiB, "
        f"{(kids_after - kids_before) / n:,.0f} KiB per session."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--part", choices=["listing", "memory"], action="append")
    parser.add_argument("--quick", action="store_true", help="smoke run: few samples")
    parser.add_argument("--servers", type=int, default=20)
    parser.add_argument("--tools", type=int, default=50)
    parser.add_argument("--samples", type=int, help="timed listings per row (default 120)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--profile", type=Path, metavar="FILE", help="profile the gateway too")
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 5, 20])
    parser.add_argument("--sessions", type=int, default=8)
    args = parser.parse_args(argv)
    args.samples = args.samples or (12 if args.quick else 120)
    if args.quick:
        args.rounds = min(args.rounds, 2)
    parts = args.part or ["listing", "memory"]
    env = environment()
    print(
        f"strictmcp gateway benchmark: Python {env['python']}, {env['cpus']} CPUs "
        f"({env['processor']}); load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="strictmcp-gateway-") as tmp:
        if "listing" in parts:
            run_listing(args, Path(tmp))
        if "memory" in parts:
            run_memory(args, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Before and after: two versions of strictmcp's proxy and protocol layer, in one sitting.

Run ``python bench/compare.py --base REV`` (a git revision; default ``HEAD~1``) from the
checkout whose working tree is "after". REV's ``src/`` and ``bench/`` are extracted with
``git archive`` into a temporary directory, and then, rounds interleaved so that machine noise
falls on both alike:

- proxy: the echo server directly, behind REV's ``strictmcp.proxy`` and behind this tree's,
  each a subprocess on raw pipes (bench/proxy.py's :class:`~proxy.Peer`), the order rotating
  round by round: the median of the sequential per-call latency, the median calls per second
  with 16 in flight, and each proxy process's CPU time per call over the timed rounds;
- the protocol layer and the proxy's decisions: ``bench/protocol.py --quick --json`` and
  bench/proxy.py's in-process ``session_cost``, each version's own script on its own code, in
  alternating child processes: the median of each contender over the runs.

Each figure is printed for both versions with the ratio after/before (for latencies and
costs, above 1 is slower; for throughput, below 1 is slower). Figures go in
docs/benchmarks.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from proxy import PROXY, SERVER, Peer, _line, call_line, check_peers

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def extract(revision: str, into: Path) -> Path:
    """REV's src/ and bench/ under ``into``; the root of that copy."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision, "src", "bench"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def env_for(root: Path) -> dict[str, str]:
    """The environment that makes a child import strictmcp from ``root``/src."""
    return {**os.environ, "PYTHONPATH": str(root / "src")}


def proxies(base: Path, rounds: int, seq_n: int, pipe_n: int) -> dict[str, dict[str, float]]:
    """Per peer: median sequential latency (ns), median pipelined calls/s, CPU ns per call."""
    peers = [
        Peer("direct", SERVER),
        Peer("before", PROXY, env=env_for(base)),
        Peer("after", PROXY, env=env_for(ROOT)),
    ]
    direct = peers[0]
    for peer in peers[1:]:
        check_peers(direct, peer)
    for peer in peers:  # warm up, untimed
        peer.sequential(seq_n)
        peer.pipelined(pipe_n)
    latencies: dict[str, list[float]] = {p.key: [] for p in peers}
    rates: dict[str, list[float]] = {p.key: [] for p in peers}
    cpu_before = {p.key: p.cpu_seconds() for p in peers}
    for index in range(rounds):
        order = peers[index % 3 :] + peers[: index % 3]
        for peer in order:
            latencies[peer.key].append(statistics.median(peer.sequential(seq_n)))
        for peer in order:
            rates[peer.key].append(1e9 / peer.pipelined(pipe_n))
    figures: dict[str, dict[str, float]] = {}
    for peer in peers:
        start, end = cpu_before[peer.key], peer.cpu_seconds()
        cpu = float("nan") if start is None or end is None else (end - start)
        figures[peer.key] = {
            "latency_ns": statistics.median(latencies[peer.key]),
            "calls_per_second": statistics.median(rates[peer.key]),
            "cpu_ns_per_call": cpu / (rounds * (seq_n + pipe_n)) * 1e9,
        }
    statuses = [peer.close() for peer in peers]
    if any(statuses):
        raise SystemExit(f"a peer exited with status {statuses}")
    return figures


_DECISIONS = """
import sys
sys.path.insert(0, {bench!r})
import proxy
print(proxy.session_cost({calls}, {answer!r}))
"""


def in_process(base: Path, runs: int, answer: bytes) -> dict[str, dict[str, list[float]]]:
    """Per version, per contender of bench/protocol.py (and the proxy's decisions): the
    median ns of each run, runs alternating between the versions."""
    samples: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as tmp:
        numbers = Path(tmp) / "numbers.json"
        for index in range(runs):
            order = [("before", base), ("after", ROOT)]
            if index % 2:
                order.reverse()
            for key, root in order:
                script = root / "bench" / "protocol.py"
                subprocess.run(
                    [sys.executable, str(script), "--quick", "--json", str(numbers)],
                    env=env_for(root),
                    cwd=root / "bench",
                    check=True,
                    capture_output=True,
                )
                for contender in json.loads(numbers.read_text())["contenders"]:
                    if contender["key"] in ("a", "b"):
                        continue  # the SDK's ways: not strictmcp's code
                    name = f"protocol: {contender['group']} [{contender['key']}]"
                    samples[key].setdefault(name, []).append(contender["median_ns"])
                code = _DECISIONS.format(bench=str(root / "bench"), calls=5000, answer=answer)
                decided = subprocess.run(
                    [sys.executable, "-c", code],
                    env=env_for(root),
                    cwd=root / "bench",
                    check=True,
                    capture_output=True,
                    text=True,
                )
                name = "proxy decisions per call (in-process ProxySession)"
                samples[key].setdefault(name, []).append(float(decided.stdout.strip()))
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", default="HEAD~1", help="the revision to compare against")
    parser.add_argument("--rounds", type=int, default=24, help="interleaved proxy rounds")
    parser.add_argument("--runs", type=int, default=5, help="in-process runs per version")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = extract(args.base, Path(tmp))
        figures = proxies(base, args.rounds, 200, 1000)
        direct = Peer("direct", SERVER)
        answer = _line(direct.ask(call_line(1)))
        direct.close()
        samples = in_process(base, args.runs, answer)
    rows: list[dict[str, Any]] = []
    for label, key, unit in (
        ("proxy: median latency per call, sequential", "latency_ns", "µs"),
        ("proxy: calls per second, 16 in flight", "calls_per_second", "/s"),
        ("proxy: CPU time per call (proxy process)", "cpu_ns_per_call", "µs"),
    ):
        before, after = figures["before"][key], figures["after"][key]
        rows.append({"figure": label, "before": before, "after": after, "unit": unit})
    for name in samples["after"]:
        if name not in samples["before"]:
            continue
        before = statistics.median(samples["before"][name])
        after = statistics.median(samples["after"][name])
        rows.append({"figure": name, "before": before, "after": after, "unit": "µs"})
    print(f"before: {args.base}; after: the working tree; direct echo server for reference:")
    print(
        f"{figures['direct']['latency_ns'] / 1000:.0f} µs per call, "
        f"{figures['direct']['calls_per_second']:,.0f} calls/s\n"
    )
    print("| figure | before | after | after / before |")
    print("|---|--:|--:|--:|")
    for row in rows:
        scale = 1 if row["unit"] == "/s" else 1 / 1000
        shown = "{:,.1f}" if row["unit"] == "µs" else "{:,.0f}"
        print(
            f"| {row['figure']} | {shown.format(row['before'] * scale)} {row['unit']} | "
            f"{shown.format(row['after'] * scale)} {row['unit']} | "
            f"{row['after'] / row['before']:.3f} |"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"base": args.base, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

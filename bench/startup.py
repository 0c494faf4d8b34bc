"""Start-up benchmark: how long ``strictmcp`` takes before it answers anything.

Run ``python bench/startup.py`` (about half a minute); ``--runs N`` for more than 10 runs of
each, ``--json FILE`` to keep every time. Figures and their reading are in docs/benchmarks.md,
section "Start-up".

Three figures, each the median (and the p10-p90) of ``--runs`` fresh processes, with a warm
file cache and the ``.pyc`` files written by an untimed first run of each:

- ``strictmcp --help``: from spawning the console script beside this interpreter to its exit.
- the echo server alone: from spawning ``python bench/echo_server.py`` to reading its answer
  to ``initialize`` (what a client waits for with no proxy in front).
- ``strictmcp proxy -- python bench/echo_server.py``: the same, through the proxy. Its
  figure less the server's alone is what the proxy adds to a client's first answer; the runs
  alternate with the server's own, so machine noise lands on both alike.

Each process gets ``initialize`` on its stdin as soon as it is spawned, as a client writes it;
the clock stops when the answer's line is read whole. Time is ``time.perf_counter``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent
STRICTMCP = str(Path(sys.executable).with_name("strictmcp"))
SERVER = [sys.executable, str(BENCH / "echo_server.py")]
PROXY = [STRICTMCP, "proxy", "--", *SERVER]
HELP = [STRICTMCP, "--help"]
REVISION = "2025-06-18"
INITIALIZE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": REVISION,
                "capabilities": {},
                "clientInfo": {"name": "strictmcp-bench", "version": "1.0.0"},
            },
        }
    ).encode()
    + b"\n"
)


def time_exit(argv: Sequence[str]) -> float:
    """Seconds from spawning ``argv`` to its exit (status 0, output discarded)."""
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def time_initialize(argv: Sequence[str]) -> float:
    """Seconds from spawning the stdio MCP server ``argv`` to reading its answer to
    ``initialize``, which must be a result."""
    start = time.perf_counter()
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(INITIALIZE)
        process.stdin.flush()
        line = process.stdout.readline()
        elapsed = time.perf_counter() - start
        process.stdin.close()
        process.wait(timeout=30)
    answer = json.loads(line)
    if answer.get("id") != 1 or "result" not in answer:
        raise SystemExit(f"{argv[0]}: no result for initialize")
    return elapsed


def spread(times: Sequence[float]) -> str:
    """Median and p10-p90 of ``times``, in milliseconds."""
    deciles = statistics.quantiles(times, n=10, method="inclusive")
    median = statistics.median(times) * 1000
    return f"{median:7.1f} ms  (p10-p90 {deciles[0] * 1000:.1f}-{deciles[-1] * 1000:.1f})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="processes per figure (10)")
    parser.add_argument("--json", metavar="FILE", help="also write every time to FILE")
    args = parser.parse_args(argv)
    # Untimed: writes the .pyc files and warms the file cache for every timed run.
    time_exit(HELP)
    time_initialize(SERVER)
    time_initialize(PROXY)
    times: dict[str, list[float]] = {"help": [], "server": [], "proxy": []}
    for run in range(args.runs):
        times["help"].append(time_exit(HELP))
        pair = [("server", SERVER), ("proxy", PROXY)]
        for name, command in pair if run % 2 == 0 else reversed(pair):
            times[name].append(time_initialize(command))
    added = [p - s for p, s in zip(times["proxy"], times["server"], strict=True)]
    print(f"strictmcp --help                       {spread(times['help'])}")
    print(f"echo server alone, to initialize       {spread(times['server'])}")
    print(f"strictmcp proxy + server, to initialize {spread(times['proxy'])}")
    print(f"proxy added (paired by run)            {spread(added)}")
    if args.json:
        Path(args.json).write_text(json.dumps({**times, "added": added}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

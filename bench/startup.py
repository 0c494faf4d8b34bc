"""Start-up benchmark: how long ``strictmcp`` takes before it answers anything.

Run ``python bench/startup.py`` (about half a minute); ``--runs N`` for more than 10 runs of
each, ``--json FILE`` to keep every time, ``--python PYTHON`` (repeated) to time the
installations of those interpreters instead of this one's, interleaved round by round, with
the paired CPU ratios of each to the first. Figures and their reading are in
docs/benchmarks.md, section "Start-up".

The figures, each the median (and the p10-p90) of ``--runs`` fresh processes, with a warm
file cache and the ``.pyc`` files written by an untimed first run of each:

- ``strictmcp --help``: from spawning the console script beside the interpreter to its exit,
  wall clock and CPU.
- the echo server alone: from spawning ``python bench/echo_server.py`` to reading its answer
  to ``initialize`` (what a client waits for with no proxy in front).
- ``strictmcp proxy -- python bench/echo_server.py``: the same, through the proxy. Its
  figure less the server's alone is what the proxy adds to a client's first answer; the runs
  alternate with the server's own, so machine noise lands on both alike.
- the proxy's CPU, less the server's: the CPU of the proxy (with the server it waits for)
  from spawn to its exit at the end of its input, just after the answer, less the server's
  own. Unlike wall-clock time it does not grow with the load of a shared machine.

Each process gets ``initialize`` on its stdin as soon as it is spawned, as a client writes it;
the clock stops when the answer's line is read whole. Time is ``time.perf_counter``; CPU is
the user and system time of the children (``RUSAGE_CHILDREN``).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
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


@dataclass(frozen=True)
class Contender:
    """One installation: its interpreter, the ``strictmcp`` script beside it, the commands."""

    python: str

    @property
    def server(self) -> list[str]:
        return [self.python, str(BENCH / "echo_server.py")]

    @property
    def proxy(self) -> list[str]:
        return [str(Path(self.python).with_name("strictmcp")), "proxy", "--", *self.server]

    @property
    def help(self) -> list[str]:
        return [str(Path(self.python).with_name("strictmcp")), "--help"]


@dataclass(frozen=True)
class Timed:
    """Wall-clock seconds to the figure's end, and the CPU seconds of the process (and its
    children) from spawn to exit."""

    wall: float
    cpu: float


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def time_exit(argv: Sequence[str]) -> Timed:
    """``argv`` from spawn to its exit (status 0, output discarded)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    return Timed(time.perf_counter() - start, _children_cpu() - cpu)


def time_initialize(argv: Sequence[str]) -> Timed:
    """The stdio MCP server ``argv`` from spawn to reading its answer to ``initialize``, which
    must be a result (wall), and to its exit at the end of its input (CPU)."""
    cpu = _children_cpu()
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
    return Timed(elapsed, _children_cpu() - cpu)


def spread(times: Sequence[float]) -> str:
    """Median and p10-p90 of ``times``, in milliseconds."""
    deciles = statistics.quantiles(times, n=10, method="inclusive")
    median = statistics.median(times) * 1000
    return f"{median:7.1f} ms  (p10-p90 {deciles[0] * 1000:.1f}-{deciles[-1] * 1000:.1f})"


def ratios(ours: Sequence[float], theirs: Sequence[float]) -> str:
    """Median and p10-p90 of the paired ratios ``ours / theirs``."""
    paired = [a / b for a, b in zip(ours, theirs, strict=True)]
    deciles = statistics.quantiles(paired, n=10, method="inclusive")
    return f"{statistics.median(paired):.2f}  (p10-p90 {deciles[0]:.2f}-{deciles[-1]:.2f})"


Figures = dict[str, list[float]]


def measure(contenders: Sequence[Contender], runs: int) -> list[Figures]:
    """Every figure of every contender, the contenders interleaved round by round."""
    for contender in contenders:
        # Untimed: writes the .pyc files and warms the file cache for every timed run.
        time_exit(contender.help)
        time_initialize(contender.server)
        time_initialize(contender.proxy)
    found: list[Figures] = [{} for _ in contenders]
    for run in range(runs):
        order = list(zip(contenders, found, strict=False))
        for contender, figures in order if run % 2 == 0 else reversed(order):
            help_ = time_exit(contender.help)
            pair = [("server", contender.server), ("proxy", contender.proxy)]
            timed = {
                name: time_initialize(command)
                for name, command in (pair if run % 2 == 0 else reversed(pair))
            }
            for name, value in [
                ("help", help_.wall),
                ("help cpu", help_.cpu),
                ("server", timed["server"].wall),
                ("proxy", timed["proxy"].wall),
                ("added", timed["proxy"].wall - timed["server"].wall),
                ("added cpu", timed["proxy"].cpu - timed["server"].cpu),
            ]:
                figures.setdefault(name, []).append(value)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="processes per figure (10)")
    parser.add_argument("--json", metavar="FILE", help="also write every time to FILE")
    parser.add_argument(
        "--python",
        action="append",
        metavar="PYTHON",
        help="the interpreter of an installation to time (repeat to compare, interleaved;"
        " default: this one)",
    )
    args = parser.parse_args(argv)
    contenders = [Contender(python) for python in args.python or [sys.executable]]
    found = measure(contenders, args.runs)
    for contender, figures in zip(contenders, found, strict=True):
        print(contender.python)
        print(f"  strictmcp --help                        {spread(figures['help'])}")
        print(f"  strictmcp --help, CPU                   {spread(figures['help cpu'])}")
        print(f"  echo server alone, to initialize        {spread(figures['server'])}")
        print(f"  strictmcp proxy + server, to initialize {spread(figures['proxy'])}")
        print(f"  proxy added (paired by run)             {spread(figures['added'])}")
        print(f"  proxy added, CPU (paired by run)        {spread(figures['added cpu'])}")
    if len(found) > 1:
        for name in ("help cpu", "added cpu"):
            for contender, figures in zip(contenders[1:], found[1:], strict=True):
                print(f"{name}: {contender.python} / {contenders[0].python}:")
                print(f"  {ratios(figures[name], found[0][name])}")
    if args.json:
        every = {c.python: figures for c, figures in zip(contenders, found, strict=True)}
        Path(args.json).write_text(json.dumps(every, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The per-message path alone, one build against another, interleaved.

``python bench/hot_path.py --build DIR [--build DIR ...] [--rounds N] [--calls N]`` times
the proxy's decisions on a ``tools/call`` and its answer (``ProxySession.from_client`` and
``from_server`` on recorded lines, as bench/proxy.py's "decisions alone": no pipes, no event
loop wake-ups) in a fresh process per build and round, the builds' order alternating round by
round. A build is a directory put first on ``PYTHONPATH`` (``src`` for the pure-Python
sources, ``build/compiled`` for ``make compiled``'s). Each child measures its own thread's
CPU time, which other work on a shared machine hardly moves; the table gives each build's
median over rounds and its ratio to the first build's, paired round by round.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import strictmcp
from proxy import _line, call_line, opened, recorded
from strictmcp.enforce.audit import Auditor
from strictmcp.proxy.session import ProxySession

BENCH = Path(__file__).resolve().parent


def child(calls: int) -> None:
    """Print the decisions' CPU ns per call under this process's PYTHONPATH."""
    replies, answer = recorded()
    requests = [call_line(i) for i in range(1, calls + 1)]
    answers = [_line({**answer, "id": i}) for i in range(1, calls + 1)]

    async def run() -> float:
        session = ProxySession(Auditor(None))
        await opened(session, replies)
        warm = 200
        for request, reply in zip(requests[:warm], answers[:warm], strict=True):
            await session.from_client(request)
            await session.from_server(reply)
        gc.disable()
        start = time.thread_time_ns()
        for request, reply in zip(requests[warm:], answers[warm:], strict=True):
            routed = await session.from_client(request)
            if routed.forward != [request]:
                raise SystemExit("the session did not forward the call unchanged")
            await session.from_server(reply)
        elapsed = time.thread_time_ns() - start
        gc.enable()
        return elapsed / (calls - warm)

    cost = asyncio.run(run())
    print(json.dumps({"ns": cost, "build": strictmcp.build()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--build", action="append", required=True, metavar="DIR")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.calls)
        return
    builds = [str(Path(build).resolve()) for build in args.build]
    costs: dict[str, list[float]] = {build: [] for build in builds}
    kinds: dict[str, str] = {}
    for round_ in range(args.rounds):
        order = builds if round_ % 2 == 0 else builds[::-1]
        for build in order:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([build, str(BENCH)])}
            done = subprocess.run(
                [sys.executable, __file__, "--child", "--calls", str(args.calls), "--build", build],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            figures = json.loads(done.stdout.splitlines()[-1])
            costs[build].append(figures["ns"])
            kinds[build] = figures["build"]
    first = costs[builds[0]]
    print("| build | kind | decisions per call (request + answer), CPU median | ratio to first |")
    print("|---|---|--:|--:|")
    for build in builds:
        ratios = [mine / theirs for mine, theirs in zip(costs[build], first, strict=True)]
        print(
            f"| {build} | {kinds[build]} | {statistics.median(costs[build]) / 1000:.1f} µs "
            f"| {statistics.median(ratios):.3f} |"
        )


if __name__ == "__main__":
    main()

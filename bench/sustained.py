"""Sustained load on the stdio proxy: what its memory does over many calls.

The proxy (``python -m strictmcp.proxy``, enforce mode, in front of bench/echo_server.py) is
sent tools/call requests with 16 in flight for ``--seconds``; at each quarter of the run the
script reads the proxy's resident memory from /proc. A proxy that keeps something per call
it no longer needs shows it as memory growing with the calls; one that does not stays flat
after its warm-up. The code measured is whatever ``strictmcp`` this interpreter imports:
point ``PYTHONPATH`` at another tree's ``src`` to measure that one.

    PYTHONPATH=$PWD/src .venv/bin/python bench/sustained.py --seconds 40
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proxy import PROXY, Peer


def rss_mib(pid: int) -> float:
    """The resident memory of process ``pid``, in MiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc: Linux only")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=40.0, help="length of the run")
    args = parser.parse_args(argv)
    peer = Peer("proxy", PROXY, env=dict(os.environ))
    try:
        pid = peer.process.pid
        start_cpu = peer.cpu_seconds() or 0.0
        started = time.perf_counter()
        calls = 0
        marks = [args.seconds * quarter / 4 for quarter in (1, 2, 3, 4)]
        print("| after | calls | calls/s | proxy RSS |")
        print("|--:|--:|--:|--:|")
        while marks:
            peer.pipelined(1_000)
            calls += 1_000
            elapsed = time.perf_counter() - started
            if elapsed >= marks[0]:
                marks.pop(0)
                print(
                    f"| {elapsed:.0f} s | {calls:,} | {calls / elapsed:,.0f} | "
                    f"{rss_mib(pid):.0f} MiB |",
                    flush=True,
                )
        cpu = (peer.cpu_seconds() or 0.0) - start_cpu
        print(f"\nproxy CPU per call: {cpu / calls * 1e6:.0f} µs")
    finally:
        peer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

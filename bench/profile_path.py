"""Where a proxied call's CPU goes: the stdio proxy profiled while the peers' client drives it.

``python bench/profile_path.py [--calls N] [--sort tottime|cumtime] [--top K] [--gateway]``
runs ``strictmcp proxy`` (or ``strictmcp gateway`` in front of one server) under cProfile (on
its CPU clock) in
front of bench/echo_server.py, sends the peers benchmark's calls (half one at a time, half 16
in flight), closes its input and prints the functions that took the most time. cProfile
slows Python code down several times over and C code hardly at all: read the shares, not the
microseconds. For the whole path without that distortion, compare the ``stdio-floor`` and
``stdio-strictmcp`` rows of bench/peers.py.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peers import ECHO, GATEWAY_SERVERS, Launched, StdioClient, gateway_policy, launch


def child(out: str, module: str, argv: list[str]) -> None:
    """Run ``python -m module argv...`` profiled on this thread's CPU clock, not the wall
    clock: a write that wakes the server would otherwise count the server's turn too."""
    profiler = cProfile.Profile(time.thread_time)
    sys.argv = [module, *argv]
    profiler.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        profiler.disable()
        profiler.dump_stats(out)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3], sys.argv[4:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--sort", default="tottime", choices=("tottime", "cumtime"))
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument("--callees", nargs="+", default=[], help="print these functions' callees")
    parser.add_argument("--gateway", action="store_true", help="profile the gateway instead")
    parser.add_argument(
        "--proxy-option",
        action="append",
        default=[],
        help="an option for the proxy (repeatable), e.g. --proxy-option=--metrics=127.0.0.1:0",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="strictmcp-profile-") as tmp:
        out = Path(tmp) / "profile"
        profiled = [sys.executable, __file__, "--child", str(out)]
        if args.gateway:
            policy = gateway_policy(Path(tmp), [(name, ECHO) for name in GATEWAY_SERVERS[:1]])
            argv = [*profiled, "strictmcp", "gateway", "--policy", str(policy), *args.proxy_option]
            tool = f"{GATEWAY_SERVERS[0]}__create_issue"
        else:
            argv = [*profiled, "strictmcp.proxy", *args.proxy_option, "--", *ECHO]
            tool = "create_issue"
        launched: Launched = launch(argv, Path(tmp) / "log", stdio=True, env=None, cwd=Path(tmp))
        client = StdioClient(launched)
        client.tool = tool
        client.sequential(args.calls // 2)
        client.pipelined(args.calls - args.calls // 2)
        process: subprocess.Popen[bytes] = launched.process
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=120)
        stats = pstats.Stats(str(out))
        stats.sort_stats(args.sort).print_stats(args.top)
        if args.callees:
            stats.print_callees(*args.callees)


if __name__ == "__main__":
    main()

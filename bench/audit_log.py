"""A large audit log for ``strictmcp audit report``, and what reading it costs.

Run ``python bench/audit_log.py LOG --size 1000`` to write LOG (about that many MB of
records as the proxy writes them, every one naming a new tool, server, identity and rule, over
26 years, with a 30 MB line halfway), then ``python bench/audit_log.py LOG --read`` to run
``strictmcp audit report`` on it and print its CPU time, wall time and peak memory (VmHWM,
the process's own, read as it ends) (docs/benchmarks.md, "Audit report").
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

_PEAK = """
import atexit, sys
from pathlib import Path
from strictmcp.cli import main
atexit.register(lambda: print(Path("/proc/self/status").read_text(), file=sys.stderr))
main()
"""
_RECORD = {
    "time": "{year}-0{month}-1{day}T10:00:00Z",
    "direction": "c2s",
    "method": "tools/call",
    "tool": "tool-{n}",
    "stage": "arguments",
    "action": "refused",
    "mode": "enforce",
    "code": "rule-{n}",
    "severity": "error",
    "pointer": "/params/arguments/path",
    "identity": {"subject": "who-{n}", "clientId": "desktop"},
    "server": "server-{n}",
}


def write(log: Path, megabytes: int) -> int:
    """Write about ``megabytes`` MB of records to ``log``; the number of records."""
    template = json.dumps(_RECORD).replace("{", "{{").replace("}", "}}")
    for field in ("year", "month", "day", "n"):
        template = template.replace("{{" + field + "}}", "{" + field + "}")
    per_line = len(template.format(n=10**6, year=2000, month=1, day=0)) + 1
    count = megabytes * 1_000_000 // per_line
    with log.open("w", encoding="utf-8") as out:
        chunk = []
        for n in range(count):
            chunk.append(template.format(n=n, year=2000 + n % 26, month=1 + n % 9, day=n % 10))
            if n == count // 2:
                chunk.append('{"action": "refused", "tool": "' + "x" * 30_000_000 + '"}')
            if len(chunk) >= 10_000:
                out.write("\n".join(chunk) + "\n")
                chunk.clear()
        out.write("".join(line + "\n" for line in chunk))
    return count


def read(log: Path) -> None:
    """Report on ``log`` and say what it cost."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    ran = subprocess.run(
        [sys.executable, "-c", _PEAK, "audit", "report", str(log)],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    status = dict(line.split(":", 1) for line in ran.stderr.splitlines() if line.startswith("Vm"))
    print(ran.stdout.splitlines()[1])
    size = log.stat().st_size / 1e6
    peak = status["VmHWM"].strip()
    print(f"size {size:.0f} MB, CPU {cpu:.1f} s, wall {wall:.1f} s, peak {peak}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--size", type=int, help="write LOG, about this many MB")
    parser.add_argument("--read", action="store_true", help="report on LOG, timed")
    options = parser.parse_args()
    if options.size:
        print(f"{write(options.log, options.size)} records written")
    if options.read:
        read(options.log)


if __name__ == "__main__":
    main()

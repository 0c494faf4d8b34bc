"""Deep checks in front of a server that checks nothing: the scheduler behind the proxy.

    python examples/scheduler/scheduler_demo.py

Starts ``strictmcp proxy --policy policy.toml -- python scheduler_server.py`` with a scratch
jobs database, asks the proxy's ``validate`` tool about jobs with planted faults (a cron expression
that does not parse, one that fires every minute, a query naming a column the database does
not have, a query that writes, a target outside the reports directory), then makes two real
calls: the faulty job is refused before the server sees it, the good one is created. Exits 0
when every planted fault was found and only the good job reached the database, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from strictmcp.connect.client import Success, open_client

HERE = Path(__file__).resolve().parent
REPORTS = HERE / "reports"
GOOD = {
    "cron": "0 6 * * 1",
    "target_path": str(REPORTS / "weekly.csv"),
    "query": "SELECT customer, sum(total) FROM orders GROUP BY customer",
}
# Each planted fault, and the code that must find it.
FAULTS: list[tuple[str, dict[str, str], str]] = [
    ("a cron expression that never parses", {"cron": "61 25 * * *"}, "deep-cron-invalid"),
    ("a job every minute", {"cron": "* * * * *"}, "deep-cron-too-frequent"),
    (
        "a column the database lacks",
        {"query": "SELECT totl FROM orders"},
        "deep-sql-unknown-column",
    ),
    ("a query that writes", {"query": "DELETE FROM orders"}, "sql-not-read-only"),
    (
        "a target outside reports/",
        {"target_path": str(HERE / "reports" / ".." / ".." / "x.csv")},
        "path-outside-roots",
    ),
]


async def run(database: Path) -> bool:
    """The demo against a proxy whose server keeps its jobs in ``database``."""
    proxy = [sys.executable, "-m", "strictmcp.proxy", "--policy", str(HERE / "policy.toml")]
    command = [*proxy, "--", sys.executable, str(HERE / "scheduler_server.py")]
    found_all = True
    async with open_client(command, timeout=30) as client:
        names = [tool["name"] for tool in await client.list_tools()]
        print("tools through the proxy:", ", ".join(names))
        for what, change, code in FAULTS:
            verdict = await validate(client, {**GOOD, **change})
            lines = verdict["errors"] + verdict["warnings"]
            found = any(line.endswith(f"[{code}]") for line in lines)
            found_all = found_all and found
            print(f"\n{what}: {'found' if found else 'MISSED'} ({code})")
            for line in lines:
                print(f"    {line}")
        bad = await client.call_tool("schedule_job", {**GOOD, "query": "SELECT totl FROM orders"})
        good = await client.call_tool("schedule_job", GOOD)
    refused = isinstance(bad, Success) and bad.result.get("isError") is True
    created = isinstance(good, Success) and not good.result.get("isError")
    print(f"\nreal call with the faulty query: {'refused by the proxy' if refused else 'RAN'}")
    print(f"real call with the good job:     {'scheduled' if created else 'FAILED'}")
    with sqlite3.connect(database) as connection:
        jobs = connection.execute("SELECT count(*) FROM jobs").fetchone()[0]
    connection.close()
    print(f"jobs in the database: {jobs}")
    return found_all and refused and created and jobs == 1


async def validate(client: Any, arguments: dict[str, str]) -> dict[str, list[str]]:
    """The proxy's verdict on a job: ``{valid, errors, warnings}``."""
    outcome = await client.call_tool("validate", {"tool": "schedule_job", "arguments": arguments})
    if not isinstance(outcome, Success):
        raise SystemExit(f"validate failed: {outcome}")
    verdict: dict[str, list[str]] = outcome.result["structuredContent"]
    return verdict


def main() -> int:
    """Run the demo; 0 when every fault was found and only the good job was created."""
    with tempfile.TemporaryDirectory() as scratch:
        database = Path(scratch) / "jobs.db"
        os.environ["SCHEDULER_DB"] = str(database)  # the server's and the deep check's
        return 0 if asyncio.run(run(database)) else 1


if __name__ == "__main__":
    sys.exit(main())

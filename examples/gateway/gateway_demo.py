"""One gateway for two servers: ``strictmcp gateway`` in front of the bundled examples.

    python examples/gateway/gateway_demo.py

Writes a gateway policy naming the weather server (examples/proxy) and the job scheduler
(examples/scheduler) as ``[[server]]`` tables, with one guard whose glob spans the
scheduler's tools by their gateway names (``scheduler__*``), starts ``strictmcp gateway
--policy`` on it and talks MCP to it as a client would: one listing with both servers' tools,
a call to each server, and a call the guard refuses before it reaches its server. Exits 0 when
all of that behaves so, 1 otherwise.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parent.parent


def _proxy_demo() -> Any:
    """The proxy demo's line-at-a-time JSON-RPC client, reused rather than written twice."""
    spec = importlib.util.spec_from_file_location("proxy_demo", EXAMPLES / "proxy" / "demo.py")
    if spec is None or spec.loader is None:
        raise SystemExit("examples/proxy/demo.py is missing")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def policy_text(scratch: Path) -> str:
    """The gateway policy: two servers, each with its own environment, and one guard."""
    servers = [
        ("weather", EXAMPLES / "proxy" / "weather_server.py", "WEATHER_CALLS", "calls.jsonl"),
        ("scheduler", EXAMPLES / "scheduler" / "scheduler_server.py", "SCHEDULER_DB", "jobs.db"),
    ]
    tables = []
    for name, script, variable, file in servers:
        command = json.dumps([sys.executable, str(script)])
        env = f"{{ {variable} = {json.dumps(str(scratch / file))} }}"
        tables.append(f'[[server]]\nname = "{name}"\ncommand = {command}\nenv = {env}\n')
    guard = (
        "[[guard]]\n"
        'tool = "scheduler__*"\n'
        'argument = "/target_path"\n'
        'kind = "path"\n'
        f"roots = [{json.dumps(str(scratch))}]\n"
    )
    return "\n".join([*tables, guard])


def main() -> int:
    """Run the demo; 0 when both servers answered and the guard kept the bad call out."""
    demo = _proxy_demo()
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        policy = scratch / "gateway.toml"
        policy.write_text(policy_text(scratch), encoding="utf-8")
        print(f"gateway policy ({policy.name}):\n{policy.read_text(encoding='utf-8')}")
        command = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
        gateway = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        if gateway.stdin is None or gateway.stdout is None:
            raise SystemExit("could not open the gateway's pipes")
        try:
            exchange = demo._Exchange(gateway.stdin, gateway.stdout)
            exchange.request("initialize", demo._initialize())
            exchange.notify("notifications/initialized")
            tools = exchange.request("tools/list", {})["result"]["tools"]
            names = [tool["name"] for tool in tools]
            print("tools through the gateway:", ", ".join(names))
            weather = exchange.request(
                "tools/call", {"name": "weather__get_weather", "arguments": {"city": "Paris"}}
            )
            job = {"cron": "0 6 * * 1", "query": "SELECT id, total FROM orders"}
            kept = exchange.request(
                "tools/call",
                {
                    "name": "scheduler__schedule_job",
                    "arguments": {**job, "target_path": str(scratch / "weekly.csv")},
                },
            )
            escaping = exchange.request(
                "tools/call",
                {
                    "name": "scheduler__schedule_job",
                    "arguments": {**job, "target_path": "/etc/cron.d/owned"},
                },
            )
        finally:
            gateway.stdin.close()
            gateway.wait(timeout=20)
    print("\nweather   ->", demo._text(weather))
    print("scheduler ->", demo._text(kept))
    print("escaping  ->", demo._text(escaping).replace("\n", "\n             "))
    both = {"weather__get_weather", "scheduler__schedule_job", "validate"} <= set(names)
    answered = not weather["result"].get("isError") and not kept["result"].get("isError")
    refused = escaping["result"].get("isError") is True
    return 0 if both and answered and refused else 1


if __name__ == "__main__":
    sys.exit(main())

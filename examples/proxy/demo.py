"""strictmcp's main job in one run: the validating proxy in front of an MCP server.

    python examples/proxy/demo.py

Starts ``strictmcp proxy -- python weather_server.py``, talks MCP to it as a client would
(initialize, tools/list, then two tools/call requests) and shows what happened: the valid
call reaches the server and comes back; the invalid one is answered by the proxy and never
reaches the server. Exits 0 when both behave so, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
SECRET = "sk-live-not-for-the-server"


def main() -> int:
    """Run the demo; 0 when the proxy let the good call through and kept the bad one out."""
    with tempfile.TemporaryDirectory() as scratch:
        calls = Path(scratch) / "calls.jsonl"
        command = [sys.executable, "-m", "strictmcp.proxy", "--"]
        command += [sys.executable, str(HERE / "weather_server.py")]
        proxy = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "WEATHER_CALLS": str(calls)},
        )
        if proxy.stdin is None or proxy.stdout is None:
            raise SystemExit("could not open the proxy's pipes")
        try:
            exchange = _Exchange(proxy.stdin, proxy.stdout)
            exchange.request("initialize", _initialize())
            exchange.notify("notifications/initialized")
            tools = exchange.request("tools/list", {})["result"]["tools"]
            print("tools through the proxy:", ", ".join(tool["name"] for tool in tools))
            good = exchange.request(
                "tools/call", {"name": "get_weather", "arguments": {"city": "Paris"}}
            )
            bad_arguments = {"city": "../../etc/passwd", "units": "kelvin", "api_key": SECRET}
            bad = exchange.request(
                "tools/call", {"name": "get_weather", "arguments": bad_arguments}
            )
        finally:
            proxy.stdin.close()
            proxy.wait(timeout=10)
        reached = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
    print("\nvalid call   ->", _text(good))
    print("invalid call ->", _text(bad).replace("\n", "\n                "))
    print(f"\ncalls that reached the server: {len(reached)}")
    kept_out = len(reached) == 1 and bad["result"].get("isError") is True
    leaked = SECRET in json.dumps(bad)
    return 0 if kept_out and not good["result"].get("isError") and not leaked else 1


class _Exchange:
    """Newline-delimited JSON-RPC over the proxy's pipes, one request at a time."""

    def __init__(self, to_proxy: IO[str], from_proxy: IO[str]) -> None:
        self.to_proxy = to_proxy
        self.from_proxy = from_proxy
        self.next_id = 0

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        line = self.from_proxy.readline()
        if not line:
            raise SystemExit("the proxy closed its output; see the messages above")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _send(self, message: dict[str, Any]) -> None:
        self.to_proxy.write(json.dumps(message) + "\n")
        self.to_proxy.flush()


def _initialize() -> dict[str, Any]:
    return {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "strictmcp-demo", "version": "1.0"},
    }


def _text(response: dict[str, Any]) -> str:
    if "error" in response:
        return f"JSON-RPC error {response['error']['code']}: {response['error']['message']}"
    content = response["result"].get("content") or [{}]
    flag = " (isError)" if response["result"].get("isError") else ""
    return f"{content[0].get('text', '')}{flag}"


if __name__ == "__main__":
    sys.exit(main())

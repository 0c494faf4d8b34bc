"""The stdio proxy on uvloop's event loop, which applications embedding strictmcp often run.

uvloop's process transport has every method of ``asyncio.SubprocessTransport`` without being
a subclass of it: a proxy that checked the class died as it started the server. uvloop is in
the test extra; without it this test fails, never skips, so a missing peer cannot hide.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

FIXTURES = Path(__file__).resolve().parent / "proxy_fixtures"

# The proxy's own command line, with uvloop's loop in place of asyncio's (the loop it really
# runs on is checked: the child exits 3 if uvloop is not in use).
_ON_UVLOOP = """
import asyncio, sys, warnings
import uvloop
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # the policy API, deprecated in 3.14
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
from strictmcp.proxy.cli import proxy
real_run = asyncio.run
def run(main):
    async def checked():
        if not isinstance(asyncio.get_running_loop(), uvloop.Loop):
            sys.exit(3)
        return await main
    return real_run(checked())
asyncio.run = run
proxy.main(sys.argv[1:], prog_name="strictmcp proxy")
"""


def _exchange(proxy: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any]:
    """Send one request; its answer (anything the server sends first is skipped)."""
    stdin: IO[bytes] | None = proxy.stdin
    stdout: IO[bytes] | None = proxy.stdout
    assert stdin is not None
    assert stdout is not None
    stdin.write(json.dumps(message).encode() + b"\n")
    stdin.flush()
    while line := stdout.readline():
        answer: dict[str, Any] = json.loads(line)
        if answer.get("id") == message["id"]:
            return answer
    raise AssertionError(f"the proxy exited with {proxy.wait()} before answering")


def test_the_stdio_proxy_runs_on_uvloop(tmp_path: Path) -> None:
    assert importlib.util.find_spec("uvloop") is not None, "uvloop is missing: pip install .[test]"
    record = tmp_path / "calls"
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(record)]
    proxy = subprocess.Popen(
        [sys.executable, "-c", _ON_UVLOOP, "--", *server],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=tmp_path,
    )
    watchdog = threading.Timer(60, proxy.kill)  # a hung proxy fails the test, not the run
    watchdog.start()
    try:
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}}
        hello["clientInfo"] = {"name": "uvloop-test", "version": "1"}
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        assert "result" in _exchange(proxy, initialize)
        assert proxy.stdin is not None
        proxy.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        valid = {"name": "echo", "arguments": {"text": "on uvloop"}}
        answer = _exchange(
            proxy, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": valid}
        )
        assert answer["result"]["content"][0]["text"] == "on uvloop"
        invalid = {"name": "echo", "arguments": {"text": 7}}
        answer = _exchange(
            proxy, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": invalid}
        )
        assert answer["result"]["isError"] is True
        proxy.stdin.close()
        assert proxy.wait(timeout=30) == 0
    finally:
        watchdog.cancel()
        if proxy.poll() is None:
            proxy.kill()
            proxy.wait()
    recorded = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert recorded == [{"name": "echo", "arguments": {"text": "on uvloop"}}]

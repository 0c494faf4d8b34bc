"""The proxy's event loop: uvloop's where it is installed, else asyncio's, both working.

uvloop is a dependency wherever it has a build (pyproject.toml), and ``strictmcp proxy`` runs
on it by itself (:func:`strictmcp.proxy.cli.run_loop`); without it, on asyncio's loop. uvloop's
process transport has every method of ``asyncio.SubprocessTransport`` without being a subclass
of it: a proxy that checked the class died as it started the server. Each test runs the
proxy's own command line with the loop it really runs on checked (the child exits 3 on the
wrong one), once as installed and once with uvloop made unimportable; a missing uvloop fails
the first, never skips it. HTTP's parser (httptools, else h11) is checked the same way.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import pytest

FIXTURES = Path(__file__).resolve().parent / "proxy_fixtures"

# The proxy's own command line, its loop checked once it runs: uvloop's, or (with
# ``sys.argv[1]`` "blocked") asyncio's own, uvloop made unimportable first.
_CHECKED = """
import asyncio, sys
blocked = sys.argv.pop(1) == "blocked"
if blocked:
    sys.modules["uvloop"] = None
from strictmcp.proxy import cli
real_run_loop = cli.run_loop
def run_loop(main):
    async def checked():
        on_uvloop = type(asyncio.get_running_loop()).__module__.startswith("uvloop")
        if on_uvloop == blocked:
            sys.exit(3)
        return await main
    return real_run_loop(checked())
cli.run_loop = run_loop
cli.proxy.main(sys.argv[1:], prog_name="strictmcp proxy")
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


@pytest.mark.parametrize("uvloop", ["installed", "blocked"])
def test_the_stdio_proxy_runs_on_uvloop_else_asyncio(tmp_path: Path, uvloop: str) -> None:
    assert importlib.util.find_spec("uvloop") is not None, "uvloop is missing: pip install ."
    record = tmp_path / "calls"
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(record)]
    proxy = subprocess.Popen(
        [sys.executable, "-c", _CHECKED, uvloop, "--", *server],
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


def test_http_parser_is_httptools_else_h11(monkeypatch: pytest.MonkeyPatch) -> None:
    from strictmcp.proxy.http_server import Limits, server_config  # noqa: PLC0415

    assert importlib.util.find_spec("httptools") is not None, "httptools is missing: pip install ."

    def parser() -> str:
        app = SimpleNamespace(limits=Limits(1))
        config = server_config(app, "127.0.0.1", 0)  # type: ignore[arg-type]
        config.load()
        # The proxy's own protocol, over uvicorn's.
        return config.http_protocol_class.__mro__[2].__name__

    assert parser() == "HttpToolsProtocol"
    # uvicorn decides once, when its auto module is imported: as if it never had been.
    monkeypatch.delitem(sys.modules, "uvicorn.protocols.http.auto", raising=False)
    monkeypatch.setitem(sys.modules, "httptools", None)
    assert parser() == "H11Protocol"

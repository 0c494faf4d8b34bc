"""What sessions hold is given back: 100 sessions opened through ``proxy --listen`` (a server
process each), then ended, leave the proxy with the file descriptors and child processes it
had before them. Read from /proc, never timed; bench/memory.py measures what they cost.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import anyio
import httpx2

from test_proxy_http import (  # noqa: F401 - processes is a fixture
    _ACCEPT,
    _LEGACY_INIT,
    FIXTURES,
    Process,
    answer,
    handshake,
    in_session,
    processes,
    request,
)
from test_proxy_workers import children

SESSIONS = 100


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _settled(pid: int, fds: int, seconds: float = 60.0) -> tuple[int, int]:
    """The proxy's open descriptors and children, once back to ``fds`` and none (or as they
    are when ``seconds`` pass: a leak fails the caller's assertion, not this wait)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = _fds(pid), len(children(pid))
        if now == (fds, 0):
            break
        time.sleep(0.1)
    return _fds(pid), len(children(pid))


def test_ended_sessions_give_back_descriptors_and_processes(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    server = [sys.executable, str(FIXTURES / "raw_server.py"), str(tmp_path / "lines")]
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0"]
    proxy = Process([*args, "--max-sessions", str(SESSIONS), "--", *server], tmp_path, "stderr")
    processes.append(proxy)
    url = proxy.wait_for("listening on").rsplit(" ", 1)[1]
    pid = proxy.popen.pid
    before = _fds(pid)
    assert children(pid) == []

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=60) as http:
            ids: list[str] = []
            while len(ids) < SESSIONS:
                batch = min(10, SESSIONS - len(ids))
                ids += await asyncio.gather(*(handshake(http, url) for _ in range(batch)))
            assert len(children(pid)) == SESSIONS  # one server each
            # One over the bound is refused, and starts nothing.
            init = request("initialize", 0, _LEGACY_INIT)
            refused = await http.post(url, json=init, headers=_ACCEPT)
            assert refused.status_code == 503
            for session_id in ids:
                ping = request("ping", 1)
                pinged = await http.post(url, json=ping, headers=in_session(session_id))
                assert "result" in answer(pinged)
                ended = await http.delete(url, headers=in_session(session_id))
                assert ended.status_code == 200

    async def bounded() -> None:
        with anyio.fail_after(600):  # a hung proxy fails the test; 100 servers start slowly
            await body()

    anyio.run(bounded)
    assert _settled(pid, before) == (before, 0)

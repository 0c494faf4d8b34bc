"""``strictmcp proxy --listen --workers N``: N forked processes on one listening socket.

Each worker has its own shared channel, hence its own server process: which worker a
connection reaches is read from the process tree (a worker starts its server with its first
call), never from timing. Every call is checked on the worker it reaches; session revisions
are refused (a session's next request could reach another worker); stopping the proxy stops
every worker and every server; a worker that dies is replaced while the others serve on,
and workers that keep dying stop the proxy, which fails.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from strictmcp.proxy.http_main import RESTARTS
from test_proxy_http import (  # noqa: F401 - processes is a fixture
    _ACCEPT,
    _LEGACY_INIT,
    FIXTURES,
    Process,
    modern,
    processes,
    request,
    run,
)

_CONNECTIONS = 200
"""New connections tried before concluding that the kernel never reaches one of two workers
(each reaches it about half the time: all 200 missing it is as likely as 2**-200)."""


def _start(tmp_path: Path, started: list[Process], *options: str) -> tuple[Process, str]:
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0", *options]
    proxy = Process([*args, "--", *server], tmp_path, "stderr")
    started.append(proxy)
    return proxy, proxy.wait_for("listening on").rsplit(" ", 1)[1]


def children(pid: int) -> list[int]:
    """The live child processes of ``pid``, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == pid and state != "Z":
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gone(pids: list[int], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def _reach_each(url: str, workers: list[int], label: str) -> None:
    """Calls (a valid one, passed, and an invalid one, refused) on new connections until
    each of ``workers`` has started its server; the valid calls' texts start with ``label``."""
    for attempt in range(_CONNECTIONS):
        # A client of its own each time: a new connection, which any worker may take.
        async with httpx2.AsyncClient(timeout=30) as http:
            text = f"{label} {attempt}"
            call, headers = modern("tools/call", 1, {"name": "echo", "arguments": {"text": text}})
            passed = (await http.post(url, json=call, headers=headers)).json()
            assert passed["result"]["content"][0]["text"] == text
            bad, headers = modern("tools/call", 2, {"name": "echo", "arguments": {"text": 5}})
            refused = (await http.post(url, json=bad, headers=headers)).json()
            assert refused["result"]["isError"] is True
        if all(children(worker) for worker in workers):
            break
    assert all(len(children(worker)) == 1 for worker in workers)


def test_workers_spread_stateless_calls_check_each_and_stop_together(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    proxy, url = _start(tmp_path, processes, "--workers", "2")
    parent = proxy.popen.pid
    workers = children(parent)
    assert len(workers) == 2

    async def body() -> None:
        # Both workers take connections (each starts its own server) and check every call.
        await _reach_each(url, workers, "call")
        async with httpx2.AsyncClient(timeout=30) as http:
            init = request("initialize", 0, _LEGACY_INIT)
            answer = await http.post(url, json=init, headers=_ACCEPT)
            assert answer.status_code == 400
            assert "Sessions are off" in answer.json()["error"]["message"]

    run(body)
    texts = [arguments["text"] for arguments in _calls(tmp_path)]
    assert all(text.startswith("call ") for text in texts)  # none of the invalid ones
    servers = [server for worker in workers for server in children(worker)]
    proxy.popen.send_signal(signal.SIGTERM)
    assert proxy.popen.wait(timeout=60) == 0
    assert _gone(workers + servers)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nobody listens any more


def _replaced(parent: int, gone: int, count: int, seconds: float = 30.0) -> list[int]:
    """The workers of ``parent`` once ``gone`` has been replaced (``count`` of them again)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = children(parent)
        if gone not in now and len(now) == count:
            return now
        time.sleep(0.05)
    raise AssertionError(f"worker {gone} was not replaced: {children(parent)}")


def test_a_worker_that_dies_is_replaced_and_the_others_serve_on(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    proxy, url = _start(tmp_path, processes, "--workers", "2")
    parent = proxy.popen.pid
    workers = children(parent)
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    now = _replaced(parent, workers[0], 2)
    assert workers[1] in now  # the other one was never stopped
    # Said once the new worker is forked, which /proc may show first.
    proxy.wait_for(f"worker {workers[0]} exited with status -9; worker ")

    async def body() -> None:
        # The new worker takes connections too (it starts a server of its own), and checks.
        await _reach_each(url, now, "after")

    run(body)
    assert all(text.startswith("after ") for text in (a["text"] for a in _calls(tmp_path)))
    proxy.popen.send_signal(signal.SIGTERM)
    assert proxy.popen.wait(timeout=60) == 0


def test_workers_that_keep_dying_stop_the_proxy(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    proxy, _ = _start(tmp_path, processes, "--workers", "2")
    parent = proxy.popen.pid
    killed: list[int] = []
    for _ in range(RESTARTS):
        victim = children(parent)[0]
        os.kill(victim, signal.SIGKILL)
        killed.append(victim)
        _replaced(parent, victim, 2)
    last = children(parent)
    os.kill(last[0], signal.SIGKILL)  # one more within the window: a crash loop
    assert proxy.popen.wait(timeout=60) != 0
    assert _gone(killed + last)
    assert f"the {RESTARTS + 1}th within" in proxy.output()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--workers", "2", "--", "true"], "--workers applies to --listen only"),
        (
            ["--workers", "2", "--listen", "127.0.0.1:0", "--policy", "limits.toml", "--", "true"],
            "rate_limit",
        ),
    ],
)
def test_workers_usage_errors(tmp_path: Path, options: list[str], message: str) -> None:
    (tmp_path / "limits.toml").write_text('[[rate_limit]]\ntools = ["*"]\ncalls = 5\n')
    done = subprocess.run(
        [sys.executable, "-m", "strictmcp.proxy", *options],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr


def _calls(workspace: Path) -> list[dict[str, str]]:
    """The arguments of each call the fixture servers executed."""
    path = workspace / "calls"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line)["arguments"] for line in lines]

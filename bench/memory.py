"""Memory: what one open session and one request in flight cost ``strictmcp proxy --listen``.

Run ``python bench/memory.py`` (``--sessions N``, ``--stdio-sessions N``, ``--in-flight N`` to
change the counts). Each part starts its own proxy and reads the proxy process's resident set
(``VmRSS`` in ``/proc``; its server processes are counted apart) and its open file
descriptors:

- sessions over an HTTP upstream (``--upstream``, bench/peers_launch/asgi_echo.py, which keeps
  nothing per session): N sessions opened (``initialize``, ``notifications/initialized``,
  ``tools/list``, one ``tools/call`` each, 16 at a time), then all ended with DELETE;
- sessions over stdio: the same with a server process per session (bench/hold_server.py,
  small), whose own memory is given apart: it is the server's, not the proxy's;
- requests in flight: N 2026-07-28 calls of bench/hold_server.py's ``hold`` tool, each on a
  connection of its own, all held by the server at once, then released.

The cost of one is the growth over the part divided by N, after one warm-up of the same kind
(the first session or call pays for imports and caches that the rest share). What it decides
is ``--max-sessions``: N sessions need about N times the figure, on top of the proxy's start.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2

from engine import VALID_INSTANCE, environment

BENCH = Path(__file__).resolve().parent
HOLD = [sys.executable, str(BENCH / "hold_server.py")]
ASGI_ECHO = BENCH / "peers_launch" / "asgi_echo.py"
START_SECONDS = 60.0
LEGACY = "2025-06-18"  # no priming events: every answer here is JSON
MODERN = "2026-07-28"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
BATCH = 16


def rss_kib(pid: int) -> int:
    """The resident set of ``pid``, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def children(pid: int) -> list[int]:
    """The live child processes of ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


class Proxy:
    """``strictmcp proxy --listen`` on a free port, in front of ``upstream``."""

    def __init__(self, upstream: list[str], log: Path, *options: str) -> None:
        command = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0", *options]
        self.log = log
        with log.open("wb") as err:
            self.process = subprocess.Popen(
                [*command, *upstream], stdin=subprocess.DEVNULL, stderr=err
            )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            for line in log.read_text(errors="replace").splitlines():
                if "listening on" in line:
                    self.url = line.rsplit(" ", 1)[1]
                    return
            if self.process.poll() is not None:
                raise RuntimeError(log.read_text(errors="replace"))
            time.sleep(0.05)
        raise RuntimeError("the proxy never said where it listens")

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }


async def open_session(http: httpx2.AsyncClient, url: str, call: dict[str, Any]) -> str:
    """A session through the proxy with its tools listed and ``call`` made; its id."""
    hello = {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "memory", "version": "1"},
    }
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
    response = await http.post(url, json=init, headers=ACCEPT)
    response.raise_for_status()
    session = response.headers["mcp-session-id"]
    headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": LEGACY}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    (await http.post(url, json=initialized, headers=headers)).raise_for_status()
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    (await http.post(url, json=listing, headers=headers)).raise_for_status()
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
    answer = await http.post(url, json=message, headers=headers)
    answer.raise_for_status()
    assert "result" in answer.json(), answer.text
    return session


async def in_batches(count: int, make: Callable[[], Awaitable[str]]) -> list[str]:
    made: list[str] = []
    while len(made) < count:
        made += await asyncio.gather(*(make() for _ in range(min(BATCH, count - len(made)))))
    return made


def sessions(
    label: str, count: int, upstream: list[str], call: dict[str, Any], tmp: Path
) -> dict[str, Any]:
    """Open ``count`` sessions, measure, end them, measure."""
    log = tmp / f"sessions-{len(upstream)}.stderr"
    proxy = Proxy(upstream, log, "--max-sessions", str(count + 10))
    try:

        async def run() -> dict[str, Any]:
            limits = httpx2.Limits(max_connections=BATCH, max_keepalive_connections=BATCH)
            async with httpx2.AsyncClient(timeout=120, limits=limits) as http:
                warm = await open_session(http, proxy.url, call)
                before = rss_kib(proxy.pid), fds(proxy.pid)
                servers_before = sum(rss_kib(c) for c in children(proxy.pid))
                started = time.perf_counter()
                ids = await in_batches(count, lambda: open_session(http, proxy.url, call))
                opened = time.perf_counter() - started
                during = rss_kib(proxy.pid), fds(proxy.pid)
                servers = children(proxy.pid)
                servers_rss = sum(rss_kib(c) for c in servers) - servers_before
                for session in [warm, *ids]:
                    headers = {"mcp-session-id": session, "mcp-protocol-version": LEGACY}
                    (await http.delete(proxy.url, headers=headers)).raise_for_status()
            deadline = time.monotonic() + START_SECONDS
            while children(proxy.pid) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            after = rss_kib(proxy.pid), fds(proxy.pid)
            return {
                "part": label,
                "count": count,
                "seconds_to_open": opened,
                "rss_kib_before": before[0],
                "rss_kib_open": during[0],
                "rss_kib_after_close": after[0],
                "fds_before": before[1],
                "fds_open": during[1],
                "fds_after_close": after[1],
                "server_processes_open": len(servers),
                "server_processes_after_close": len(children(proxy.pid)),
                "server_rss_kib_open": servers_rss,
                "per_one_kib": (during[0] - before[0]) / count,
                "server_per_one_kib": servers_rss / count,
            }

        return asyncio.run(run())
    finally:
        proxy.stop()


def in_flight(count: int, tmp: Path) -> dict[str, Any]:
    """``count`` stateless calls held by the server at once."""
    held_file = tmp / "held"
    held_file.write_text("")
    # Every held call has a connection of its own, all from one address.
    room = str(count + 10)
    proxy = Proxy(
        ["--", *HOLD, str(held_file)],
        tmp / "in-flight.stderr",
        *("--max-connections", room, "--max-connections-per-client", room),
    )

    def held() -> int:
        return len(held_file.read_text().splitlines())

    async def call(http: httpx2.AsyncClient, tool: str, number: int) -> None:
        message = {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {}, "_meta": _meta()},
        }
        headers = {**ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": "tools/call"}
        response = await http.post(proxy.url, json=message, headers={**headers, "mcp-name": tool})
        response.raise_for_status()
        assert response.json()["result"]["content"][0]["text"] == "done"

    async def run() -> dict[str, Any]:
        limits = httpx2.Limits(max_connections=count + 2, max_keepalive_connections=count + 2)
        async with httpx2.AsyncClient(timeout=300, limits=limits) as http:
            # Warm-up: one held call and its release, on connections kept for later.
            warm = asyncio.ensure_future(call(http, "hold", 0))
            deadline = time.monotonic() + START_SECONDS
            while held() < 1:
                if warm.done() or time.monotonic() > deadline:
                    await warm  # its failure, if it failed
                    raise RuntimeError("the server never held the warm-up call")
                await asyncio.sleep(0.05)
            await call(http, "release", 1)
            await warm
            before = rss_kib(proxy.pid), fds(proxy.pid)
            calls = [asyncio.ensure_future(call(http, "hold", 10 + n)) for n in range(count)]
            deadline = time.monotonic() + 300
            while held() < count + 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            during = rss_kib(proxy.pid), fds(proxy.pid)
            await call(http, "release", 2)
            await asyncio.gather(*calls)
        return {
            "part": "requests in flight (2026-07-28, stdio server)",
            "count": count,
            "held": held() - 1,
            "rss_kib_before": before[0],
            "rss_kib_open": during[0],
            "fds_before": before[1],
            "fds_open": during[1],
            "per_one_kib": (during[0] - before[0]) / count,
        }

    try:
        return asyncio.run(run())
    finally:
        proxy.stop()


class AsgiEcho:
    """bench/peers_launch/asgi_echo.py on a free port."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process = subprocess.Popen([sys.executable, str(ASGI_ECHO), str(self.port)])
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("asgi_echo never listened")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=1000, help="over an HTTP upstream")
    parser.add_argument("--stdio-sessions", type=int, default=100, help="a process each")
    parser.add_argument("--in-flight", type=int, default=1000, help="calls held at once")
    args = parser.parse_args(argv)
    results = []
    echo_call = {"name": "create_issue", "arguments": VALID_INSTANCE}
    release: dict[str, Any] = {"name": "release", "arguments": {}}
    with tempfile.TemporaryDirectory(prefix="strictmcp-memory-") as name:
        tmp = Path(name)
        echo = AsgiEcho()
        try:
            upstream = ["--upstream", f"http://127.0.0.1:{echo.port}/mcp"]
            results.append(
                sessions("sessions (HTTP upstream)", args.sessions, upstream, echo_call, tmp)
            )
        finally:
            echo.stop()
        stdio = ["--", *HOLD, str(tmp / "held-sessions")]
        results.append(
            sessions("sessions (stdio server each)", args.stdio_sessions, stdio, release, tmp)
        )
        results.append(in_flight(args.in_flight, tmp))
    env = environment()
    print(f"strictmcp memory benchmark: Python {env['python']}, {env['cpus']} CPUs\n")
    print("| what | how many | proxy RSS before → with them open | per one | open fds |")
    print("|---|--:|--:|--:|--:|")
    for part in results:
        servers = (
            f"; server processes {part['server_per_one_kib']:,.0f} KiB each"
            if part.get("server_processes_open")
            else ""
        )
        print(
            f"| {part['part']} | {part['count']:,} | {part['rss_kib_before'] / 1024:,.1f} → "
            f"{part['rss_kib_open'] / 1024:,.1f} MiB | {part['per_one_kib']:,.1f} KiB{servers} | "
            f"{part['fds_before']} → {part['fds_open']} |"
        )
    print()
    for part in results:
        if "rss_kib_after_close" in part:
            print(
                f"{part['part']}: after DELETE of all: RSS "
                f"{part['rss_kib_after_close'] / 1024:,.1f} MiB, fds {part['fds_after_close']} "
                f"(before: {part['fds_before']}), server processes "
                f"{part['server_processes_after_close']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

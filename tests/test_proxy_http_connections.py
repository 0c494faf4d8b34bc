"""Slow clients against the HTTP port, end to end through ``strictmcp proxy --listen``.

Raw sockets send part of a request and idle (slowloris), or trickle it byte by byte; the
proxy must close them after ``--header-timeout``, refuse connections beyond
``--max-connections-per-client`` (by client address, but for a ``--trusted-proxy``) and
``--max-connections`` with a 503, and keep serving a real client meanwhile. Every loopback
address is a distinct client (the whole of 127.0.0.0/8 is loopback on Linux): each socket
binds the source address it stands for. Both of uvicorn's parsers are run: httptools, and
h11 (httptools made unimportable).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest

import test_proxy_http
from test_proxy_http import FIXTURES, Proxy, StartProxy, answer, handshake, in_session, request, run

launch = test_proxy_http.launch
processes = test_proxy_http.processes

_PARTIAL = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl"
_CLOSE_SECONDS = 20.0
"""A generous bound on seeing a connection closed whose deadline is well under a second."""


@pytest.fixture(params=["httptools", "h11"])
def start(request: pytest.FixtureRequest, launch: StartProxy) -> StartProxy:
    """``launch`` on each of uvicorn's HTTP parsers."""

    def started(*options: str) -> Proxy:
        without = ("httptools",) if request.param == "h11" else ()
        return launch(*options, without=without)

    return started


def address(proxy: Proxy) -> tuple[str, int]:
    parts = urlsplit(proxy.url)
    assert parts.hostname is not None
    assert parts.port is not None
    return parts.hostname, parts.port


def connect(proxy: Proxy, source: str, sent: bytes = _PARTIAL) -> socket.socket:
    """A connection from loopback address ``source`` that sends ``sent`` and waits."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.connect(address(proxy))
    if sent:
        sock.sendall(sent)
    return sock


def closed(sock: socket.socket, within: float = _CLOSE_SECONDS) -> bytes | None:
    """What the proxy sent before closing ``sock`` within ``within`` seconds; None when it
    is still open then."""
    sock.settimeout(within)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return received


def still_open(sock: socket.socket, seconds: float = 1.0) -> bool:
    return closed(sock, seconds) is None


def busy(sock: socket.socket) -> bool:
    """Whether ``sock`` was refused with a 503 that says when to retry, and closed."""
    received = closed(sock)
    assert received is not None, "a refused connection was left open"
    return received.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in received.lower()


@contextlib.contextmanager
def held(sockets: list[socket.socket]) -> Iterator[list[socket.socket]]:
    try:
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


async def call_through(proxy: Proxy, text: str) -> None:
    """A real client's session and tool call, from 127.0.0.1."""
    async with httpx2.AsyncClient(timeout=30) as http:
        session_id = await handshake(http, proxy.url)
        call = request("tools/call", 1, {"name": "echo", "arguments": {"text": text}})
        response = await http.post(proxy.url, json=call, headers=in_session(session_id))
        assert answer(response)["result"]["content"][0]["text"] == text


# ---------------------------------------------------------------------------------------------
# The header deadline


def test_connections_that_never_finish_their_headers_are_closed(start: StartProxy) -> None:
    proxy = start("--header-timeout", "0.5")
    kinds = [
        b"",  # connected, nothing sent
        b"PO",  # part of the request line
        b"POST /mcp HTTP/1.1\r\n",  # the line, no header
        _PARTIAL,  # part of the headers
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n",  # whole headers but the blank line
    ]
    with held([connect(proxy, "127.0.0.2", sent) for sent in kinds * 4]) as sockets:
        for sock in sockets:
            assert closed(sock) == b""
    # The line is read from the proxy's stderr by a thread of the test's: wait for it.
    proxy.process.wait_for("[http-header-timeout]")
    said = proxy.stderr().count("[http-header-timeout]")
    # Said, but not once per connection: a flood of them is no flood of lines.
    assert 1 <= said < len(sockets)


def test_headers_trickling_in_are_cut_off_at_the_deadline(start: StartProxy) -> None:
    """Bytes that keep coming do not extend the deadline: it bounds the headers, not the
    silence between their bytes."""
    proxy = start("--header-timeout", "0.5")
    with held([connect(proxy, "127.0.0.2", b"P")]) as (sock,):
        started = time.monotonic()
        cut = False
        for byte in b"OST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"a" * 400:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                cut = True
                break
            time.sleep(0.05)
            if time.monotonic() - started > _CLOSE_SECONDS:
                break
        assert cut or closed(sock, 1.0) is not None


def test_the_next_request_on_a_kept_alive_connection_has_the_deadline_too(
    start: StartProxy,
) -> None:
    proxy = start("--header-timeout", "0.5")
    first = b"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
    with held([connect(proxy, "127.0.0.2", first)]) as (sock,):
        sock.settimeout(_CLOSE_SECONDS)
        answered = sock.recv(4096)
        assert answered.startswith(b"HTTP/1.1 400 "), answered  # no session named
        # A second request, begun and left: uvicorn's keep-alive timer stops at its first
        # byte, so only the header deadline can end it.
        sock.sendall(_PARTIAL)
        assert closed(sock) == b""


def test_a_request_whose_headers_come_in_time_is_served(start: StartProxy) -> None:
    """The deadline closes nothing in use: a session's calls go on past it, and so does a
    kept-alive connection idle within uvicorn's keep-alive time."""
    proxy = start("--header-timeout", "0.5")

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url)
            for n in range(3):
                call = request("tools/call", n, {"name": "echo", "arguments": {"text": str(n)}})
                response = await http.post(proxy.url, json=call, headers=in_session(session_id))
                assert answer(response)["result"]["content"][0]["text"] == str(n)
                await _sleep(0.7)  # past the header deadline, within keep-alive's 5 s

    run(body)
    assert "[http-header-timeout]" not in proxy.stderr()


async def _sleep(seconds: float) -> None:
    import anyio  # noqa: PLC0415

    await anyio.sleep(seconds)


# ---------------------------------------------------------------------------------------------
# Connection caps


def test_a_client_is_served_while_another_holds_its_cap_and_is_refused_beyond(
    start: StartProxy,
) -> None:
    proxy = start("--header-timeout", "30", "--max-connections-per-client", "8")
    with held([connect(proxy, "127.0.0.2") for _ in range(8)]) as sockets:
        for sock in sockets:
            assert still_open(sock, 0.2)
        for _ in range(3):
            assert busy(connect(proxy, "127.0.0.2", b""))
        run(lambda: call_through(proxy, "still served"))
        # Another address has its own count.
        with held([connect(proxy, "127.0.0.4") for _ in range(8)]) as others:
            assert still_open(others[-1], 0.2)
    assert "[http-too-many-connections-per-client]" in proxy.process.wait_for(
        "[http-too-many-connections-per-client]"
    )
    assert [call["arguments"]["text"] for call in proxy.calls()] == ["still served"]


def test_a_connection_closed_gives_its_place_back(start: StartProxy) -> None:
    proxy = start("--header-timeout", "30", "--max-connections-per-client", "2")
    first, second = connect(proxy, "127.0.0.2"), connect(proxy, "127.0.0.2")
    with held([first, second]):
        assert busy(connect(proxy, "127.0.0.2", b""))
        first.close()
        deadline = time.monotonic() + _CLOSE_SECONDS
        while True:
            again = connect(proxy, "127.0.0.2")
            if still_open(again, 0.3):
                again.close()
                break
            assert time.monotonic() < deadline, (
                "the place of a closed connection was not given back"
            )


def test_the_total_cap_refuses_every_address(start: StartProxy) -> None:
    proxy = start("--header-timeout", "30", "--max-connections", "6")
    with held([connect(proxy, f"127.0.0.{n}") for n in range(2, 8)]) as sockets:
        for sock in sockets:
            assert still_open(sock, 0.2)
        assert busy(connect(proxy, "127.0.0.9", b""))
        assert busy(connect(proxy, "127.0.0.1", b""))
    # Their places given back, a real client is served again.
    deadline = time.monotonic() + _CLOSE_SECONDS
    while True:
        try:
            run(lambda: call_through(proxy, "after"))
            break
        except (httpx2.HTTPError, AssertionError):
            assert time.monotonic() < deadline
            time.sleep(0.2)
    proxy.process.wait_for("[http-too-many-connections]")  # said on stderr (fails if it never is)


@pytest.mark.parametrize("trusted", ["127.0.0.3", "127.0.3.0/24"])
def test_a_trusted_proxy_is_not_held_to_the_per_client_cap(start: StartProxy, trusted: str) -> None:
    proxy = start(
        "--header-timeout", "30", "--max-connections-per-client", "2", "--trusted-proxy", trusted
    )
    balancer = "127.0.0.3" if "/" not in trusted else "127.0.3.9"
    ping = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
    with held([connect(proxy, balancer, ping) for _ in range(6)]) as sockets:
        for sock in sockets:
            sock.settimeout(_CLOSE_SECONDS)
            answered = sock.recv(4096)
            # Served (a POST without a body is refused by the application, not the cap).
            assert answered.startswith(b"HTTP/1.1 4"), answered
    with held([connect(proxy, "127.0.0.2") for _ in range(2)]):
        assert busy(connect(proxy, "127.0.0.2", b""))


# ---------------------------------------------------------------------------------------------
# Settings


def _proxy(*options: str, nofile: int | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``strictmcp proxy --listen`` with ``options`` under the file descriptor limit
    ``nofile`` (``ulimit -n``), stopped after a moment if it starts."""
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(cwd / "calls")]
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0", *options]
    if nofile is not None:
        args = ["sh", "-c", f'ulimit -n {nofile} && exec "$@"', "sh", *args]
    process = subprocess.Popen([*args, "--", *server], stderr=subprocess.PIPE, text=True, cwd=cwd)
    try:
        _, stderr = process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.terminate()
        _, stderr = process.communicate(timeout=20)
    return subprocess.CompletedProcess(args, process.returncode, "", stderr)


def test_the_defaults_hold_on_the_default_descriptor_limit(tmp_path: Path) -> None:
    done = _proxy(nofile=1024, cwd=tmp_path)
    assert "listening on" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("options", "nofile"),
    [
        (("--max-connections", "100000"), 1024),
        ((), 256),
        (("--max-sessions", "400"), 1024),
    ],
)
def test_caps_the_descriptor_limit_cannot_hold_are_refused(
    tmp_path: Path, options: tuple[str, ...], nofile: int | None
) -> None:
    done = _proxy(*options, nofile=nofile, cwd=tmp_path)
    assert done.returncode == 2
    assert "file descriptors" in done.stderr
    assert "listening on" not in done.stderr


def test_a_trusted_proxy_that_is_no_address_is_refused(tmp_path: Path) -> None:
    done = _proxy("--trusted-proxy", "balancer.example", cwd=tmp_path)
    assert done.returncode == 2
    assert "--trusted-proxy" in done.stderr

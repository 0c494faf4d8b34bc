"""``/metrics``, ``/healthz`` and ``/readyz``: around the HTTP proxy's ASGI app
(:class:`Observed`), or on a port of their own for a proxy or gateway over stdio
(:func:`serve_metrics`, ``--metrics HOST:PORT``).

``/healthz`` says the process serves (200); ``/readyz`` says 503 while no server can serve,
or while a server the policy marks ``required`` is down, naming those servers and nothing
more; neither needs a token. ``/metrics`` is strictmcp's counters in Prometheus' text format:
on loopback open, elsewhere behind the policy's ``[auth]`` unless its ``open_metrics`` says
otherwise. With ``--workers``, the worker a scrape reaches answers for all of them
(:class:`Peers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..enforce.metrics import Metrics
from .http_asgi import Receive, Scope, Send
from .otel import REQUEST_HEADERS, remember_headers

App = Callable[[Scope, Receive, Send], Awaitable[None]]
Admit = Callable[[dict[str, str], Send], Awaitable[Any]]

PATHS = frozenset({"/metrics", "/healthz", "/readyz"})
"""The paths answered here, never the MCP endpoint's."""

_PROMETHEUS = b"text/plain; version=0.0.4; charset=utf-8"
_JSON = b"application/json"


def answer(metrics: Metrics, path: str, others: Sequence[object] = ()) -> tuple[int, bytes, bytes]:
    """The status, content type and body of a GET of ``path`` (one of :data:`PATHS`);
    ``/metrics`` with the counters of ``others`` (other workers') added."""
    if path == "/metrics":
        return 200, _PROMETHEUS, metrics.prometheus(others).encode()
    if path == "/healthz":
        return 200, _JSON, b'{"status":"ok"}'
    down = metrics.health.unready()
    if down:
        return 503, _JSON, json.dumps({"status": "unready", "down": down}).encode()
    return 200, _JSON, b'{"status":"ready"}'


PEER_TIMEOUT = 2.0
"""Seconds a worker waits for another's counters when answering a scrape; one that has not
answered by then is left out of that scrape."""


class Peers:
    """The workers of one ``--workers`` proxy, as one scrape of ``/metrics`` sees them: each
    serves its counters (:meth:`Metrics.snapshot`, JSON) on a Unix socket named by its pid
    in ``directory``, which the supervisor made for them alone (mode 0700: no other user,
    and nothing off this host, reaches it; no other proxy knows it), and the worker a scrape
    reaches adds the others' to its own."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def path(self, pid: int) -> str:
        """Where the worker ``pid`` answers."""
        return os.path.join(self.directory, f"{pid}.sock")

    async def serve(self, metrics: Metrics) -> asyncio.Server:
        """This worker's counters, served to the others until the server is closed."""

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(json.dumps(metrics.snapshot()).encode())
            with contextlib.suppress(OSError):
                await writer.drain()
            writer.close()

        return await asyncio.start_unix_server(handle, path=self.path(os.getpid()))

    def gather(self) -> list[object]:
        """Every other worker's counters, of those that answer within
        :data:`PEER_TIMEOUT` in all (blocking: the supervisor's OTLP export calls it from
        its thread, a worker answering a scrape from a thread of its own)."""
        own = os.path.basename(self.path(os.getpid()))
        try:
            names = [n for n in os.listdir(self.directory) if n.endswith(".sock") and n != own]
        except OSError:
            return []  # the supervisor is gone, and its directory with it
        deadline = time.monotonic() + PEER_TIMEOUT
        found = (_ask(os.path.join(self.directory, name), deadline) for name in names)
        return [counters for counters in found if counters is not None]


def _ask(path: str, deadline: float) -> object | None:
    """The counters the worker at ``path`` answers with; None when it is gone (its file is
    removed once the supervisor sees it exit) or does not answer by ``deadline``: its
    counters are missing from this scrape, as a restarted process' are."""
    chunks = []
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.connect(path)
            while chunk := sock.recv(65536):
                chunks.append(chunk)
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
        counters: object = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None
    return counters


class Observed:
    """``app`` with :data:`PATHS` answered before it; ``admit`` (the ``[auth]`` gate's, when
    ``/metrics`` needs a token) lets a scrape on or answers it. With ``tracing``, each
    request's trace headers and session id are kept for its spans; with ``peers``, a scrape
    sees every worker."""

    def __init__(
        self,
        app: App,
        metrics: Metrics,
        *,
        admit: Admit | None = None,
        headers: Callable[[list[tuple[bytes, bytes]]], dict[str, str]] | None = None,
        tracing: bool = False,
        peers: Peers | None = None,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self._admit = admit
        self._headers = headers
        self._tracing = tracing
        self._peers = peers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            if path in PATHS:
                await self._own(scope, path, send)
                return
            if self._tracing and self._headers is not None:
                token = remember_headers(self._headers(scope["headers"]))
                try:
                    await self.app(scope, receive, send)
                finally:
                    REQUEST_HEADERS.reset(token)
                return
        await self.app(scope, receive, send)

    async def _own(self, scope: Scope, path: str, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _send(send, 405, b"text/plain", b"", ((b"allow", b"GET, HEAD"),))
            return
        if path == "/metrics" and self._admit is not None and self._headers is not None:
            identity = await self._admit(self._headers(scope["headers"]), send)
            if identity is None:
                return
        others: list[object] = []
        if path == "/metrics" and self._peers is not None:
            others = await asyncio.to_thread(self._peers.gather)
        status, kind, body = answer(self.metrics, path, others)
        await _send(send, status, kind, b"" if scope["method"] == "HEAD" else body)


async def _send(
    send: Send, status: int, kind: bytes, body: bytes, more: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), *more]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_MAX_REQUEST = 8192


async def serve_metrics(
    metrics: Metrics, host: str, port: int, announce: Callable[[str], None]
) -> asyncio.Server:
    """:data:`PATHS` on ``host``:``port`` (``--metrics``), plain HTTP/1.1 GETs, one answer
    per connection; the server, listening (``announce`` is told where)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        except (
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            asyncio.TimeoutError,
            OSError,
        ):
            writer.close()
            return
        request = head.split(b"\r\n", 1)[0].split(b" ")
        method = request[0] if request else b""
        path = request[1].split(b"?", 1)[0].decode("latin-1") if len(request) > 2 else ""
        if method not in (b"GET", b"HEAD"):
            status, kind, body = 405, b"text/plain", b""
        elif path not in PATHS:
            status, kind, body = 404, b"text/plain", b""
        else:
            status, kind, body = answer(metrics, path)
        reason = {200: b"OK", 404: b"Not Found", 405: b"Method Not Allowed"}.get(
            status, b"Service Unavailable"
        )
        writer.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n" % (status, reason, kind, len(body))
        )
        if method != b"HEAD":
            writer.write(body)
        with contextlib.suppress(OSError):
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, host, port, limit=_MAX_REQUEST)
    bound = server.sockets[0].getsockname()
    where = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    announce(f"http://{where}:{bound[1]}/metrics")
    return server

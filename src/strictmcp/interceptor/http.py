"""The interceptor server over MCP streamable HTTP (``strictmcp interceptor --listen``).

One endpoint (``--path``), an ASGI application served by uvicorn. A client starts a session
with ``initialize`` (the answer names it in ``Mcp-Session-Id``) and names it in every request
after that; each session is one connection of the stdio server: an
:class:`~.server.InterceptorServer` of its own (so the state stateful interceptors keep for an
invocation without a ``sessionId`` is never another client's), answering one request at a
time, in order, as over stdio. A POST carries one message or a batch; its answer is one JSON
body (200; 202 when nothing is owed). No stream of unasked messages exists: GET is 405;
DELETE ends the session. At most :data:`MAX_SESSIONS` are kept, the least recently used ended
first (its client's next request is 404, and a client starts a new one).

Before anything is read, the checks every streamable HTTP endpoint of strictmcp makes: a
foreign ``Origin`` is 403 and, listening on loopback, a foreign ``Host`` 421 (DNS
rebinding, :func:`~strictmcp.connect.http_headers.foreign`); a body over
:data:`~.server.MAX_SIZE` is 413, one that takes over
:data:`~strictmcp.connect.http_serving.BODY_SECONDS` to arrive 408.
Nothing a client sends ends the server; answers carry no value from a message.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn

from ..connect import http_headers as h
from ..connect.http_serving import AnnouncingServer, read_body
from ..protocol.jsonrpc import INVALID_REQUEST, error_response
from .server import MAX_SIZE, InterceptorServer

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: Sessions kept at once.
MAX_SESSIONS = 1024


class _Session:
    def __init__(self, server: InterceptorServer) -> None:
        self.server = server
        self.turn = asyncio.Lock()
        self.last_used = time.monotonic()


class InterceptorApp:
    """The ASGI application of one interceptor endpoint at ``path``: ``new_server`` makes
    each session's server; ``loopback`` says whether it listens on a loopback address; a
    session unused for ``idle`` seconds is ended (its client gets 404 and starts anew)."""

    def __init__(
        self,
        new_server: Callable[[], InterceptorServer],
        *,
        path: str,
        loopback: bool,
        idle: float = 1800.0,
    ) -> None:
        self.new_server = new_server
        self.path = path
        self.loopback = loopback
        self.idle = idle
        # Least recently used first: the idle are ended from the front at each request,
        # with no timer of their own.
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] != self.path:
            await _status(send, 404)
            return
        headers = h.header_map(scope["headers"])
        refused = h.foreign(headers, self.loopback)
        if refused:
            await _status(send, refused)
            return
        self._end_idle()
        method = scope["method"]
        if method == "POST":
            await self._post(headers, receive, send)
        elif method == "DELETE":
            ended = self._sessions.pop(headers.get(h.SESSION_ID, ""), None)
            await _status(send, 204 if ended is not None else 404)
        else:
            await _status(send, 405, [(b"allow", b"POST, DELETE")])

    async def _post(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        body = await read_body(receive, MAX_SIZE, headers.get("content-length"))
        if isinstance(body, int):
            if body:
                await _status(send, body)
            return
        named = headers.get(h.SESSION_ID)
        if named is not None:
            session = self._sessions.get(named)
            if session is None:
                await _status(send, 404)  # ended or never begun: the client starts anew
                return
            self._sessions.move_to_end(named)
            session.last_used = time.monotonic()
            extra: list[tuple[bytes, bytes]] = []
        elif _initializes(body):
            named = secrets.token_urlsafe(24)
            if len(self._sessions) >= MAX_SESSIONS:
                self._sessions.popitem(last=False)
            session = self._sessions[named] = _Session(self.new_server())
            extra = [(h.SESSION_ID.encode(), named.encode())]
        else:
            refusal = error_response(None, INVALID_REQUEST, "Bad Request: no session; initialize")
            await _json(send, 400, refusal, [])
            return
        async with session.turn:  # one at a time, in order, as over stdio
            answer = await session.server.answer(body)
        if answer is None:
            await _status(send, 202, extra)
            return
        # An error nobody's request can be told from (a body that is no JSON-RPC) is 400.
        unread = isinstance(answer, dict) and "error" in answer and answer.get("id") is None
        await _json(send, 400 if unread else 200, answer, extra)

    def _end_idle(self) -> None:
        """End the sessions unused for longer than :attr:`idle`, oldest first."""
        sessions, oldest = self._sessions, time.monotonic() - self.idle
        while sessions:
            first = next(iter(sessions.values()))
            if first.last_used >= oldest:
                return
            sessions.popitem(last=False)


async def serve(app: InterceptorApp, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Serve ``app`` on ``host``:``port`` until interrupted; ``announce`` is told its URL once
    it listens (the port chosen, when 0 was asked for). OSError when it cannot listen."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        interface="asgi3",
        ws="none",
        lifespan="off",
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=2,
    )
    server = AnnouncingServer(config, lambda address: announce(f"http://{address}{app.path}"))
    # Bound here rather than by uvicorn, which exits on its own when it cannot: OSError.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.create_server((host, port), family=family) as listener:
        await server.serve(sockets=[listener])


def _initializes(body: bytes) -> bool:
    """Whether the body is an ``initialize`` request (the one message that starts a session)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and message.get("method") == "initialize" and "id" in message


async def _json(send: Send, status: int, answer: Any, extra: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
    length = str(len(body)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", length), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _status(send: Send, status: int, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": extra or []})
    await send({"type": "http.response.body", "body": b""})

"""The streamable HTTP transport: strictmcp as an MCP endpoint, in front of any upstream.

One ASGI application (served by uvicorn, see :func:`serve`), :class:`Routes`: a map, built
once, from each path to what answers there, an :class:`App` per MCP endpoint (the main
``--path`` and each ``[[endpoint]]``'s, each with its own sessions) and its metadata document
under ``[auth]``. At an endpoint, a POST carries one
message (or, in 2025-03-26, a batch): notifications and responses are accepted with 202; the
answer to requests is one JSON body when their responses are all there is to send (and the
client takes JSON), else an event stream of what the server sends while they are pending,
ending with their responses: the choice is made when the first message for the answer comes
(:class:`~.http_streams.Exchange`), for every revision. Before 2026-07-28 a client starts a
session with ``initialize`` and names it in ``Mcp-Session-Id`` afterwards (GET opens its
stream of unrelated server messages, DELETE ends it; an ``MCP-Protocol-Version`` other than
the negotiated one is 400), and each answer stream starts with a priming event. A 2026-07-28
request stands alone: the proxy checks its envelope and headers (``Mcp-Param-*`` too, against
the tool as listed) as the official SDK's server does, whatever the upstream, and a JSON
answer has the status of its error.

Guards, before anything is read: a browser page's ``Origin`` must be local when the proxy
listens on a loopback address (DNS rebinding), and so must ``Host``; a body over the size
limit is 413. With the policy's ``[auth]`` section, a :class:`~.http_auth.Gate` comes first:
it serves the Protected Resource Metadata document and refuses a request without a valid
access token for its endpoint's resource (401, or 403 for a missing scope). Answers never
carry a stack trace or a value from a message.
"""

from __future__ import annotations

import importlib
import itertools
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from ..connect import http_headers as h
from ..connect.http_serving import AnnouncingServer, read_body
from ..connect.lines import line_of
from ..connect.upstream import LONG_LIVED, UPSTREAM_CLOSED
from ..policy import Identity
from ..protocol import Decoded, Message, Revision, decode, errors, own_message
from ..protocol.jsonrpc import INVALID_REQUEST, refusal_for
from ..protocol.wire import HANDSHAKE_VERSIONS, STATELESS_VERSIONS, declared_version
from . import http_asgi as io
from .http_asgi import Receive, Scope, Send
from .http_auth import Gate
from .http_connections import Admission, ConnectionLimits, guarded, listening_socket
from .http_sessions import Channel, SessionTable, Shared
from .http_streams import Exchange, RequestId
from .listing import input_schema
from .session import TOO_MANY_IN_FLIGHT


@dataclass
class Limits:
    """What the endpoint bounds: messages, sessions, what waits for a GET stream, and
    connections (:mod:`~.http_connections`)."""

    max_size: int
    max_sessions: int = 100
    idle: float = 1800.0
    init: float = 10.0
    buffered: int = 100
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)


ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]


class Routes:
    """The ASGI application served: each of ``apps`` at its path, and, under ``[auth]``, the
    metadata document of each one's resource at its well-known path (the bare well-known
    path serving the first's); any other path is 404. The map is built once; the first app
    is the main endpoint, whose ``limits`` bound the server."""

    def __init__(self, apps: Sequence[App]) -> None:
        self.apps = tuple(apps)
        self.limits = self.apps[0].limits
        routes: dict[str, ASGI] = {}
        for app in self.apps:
            if app.gate is not None:
                for path in app.gate.paths:
                    routes.setdefault(path, app.gate)
        for app in self.apps:
            routes.setdefault(app.path, app)
        self._routes = routes

    @property
    def paths(self) -> tuple[str, ...]:
        """The endpoints' paths, the main one first."""
        return tuple(app.path for app in self.apps)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        route = self._routes.get(scope["path"])
        if route is None:
            await io.answer_status(send, 404)
            return
        await route(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for app in self.apps:
                    await app.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


_STATELESS_HEADERS = (
    "MCP-Protocol-Version (the revision), Mcp-Method (the method) and, for a call, "
    "Mcp-Name (what it names)"
)


def _without_session(message: Message) -> str:
    """Why a request that opens no session and names none is refused: a 2026-07-28 request
    (its ``_meta`` says so) that lacks the header saying so is told what it must carry."""
    declared = declared_version({"params": message.params})
    if declared in STATELESS_VERSIONS:
        return (
            f"Bad Request: a {declared} request needs the MCP-Protocol-Version header: a "
            f"stateless request carries {_STATELESS_HEADERS}"
        )
    return (
        "Bad Request: Mcp-Session-Id header is required (a session's requests carry the id "
        "its initialize answer gave; a 2026-07-28 request carries "
        f"{_STATELESS_HEADERS} instead)"
    )


class App:
    """One MCP endpoint, as an ASGI application for the requests at its path (:class:`Routes`
    sends them); ``start`` makes a channel (a proxy session and its upstream), ``path`` is
    where it answers, ``loopback`` whether it listens on a loopback address, ``gate`` who
    may use it (anyone when None); without ``stateful``, for one of several workers,
    ``initialize`` is refused: a session's next request may reach another worker."""

    def __init__(
        self,
        start: Callable[[bool], Awaitable[Channel]],
        *,
        path: str,
        loopback: bool,
        limits: Limits,
        gate: Gate | None = None,
        stateful: bool = True,
    ) -> None:
        self.path = path
        self.gate = gate
        self.stateful = stateful
        self.loopback = loopback
        self.limits = limits
        self.sessions = SessionTable(
            lambda: start(False),
            max_sessions=limits.max_sessions,
            idle=limits.idle,
            init=limits.init,
        )
        self.shared = Shared(lambda: start(True))
        # Ids of priming events: unique, so that a client resuming names one stream.
        self._events = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = h.header_map(scope["headers"])
        refused = self._refused(headers)
        if refused:
            await io.answer_status(send, refused)
            return
        identity = None
        if self.gate is not None:
            identity = await self.gate.admit(headers, send)
            if identity is None:
                return
        method = scope["method"]
        if method == "POST":
            await self._post(headers, receive, send, identity)
        elif method == "GET":
            await self._get(headers, receive, send, identity)
        elif method == "DELETE":
            await self._delete(headers, send, identity)
        else:
            await io.answer_status(send, 405, [(b"allow", b"GET, POST, DELETE")])

    async def close(self) -> None:
        """End its sessions (their servers stopped), and close its gate's HTTP client."""
        await self.sessions.close()
        await self.shared.close()
        if self.gate is not None:
            await self.gate.verifier.aclose()

    def _refused(self, headers: dict[str, str]) -> int:
        """403 for a foreign ``Origin``, 421 for a foreign ``Host`` on loopback; else 0."""
        return h.foreign(headers, self.loopback)

    # --- POST --------------------------------------------------------------------------------

    async def _post(
        self, headers: dict[str, str], receive: Receive, send: Send, identity: Identity | None
    ) -> None:
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            await io.answer_status(send, 415)
            return
        json_ok, sse_ok = io.accepts(headers.get("accept"))
        if not json_ok and not sse_ok:
            await io.answer_status(send, 406)
            return
        body = await read_body(receive, self.limits.max_size, headers.get("content-length"))
        if isinstance(body, int):
            if body:
                await io.answer_status(send, body)
            return
        post = _Post(headers, receive, send, body, json_ok, sse_ok, identity)
        version = headers.get(h.PROTOCOL_VERSION)
        # As the official SDK routes: a version of no handshake revision is the stateless
        # wire's to answer, an unknown one included (it is told which are supported).
        if (
            version is not None
            and version not in HANDSHAKE_VERSIONS
            and h.SESSION_ID not in headers
        ):
            await self._stateless(post)
        else:
            await self._legacy(post)

    # Every body is read once, strictly (protocol.decode, at the revision it will be checked
    # at), before anything looks at it: which session, whether it starts one, which answers
    # to wait for. A body the decoder refuses is answered and goes no further.

    async def _legacy(self, post: _Post) -> None:
        session_id = post.headers.get(h.SESSION_ID)
        if session_id is not None:
            channel = self.sessions.get(session_id, post.identity)
            if channel is None:
                await io.answer_error(post.send, 404, None, INVALID_REQUEST, "Session not found")
                return
            if await _wrong_version(post.headers, channel, post.send):
                return
            decoded = channel.relay.session.read(post.body)
        else:
            alone = await self._read_alone(post, io.LEGACY_STATUS)
            if alone is None:
                return
            decoded, first = alone, alone.messages[0]
            if decoded.batch or first.kind != "request" or first.method != "initialize":
                await io.answer_error(
                    post.send, 400, decoded.error_id, INVALID_REQUEST, _without_session(first)
                )
                return
            if not self.stateful:
                await io.answer_error(post.send, 400, first.id, INVALID_REQUEST, _NO_SESSIONS)
                return
            try:
                made = await self.sessions.create()
            except OSError:
                await io.answer_error(post.send, 502, first.id, UPSTREAM_CLOSED, _NO_SERVER)
                return
            if made is None:
                busy = "Too many sessions; retry later (strictmcp proxy)"
                await io.answer_error(post.send, 503, first.id, TOO_MANY_IN_FLIGHT, busy)
                return
            session_id, channel = made
            if post.identity is not None:
                channel.owner = post.identity.principal
        channel.touch()
        extra = [(h.SESSION_ID.encode(), session_id.encode())]
        requests = [m for m in decoded.messages if m.kind == "request"] if decoded.valid else []
        ids: dict[RequestId, RequestId] = {m.id: m.id for m in requests if m.id is not None}
        if any(channel.router.pending(i) for i in ids):
            # Its answer would go to the earlier request's POST, which would never end.
            in_use = "Request id already in use by a pending request"
            await io.answer_error(post.send, 400, decoded.error_id, INVALID_REQUEST, in_use)
            return
        tokens = {t: t for m in requests if (t := _token(m.params)) is not None}
        line = post.body + b"\n"
        lines: list[tuple[bytes, Decoded | None]] = [(line, decoded)]
        if decoded.batch and decoded.valid:
            # Few servers read batches: the proxy answers the batch, the server gets its
            # messages one by one (the session still sees them all, and checks each).
            lines = [(line_of(m.raw), None) for m in decoded.messages]
        if decoded.valid and any(m.method == _INITIALIZED for m in decoded.messages):
            channel.initialized = True
        exchange = Exchange(ids, tokens, streaming=post.sse, whole=post.json)
        primed = _primes(channel, decoded)
        await self._answer(
            channel, post, lines, exchange, extra, batch=decoded.batch, primed=primed
        )

    async def _stateless(self, post: _Post) -> None:
        decoded = await self._read_alone(post, io.MODERN_STATUS)
        if decoded is None:
            return
        message = decoded.messages[0]
        if not decoded.batch and message.kind == "notification":
            # No client-to-server notification means anything here: cancelling is closing
            # the answer, and there is no session for one to concern.
            version = post.headers.get(h.PROTOCOL_VERSION, "")
            if version in STATELESS_VERSIONS:
                await io.answer_status(post.send, 202)
            else:
                await io.answer(post.send, 400, line_of(h.unsupported(None, version)), _JSON)
            return
        if decoded.batch or message.kind != "request":
            single = "Body must be a single JSON-RPC request or notification"
            await io.answer_error(post.send, 400, None, INVALID_REQUEST, single)
            return
        request = message.raw
        if message.method in LONG_LIVED and not post.sse:
            await io.answer_status(post.send, 406)  # its answer can only be a stream
            return
        header_refusal = h.refusal(request, post.headers)
        if header_refusal is not None:
            await self._refuse(post, header_refusal)
            return
        try:
            channel = await self.shared.channel()
        except OSError:
            await io.answer_error(post.send, 502, message.id, UPSTREAM_CLOSED, _NO_SERVER)
            return
        assert message.id is not None  # a request
        if not self.shared.claim(post.identity, message.id):
            in_use = "Request id already in use by a pending request"
            await io.answer_error(post.send, 400, message.id, INVALID_REQUEST, in_use)
            return
        try:
            await self._stateless_call(post, channel, decoded, request)
        finally:
            self.shared.release(post.identity, message.id)

    async def _stateless_call(
        self, post: _Post, channel: Channel, decoded: Decoded, request: dict[str, Any]
    ) -> None:
        """One stateless request, its id the caller's alone while it is in flight."""
        message = decoded.messages[0]
        assert message.id is not None  # a request
        renamed, sent_as, token = self.shared.rename(request)
        session = channel.relay.session
        session.sent_as(sent_as, message.id)  # the audit log names the client's own id
        try:
            line = line_of(renamed)
            # What was read, with the proxy's own id (and progress token) in place of the
            # client's: read once, not again for the new id.
            read = Decoded((own_message(renamed),), False, decoded.violations, len(line), sent_as)
            await channel.relay.learn_tools(line, read)
            if message.method == "tools/call":
                schema = input_schema(session, str(h.named(request)))
                header_refusal = h.param_mismatch(request, schema, post.headers)
                if header_refusal is not None:
                    await self._refuse(post, header_refusal)
                    return
            tokens: dict[RequestId, RequestId] = {}
            if token is not None:
                tokens[token] = request["params"]["_meta"]["progressToken"]
            exchange = Exchange({sent_as: message.id}, tokens, streaming=post.sse, whole=post.json)
            await self._answer(channel, post, [(line, read)], exchange, [], modern=True)
        finally:
            session.sent_as(sent_as, None)

    async def _read_alone(self, post: _Post, statuses: dict[int, int]) -> Decoded | None:
        """The body read outside any session (which would read it at its own revision); None
        once a body the decoder refuses has been answered, with the status of its error."""
        decoded = decode(post.body, max_size=self.limits.max_size)
        if decoded.valid:
            return decoded
        refused = refusal_for(decoded.error_id, errors(decoded.violations))
        await self._refuse(post, refused, statuses)
        return None

    @staticmethod
    async def _refuse(
        post: _Post, error: dict[str, Any], statuses: dict[int, int] = io.MODERN_STATUS
    ) -> None:
        """Answer with an error the proxy made, and the status ``statuses`` give its code."""
        await io.answer_json(post.send, [line_of(error)], [], batch=False, statuses=statuses)

    async def _answer(
        self,
        channel: Channel,
        post: _Post,
        lines: list[tuple[bytes, Decoded | None]],
        exchange: Exchange,
        extra: list[tuple[bytes, bytes]],
        *,
        batch: bool = False,
        modern: bool = False,
        primed: bool = False,
    ) -> None:
        """Send ``lines`` (each with what it was read as, if it was) on and answer the POST.

        The answer waits only for the requests the session sent on: one it answered itself
        (refused, or a line it could not read) is settled by that answer, so every exchange
        ends when the server answers or the proxy's timeout does. An answer that is only
        responses goes out as JSON, whatever the revision; one that is a stream is ``primed``
        for resumption where the revision does that. From 2026-07-28 (``modern``) a client
        that goes away, or whose stream stalls, cancels its requests (closing the answer is
        the cancellation)."""
        router = channel.router
        router.open(exchange)
        statuses = io.MODERN_STATUS if modern else io.LEGACY_STATUS
        try:
            replies: list[bytes] = []
            sent: set[RequestId] = set()
            for line, decoded in lines:
                routed = await channel.relay.from_client(line, decoded, post.identity)
                replies += routed.reply
                sent.update(routed.sent)
            if not exchange.ids:
                if replies and not post.json:
                    await io.answer_events(post.send, replies, extra)
                else:
                    await io.answer_json(post.send, replies, extra, batch=batch, statuses=statuses)
                return
            for reply in replies:
                exchange.put(reply, _messages(io.loads(reply)))
            for sent_as in list(exchange.waiting):
                if sent_as not in sent:
                    exchange.settle(sent_as)
            departure = io.Departure(post.receive)
            try:
                event = str(next(self._events)) if primed else None
                await io.respond(
                    post.send,
                    exchange,
                    departure.gone,
                    extra,
                    batch=batch,
                    statuses=statuses,
                    primed=event,
                )
            finally:
                departure.close()
            if modern and (departure.gone.done() or exchange.stalled):
                for sent_as in list(exchange.waiting or exchange.stalled):
                    channel.relay.cancel(sent_as)
        finally:
            router.close(exchange)
            channel.touch()

    # --- GET and DELETE ----------------------------------------------------------------------

    async def _get(
        self, headers: dict[str, str], receive: Receive, send: Send, identity: Identity | None
    ) -> None:
        session_id = headers.get(h.SESSION_ID)
        if session_id is None:
            await io.answer_status(
                send, 405 if headers.get(h.PROTOCOL_VERSION) in STATELESS_VERSIONS else 400
            )
            return
        if not io.accepts(headers.get("accept"))[1]:
            await io.answer_status(send, 406)
            return
        channel = self.sessions.get(session_id, identity)
        if channel is None:
            await io.answer_status(send, 404)
            return
        if await _wrong_version(headers, channel, send):
            return
        stream = channel.router.listen()
        if stream is None:
            await io.answer_status(send, 409)
            return
        departure = io.Departure(receive)
        try:
            extra = [(h.SESSION_ID.encode(), session_id.encode())]
            await io.stream(send, stream, departure.gone, extra)
        finally:
            departure.close()
            channel.router.unlisten(stream)
            channel.touch()

    async def _delete(self, headers: dict[str, str], send: Send, identity: Identity | None) -> None:
        session_id = headers.get(h.SESSION_ID)
        if session_id is None:
            await io.answer_status(
                send, 405 if headers.get(h.PROTOCOL_VERSION) in STATELESS_VERSIONS else 400
            )
            return
        channel = self.sessions.get(session_id, identity)
        if channel is not None and await _wrong_version(headers, channel, send):
            return
        ended = await self.sessions.end(session_id, identity)
        await io.answer_status(send, 200 if ended else 404)


async def _wrong_version(headers: dict[str, str], channel: Channel, send: Send) -> bool:
    """Refuse a request on a session whose ``MCP-Protocol-Version`` header names a version
    other than the one the session negotiated (before it has one: other than a handshake
    revision), with 400 and ``INVALID_REQUEST``, as the transport's rules want for an invalid
    or unsupported version; whether it was refused. Without the header a client speaks the
    negotiated version (2025-03-26's clients send none). The value is never repeated."""
    given = headers.get(h.PROTOCOL_VERSION)
    if given is None:
        return False
    revision = channel.relay.session.conversation.revision
    if given == revision.value if revision is not None else given in HANDSHAKE_VERSIONS:
        return False
    await io.answer_error(send, 400, None, INVALID_REQUEST, _WRONG_VERSION)
    return True


_WRONG_VERSION = (
    "Bad Request: the MCP-Protocol-Version header must name the session's negotiated "
    "protocol version (strictmcp proxy)"
)
_INITIALIZED = "notifications/initialized"
_NO_SERVER = "The server could not be started (strictmcp proxy)"
_NO_SESSIONS = (
    "Sessions are off: this endpoint runs several worker processes; use protocol revision "
    "2026-07-28, which needs none (strictmcp proxy --workers)"
)
_JSON = b"application/json"


@dataclass
class _Post:
    headers: dict[str, str]
    receive: Receive
    send: Send
    body: bytes
    json: bool
    sse: bool
    identity: Identity | None


_PRIMING_SINCE = Revision.V2025_11_25
"""The first revision whose answer streams start with a priming event (SEP-1699): a client
of an earlier one reads its empty ``data`` as a message, and fails to parse it."""


def _primes(channel: Channel, decoded: Decoded) -> bool:
    """Whether answer streams of this session start with a priming event: by its revision,
    or, for the ``initialize`` that settles it, by the version the client asks for."""
    revision = channel.relay.session.conversation.revision
    if revision is None and decoded.messages and decoded.messages[0].method == "initialize":
        asked = (decoded.messages[0].params or {}).get("protocolVersion")
        try:
            revision = Revision.parse(asked) if isinstance(asked, str) else None
        except ValueError:
            revision = None
    return revision is not None and revision.at_least(_PRIMING_SINCE)


async def serve(
    app: Routes,
    host: str,
    port: int,
    announce: Callable[[str], None],
    sock: socket.socket | None = None,
    around: Any = None,
) -> None:
    """Serve ``app`` on ``host``:``port`` (or on the listening socket ``sock``, which a
    worker shares with others) until interrupted; ``announce`` is told each endpoint's URL,
    the main one first, once it is listening (the port chosen, when 0 was asked for).
    ``around`` is an ASGI app wrapping ``app`` (``/metrics`` and the health paths), served in
    its place."""
    config = server_config(app, host, port)
    if around is not None:
        config.app = around

    def announced(address: str) -> None:
        for path in app.paths:
            announce(f"http://{address}{path}")

    server = AnnouncingServer(config, announced)
    if sock is not None:
        await server.serve(sockets=[sock])
        return
    with listening_socket(host, port) as listener:
        await server.serve(sockets=[listener])


def server_config(app: Routes, host: str, port: int) -> uvicorn.Config:
    """uvicorn's settings for ``app``: its HTTP parser is httptools (llhttp, in C) when that
    is installed, as it is wherever it has a build, else h11 (pure Python, slower), its
    protocol bounding connections as ``app.limits`` say."""
    # uvicorn's own choice, httptools else h11, made when this module is first imported.
    auto = importlib.import_module("uvicorn.protocols.http.auto")
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded(auto.AutoHTTPProtocol, Admission(app.limits.connections)),
        interface="asgi3",
        ws="none",
        lifespan="on",
        log_level="warning",
        access_log=False,
        # Nothing here reads the client's address or scheme: no X-Forwarded-* rewriting of
        # them (a middleware call per request), and no software name in every answer.
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=2,
    )


def _messages(parsed: Any) -> list[dict[str, Any]]:
    return [m for m in (parsed if isinstance(parsed, list) else [parsed]) if isinstance(m, dict)]


def _token(params: dict[str, Any] | None) -> RequestId | None:
    """The progress token a request's ``params`` give, if they give one."""
    meta = params.get("_meta") if params is not None else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, (int, str)) and not isinstance(token, bool) else None

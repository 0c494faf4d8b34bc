"""Stateless (2026-07-28) clients in front of servers of a handshake revision: the sessions the
proxy holds for them, in one place.

The shared channel of the stateless revision reaches its upstream through :func:`bridged`.
The first time, the server's era is probed as the specification's dual-era client does
(``server/discover``; an answer listing a stateless version, or a recognised modern error,
means a modern server): a modern server gets the stateless requests as they came, as before.
A server of a handshake revision gets a :class:`Bridge` instead, an
:class:`~strictmcp.connect.upstream.Upstream` that speaks the stateless revision to the
proxy session above it and holds sessions of the server's revision below it, each opened by
the proxy with ``initialize`` on a caller's behalf (:mod:`strictmcp.protocol.bridge` says how
each message is translated):

- one session per caller identity (its principal, from the proxy session: who sent each
  request it forwarded) and set of declared capabilities (sampling, elicitation, roots),
  never shared between identities; requests the proxy makes itself (a tools listing) use a
  session of their own, as an identity of their own;
- at most ``max_held`` sessions (the least recently used idle one is closed for a new one;
  when none is idle the request is refused with -32003), each closed after ``idle`` seconds
  without a request in flight;
- a request the server makes while a call waits (sampling, elicitation, roots) answers that
  call ``input_required``, with a ``requestState`` the proxy made (unguessable, bound to the
  caller and the request's method and name); the retry's ``inputResponses`` go to the server
  as the answers to its requests, and the call's result, when the server gives it, answers
  the retry. A call left ``input_required`` is cancelled at the server after ``timeout``
  seconds without its retry.

What cannot be bridged is answered at once with a stable error, never left to hang: a server
request when none, or more than one, of that session's calls is waiting (the server cannot
say which call it belongs to: answered to the server with :data:`AMBIGUOUS` or
:data:`UNASKED`, which the server then reports in its own answer to the call), a server
request needing a capability the caller did not declare (:data:`UNDECLARED`), a retry whose
``requestState`` is not one the proxy gave this caller for this request (-32602,
:data:`UNKNOWN_STATE`), and the stateless requests with no counterpart on a session
(``subscriptions/listen``, the tasks extension's; -32601). A server's notifications other
than progress (log messages, list changes, resource updates) have no stateless client to go
to and are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..connect.lines import Backlog, line_of
from ..connect.upstream import UPSTREAM_CLOSED, Upstream
from ..protocol import bridge as translate
from ..protocol.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, error_response
from ..protocol.wire import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    STATELESS_VERSIONS,
)
from .session import TOO_MANY_IN_FLIGHT, ProxySession

Reach = Callable[[ProxySession], Awaitable[Upstream]]
RequestId = int | str
Key = tuple[Any, frozenset[str]]
"""Whose a held session is: the caller's principal (None for the proxy's own requests and
callers the transport did not authenticate) and the capabilities declared."""

MAX_HELD = 100
"""Held sessions by default: as many as the handshake sessions a proxy keeps."""
PROBE_SECONDS = 10.0
"""The longest the server's era is probed for: a server silent that long is of a handshake
revision (the specification's advice for stdio)."""

AMBIGUOUS = (
    "strictmcp proxy bridge: this request cannot be bridged to the stateless client: several "
    "of its requests are waiting, and the request does not say which it belongs to"
)
UNASKED = (
    "strictmcp proxy bridge: this request cannot be bridged to the stateless client: none of "
    "its requests that may ask for input is waiting"
)
UNDECLARED = (
    "strictmcp proxy bridge: the stateless client did not declare the capability this request needs"
)
UNKNOWN_STATE = (
    "Invalid params: requestState is not one this proxy gave for this request and caller "
    "(strictmcp proxy bridge)"
)
_NO_SERVER = "The server could not be started or did not finish its handshake (strictmcp proxy)"
_GONE = "The server exited before answering (strictmcp proxy)"
_BUSY = "Too many sessions are held for stateless clients; retry later (strictmcp proxy)"
_OWN = "strictmcp-bridge-"
_PROBE = f"{_OWN}probe"
_MODERN_ERRORS = (-32022, -32020, -32021)
"""Unsupported protocol version, header mismatch, missing client capability."""


def bridged(reach: Reach, *, max_held: int, idle: float, timeout: float) -> Reach:
    """``reach`` for the shared channel of the stateless revision: the server's own upstream
    when it is of the stateless revision (probed the first time, then remembered), else a
    :class:`Bridge` holding sessions of its revision for each caller."""
    era: list[bool] = []  # [modern], once known

    async def channel_upstream(session: ProxySession) -> Upstream:
        if not era:
            upstream = await reach(session)
            modern = await _modern(upstream)
            era.append(modern)
            if modern:
                return upstream
            await upstream.aclose()  # told something before initialize: not to be trusted
            session.auditor.say(
                "the server speaks a handshake revision: stateless clients get sessions the "
                "proxy holds for them"
            )
        elif era[0]:
            return await reach(session)
        return Bridge(session, reach, max_held=max_held, idle=idle, timeout=timeout)

    return channel_upstream


async def _modern(upstream: Upstream) -> bool:
    """Whether the server answers ``server/discover`` as a stateless server does."""
    meta = {
        META_PROTOCOL_VERSION: max(STATELESS_VERSIONS),
        META_CLIENT_CAPABILITIES: {},
        META_CLIENT_INFO: {"name": "strictmcp-proxy", "version": "1"},
    }
    probe = {"jsonrpc": "2.0", "id": _PROBE, "method": "server/discover", "params": {"_meta": meta}}
    try:
        await upstream.send(line_of(probe))
        return await asyncio.wait_for(_discovery(upstream), PROBE_SECONDS)
    except (asyncio.TimeoutError, OSError):
        return False


async def _discovery(upstream: Upstream) -> bool:
    while (line := await upstream.receive()) is not None:
        message = _message(line)
        if message is None or message.get("id") != _PROBE or "method" in message:
            continue
        result = message.get("result")
        if isinstance(result, dict):
            versions = result.get("supportedVersions")
            return isinstance(versions, list) and bool(STATELESS_VERSIONS & set(versions))
        error = message.get("error")
        # The errors only a modern server gives, which a dual-era client recognises.
        return isinstance(error, dict) and error.get("code") in _MODERN_ERRORS
    return False


@dataclass
class _Parked:
    """A call answered ``input_required``, still running at the server."""

    held: _Held
    principal: Any
    method: str
    name: Any
    upstream_id: RequestId
    asked: dict[str, RequestId]  # inputRequests key → the server's request id
    requests: dict[str, dict[str, Any]]  # inputRequests key → the server's request
    expiry: asyncio.TimerHandle | None = None


@dataclass
class _Sent:
    """A request sent on a held session and not answered yet."""

    method: str
    answers: RequestId
    name: Any


@dataclass
class _Held:
    """A session of the server's revision the proxy holds for one :data:`Key`."""

    key: Key
    opening: dict[str, Any]
    upstream: Upstream | None = None
    initialized: dict[str, Any] | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # initialize answered
    open: bool = False  # initialized said, and what waited sent: the rest goes at once
    failed: bool = False
    outbox: list[dict[str, Any]] = field(default_factory=list)
    # The requests sent and not answered, by the id the server knows: their method, the
    # client request each now answers (a retry takes its call's answer), and what it names.
    waiting: dict[RequestId, _Sent] = field(default_factory=dict)
    parked: set[str] = field(default_factory=set)  # the requestStates of its parked calls
    last_used: float = field(default_factory=time.monotonic)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def busy(self) -> bool:
        return bool(self.waiting or self.outbox or self.parked)


class Bridge:
    """The shared channel's upstream in front of a server of a handshake revision; see the
    module documentation."""

    def __init__(
        self, session: ProxySession, reach: Reach, *, max_held: int, idle: float, timeout: float
    ) -> None:
        self._session = session
        self._reach = reach
        self._max = max_held
        self._idle = idle
        self._timeout = timeout
        # Bounded: a held session's reader waits while the relay is behind (_read).
        self._received = Backlog(2 * session.max_size)
        self._held: OrderedDict[Key, _Held] = OrderedDict()
        self._routes: dict[RequestId, _Held] = {}  # client request id → its session
        self._parked: dict[str, _Parked] = {}
        self._closed = False
        self._sweeper: asyncio.Task[None] | None = None

    # --- Upstream ------------------------------------------------------------------------------

    blocked = False

    def write(self, lines: list[bytes]) -> None:
        """Route each message: to the caller's held session, or answered here."""
        for line in lines:
            message = _message(line)
            if message is not None and not self._closed:
                self._route(message)

    async def drain(self) -> None:
        return None

    async def send(self, line: bytes) -> None:
        self.write([line])

    @property
    def waiting(self) -> bool:
        return self._received.waiting

    async def receive(self) -> bytes | str | None:
        return await self._received.get()

    async def aclose(self) -> int:
        """Close every held session; 0."""
        if self._closed:
            return 0
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        for parked in self._parked.values():
            if parked.expiry is not None:
                parked.expiry.cancel()
        self._parked.clear()
        held = list(self._held.values())
        self._held.clear()
        await asyncio.gather(*(self._close(h) for h in held), return_exceptions=True)
        self._received.put(None)
        return 0

    # --- the client's side -----------------------------------------------------------------------

    def _route(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        request_id = _id_of(message.get("id"))
        if not isinstance(method, str):
            return  # a stateless client answers no server request: nothing to send on
        if request_id is None:
            self._notification(message)
            return
        if method in translate.NOT_BRIDGED:
            self._answer(translate.not_bridged(request_id))
            return
        params = message.get("params")
        caller = self._session.caller(request_id)
        principal = caller.principal if caller is not None else None
        state, answers = translate.responses_given(params)
        if state is not None and method in translate.ANSWERABLE:
            self._retry(message, principal, state, answers)
            return
        held = self._held_for((principal, translate.capability_names(params)), params)
        if held is None:
            self._answer(error_response(request_id, TOO_MANY_IN_FLIGHT, _BUSY))
            return
        self._routes[request_id] = held
        held.last_used = time.monotonic()
        if method == "server/discover":
            held.tasks.append(asyncio.create_task(self._discover(held, request_id)))
            return
        held.waiting[request_id] = _Sent(method, request_id, _name_of(method, params))
        self._to_server(held, translate.to_session(message))

    def _notification(self, message: dict[str, Any]) -> None:
        """The client's cancellation goes to the session of the request it cancels (by the id
        the server knows it by); no other client notification means anything there."""
        params = message.get("params")
        if message.get("method") != "notifications/cancelled" or not isinstance(params, dict):
            return
        cancelled = _id_of(params.get("requestId"))
        if cancelled is None:
            return
        held = self._routes.pop(cancelled, None)
        if held is None:
            return
        for upstream_id, sent in list(held.waiting.items()):
            if sent.answers == cancelled:
                del held.waiting[upstream_id]
                notice = {**message, "params": {**params, "requestId": upstream_id}}
                self._to_server(held, notice)

    def _retry(
        self, message: dict[str, Any], principal: Any, state: str, answers: dict[str, Any]
    ) -> None:
        """A retry of a call left ``input_required``: the client's answers go to the server's
        requests, and the call's answer, when it comes, answers the retry."""
        request_id = message["id"]
        params = message.get("params") or {}
        parked = self._parked.get(state)
        if (
            parked is None
            or parked.principal != principal
            or parked.method != message.get("method")
            or parked.name != _name_of(message.get("method"), params)
        ):
            self._answer(error_response(request_id, INVALID_PARAMS, UNKNOWN_STATE))
            return
        del self._parked[state]
        held = parked.held
        held.parked.discard(state)
        if parked.expiry is not None:
            parked.expiry.cancel()
        held.last_used = time.monotonic()
        self._routes[request_id] = held
        held.waiting[parked.upstream_id] = _Sent(parked.method, request_id, parked.name)
        missing: dict[str, dict[str, Any]] = {}
        for key, server_id in parked.asked.items():
            if key in answers:
                self._to_server(held, {"jsonrpc": "2.0", "id": server_id, "result": answers[key]})
            else:
                missing[key] = parked.requests[key]
        if missing:
            # Asked again, as the specification wants of a server missing an answer.
            sent = held.waiting.pop(parked.upstream_id)
            asked = {key: parked.asked[key] for key in missing}
            self._park(held, parked.upstream_id, sent, asked, missing)

    def _held_for(self, key: Key, params: Any) -> _Held | None:
        """The session held for ``key``, opened if there is none; None when as many are held
        as allowed and none is idle."""
        held = self._held.get(key)
        if held is not None and not held.failed:
            self._held.move_to_end(key)
            return held
        if len(self._held) >= self._max:
            idle = next((k for k, h in self._held.items() if not h.busy), None)
            if idle is None:
                return None
            gone = self._held.pop(idle)
            self._session.auditor.say(
                "closed the least recently used session held for a stateless client"
            )
            self._spawn(self._close(gone))
        opening = translate.opening(f"{_OWN}open", params)
        held = _Held(key, opening)
        self._held[key] = held
        held.tasks.append(asyncio.create_task(self._open(held)))
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep())
        return held

    def _to_server(self, held: _Held, message: dict[str, Any]) -> None:
        if held.upstream is None or not held.open:
            held.outbox.append(message)
        else:
            held.upstream.write([line_of(message)])

    async def _discover(self, held: _Held, request_id: RequestId) -> None:
        await held.ready.wait()
        self._routes.pop(request_id, None)
        if held.initialized is None:
            self._answer(error_response(request_id, UPSTREAM_CLOSED, _NO_SERVER))
        else:
            self._answer(translate.discovered(request_id, held.initialized))

    # --- the server's side -----------------------------------------------------------------------

    async def _open(self, held: _Held) -> None:
        """Start the server's session and shake hands, then send what waited; on failure
        every request that waited is failed."""
        try:
            held.upstream = await self._reach(self._session)
        except OSError:
            self._failed(held)
            return
        reader = asyncio.create_task(self._read(held, held.upstream))
        held.tasks.append(reader)
        held.upstream.write([line_of(held.opening)])
        try:
            await asyncio.wait_for(held.ready.wait(), self._timeout)
        except asyncio.TimeoutError:
            self._failed(held)
            return
        if held.initialized is None:
            self._failed(held)
            return
        waited, held.outbox = held.outbox, []
        held.open = True
        held.upstream.write([line_of(translate.INITIALIZED), *(line_of(m) for m in waited)])

    def _failed(self, held: _Held) -> None:
        held.failed = True
        held.ready.set()
        if self._held.get(held.key) is held:
            del self._held[held.key]
        waited, held.outbox = held.outbox, []
        for message in waited:
            request_id = _id_of(message.get("id"))
            if "method" in message and request_id is not None:
                self._fail(held, request_id, _NO_SERVER)
        for upstream_id in list(held.waiting):
            self._fail(held, upstream_id, _GONE)
        self._spawn(self._close(held))

    async def _read(self, held: _Held, upstream: Upstream) -> None:
        while (line := await upstream.receive()) is not None:
            await self._received.room()
            if isinstance(line, str):
                continue  # over the size bound: the request it answered times out
            message = _message(line)
            if message is None:
                continue
            if "method" in message:
                self._from_server(held, message)
            elif message.get("id") == held.opening["id"] and not held.ready.is_set():
                result = message.get("result")
                held.initialized = result if isinstance(result, dict) else None
                held.ready.set()
            else:
                self._answered(held, message)
        if not held.ready.is_set():
            held.ready.set()
        elif not held.failed:
            self._failed(held)

    def _answered(self, held: _Held, message: dict[str, Any]) -> None:
        upstream_id = _id_of(message.get("id"))
        sent = held.waiting.pop(upstream_id, None) if upstream_id is not None else None
        if sent is None:
            return  # cancelled, or answering nothing: the bridge asked nothing else
        self._routes.pop(sent.answers, None)
        self._answer(translate.to_stateless({**message, "id": sent.answers}, sent.method))

    def _from_server(self, held: _Held, message: dict[str, Any]) -> None:
        method = message["method"]
        server_id = _id_of(message.get("id"))
        if server_id is None:
            if method == "notifications/progress":
                self._received.put(line_of(message))
            return
        if method == "ping":
            self._to_server(held, {"jsonrpc": "2.0", "id": server_id, "result": {}})
            return
        needs = translate.INPUT_METHODS.get(method)
        if needs is None:
            self._refuse(
                held, server_id, METHOD_NOT_FOUND, "Method not found (strictmcp proxy bridge)"
            )
            return
        if needs not in held.key[1]:
            self._refuse(held, server_id, INVALID_PARAMS, UNDECLARED)
            return
        calls = [i for i, sent in held.waiting.items() if sent.method in translate.ANSWERABLE]
        parked = [self._parked[s] for s in held.parked]
        if len(calls) + len(parked) != 1:
            self._refuse(held, server_id, INTERNAL_ERROR, AMBIGUOUS if calls or parked else UNASKED)
            return
        ask = {"method": method, **({"params": message["params"]} if "params" in message else {})}
        if parked:
            # A second request for a call already waiting for its retry: asked with the rest.
            key = f"r{len(parked[0].asked) + 1}"
            parked[0].asked[key] = server_id
            parked[0].requests[key] = ask
            return
        upstream_id = calls[0]
        sent = held.waiting.pop(upstream_id)
        self._routes.pop(sent.answers, None)
        self._park(held, upstream_id, sent, {"r1": server_id}, {"r1": ask})

    def _park(
        self,
        held: _Held,
        upstream_id: RequestId,
        sent: _Sent,
        asked: dict[str, RequestId],
        requests: dict[str, dict[str, Any]],
    ) -> None:
        """Answer ``sent``'s client ``input_required`` with the server's ``requests``, and keep
        the call for its retry (at most the proxy's timeout)."""
        state = secrets.token_urlsafe(24)
        parked = _Parked(held, held.key[0], sent.method, sent.name, upstream_id, asked, requests)
        parked.expiry = asyncio.get_running_loop().call_later(self._timeout, self._expire, state)
        self._parked[state] = parked
        held.parked.add(state)
        self._answer(translate.input_required(sent.answers, requests, state))

    def _expire(self, state: str) -> None:
        """A call whose retry never came: its server requests are refused, it is cancelled."""
        parked = self._parked.pop(state, None)
        if parked is None:
            return
        held = parked.held
        held.parked.discard(state)
        for server_id in parked.asked.values():
            self._refuse(
                held,
                server_id,
                INTERNAL_ERROR,
                "The client never answered (strictmcp proxy bridge)",
            )
        cancel = {
            "requestId": parked.upstream_id,
            "reason": "the client never retried (strictmcp proxy)",
        }
        self._to_server(
            held, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
        )

    def _refuse(self, held: _Held, server_id: RequestId, code: int, text: str) -> None:
        self._session.auditor.say(f"refused a server request: {text}")
        self._to_server(held, error_response(server_id, code, text))

    def _fail(self, held: _Held, upstream_id: RequestId, text: str) -> None:
        sent = held.waiting.pop(upstream_id, None)
        client_id = sent.answers if sent is not None else upstream_id
        self._routes.pop(client_id, None)
        self._answer(error_response(client_id, UPSTREAM_CLOSED, text))

    def _answer(self, message: dict[str, Any]) -> None:
        if not self._closed:
            self._received.put(line_of(message))

    # --- upkeep --------------------------------------------------------------------------------

    async def _sweep(self) -> None:
        period = max(min(self._idle / 4, 30.0), 0.05)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for key, held in list(self._held.items()):
                if not held.busy and now - held.last_used > self._idle:
                    del self._held[key]
                    self._session.auditor.say("closed an idle session held for a stateless client")
                    await self._close(held)

    async def _close(self, held: _Held) -> None:
        for task in held.tasks:
            task.cancel()
        for state in list(held.parked):
            parked = self._parked.pop(state, None)
            if parked is not None and parked.expiry is not None:
                parked.expiry.cancel()
        held.parked.clear()
        if held.upstream is not None:
            with contextlib.suppress(Exception):
                await held.upstream.aclose()

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        task.add_done_callback(_retrieved)


def _retrieved(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()


def _message(line: bytes | str) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None


def _id_of(value: Any) -> RequestId | None:
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _name_of(method: Any, params: Any) -> Any:
    """What a retry must name as its call did: the tool, the prompt, the resource."""
    if not isinstance(params, dict):
        return None
    return params.get("uri") if method == "resources/read" else params.get("name")

"""What the HTTP transport's clients talk to: a :class:`Channel` per session, one for all.

A channel is a :class:`~.session.ProxySession` relayed to its own upstream, with the
:class:`~.http_streams.Router` of its answers. Before 2026-07-28 each client session (from
``initialize`` to DELETE, or until idle too long) has its own channel, hence its own server
process or server session. The stateless revision shares one channel among every client,
started when first needed and again after its server is gone; client ids are renamed there,
so that two clients both using id 1 do not collide.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..connect.upstream import Upstream
from ..policy import Identity
from ..protocol.jsonrpc import id_readings
from .http_streams import Router
from .relay import Relay
from .session import ProxySession

NewSession = Callable[[], ProxySession]
NewUpstream = Callable[[ProxySession], Awaitable[Upstream]]


class Channel:
    """One proxy session, its upstream and the routing of its answers."""

    def __init__(self, relay: Relay, router: Router) -> None:
        self.relay = relay
        self.router = router
        self.last_used = time.monotonic()
        # Set by the client's notifications/initialized: until then the session is one
        # request old, and an unfinished handshake must not hold a server for long.
        self.initialized = False
        self.gone = asyncio.Event()
        #: The principal of the identity that opened the session (with authentication):
        #: only the same may use it.
        self.owner: tuple[str | None, str | None] | None = None
        self._running: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        new_session: NewSession,
        new_upstream: NewUpstream,
        *,
        timeout: float,
        buffered: int,
        shared: bool = False,
    ) -> Channel:
        """A running channel; ``OSError`` when its server cannot be started."""
        session = new_session()
        if shared:
            session.share()
        upstream = await new_upstream(session)
        router = Router(buffered, shared=shared)
        relay = Relay(session, upstream, timeout=timeout, client=_Answers(router))
        channel = cls(relay, router)
        channel._running = asyncio.create_task(channel._run())
        return channel

    async def _run(self) -> None:
        try:
            await self.relay.run()
        finally:
            self.router.end()
            self.gone.set()

    async def close(self) -> None:
        """Stop the server and end every answer still open."""
        await self.relay.aclose()
        await self.gone.wait()

    def touch(self) -> None:
        """The client used the session just now."""
        self.last_used = time.monotonic()


class _Answers:
    """The router as the relay's client side: each line goes on the answer it belongs to,
    at once (the router bounds what it keeps for an answer not being read: a stream left
    unread past its bound is ended)."""

    blocked = False

    def __init__(self, router: Router) -> None:
        self._deliver = router.deliver

    def write(self, lines: list[bytes]) -> None:
        for line in lines:
            self._deliver(line)

    async def drain(self) -> None:
        return None


Start = Callable[[], Awaitable[Channel]]


class SessionTable:
    """The sessions of the handshake revisions, by their ``Mcp-Session-Id``: at most
    ``max_sessions``, each closed after ``idle`` seconds without a request or an open stream,
    or after ``init`` seconds when the client has not finished the handshake."""

    def __init__(self, start: Start, *, max_sessions: int, idle: float, init: float) -> None:
        self._start = start
        self._max = max_sessions
        self._idle = idle
        self._init = init
        self._sessions: dict[str, Channel] = {}
        self._opening = 0
        self._sweeper: asyncio.Task[None] | None = None
        self._ended: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._sessions)

    async def create(self) -> tuple[str, Channel] | None:
        """A new session and its id; None when there are as many as allowed."""
        if len(self._sessions) + self._opening >= self._max:
            return None
        self._opening += 1  # counted while its server starts, so that the bound holds
        try:
            channel = await self._start()
        finally:
            self._opening -= 1
        session_id = secrets.token_urlsafe(32)
        self._sessions[session_id] = channel
        ended = asyncio.create_task(self._forget(session_id, channel))
        self._ended.add(ended)
        ended.add_done_callback(self._ended.discard)
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep())
        return session_id, channel

    def get(self, session_id: str, identity: Identity | None = None) -> Channel | None:
        """The live session of that id, if ``identity`` may use it: the one that opened it
        (another's is told there is no such session, which reveals nothing)."""
        channel = self._sessions.get(session_id)
        if channel is None or channel.gone.is_set():
            return None
        if channel.owner is not None and (identity is None or identity.principal != channel.owner):
            return None
        return channel

    async def end(self, session_id: str, identity: Identity | None = None) -> bool:
        """End a session (its server is stopped) if ``identity`` may use it; whether it did."""
        if self.get(session_id, identity) is None:
            return False
        return await self._end(session_id)

    async def _end(self, session_id: str) -> bool:
        channel = self._sessions.pop(session_id, None)
        if channel is None:
            return False
        await channel.close()
        return True

    async def close(self) -> None:
        """End every session."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        channels = list(self._sessions.values())
        self._sessions.clear()
        await asyncio.gather(*(channel.close() for channel in channels))
        for task in list(self._ended):
            task.cancel()

    async def _forget(self, session_id: str, channel: Channel) -> None:
        """A session whose server is gone is gone: its id is unknown from then on."""
        await channel.gone.wait()
        if self._sessions.get(session_id) is channel:
            del self._sessions[session_id]

    async def _sweep(self) -> None:
        period = max(min(self._idle / 4, self._init / 4, 30.0), 0.05)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            idle = [
                (session_id, channel)
                for session_id, channel in self._sessions.items()
                if not channel.router.busy
                and now - channel.last_used > (self._idle if channel.initialized else self._init)
            ]
            for session_id, channel in idle:
                channel.relay.session.auditor.say(
                    "closed an idle session"
                    if channel.initialized
                    else "closed a session whose client never finished initializing"
                )
                await self._end(session_id)


class Shared:
    """The one channel of the stateless revision, started when first needed."""

    def __init__(self, start: Start) -> None:
        self._start = start
        self._channel: Channel | None = None
        self._starting = asyncio.Lock()
        self._numbers = itertools.count(1)
        # Each caller's ids in flight, in every spelling a client reads alike: the server
        # sees the proxy's own ids, but a caller reusing one would not know which answer is
        # which.
        self._in_flight: set[tuple[tuple[str | None, str | None], int | str]] = set()

    def claim(self, identity: Identity | None, request_id: int | str) -> bool:
        """Mark ``request_id`` in flight for ``identity``; False when it (or an id the caller
        would read alike) already is. Anonymous callers cannot be told apart, and each POST
        gets its own answer: their ids are not tracked."""
        if identity is None:
            return True
        owner = identity.principal
        keys = [(owner, key) for key in (request_id, *id_readings(request_id))]
        if any(key in self._in_flight for key in keys):
            return False
        self._in_flight.update(keys)
        return True

    def release(self, identity: Identity | None, request_id: int | str) -> None:
        """``request_id`` of ``identity`` answered: free to use again."""
        if identity is None:
            return
        owner = identity.principal
        for key in (request_id, *id_readings(request_id)):
            self._in_flight.discard((owner, key))

    async def channel(self) -> Channel:
        """The running channel; ``OSError`` when its server cannot be started."""
        async with self._starting:
            if self._channel is None or self._channel.gone.is_set():
                self._channel = await self._start()
            return self._channel

    def rename(self, request: dict[str, Any]) -> tuple[dict[str, Any], str, str | None]:
        """``request`` with a fresh id (and a fresh progress token if it gave one), both
        unique among all clients; the new id and token."""
        number = next(self._numbers)
        sent_as = f"c{number}"
        renamed = {**request, "id": sent_as}
        params = request.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if (
            not isinstance(params, dict)
            or not isinstance(meta, dict)
            or "progressToken" not in meta
        ):
            return renamed, sent_as, None
        token = f"p{number}"
        renamed["params"] = {**params, "_meta": {**meta, "progressToken": token}}
        return renamed, sent_as, token

    async def close(self) -> None:
        """Stop the server."""
        if self._channel is not None:
            await self._channel.close()

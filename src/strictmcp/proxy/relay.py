"""A :class:`ProxySession` joined to one :class:`Upstream`, whatever carries the client's side.

The relay decides each line through the session, sends what is to go on to the server, hands
what the server sends to ``to_client``, and times the client's requests (but not those whose
answer is a stream meant to stay open, ``subscriptions/listen``). It can also ask the server
something on its own (:meth:`Relay.ask`): the answer is read by the session, as any answer
is, and kept from the client; so it lists the tools before a call it could not check. The
stdio transport in front of an HTTP server and every session of the HTTP transport run on one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from ..connect.upstream import Upstream, long_lived
from ..guards.policy import Identity
from ..protocol import Decoded
from .listing import OwnRequests, list_before, may_need_listing
from .session import ProxySession, Routed, settled


class Relay:
    """Lines between one client side and ``upstream``; see the module documentation."""

    def __init__(
        self,
        session: ProxySession,
        upstream: Upstream,
        *,
        timeout: float,
        to_client: Callable[[bytes], None],
    ) -> None:
        self.session = session
        self.upstream = upstream
        self.timeout = timeout
        self._to_client = to_client
        self._loop = asyncio.get_running_loop()
        # Keeps the server seeing client messages in the order they were decided.
        self._order = asyncio.Lock()
        self._timers: dict[int | str, asyncio.TimerHandle] = {}
        # Requests answered with a stream that lasts as long as the client wants it.
        self._untimed: set[int | str] = set()
        # Held while the tools are being listed, so that concurrent calls list them once.
        self._listing = asyncio.Lock()
        self._asked = OwnRequests()
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    async def from_client(
        self, line: bytes, decoded: Decoded | None = None, identity: Identity | None = None
    ) -> Routed:
        """Decide about one client line (``decoded``, if the transport read it already; sent
        by ``identity``, if it authenticated the client) and send on what goes on; the
        decision: ``reply`` answers the client now, ``sent`` are the requests now waiting for
        the server."""
        await self.learn_tools(line, decoded)
        return await self._decided(line, decoded, identity)

    async def learn_tools(self, line: bytes, decoded: Decoded | None = None) -> None:
        """List the tools first when ``line`` is a tool call the session has no current
        listing to check against; concurrent calls wait for one listing."""
        if may_need_listing(line, self.session):
            async with self._listing:
                await list_before(line, self.session, self.ask, decoded)

    async def _decided(
        self, line: bytes, decoded: Decoded | None = None, identity: Identity | None = None
    ) -> Routed:
        async with self._order:
            routed = await settled(self.session.decide(line, "c2s", decoded, identity))
            if routed.sent:
                self._untimed.update(long_lived(line))
            self._time(routed)
            for onward in routed.forward:
                await self.upstream.send(onward)
        return routed

    async def ask(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Send ``request`` (its id is set here) as the proxy's own; the answer the session
        would have forwarded, or None when the server is gone. Bounded by the timeout."""
        request_id, line = self._asked.make(request)
        for reply in (await self._decided(line)).reply:  # refused by the proxy itself
            self._deliver(reply)
        return await self._asked.answer(request_id)

    async def run(self) -> int:
        """Read the server until it is gone: every request still waiting is failed; the
        server's exit status."""
        session = self.session
        upstream = self.upstream
        while (line := await upstream.receive()) is not None:
            routed = await session.from_server(line)
            self._time(routed)
            for onward in routed.forward:
                self._deliver(onward)
            for back in routed.reply:
                await upstream.send(back)
        status = await self.aclose()
        left = session.fail_waiting("The server exited before answering (strictmcp proxy)")
        if left or status != 0:
            session.auditor.say(f"the server exited with status {status}")
        for reply in left:
            self._deliver(reply)
        self._asked.end()
        return status if status != 0 else int(bool(left))

    async def aclose(self) -> int:
        """Stop the timers and release the server; its exit status."""
        self.closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in self._tasks:
            task.cancel()
        return await self.upstream.aclose()

    def cancel(self, request_id: int | str) -> None:
        """The client gave up on a request: the server is told, its answer will be dropped."""
        self._untimed.discard(request_id)
        timer = self._timers.pop(request_id, None)
        if timer is not None:
            timer.cancel()
        routed = self.session.cancel(request_id, "the client went away (strictmcp proxy)")
        self._spawn(self._send(routed.forward))

    def _time(self, routed: Routed) -> None:
        timers = self._timers
        for request_id in routed.settled:
            self._untimed.discard(request_id)
            timer = timers.pop(request_id, None)
            if timer is not None:
                timer.cancel()
        for request_id in routed.sent:
            if request_id in self._untimed:
                continue
            old = timers.pop(request_id, None)
            if old is not None:
                old.cancel()
            timers[request_id] = self._loop.call_later(self.timeout, self._expire, request_id)

    def _expire(self, request_id: int | str) -> None:
        self._timers.pop(request_id, None)
        routed = self.session.expire(request_id)
        for reply in routed.reply:
            self._deliver(reply)
        self._spawn(self._send(routed.forward))

    async def _send(self, lines: list[bytes]) -> None:
        async with self._order:
            for line in lines:
                await self.upstream.send(line)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        if self.closed:
            work.close()
            return
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _deliver(self, line: bytes) -> None:
        """A line for the client, unless it answers a request of the proxy's own."""
        if not (self._asked and self._asked.claim(line)):
            self._to_client(line)

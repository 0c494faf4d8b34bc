"""A :class:`ProxySession` joined to one :class:`Upstream`, whatever carries the client's side.

Every proxied session runs on one :class:`Relay`: the stdio transport (in front of a spawned
server or any other upstream) and each session of the HTTP transport. The relay decides each
line through the session, holds what is to go on, and writes what it holds to each side in
one write (:meth:`Relay.flush`), so that the lines of one read cost one write per side; it
waits for a side only while that side is blocked.

Order is a promise per session: a session's client lines are decided, and their messages
reach the server, in the order they are given. A line is decided at once unless something
must be awaited first (the tools listed before a call the session could not check, a dry run
of the validate tool, the shared rate limits or deep checks of a call); then it takes its turn
in one chain, and every line given after it waits its turn too, so that none overtakes it
(:meth:`Relay.decide`). The requests of a shared session (the stateless revision over HTTP:
many clients, no session) are independent of each other: one awaiting a decision holds no
other, so each waits only for what it needs itself, bounded by that step's own timeout, and a
request that needs nothing awaited goes on at once. Only a listing the tools still need is
awaited in turn there, by the calls that need it. A request waiting for external interceptors
(``[[interceptor]]``) is decided aside, in any session: later lines go on meanwhile, and may
reach the server before it, but for those naming it (its cancellation, its progress, its id),
which wait for it in turn.

Timeouts: each client request sent on gets a deadline, ``timeout`` seconds on (but not those
whose answer is a stream meant to stay open, ``subscriptions/listen``), on the event loop's
one timer for all (:mod:`~strictmcp.connect.alarms`), forgotten once the request is answered.
A request that misses its deadline is answered with ``UPSTREAM_TIMEOUT`` and cancelled at the
server.

The relay can also ask the server something on its own (:meth:`Relay.ask`): the answer is
read by the session, as any answer is, and kept from the client; so it lists the tools
before a call it could not check.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Coroutine
from typing import Any

from ..connect.alarms import Alarm, alarms
from ..connect.lines import OVERSIZED, Lines
from ..connect.upstream import Sink, Upstream, long_lived
from ..policy import Identity
from ..protocol import Decoded
from .listing import OwnRequests, list_before, may_need_listing
from .session import Intercepted, ProxySession, Routed, settled


class Relay:
    """Lines between one client side, ``client``, and ``upstream``; see the module
    documentation.

    :attr:`client_waiting` says whether a client still expects the server: while it does,
    the server going away is a failure (:meth:`run`'s status is then 1 at least).
    """

    def __init__(
        self, session: ProxySession, upstream: Upstream, *, timeout: float, client: Sink
    ) -> None:
        self.session = session
        self.upstream = upstream
        self.timeout = timeout
        self.client_waiting = False
        self._client = client
        self._loop = asyncio.get_running_loop()
        # Lines decided and not yet written, in the order they were decided.
        self._to_server: list[bytes] = []
        self._to_client: list[bytes] = []
        # The deadline of each request waiting for the server, on the loop's one timer.
        self._deadlines: dict[int | str, Alarm] = {}
        # The last line that had to be awaited before it could be decided: later ones wait.
        self._turn: asyncio.Task[Routed] | None = None
        # Requests waiting for external interceptors, aside from the turns: only the lines
        # naming one of them wait for it.
        self._aside: dict[asyncio.Task[Routed], Intercepted] = {}
        self._asked = OwnRequests()
        self._flush_soon = False  # written in this turn: more waits for its end
        self._quiet: asyncio.Future[None] | None = None  # for answered(): no deadline left

    # --- the client's side -----------------------------------------------------------------

    def decide(
        self, line: bytes, decoded: Decoded | None = None, identity: Identity | None = None
    ) -> Routed | Awaitable[Routed]:
        """Decide about one client line (``decoded``, if the transport read it already; sent
        by ``identity``, if the transport authenticated the client) and hold what goes on to
        the server for :meth:`flush`; the decision, at once when nothing had to be awaited.
        ``reply`` is for the caller to answer the client with, ``sent`` are the requests now
        waiting for the server."""
        session = self.session
        if self._waits_turn(line):
            if session.shared:
                return self._listed_alone(line, decoded, identity)
            return self._in_turn(self._listed_then_decided(line, decoded, identity))
        named = self._named_aside(line, decoded)
        if named:
            return self._in_turn(self._after_aside(named, line, decoded, identity))
        routed = session.decide(line, "c2s", decoded, identity)
        if isinstance(routed, Intercepted) and not session.shared:
            aside = asyncio.create_task(self._awaited(line, routed))
            self._aside[aside] = routed
            aside.add_done_callback(self._aside_over)
            return aside
        if not isinstance(routed, Routed):
            awaited = self._awaited(line, routed)
            return awaited if session.shared else self._in_turn(awaited)
        self._onward(line, routed)
        return routed

    async def from_client(
        self, line: bytes, decoded: Decoded | None = None, identity: Identity | None = None
    ) -> Routed:
        """:meth:`decide`, for a transport that handles each of its client's messages on its
        own (a POST each): the first message decided in a turn of the event loop is written
        at once, those decided after it in the same turn together at its end."""
        routed = await settled(self.decide(line, decoded, identity))
        if not self._flush_soon:
            # Under load many requests come in one turn: two writes wake the server, not one
            # each; a request alone is not held back.
            self.flush()
            self._flush_soon = True
            self._loop.call_soon(self._flush_later)
        # Not only while blocked: an HTTP server is sent a message with a POST of its own.
        await self.upstream.drain()
        return routed

    async def learn_tools(self, line: bytes, decoded: Decoded | None = None) -> None:
        """List the tools first when ``line`` is a tool call the session has no current
        listing to check against (in turn, so that concurrent calls wait for one listing)."""
        if self._waits_turn(line):
            await self._in_turn(self._listed(line, decoded))

    async def pump(self, source: Lines) -> None:
        """Relay the client's lines from ``source`` until it ends, answering the client
        through the client sink: the lines of one read are all decided before what they make
        is written."""
        session = self.session
        client = self._client
        upstream = self.upstream
        while (line := await source.next()) is not None:
            if line == OVERSIZED:
                routed = session.oversized("c2s")
            else:
                decided = self.decide(line)
                if isinstance(decided, asyncio.Task) and decided in self._aside:
                    decided.add_done_callback(self._answer_aside)
                    continue  # answered when decided; the next lines go on meanwhile
                routed = decided if isinstance(decided, Routed) else await decided
            if routed.reply:
                self._for_client(routed.reply)
            if source.waiting:
                continue
            self.flush()
            if client.blocked or upstream.blocked:
                await asyncio.gather(client.drain(), upstream.drain())
        self.flush()  # the last lines may have come with the end of the stream
        self.client_waiting = False

    def cancel(self, request_id: int | str) -> None:
        """The client gave up on a request: the server is told, its answer will be dropped."""
        self._no_deadline(request_id)
        routed = self.session.cancel(request_id, "the client went away (strictmcp proxy)")
        self._to_server += routed.forward
        self.flush()

    async def ask(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Send ``request`` (its id is set here) as the proxy's own; the answer the session
        would have forwarded, or None when the server is gone. Bounded by the timeout."""
        # Not in turn: it is asked for a line whose turn it is.
        request_id, line = self._asked.make(request)
        routed = await settled(self.session.decide(line, "c2s"))
        self._onward(line, routed)
        self._for_client(routed.reply)  # refused by the proxy itself
        self.flush()
        return await self._asked.answer(request_id)

    # --- the server's side -----------------------------------------------------------------

    async def run(self) -> int:
        """Relay the server's lines until it is gone, then release it and fail every request
        still waiting; the server's exit status, or 1 when that is 0 but requests were left
        unanswered or :attr:`client_waiting`."""
        session = self.session
        client = self._client
        upstream = self.upstream
        while (line := await upstream.receive()) is not None:
            if isinstance(line, str):
                routed = session.oversized("s2c")
            else:
                decided = session.decide(line, "s2c")
                routed = decided if isinstance(decided, Routed) else await decided
            for request_id in routed.settled:
                self._no_deadline(request_id)
            self._for_client(routed.forward)
            self._to_server += routed.reply
            if upstream.waiting:
                continue
            self.flush()
            if client.blocked or upstream.blocked:
                await asyncio.gather(client.drain(), upstream.drain())
        self.flush()
        status = await self.aclose()
        left = session.fail_waiting("The server exited before answering (strictmcp proxy)")
        if session.observer is not None:
            session.observer.ended("server_exited" if status != 0 else None)
        early = self.client_waiting
        if left or status != 0 or early:
            session.auditor.say(f"the server exited with status {status}")
        self._for_client(left)
        self.flush()
        return status if status != 0 else int(bool(left) or early)

    async def aclose(self) -> int:
        """Stop the timers, end the proxy's own requests and release the server; its exit
        status."""
        clock = alarms()
        for alarm in self._deadlines.values():
            clock.cancel(alarm)
        self._deadlines.clear()
        self._maybe_quiet()
        self._asked.end()  # a line waiting for a listing is decided without it
        return await self.upstream.aclose()

    # --- writing ---------------------------------------------------------------------------

    def _flush_later(self) -> None:
        self._flush_soon = False
        self.flush()

    def flush(self) -> None:
        """Write the lines held, to each side in one write, in the order they were decided."""
        if self._to_server:
            lines, self._to_server = self._to_server, []
            self.upstream.write(lines)
        if self._to_client:
            lines, self._to_client = self._to_client, []
            self._client.write(lines)

    def _for_client(self, lines: list[bytes]) -> None:
        """Hold ``lines`` for the client, but for the answers to the proxy's own requests,
        which the proxy takes."""
        if self._asked:
            lines = [line for line in lines if not self._asked.claim(line)]
        self._to_client += lines

    def _onward(self, line: bytes, routed: Routed) -> None:
        """Hold what the decision about client ``line`` sends on, and start or stop the
        deadlines it concerns."""
        self._to_server += routed.forward
        for request_id in routed.settled:
            self._no_deadline(request_id)
        if routed.sent:
            endless = long_lived(line)
            clock = alarms()
            for request_id in routed.sent:
                self._no_deadline(request_id)
                if request_id not in endless:
                    expire = functools.partial(self._expire, request_id)
                    self._deadlines[request_id] = clock.set(self.timeout, expire)

    def _no_deadline(self, request_id: int | str) -> None:
        alarm = self._deadlines.pop(request_id, None)
        if alarm is not None:
            alarms().cancel(alarm)
            self._maybe_quiet()

    def _maybe_quiet(self) -> None:
        quiet = self._quiet
        if quiet is not None and not self._deadlines:
            self._quiet = None
            if not quiet.done():
                quiet.set_result(None)

    async def answered(self) -> None:
        """Wait until every request sent on is answered, or answered by its deadline (those
        meant to stay open, which have none, aside)."""
        while self._deadlines:
            self._quiet = self._loop.create_future()
            await self._quiet

    # --- turns -----------------------------------------------------------------------------

    def _waits_turn(self, line: bytes) -> bool:
        """Whether ``line`` is decided in turn: in a session, while a line given before it
        is; in a shared session only when it needs the tools listed first."""
        return (self._turn is not None and not self.session.shared) or may_need_listing(
            line, self.session
        )

    def _in_turn(self, work: Coroutine[Any, Any, Routed]) -> asyncio.Task[Routed]:
        """Run ``work`` once every line given before it is decided; later lines wait for it."""
        turn = asyncio.create_task(self._after(self._turn, work))
        self._turn = turn
        turn.add_done_callback(self._turn_over)
        return turn

    @staticmethod
    async def _after(
        previous: asyncio.Task[Routed] | None, work: Coroutine[Any, Any, Routed]
    ) -> Routed:
        try:
            if previous is not None:
                await asyncio.wait({previous})  # its failure is its caller's, not this line's
        except BaseException:
            work.close()  # cancelled before its turn came
            raise
        return await work

    def _named_aside(
        self, line: bytes, decoded: Decoded | None
    ) -> set[asyncio.Task[Routed]] | None:
        """The requests waiting aside that client ``line`` names (cancels, reports progress
        on, or reuses the id of); None when none is waiting."""
        if not self._aside:
            return None
        read = decoded if decoded is not None else self.session.read(line)
        return {
            task
            for task, request in self._aside.items()
            if any(request.names(message) for message in read.messages)
        }

    async def _after_aside(
        self,
        named: set[asyncio.Task[Routed]],
        line: bytes,
        decoded: Decoded | None,
        identity: Identity | None,
    ) -> Routed:
        await asyncio.wait(named)  # their failures are their callers'
        return await self._awaited(line, self.session.decide(line, "c2s", decoded, identity))

    def _aside_over(self, task: asyncio.Task[Routed]) -> None:
        self._aside.pop(task, None)

    def _answer_aside(self, task: asyncio.Task[Routed]) -> None:
        """Answer the client for a request decided aside (the stdio pump does not wait)."""
        if task.cancelled() or task.exception() is not None:
            return
        self._for_client(task.result().reply)
        self.flush()

    def _turn_over(self, turn: asyncio.Task[Routed]) -> None:
        if self._turn is turn:
            self._turn = None

    async def _listed(self, line: bytes, decoded: Decoded | None) -> Routed:
        await list_before(line, self.session, self.ask, decoded)
        return Routed()

    async def _listed_then_decided(
        self, line: bytes, decoded: Decoded | None, identity: Identity | None
    ) -> Routed:
        await list_before(line, self.session, self.ask, decoded)
        return await self._awaited(line, self.session.decide(line, "c2s", decoded, identity))

    async def _listed_alone(
        self, line: bytes, decoded: Decoded | None, identity: Identity | None
    ) -> Routed:
        """A shared session's line that needs the tools listed: it waits for the listing (in
        turn with every line that needs it too), then for its own decision only."""
        await self._in_turn(self._listed(line, decoded))
        return await self._awaited(line, self.session.decide(line, "c2s", decoded, identity))

    async def _awaited(self, line: bytes, decided: Routed | Awaitable[Routed]) -> Routed:
        routed = await settled(decided)
        self._onward(line, routed)
        return routed

    # --- timeouts --------------------------------------------------------------------------

    def _expire(self, request_id: int | str) -> None:
        """A request missed its deadline: the client is answered, the server told."""
        if self._deadlines.pop(request_id, None) is None:
            return  # answered, or cancelled, since
        self._maybe_quiet()
        routed = self.session.expire(request_id)
        self._to_server += routed.forward
        self._for_client(routed.reply)
        self.flush()

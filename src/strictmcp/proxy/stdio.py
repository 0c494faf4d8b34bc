"""The stdio transport: our stdin and stdout to the client, a spawned server's pipes upstream.

Two tasks pump lines, one per direction, each through the :class:`ProxySession`; each side's
messages are handled one at a time, in the order they came, so ids and order are preserved.
The server's stderr is its own: the child inherits ours.

Faults: a client request the server does not answer within ``timeout`` seconds gets
``UPSTREAM_TIMEOUT`` (-32001). When the server exits or closes its output, every request
still waiting gets ``UPSTREAM_CLOSED`` (-32000), stderr says so, and the proxy exits with
the server's status (1 if that was 0 but requests were left unanswered). When the client
closes our stdin the server's stdin is closed too, and the proxy waits for it to finish.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from ..connect.lines import OVERSIZED, Flow, Line, Lines
from ..connect.process import SHUTDOWN_GRACE, ServerProcess, start_process, stopped
from ..connect.upstream import Upstream, long_lived
from ..protocol import Direction
from .listing import OwnRequests, list_before, may_need_listing
from .relay import Relay
from .session import ProxySession, Routed

_EARLY = 0.001
"""A deadline this close is due: the event loop may run a timer this much early."""


async def run(session: ProxySession, command: Sequence[str], *, timeout: float) -> int:
    """Proxy between our stdio and ``command`` until either side is done; the exit status."""
    client_in = Lines(session.max_size + 2)  # the message, and its line ending
    await _client_reader(client_in)
    client_out = await _client_writer()
    server = await start_process(command, max_size=session.max_size)
    server_out = server.lines
    pump = _Pump(session, client_out, server, timeout)
    from_server = functools.partial(session.decide, direction="s2c")
    upstream = asyncio.create_task(pump.lines(server_out, "s2c", from_server))
    downstream = asyncio.create_task(pump.lines(client_in, "c2s", pump.from_client))
    try:
        done, _ = await asyncio.wait({upstream, downstream}, return_when="FIRST_COMPLETED")
        for task in done:
            task.result()  # a failure of the proxy itself is not a side hanging up
        if downstream in done:
            # The client is gone: let the server finish what it is doing and exit.
            server.close_stdin()
            await asyncio.wait({upstream}, timeout=SHUTDOWN_GRACE)
        status = await stopped(server)
        left = session.fail_waiting("The server exited before answering (strictmcp proxy)")
        if upstream.done() and (left or status != 0 or not downstream.done()):
            session.auditor.say(f"the server exited with status {status}")
        pump.send_client(left)
        pump.end_asked()
        await client_out.drain()
        return status if status != 0 else int(bool(left) or not downstream.done())
    finally:
        pump.cancel_timers()
        for task in (upstream, downstream):
            task.cancel()
        if server.returncode is None:
            server.kill()
            await server.wait()
        server.close()


async def run_upstream(session: ProxySession, upstream: Upstream, *, timeout: float) -> int:
    """Proxy between our stdio and a server reached through ``upstream`` (one not spawned
    here, such as an HTTP server) until either side is done; the exit status."""
    client_in = Lines(session.max_size + 2)
    await _client_reader(client_in)
    client_out = await _client_writer()
    relay = Relay(
        session, upstream, timeout=timeout, to_client=lambda line: _write(client_out, line)
    )
    reading = asyncio.create_task(relay.run())
    try:
        while not reading.done() and (line := await _first(client_in.next(), reading)):
            if line == OVERSIZED:
                replies = session.oversized("c2s").reply
            else:
                replies = (await relay.from_client(line)).reply
            for reply in replies:
                _write(client_out, reply)
            if client_out.blocked:
                await client_out.drain()
        await relay.aclose()
        status = await reading
        await client_out.drain()
        return status
    finally:
        reading.cancel()
        await relay.aclose()


async def _first(line: Awaitable[Line], ended: asyncio.Task[int]) -> Line:
    """The next client line, or None once the server is gone."""
    reading = asyncio.ensure_future(line)
    await asyncio.wait({reading, ended}, return_when="FIRST_COMPLETED")
    if reading.done():
        return reading.result()
    reading.cancel()
    return None


class TransportError(RuntimeError):
    """Our stdio cannot carry the session; the message says why."""


class _Reader(asyncio.Protocol):
    """Our stdin, cut into lines."""

    def __init__(self, lines: Lines) -> None:
        self.lines = lines

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.lines.transport = transport

    def data_received(self, data: bytes) -> None:
        self.lines.splitter.feed(data)

    def eof_received(self) -> bool | None:
        self.lines.splitter.end()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lines.splitter.end()


async def _client_reader(lines: Lines) -> None:
    """Our stdin, read into ``lines`` with their bound."""
    loop = asyncio.get_running_loop()
    try:
        await loop.connect_read_pipe(lambda: _Reader(lines), sys.stdin)
    except ValueError:
        # A regular file would have to be read without the bound; MCP clients use pipes.
        raise TransportError("standard input must be a pipe, a socket or a terminal") from None


class _Sink(Protocol):
    @property
    def blocked(self) -> bool: ...

    def write(self, data: bytes) -> None: ...
    def is_closing(self) -> bool: ...
    async def drain(self) -> None: ...


class _Writer(asyncio.Protocol):
    """Our stdout's protocol: its flow control."""

    def __init__(self) -> None:
        self.flow = Flow()

    def pause_writing(self) -> None:
        self.flow.pause()

    def resume_writing(self) -> None:
        self.flow.resume()

    def connection_lost(self, exc: Exception | None) -> None:
        self.flow.lose()


class _PipeSink:
    """Our stdout when it is a pipe: written without blocking the proxy."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _Writer) -> None:
        self._transport = transport
        self._flow = protocol.flow

    @property
    def blocked(self) -> bool:
        return self._flow.blocked

    def write(self, data: bytes) -> None:
        self._transport.write(data)

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    async def drain(self) -> None:
        if self._transport.is_closing():
            await asyncio.sleep(0)
        await self._flow.drain()


async def _client_writer() -> _Sink:
    """Our stdout, written without blocking the proxy when it is a pipe."""
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.connect_write_pipe(_Writer, sys.stdout)
    except ValueError:
        # A regular file (stdout redirected to one) is no pipe, and writing it never blocks.
        return _FileSink()
    return _PipeSink(transport, protocol)


class _FileSink:
    """Our stdout when it is a regular file."""

    blocked = False

    def write(self, data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def is_closing(self) -> bool:
        return False

    async def drain(self) -> None:
        return None


class _Pump:
    """Moves routed lines to both sides, and times the client's requests."""

    def __init__(
        self,
        session: ProxySession,
        client: _Sink,
        server: ServerProcess,
        timeout: float,
    ) -> None:
        self.session = session
        self.client = client
        self.server = server
        self.timeout = timeout
        self._loop = asyncio.get_running_loop()
        # Deadlines of the requests waiting, in the order they were sent, hence by time.
        self._deadlines: dict[int | str, float] = {}
        self._sweep: asyncio.TimerHandle | None = None
        self._asked = OwnRequests()
        # Lines decided and not yet written: each side gets those of one read in one write.
        self._to_server: list[bytes] = []
        self._to_client: list[bytes] = []

    def from_client(self, line: bytes) -> Routed | Awaitable[Routed]:
        """Decide about a client line (at once, as :meth:`ProxySession.decide` does), unless
        it is a call that must wait for the tools to be listed first, or a request whose
        answer stays open as long as the client wants (then it is not timed)."""
        if may_need_listing(line, self.session):
            return self._listed_then_decided(line)
        endless = long_lived(line)
        if endless:
            return self._untimed(line, endless)
        return self.session.decide(line, "c2s")

    async def _listed_then_decided(self, line: bytes) -> Routed:
        await list_before(line, self.session, self.ask)
        return await self.session.from_client(line)

    async def _untimed(self, line: bytes, endless: list[int | str]) -> Routed:
        routed = await self.session.from_client(line)
        routed.sent = [request_id for request_id in routed.sent if request_id not in endless]
        return routed

    async def ask(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Send a request of the proxy's own; its answer (kept from the client), or None."""
        request_id, line = self._asked.make(request)
        self.send(await self.session.from_client(line), "c2s")
        self.flush()
        return await self._asked.answer(request_id)

    def end_asked(self) -> None:
        """The server is gone: requests of the proxy's own are over."""
        self._asked.end()

    async def lines(
        self,
        source: Lines,
        direction: Direction,
        decide: Callable[[bytes], Routed | Awaitable[Routed]],
    ) -> None:
        """Read, decide and send until ``source`` ends; the lines that came in one read are
        all decided before what they make is written, one write per side."""
        client = self.client
        server = self.server
        while (line := await source.next()) is not None:
            routed = self.session.oversized(direction) if line == OVERSIZED else decide(line)
            if not isinstance(routed, Routed):
                routed = await routed
            self.send(routed, direction)
            if source.waiting:
                continue
            self.flush()
            if client.blocked or server.blocked:
                await asyncio.gather(client.drain(), server.drain())
        self.flush()  # the last lines may have come with the end of the stream

    def send(self, routed: Routed, direction: Direction) -> None:
        """Hold what one decision says for :meth:`flush`, and start or stop the timers it
        concerns."""
        if self._asked:
            routed = self._claimed(routed, direction)
        if direction == "c2s":
            self._to_server += routed.forward
            self._to_client += routed.reply
        else:
            self._to_client += routed.forward
            self._to_server += routed.reply
        deadlines = self._deadlines
        for request_id in routed.settled:
            deadlines.pop(request_id, None)
        if routed.sent:
            when = self._loop.time() + self.timeout
            for request_id in routed.sent:
                deadlines.pop(request_id, None)
                deadlines[request_id] = when
            if self._sweep is None:
                self._sweep = self._loop.call_at(when, self._expire_due)

    def flush(self) -> None:
        """Write the lines held, in the order they were decided."""
        for sink, held in ((self.server, self._to_server), (self.client, self._to_client)):
            if held:
                _write(sink, b"".join(held))
                held.clear()

    def send_client(self, lines: list[bytes]) -> None:
        """Write lines the proxy makes itself to the client."""
        self.flush()
        if self._asked:
            lines = [line for line in lines if not self._asked.claim(line)]
        for line in lines:
            _write(self.client, line)

    def cancel_timers(self) -> None:
        """Stop every timer: nothing is waiting any more."""
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        self._deadlines.clear()

    def _expire_due(self) -> None:
        self._sweep = None
        deadlines = self._deadlines
        now = self._loop.time() + _EARLY
        while deadlines:
            request_id, when = next(iter(deadlines.items()))
            if when > now:
                self._sweep = self._loop.call_at(when, self._expire_due)
                return
            del deadlines[request_id]
            self._expire(request_id)

    def _claimed(self, routed: Routed, direction: Direction) -> Routed:
        """``routed`` without the answers to the proxy's own requests, which it takes."""
        to_client = routed.forward if direction == "s2c" else routed.reply
        kept = [line for line in to_client if not self._asked.claim(line)]
        if direction == "s2c":
            return Routed(kept, routed.reply, routed.sent, routed.settled)
        return Routed(routed.forward, kept, routed.sent, routed.settled)

    def _expire(self, request_id: int | str) -> None:
        routed = self.session.expire(request_id)
        if self._asked:
            routed = self._claimed(routed, "c2s")
        self.flush()
        for line in routed.reply:
            _write(self.client, line)
        for line in routed.forward:
            _write(self.server, line)


def _write(writer: _Sink, line: bytes) -> None:
    if not writer.is_closing():
        writer.write(line)

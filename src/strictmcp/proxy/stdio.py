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
import contextlib
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from ..protocol import Direction
from .lines import OVERSIZED, read_line
from .session import ProxySession, Routed

_SHUTDOWN_GRACE = 5.0
"""Seconds the server gets to exit after its stdin is closed, and again after SIGTERM."""


async def run(session: ProxySession, command: Sequence[str], *, timeout: float) -> int:
    """Proxy between our stdio and ``command`` until either side is done; the exit status."""
    limit = session.max_size + 2  # the message, and its line ending
    client_in = await _client_reader(limit)
    client_out = await _client_writer()
    server = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=limit,
    )
    # Both are PIPE above.
    assert server.stdin is not None
    assert server.stdout is not None
    pump = _Pump(session, client_out, server.stdin, timeout)
    upstream = asyncio.create_task(pump.lines(server.stdout, "s2c", session.from_server))
    downstream = asyncio.create_task(pump.lines(client_in, "c2s", session.from_client))
    try:
        done, _ = await asyncio.wait({upstream, downstream}, return_when="FIRST_COMPLETED")
        for task in done:
            task.result()  # a failure of the proxy itself is not a side hanging up
        if downstream in done:
            # The client is gone: let the server finish what it is doing and exit.
            server.stdin.close()
            await asyncio.wait({upstream}, timeout=_SHUTDOWN_GRACE)
        status = await _stopped(server)
        left = session.fail_waiting("The server exited before answering (strictmcp proxy)")
        if upstream.done() and (left or status != 0 or not downstream.done()):
            session.auditor.say(f"the server exited with status {status}")
        pump.send_client(left)
        await client_out.drain()
        return status if status != 0 else int(bool(left) or not downstream.done())
    finally:
        pump.cancel_timers()
        for task in (upstream, downstream):
            task.cancel()
        if server.returncode is None:
            server.kill()
            await server.wait()


async def _stopped(server: asyncio.subprocess.Process) -> int:
    """The server's exit status, asking it to stop if it does not on its own; 128+N for a
    signal N, as shells report it."""
    try:
        await asyncio.wait_for(server.wait(), _SHUTDOWN_GRACE)
    except asyncio.TimeoutError:
        server.terminate()
        try:
            await asyncio.wait_for(server.wait(), _SHUTDOWN_GRACE)
        except asyncio.TimeoutError:
            server.kill()
    status = await server.wait()
    return 128 - status if status < 0 else status


class TransportError(RuntimeError):
    """Our stdio cannot carry the session; the message says why."""


async def _client_reader(limit: int) -> asyncio.StreamReader:
    """Our stdin as a bounded stream reader."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:
        # A regular file would have to be read without the bound; MCP clients use pipes.
        raise TransportError("standard input must be a pipe, a socket or a terminal") from None
    return reader


async def _client_writer() -> _Sink:
    """Our stdout, written without blocking the proxy when it is a pipe."""
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout
        )
    except ValueError:
        # A regular file (stdout redirected to one) is no pipe, and writing it never blocks.
        return _FileSink()
    return asyncio.StreamWriter(transport, protocol, None, loop)


class _Sink(Protocol):
    def write(self, data: bytes) -> None: ...
    def is_closing(self) -> bool: ...
    async def drain(self) -> None: ...


class _FileSink:
    """Our stdout when it is a regular file."""

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
        server: asyncio.StreamWriter,
        timeout: float,
    ) -> None:
        self.session = session
        self.client = client
        self.server = server
        self.timeout = timeout
        self._timers: dict[int | str, asyncio.TimerHandle] = {}

    async def lines(
        self,
        reader: asyncio.StreamReader,
        direction: Direction,
        decide: Callable[[bytes], Awaitable[Routed]],
    ) -> None:
        """Read, decide and send until ``reader`` ends."""
        while (line := await read_line(reader)) is not None:
            routed = self.session.oversized(direction) if line == OVERSIZED else await decide(line)
            self.send(routed, direction)
            await asyncio.gather(self.client.drain(), self._drain_server())

    def send(self, routed: Routed, direction: Direction) -> None:
        """Write what one decision says, and start or stop the timers it concerns."""
        onward, back = (
            (self.server, self.client) if direction == "c2s" else (self.client, self.server)
        )
        for line in routed.forward:
            _write(onward, line)
        for line in routed.reply:
            _write(back, line)
        for request_id in routed.settled:
            timer = self._timers.pop(request_id, None)
            if timer is not None:
                timer.cancel()
        loop = asyncio.get_running_loop()
        for request_id in routed.sent:
            self._timers[request_id] = loop.call_later(self.timeout, self._expire, request_id)

    def send_client(self, lines: list[bytes]) -> None:
        """Write lines the proxy makes itself to the client."""
        for line in lines:
            _write(self.client, line)

    def cancel_timers(self) -> None:
        """Stop every timer: nothing is waiting any more."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _expire(self, request_id: int | str) -> None:
        self._timers.pop(request_id, None)
        routed = self.session.expire(request_id)
        for line in routed.reply:
            _write(self.client, line)
        for line in routed.forward:
            _write(self.server, line)

    async def _drain_server(self) -> None:
        # A server that is gone says so by the end of its output, read by the other task.
        with contextlib.suppress(ConnectionError):
            await self.server.drain()


def _write(writer: _Sink, line: bytes) -> None:
    if not writer.is_closing():
        writer.write(line)

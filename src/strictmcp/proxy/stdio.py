"""The stdio transport: our stdin and stdout to the client, a spawned server's pipes upstream.

A :class:`~.relay.Relay` pumps lines, one task per direction, each through the
:class:`ProxySession`; each side's messages are handled in the order they came, so ids and
order are preserved. The server's stderr is its own: the child inherits ours.

Faults: a client request the server does not answer within ``timeout`` seconds gets
``UPSTREAM_TIMEOUT`` (-32001). When the server exits or closes its output, every request
still waiting gets ``UPSTREAM_CLOSED`` (-32000), stderr says so, and the proxy exits with
the server's status (1 if that was 0 but requests were left unanswered). When the client
closes our stdin the server's stdin is closed too, and the proxy waits for it to finish.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from ..connect.lines import Flow, Lines
from ..connect.process import ProcessUpstream
from ..connect.upstream import Sink, Upstream
from .relay import Relay
from .session import ProxySession


async def run(session: ProxySession, command: Sequence[str], *, timeout: float) -> int:
    """Proxy between our stdio and ``command`` until either side is done; the exit status."""
    client_in, client_out = await _client_side(session)
    upstream = await spawn(session, command)
    return await _relay(session, upstream, client_in, client_out, timeout, spawned=True)


async def spawn(session: ProxySession, command: Sequence[str]) -> ProcessUpstream:
    """``command`` spawned as ``session``'s server, its lines bounded by the session's size
    limit. OSError when it cannot be."""
    return await ProcessUpstream.start(command, max_size=session.max_size)


async def run_upstream(session: ProxySession, upstream: Upstream, *, timeout: float) -> int:
    """Proxy between our stdio and a server reached through ``upstream`` (one not spawned
    here, such as an HTTP server) until either side is done; the exit status."""
    client_in, client_out = await _client_side(session)
    return await _relay(session, upstream, client_in, client_out, timeout, spawned=False)


async def _client_side(session: ProxySession) -> tuple[Lines, Sink]:
    """Our stdin, read with the session's bound, and our stdout."""
    client_in = Lines(session.max_size + 2)  # the message, and its line ending
    await _client_reader(client_in)
    return client_in, await _client_writer()


async def _relay(
    session: ProxySession,
    upstream: Upstream,
    client_in: Lines,
    client_out: Sink,
    timeout: float,
    *,
    spawned: bool,
) -> int:
    """Relay until either side is done; the exit status (see the module documentation).
    A ``spawned`` server that exits while its client is still there makes it 1 at least."""
    relay = Relay(session, upstream, timeout=timeout, client=client_out)
    relay.client_waiting = spawned
    from_server = asyncio.create_task(relay.run())
    from_client = asyncio.create_task(relay.pump(client_in))
    try:
        done, _ = await asyncio.wait({from_server, from_client}, return_when="FIRST_COMPLETED")
        for task in done:
            task.result()  # a failure of the proxy itself is not a side hanging up
        if from_server not in done:
            # The client is gone: let the server finish what it is doing and exit.
            await upstream.aclose()
        status = await from_server
        await client_out.drain()
        return status
    finally:
        for task in (from_server, from_client):
            task.cancel()
        await relay.aclose()


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

    def write(self, lines: list[bytes]) -> None:
        if not self._transport.is_closing():
            self._transport.write(b"".join(lines))

    async def drain(self) -> None:
        if self._transport.is_closing():
            await asyncio.sleep(0)
        await self._flow.drain()


async def _client_writer() -> _PipeSink | _FileSink:
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

    def write(self, lines: list[bytes]) -> None:
        sys.stdout.buffer.write(b"".join(lines))
        sys.stdout.buffer.flush()

    async def drain(self) -> None:
        return None

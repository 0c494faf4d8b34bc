"""The stdio transport: our stdin and stdout to the client, a spawned server's pipes upstream.

A :class:`~.relay.Relay` pumps lines, one task per direction, each through the
:class:`ProxySession`; each side's messages are handled in the order they came, so ids and
order are preserved. The server's stderr is its own: the child inherits ours.

Faults: a client request the server does not answer within ``timeout`` seconds gets
``UPSTREAM_TIMEOUT`` (-32001). When the server exits or closes its output, every request
still waiting gets ``UPSTREAM_CLOSED`` (-32000), stderr says so, and the proxy exits with
the server's status (1 if that was 0 but requests were left unanswered). When the client
closes our stdin the server's stdin is closed too, and the proxy waits for it to finish; an
upstream that is not a process of ours first answers what it was asked (each within
``timeout``).

A client whose first line is a request of the stateless revision (2026-07-28) says no
``initialize``: the server, started at once as for any client, is probed, and when it speaks
a handshake revision it serves that client through sessions the proxy holds for it
(:mod:`.bridge`), as over HTTP.

Standard streams: a pipe, a socket or a terminal is read and written on the event loop; a
regular file or another device (``/dev/null``) is read in bounded chunks through the same
:class:`~strictmcp.connect.lines.LineSplitter`, and written plainly (neither ever blocks).
The end of a file is not a client hanging up: the requests it gave are answered (each within
``timeout``) before the server's stdin is closed. A closed stdin is an empty one (see
:func:`hold_standard_streams`); the command refuses a closed stdout before the server starts,
as nothing could be answered. uvloop aborts the
process where asyncio raises on a stream it cannot watch, so each is sorted by its type
(:func:`stream_kind`) before the loop sees it.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import Callable, Sequence
from typing import Literal

from ..connect.lines import Flow, Lines
from ..connect.process import ProcessUpstream
from ..connect.upstream import Upstream
from ..enforce import logs
from ..protocol.bridge import opens_stateless
from .bridge import Reach
from .relay import Relay
from .session import ProxySession

Bridging = Callable[[Reach], Reach]
"""What reaches a server for a client of the stateless revision, given how the server itself
is reached: :func:`~.bridge.bridged` with its limits."""


async def run(
    session: ProxySession,
    command: Sequence[str],
    *,
    timeout: float,
    bridging: Bridging | None = None,
) -> int:
    """Proxy between our stdio and ``command`` until either side is done; the exit status.
    With ``bridging``, a client whose first request is of the stateless revision reaches the
    server through it (a server of a handshake revision cannot serve that client itself)."""

    async def reach(session: ProxySession) -> Upstream:
        return await spawn(session, command)

    return await through(session, reach, timeout=timeout, bridging=bridging, spawned=True)


async def spawn(session: ProxySession, command: Sequence[str]) -> ProcessUpstream:
    """``command`` spawned as ``session``'s server, its lines bounded by the session's size
    limit. OSError when it cannot be."""
    return await ProcessUpstream.start(command, max_size=session.max_size)


async def through(
    session: ProxySession,
    reach: Reach,
    *,
    timeout: float,
    bridging: Bridging | None = None,
    spawned: bool = False,
) -> int:
    """Our stdio in front of the upstream ``reach`` gives ``session`` (a ``spawned`` server's
    exit while its client is there is a failure); the exit status. ``bridging`` as for
    :func:`run`."""
    client_in, client_out, is_file = await _client_side(session)
    upstream, direct = await _chosen(session, client_in, reach, bridging)
    return await _relay(
        session,
        upstream,
        client_in,
        client_out,
        timeout,
        spawned=spawned and direct,
        is_file=is_file,
    )


async def run_upstream(session: ProxySession, upstream: Upstream, *, timeout: float) -> int:
    """Proxy between our stdio and a server reached through ``upstream`` (one not spawned
    here, such as an HTTP server) until either side is done; the exit status."""
    client_in, client_out, is_file = await _client_side(session)
    return await _relay(
        session, upstream, client_in, client_out, timeout, spawned=False, is_file=is_file
    )


async def _chosen(
    session: ProxySession, client_in: Lines, reach: Reach, bridging: Bridging | None
) -> tuple[Upstream, bool]:
    """The upstream for the client behind ``client_in``, and whether it is the one ``reach``
    gave: through ``bridging`` when the client's first line is a stateless request. The server is
    reached at once, not after that line: it starts while the client does."""
    started = asyncio.ensure_future(reach(session))
    if bridging is None:
        return await started, True
    first = asyncio.ensure_future(client_in.first())
    try:
        await asyncio.wait({started, first}, return_when=asyncio.FIRST_COMPLETED)
        if started.done():
            started.result()  # a server that cannot start is said before the client speaks
        line = await first
    except BaseException:
        first.cancel()
        started.cancel()
        if started.done() and not started.cancelled() and started.exception() is None:
            await started.result().aclose()  # started, and never to be used
        raise
    if not isinstance(line, bytes) or not opens_stateless(line, max_size=session.max_size):
        return await started, True
    given = [started]

    async def again(session: ProxySession) -> Upstream:
        # The server already started is the one the bridge probes first.
        return await (given.pop() if given else reach(session))

    upstream = await bridging(again)(session)
    return upstream, upstream is started.result()  # a server of the stateless revision


StreamKind = Literal["stream", "file", "closed"]
"""What a standard stream is: one the event loop can watch (a pipe, a socket, a terminal),
one read or written plainly (a regular file, ``/dev/null`` or another device), or none."""


def stream_kind(fd: int) -> StreamKind:
    """What the file descriptor ``fd`` is, as :data:`StreamKind` sorts it."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return "closed"
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd)):
        return "stream"
    return "file"


def hold_standard_streams() -> frozenset[int]:
    """Put ``/dev/null`` in place of a closed stdin, stdout or stderr, and say which were
    closed: a pipe or socket opened later would take the number, and uvloop aborts the
    process when it closes a file descriptor below 3. Call it before anything opens a file."""
    closed = frozenset(fd for fd in (0, 1, 2) if stream_kind(fd) == "closed")
    for _ in sorted(closed):
        os.open(os.devnull, os.O_RDWR)  # the lowest number free: the next closed one
    return closed


async def _client_side(session: ProxySession) -> tuple[Lines, _PipeSink | _FileSink, bool]:
    """Our stdin, read with the session's bound, and our stdout; whether stdin is a file,
    whose end is not its client hanging up."""
    client_in = Lines(session.max_size + 2)  # the message, and its line ending
    is_file = await _client_reader(client_in)
    return client_in, await _client_writer(), is_file


async def _relay(
    session: ProxySession,
    upstream: Upstream,
    client_in: Lines,
    client_out: _PipeSink | _FileSink,
    timeout: float,
    *,
    spawned: bool,
    is_file: bool,
) -> int:
    """Relay until either side is done; the exit status (see the module documentation).
    A ``spawned`` server that exits while its client is still there makes it 1 at least;
    when ``client_in`` is a file, its requests are answered before the server is told the
    input ended."""
    relay = Relay(session, upstream, timeout=timeout, client=client_out)
    relay.client_waiting = spawned
    from_server = asyncio.create_task(relay.run())
    from_client = asyncio.create_task(relay.pump(client_in))
    try:
        done, _ = await asyncio.wait({from_server, from_client}, return_when="FIRST_COMPLETED")
        for task in done:
            task.result()  # a failure of the proxy itself is not a side hanging up
        if from_server not in done:
            if is_file or not spawned:
                # A file of requests ended, not its client: it still reads the answers. An
                # upstream that is not a process of ours (an HTTP server, held sessions)
                # would drop what it was asked when closed, where a process told its input
                # ended finishes it.
                answered = asyncio.ensure_future(relay.answered())
                await asyncio.wait({from_server, answered}, return_when="FIRST_COMPLETED")
                answered.cancel()
            # The client is gone: let the server finish what it is doing and exit.
            await upstream.aclose()
        status = await from_server
        await client_out.drain()
        return status
    except ConnectionResetError:
        if not client_out.lost:
            raise
        # The client stopped reading (or our stdout failed): what it asked is lost with it.
        for task in (from_server, from_client):
            task.cancel()
        status = await relay.aclose()
        session.auditor.say("standard output is closed: answers were lost; the server was stopped")
        return status or 1
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


async def _client_reader(lines: Lines) -> bool:
    """Our stdin, read into ``lines`` with their bound; whether it is read as a file."""
    if stream_kind(0) != "stream":
        lines.transport = _FileReader(0, lines)
        return True
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: _Reader(lines), sys.stdin)
    return False


_CHUNK = 64 * 1024


class _FileReader:
    """Our stdin when it is a regular file or a device other than a terminal: read in
    chunks on the loop (such a read never waits), each through the line splitter, so that a
    long line is refused as it is from a pipe; paused while the lines read wait, as a pipe's
    transport is."""

    def __init__(self, fd: int, lines: Lines) -> None:
        self._fd = fd
        self._splitter = lines.splitter
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._task = asyncio.create_task(self._read())

    def pause_reading(self) -> None:
        self._resumed.clear()

    def resume_reading(self) -> None:
        self._resumed.set()

    async def _read(self) -> None:
        try:
            while True:
                await self._resumed.wait()
                data = os.read(self._fd, _CHUNK)
                if not data:
                    return
                self._splitter.feed(data)
                await asyncio.sleep(0)  # the lines read are decided between chunks
        except OSError as error:
            # A directory, a device that cannot be read: its end, said.
            logs.say("proxy", f"cannot read standard input: {error.strerror}", level="error")
        finally:
            self._splitter.end()


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

    @property
    def lost(self) -> bool:
        return self._flow.lost

    def write(self, lines: list[bytes]) -> None:
        if not self._transport.is_closing():
            self._transport.write(b"".join(lines))

    async def drain(self) -> None:
        if self._transport.is_closing():
            await asyncio.sleep(0)
        await self._flow.drain()


async def _client_writer() -> _PipeSink | _FileSink:
    """Our stdout, written without blocking the proxy when it is a pipe or a socket."""
    if stream_kind(1) != "stream" or os.isatty(1):
        # A regular file or /dev/null is no pipe, and writing it never blocks. A terminal
        # blocks only while its user holds it (^S); on uvloop a terminal both watched for
        # reading and for writing gives the reader nothing, or loses the writer at ^D.
        return _FileSink()
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(_Writer, sys.stdout)
    return _PipeSink(transport, protocol)


class _FileSink:
    """Our stdout when it is a regular file, a terminal or another device: lost once a
    write fails (a full disk, ``/dev/full``)."""

    def __init__(self) -> None:
        self._flow = Flow()

    @property
    def blocked(self) -> bool:
        return self._flow.blocked

    @property
    def lost(self) -> bool:
        return self._flow.lost

    def write(self, lines: list[bytes]) -> None:
        if self._flow.lost:
            return
        try:
            sys.stdout.buffer.write(b"".join(lines))
            sys.stdout.buffer.flush()
        except OSError:
            self._flow.lose()

    async def drain(self) -> None:
        await self._flow.drain()

"""Newline-delimited messages read with a bound, so that one huge line cannot exhaust memory;
the queue of lines read from a pipe, the backlog of messages read by tasks of their own, and
write flow control of a pipe."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable
from typing import Any, Final, Literal

OVERSIZED: Final = "oversized"
"""What :class:`LineSplitter` yields for a line longer than its limit (discarded)."""

Line = bytes | Literal["oversized"] | None


class LineSplitter:
    """Bytes as they arrive, cut into lines, never holding more than the limit of one line.

    A line whose content (before its newline) is longer than ``limit`` is :data:`OVERSIZED`
    and skipped up to and including its newline, as is unterminated data over ``limit``; at
    the end a last line without a newline is returned as it is. Lines are handed to
    ``deliver`` in order; ``None`` is delivered once, at the end.
    """

    def __init__(self, limit: int, deliver: Callable[[Line], None]) -> None:
        self._limit = limit
        self._deliver = deliver
        self._rest = bytearray()
        self._skipping = False
        self._ended = False

    def feed(self, data: bytes) -> None:
        if self._ended:
            return
        limit = self._limit
        deliver = self._deliver
        start = 0
        if self._skipping or self._rest:
            cut = data.find(b"\n")
            if cut < 0:
                if not self._skipping:
                    self._rest += data
                    if len(self._rest) > limit:
                        self._rest.clear()
                        self._skipping = True
                        deliver(OVERSIZED)
                return
            if self._skipping:
                self._skipping = False
            elif len(self._rest) + cut > limit:
                self._rest.clear()
                deliver(OVERSIZED)
            else:
                self._rest += data[: cut + 1]
                line = bytes(self._rest)
                self._rest.clear()
                deliver(line)
            start = cut + 1
        while (cut := data.find(b"\n", start)) >= 0:
            deliver(OVERSIZED if cut - start > limit else data[start : cut + 1])
            start = cut + 1
        if start < len(data):
            if len(data) - start > limit:
                self._skipping = True
                deliver(OVERSIZED)
            else:
                self._rest += data[start:]

    def end(self) -> None:
        if self._ended:
            return
        self._ended = True
        if self._rest and not self._skipping:
            line = bytes(self._rest)
            self._rest.clear()
            self._deliver(line)
        self._deliver(None)


# Made once: json.dumps with options makes an encoder per call, a sixth of the cost.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_COMPACT_ASCII = json.JSONEncoder(separators=(",", ":"))


def line_of(obj: Any) -> bytes:
    """``obj`` as one compact JSON line, in UTF-8 where it can be."""
    try:
        return _COMPACT.encode(obj).encode() + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate (JSON text can carry one, escaped) has no UTF-8 form: escape it again.
        return _COMPACT_ASCII.encode(obj).encode() + b"\n"


class Handoff:
    """Lines one side of a process wrote for another side of the same process, each with the
    JSON value it was read or written from, so that the reader need not parse it again.

    The gateway and the session in front of it hand each other lines (each is the other's
    peer); both read every line, and most of a call's cost through the gateway used to be
    those second readings. A value is taken at most once, and only for the very line object
    it was given with (held here, so that no other object can take its place); a line the
    reader is not handed a value for is read as any other. At most ``bound`` lines and
    ``bound_bytes`` of them wait (a reader takes each at its next turn): past either, the
    oldest are dropped, and their readers parse them."""

    def __init__(self, bound: int = 1024, bound_bytes: int = 8 * 1024 * 1024) -> None:
        self._bound = bound
        self._bound_bytes = bound_bytes
        self._held = 0
        self._values: dict[int, tuple[bytes, Any]] = {}

    def give(self, line: bytes, value: Any) -> None:
        """``line`` is the JSON text of ``value`` (a message read strictly, or encoded by
        :func:`line_of`), about to be written to the reader."""
        values = self._values
        values[id(line)] = (line, value)
        self._held += len(line)
        while len(values) > self._bound or self._held > self._bound_bytes:
            dropped, _ = values.pop(next(iter(values)))
            self._held -= len(dropped)

    def take(self, line: bytes) -> Any:
        """The value ``line`` was given with, forgotten once taken; None when there is none
        (the reader reads the line: a line whose value is JSON's null reads as None too)."""
        # The line held with its value keeps its address from being any other object's.
        found = self._values.pop(id(line), None)
        if found is None:
            return None
        self._held -= len(line)
        return found[1]


class Lines:
    """The lines read from one side, waiting to be decided about, in order.

    Reading is paused while more than twice the line limit is waiting, as a bounded
    ``StreamReader`` would; ``None`` marks the end of the stream.
    """

    def __init__(self, limit: int) -> None:
        self.splitter = LineSplitter(limit, self._deliver)
        self._ready: deque[Line] = deque()
        self._size = 0
        self._high = 2 * limit
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self.transport: Any = None  # what pause_reading and resume_reading go to

    def _deliver(self, line: Line) -> None:
        self._ready.append(line)
        if isinstance(line, bytes):
            self._size += len(line)
            if self._size > self._high and not self._paused and self.transport is not None:
                self._paused = True
                self.transport.pause_reading()
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    @property
    def waiting(self) -> bool:
        """Whether a line can be taken at once."""
        return bool(self._ready)

    @property
    def message_waiting(self) -> bool:
        """Whether a line that is not :data:`OVERSIZED` (or the end) can be taken at once:
        what a reader that skips oversized lines gets without waiting."""
        ready = self._ready
        return bool(ready) and (ready[0] != OVERSIZED or any(x != OVERSIZED for x in ready))

    async def first(self) -> Line:
        """The line :meth:`next` gives next, left for it: a transport choosing its upstream by
        what its client says first."""
        while not self._ready:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self._ready[0]

    async def next(self) -> Line:
        """The next line, :data:`OVERSIZED`, or None at the end."""
        # first()'s wait, inline: one coroutine fewer for every line read.
        while not self._ready:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        line = self._ready.popleft()
        if isinstance(line, bytes):
            self._size -= len(line)
            if self._paused and self._size <= self._high // 2:
                self._paused = False
                self.transport.resume_reading()
        return line


class Backlog:
    """Messages waiting for one reader, in order, that tasks of their own read from a peer
    and put here (a gateway's servers, an HTTP server's answers): the writers' flow control.

    A writer that awaits :meth:`room` before reading on waits while more than ``high`` bytes
    wait, until half of them are taken, so that a peer writing faster than the reader takes
    fills its own pipe or socket, not this process's memory (what :class:`Lines` does for a
    pipe it reads itself). What the proxy says itself is put without waiting. ``None`` marks
    the end.
    """

    def __init__(self, high: int) -> None:
        self._items: deque[bytes | str | None] = deque()
        self._size = 0
        self._high = high
        self._waiter: asyncio.Future[None] | None = None
        self._room = asyncio.Event()
        self._room.set()

    @property
    def waiting(self) -> bool:
        """Whether :meth:`get` has a message at once."""
        return bool(self._items)

    def put(self, line: bytes | str | None) -> None:
        """Add a message (None: the end)."""
        self._items.append(line)
        if line is not None:
            self._size += len(line)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def get(self) -> bytes | str | None:
        """The next message, waiting for one."""
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        line = self._items.popleft()
        if line is not None:
            self._size -= len(line)
            if self._size <= self._high // 2 and not self._room.is_set():
                self._room.set()
        return line

    async def room(self) -> None:
        """Return once no more than ``high`` bytes wait."""
        if self._size > self._high:
            self._room.clear()
            await self._room.wait()


class Flow:
    """Write flow control of one transport: ``blocked`` while its buffer is full or it is
    lost; :meth:`drain` waits as ``StreamWriter.drain`` does."""

    def __init__(self) -> None:
        self.blocked = False
        self._paused = False
        self._lost = False
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def lost(self) -> bool:
        """Whether the transport is gone."""
        return self._lost

    def pause(self) -> None:
        """The transport's buffer is full: writers wait."""
        self._paused = self.blocked = True

    def resume(self) -> None:
        """The transport's buffer has room again."""
        self._paused = False
        self.blocked = self._lost
        self._wake()

    def lose(self) -> None:
        """The transport is gone: :meth:`drain` raises from now on."""
        self._lost = self.blocked = True
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def drain(self) -> None:
        """Wait until the transport takes writes again; ConnectionResetError once it is lost."""
        if self._lost:
            raise ConnectionResetError("Connection lost")
        if not self._paused:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter


_BOM = b"\xef\xbb\xbf"


def framed(line: bytes) -> bool:
    """Whether ``line`` can be sent on as it is: one message, one line ending, nothing a
    reader could split or read otherwise (a CR, which some readers end lines at, or a BOM,
    which the proxy's reader skips and another may not). Anything else is written anew
    from what was read, never edited."""
    end = len(line) - 1
    return end >= 0 and line.find(b"\n") == end and b"\r" not in line and not line.startswith(_BOM)

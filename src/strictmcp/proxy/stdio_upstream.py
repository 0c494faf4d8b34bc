"""An :class:`~.upstream.Upstream` over stdio: a spawned server, one message per line.

Its output is cut into lines with a bound (a longer line is dropped unread, as the proxy
does); its stderr is kept in a bounded buffer, so that a report can say what a server that
crashed said last without a chatty server exhausting memory.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence

from ..protocol.jsonrpc import DEFAULT_MAX_SIZE
from .stdio import ProcessUpstream, _Lines, _Server

_STDERR_LINES = 50
_STDERR_LINE_CHARS = 500


class _CapturingServer(_Server):
    """The proxy's server protocol, with stderr kept instead of inherited."""

    def __init__(self, lines: _Lines, stderr: StderrTail) -> None:
        super().__init__(lines)
        self.stderr = stderr

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2:
            self.stderr.feed(data)
        else:
            super().pipe_data_received(fd, data)


class StderrTail:
    """The last lines a process wrote to stderr, each shortened, never more than a bound."""

    def __init__(self, lines: int = _STDERR_LINES, chars: int = _STDERR_LINE_CHARS) -> None:
        self._lines: deque[str] = deque(maxlen=lines)
        self._chars = chars
        self._partial = bytearray()

    def feed(self, data: bytes) -> None:
        """Take bytes as they arrive."""
        self._partial += data
        *complete, rest = self._partial.split(b"\n")
        for raw in complete:
            self._add(bytes(raw))
        # An endless line must not grow without bound either: keep only its head.
        self._partial = bytearray(rest[: self._chars * 4])

    def _add(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if len(text) > self._chars:
            text = text[: self._chars] + "…"
        self._lines.append(text)

    def lines(self) -> list[str]:
        """The lines kept, oldest first, with any unterminated last line."""
        tail = list(self._lines)
        if self._partial:
            tail.append(self._partial.decode("utf-8", "replace")[: self._chars])
        return tail


class StdioUpstream(ProcessUpstream):
    """One MCP server spawned from a command, talked to over its stdin and stdout.

    The proxy's :class:`~.stdio.ProcessUpstream`, with the server's stderr kept in
    :attr:`stderr` instead of shared with ours, and the lines over the bound skipped and
    counted in :attr:`oversized`. Make one with :func:`spawn`.
    """

    def __init__(self, server: _CapturingServer, lines: _Lines) -> None:
        super().__init__(server, lines, self._skipped)
        self._process = server
        self.stderr = server.stderr
        self.oversized = 0

    def _skipped(self) -> None:
        self.oversized += 1

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has exited (128+N for signal N), else None."""
        status = self._process.returncode
        if status is None:
            return None
        return 128 - status if status < 0 else status


async def spawn(command: Sequence[str], *, max_size: int = DEFAULT_MAX_SIZE) -> StdioUpstream:
    """Start ``command`` as a :class:`StdioUpstream`; ``max_size`` bounds one message in
    bytes. OSError when the command cannot be run."""
    if not command:
        raise ValueError("the server command is empty")
    lines = _Lines(max_size + 2)  # the message and its line ending
    stderr = StderrTail()
    _, server = await asyncio.get_running_loop().subprocess_exec(
        lambda: _CapturingServer(lines, stderr),
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    return StdioUpstream(server, lines)

"""A spawned MCP server, on its pipes: the one place strictmcp starts a server process.

:func:`start_process` spawns a command as a :class:`ServerProcess`: its stdout cut into lines
with a bound (a longer line is :data:`~.lines.OVERSIZED`, dropped unread), its stdin written
with flow control, its stderr either inherited or kept in a bounded :class:`StderrTail`, so
that a report can say what a server that crashed said last without a chatty server exhausting
memory. Its exit status is as shells report it: 128+N for a signal N. A
:class:`ProcessUpstream` is one as an :class:`~.upstream.Upstream`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

from ..protocol.jsonrpc import DEFAULT_MAX_SIZE
from .lines import OVERSIZED, Flow, Lines

SHUTDOWN_GRACE = 5.0
"""Seconds a server gets to exit after its stdin is closed, and again after SIGTERM."""

_STDERR_LINES = 50
_STDERR_LINE_CHARS = 500


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


class LabelledStderr(StderrTail):
    """A server's stderr passed on to ours line by line, each line after the server's name
    (a gateway's servers share one stderr), and its last lines kept as :class:`StderrTail`
    keeps them."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self._label = label

    def _add(self, raw: bytes) -> None:
        super()._add(raw)
        try:
            sys.stderr.write(f"[{self._label}] {self._lines[-1]}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # our stderr is gone: the server's own words are not worth failing for


class ServerProcess(asyncio.SubprocessProtocol):
    """The spawned server: its stdout cut into :attr:`lines`, its stdin written with flow
    control, its stderr in :attr:`stderr` when kept. Used as ``asyncio.subprocess.Process``
    is (:meth:`wait`, :meth:`kill`...) and as a sink of lines (:meth:`write`, :meth:`drain`).
    """

    def __init__(self, lines: Lines, stderr: StderrTail | None) -> None:
        self.lines = lines
        self.stderr = stderr
        self.flow = Flow()
        self._transport: asyncio.SubprocessTransport | None = None
        self._stdin: Any = None
        self._exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not an isinstance check: uvloop's process transport has every method of
        # asyncio.SubprocessTransport without being a subclass of it.
        process = cast(asyncio.SubprocessTransport, transport)
        self._transport = process
        self._stdin = process.get_pipe_transport(0)
        self.lines.transport = process.get_pipe_transport(1)

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.lines.splitter.feed(data)
        elif fd == 2 and self.stderr is not None:
            self.stderr.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.lines.splitter.end()
        elif fd == 0:
            self.flow.lose()

    def pause_writing(self) -> None:
        self.flow.pause()

    def resume_writing(self) -> None:
        self.flow.resume()

    def process_exited(self) -> None:
        assert self._transport is not None
        status = self._transport.get_returncode()
        if status is None:
            status = 0
        if not self._exited.done():
            self._exited.set_result(128 - status if status < 0 else status)

    # --- as asyncio.subprocess.Process ---------------------------------------------------

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has exited (128+N for signal N), else None."""
        return self._exited.result() if self._exited.done() else None

    async def wait(self) -> int:
        """Wait for the process to exit; its exit status (128+N for signal N)."""
        return await asyncio.shield(self._exited)

    def terminate(self) -> None:
        """Send SIGTERM."""
        assert self._transport is not None
        self._transport.terminate()

    def kill(self) -> None:
        """Send SIGKILL."""
        assert self._transport is not None
        self._transport.kill()

    def close_stdin(self) -> None:
        """Close the server's stdin: the end of what it will be sent."""
        self._stdin.close()

    def close(self) -> None:
        """Release the process's pipes."""
        if self._transport is not None:
            self._transport.close()

    # --- as the sink of client messages ------------------------------------------------

    @property
    def blocked(self) -> bool:
        """Whether writes should wait for :meth:`drain`."""
        return self.flow.blocked

    def write(self, data: bytes) -> None:
        """Write ``data`` to the server's stdin."""
        self._stdin.write(data)

    def is_closing(self) -> bool:
        """Whether the server's stdin is closed or closing."""
        return bool(self._stdin.is_closing())

    async def drain(self) -> None:
        """Wait until the server's stdin takes writes again."""
        # A server that is gone says so by the end of its output, read by the other task.
        with contextlib.suppress(ConnectionError):
            await self.flow.drain()


async def start_process(
    command: Sequence[str],
    *,
    max_size: int = DEFAULT_MAX_SIZE,
    keep_stderr: bool = False,
    label: str | None = None,
    env: Mapping[str, str] | None = None,
    unset: Collection[str] = (),
) -> ServerProcess:
    """Spawn ``command`` on pipes; ``max_size`` bounds one line of its output in bytes, its
    stderr is ours unless ``keep_stderr`` (kept) or ``label`` (each line passed on after
    it, and kept). Its environment is ours without ``unset``, with ``env`` on top. OSError
    when the command cannot be run."""
    if not command:
        raise ValueError("the server command is empty")
    lines = Lines(max_size + 2)  # the message and its line ending
    stderr = LabelledStderr(label) if label else StderrTail() if keep_stderr else None
    _, process = await asyncio.get_running_loop().subprocess_exec(
        lambda: ServerProcess(lines, stderr),
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE if stderr is not None else None,
        env=_environment(env or {}, unset) if env or unset else None,
    )
    return process


def _environment(env: Mapping[str, str], unset: Collection[str]) -> dict[str, str]:
    kept = {name: value for name, value in os.environ.items() if name not in unset}
    return {**kept, **env}


async def stopped(process: ServerProcess) -> int:
    """The process's exit status, asking it to stop if it does not on its own within
    :data:`SHUTDOWN_GRACE`, and making it if it does not then either."""
    try:
        await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE)
    except asyncio.TimeoutError:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), SHUTDOWN_GRACE)
        except asyncio.TimeoutError:
            process.kill()
    return await process.wait()


class ProcessUpstream:
    """A spawned server as an :class:`~.upstream.Upstream`, one message per line; make one
    with :meth:`start`. A line over the bound is dropped unread, counted in :attr:`oversized`
    and received as :data:`~.lines.OVERSIZED`."""

    def __init__(self, process: ServerProcess) -> None:
        self._process = process
        self._closing: asyncio.Task[int] | None = None
        self.oversized = 0

    @classmethod
    async def start(
        cls,
        command: Sequence[str],
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        keep_stderr: bool = False,
        label: str | None = None,
        env: Mapping[str, str] | None = None,
        unset: Collection[str] = (),
    ) -> ProcessUpstream:
        """Spawn ``command`` (see :func:`start_process`); OSError when it cannot be."""
        process = await start_process(
            command, max_size=max_size, keep_stderr=keep_stderr, label=label, env=env, unset=unset
        )
        return cls(process)

    @property
    def stderr(self) -> StderrTail | None:
        """The last lines the server wrote to stderr, when they are kept."""
        return self._process.stderr

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has exited (128+N for signal N), else None."""
        return self._process.returncode

    @property
    def blocked(self) -> bool:
        """Whether the server's stdin is full (or gone): wait for :meth:`drain`."""
        return self._process.blocked

    def write(self, lines: list[bytes]) -> None:
        """Write these lines to the server's stdin, in one write."""
        process = self._process
        if not process.is_closing():
            process.write(b"".join(lines))

    async def drain(self) -> None:
        """Wait until the server's stdin takes writes again."""
        await self._process.drain()

    async def send(self, line: bytes) -> None:
        """Write one line to the server's stdin, waiting while it is full."""
        self.write([line])
        if self.blocked:
            await self.drain()

    @property
    def waiting(self) -> bool:
        """Whether :meth:`receive` has a line at once."""
        return self._process.lines.message_waiting

    async def receive(self) -> bytes | str | None:
        """The next line of the server's stdout, :data:`~.lines.OVERSIZED` for one over the
        bound; None at its end."""
        line = await self._process.lines.next()
        if line == OVERSIZED:
            self.oversized += 1
        return line

    async def aclose(self) -> int:
        """Close the server's stdin and wait for it to exit, asking it to when it does not;
        its exit status. Every caller gets the same."""
        if self._closing is None:
            self._closing = asyncio.create_task(self._close())
        return await asyncio.shield(self._closing)

    async def _close(self) -> int:
        process = self._process
        try:
            if process.returncode is None:
                process.close_stdin()
            return await stopped(process)
        finally:
            if process.returncode is None:
                process.kill()
            process.close()

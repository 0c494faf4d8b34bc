"""The interceptor server over stdio: newline-delimited JSON-RPC on stdin, answers on stdout.

Lines are cut with the proxy's bound (:class:`~strictmcp.connect.lines.LineSplitter`): one
longer than :data:`~.server.MAX_SIZE` is answered as too large (-32600, ``"id": null``) and
skipped, never held whole. Each line is answered before the next is read from the ones
waiting, so answers come in the order of the requests. The server ends, status 0, when its
stdin does.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from typing import BinaryIO

from ..connect.lines import OVERSIZED, Line, LineSplitter, line_of
from ..protocol import Rule, Violation
from ..protocol.jsonrpc import refusal_for
from .server import MAX_SIZE, InterceptorServer

_CHUNK = 64 * 1024


async def serve_stdio(server: InterceptorServer, stdin: int, stdout: BinaryIO) -> int:
    """Answer every line of the file descriptor ``stdin`` on ``stdout`` until it ends."""
    waiting: deque[Line] = deque()
    splitter = LineSplitter(MAX_SIZE + 2, waiting.append)  # the message and its line ending
    ended = False
    while not ended:
        data = await asyncio.to_thread(os.read, stdin, _CHUNK)
        if data:
            splitter.feed(data)
        else:
            splitter.end()
        while waiting:
            line = waiting.popleft()
            if line is None:
                ended = True
                break
            if line == OVERSIZED:
                too_large = Violation(Rule.MESSAGE_TOO_LARGE, "the message is too large")
                answer = refusal_for(None, [too_large])
            else:
                answer = await server.answer(line)
            if answer is not None:
                stdout.write(line_of(answer))
                stdout.flush()
    return 0

"""What every HTTP endpoint of strictmcp serves with: the request body read within its bounds,
and uvicorn's server saying where it listens (the proxy's and the interceptor server's)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn

from .alarms import alarms

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]

BODY_SECONDS = 30.0
"""The longest a request body may take to arrive."""


async def read_body(receive: Receive, limit: int, length: str | None) -> bytes | int:
    """The request body; else the status to answer: 413 when it is over ``limit``, 408 when
    it takes over :data:`BODY_SECONDS` (a client trickling it would hold its connection and
    its buffer forever), 0 when the client went away before the end (nothing to answer: a
    cut body is not the message it was)."""
    if length is not None and length.isdigit() and int(length) > limit:
        return 413
    body = bytearray()

    async def whole() -> int:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return 0
            body.extend(message.get("body", b""))
            if len(body) > limit:
                return 413
            if not message.get("more_body", False):
                return 200

    # A deadline on this task, on the loop's one timer (connect.alarms): wait_for's task or
    # a timer of its own would cost turns of the event loop on every request's way in.
    task = asyncio.current_task()
    assert task is not None  # an ASGI app runs in a task
    reading, expired = True, False

    def expire() -> None:
        nonlocal expired
        if reading:  # it may ring just after the body came
            expired = True
            task.cancel()

    alarm = alarms().set(BODY_SECONDS, expire)
    try:
        status = await whole()
    except asyncio.CancelledError:
        # Ours, unless someone else cancelled the task too (then theirs goes on).
        if not expired or (sys.version_info >= (3, 11) and task.uncancel() > 0):
            raise
        return 408
    finally:
        reading = False
        alarms().cancel(alarm)
    return bytes(body) if status == 200 else status


class AnnouncingServer(uvicorn.Server):
    """uvicorn's server, saying where it listens once it does."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[str], None]) -> None:
        super().__init__(config)
        self._announce = announce

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        for server in getattr(self, "servers", []):
            for sock in server.sockets:
                host, port = sock.getsockname()[:2]
                self._announce(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")

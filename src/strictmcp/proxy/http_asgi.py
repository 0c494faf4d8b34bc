"""Requests read and answers written as ASGI messages, for the HTTP transport.

Bounded reading of a body, the client's ``Accept``, and answers: a status alone, a JSON body,
or an event stream of lines that ends when they do or when the client goes away. A JSON-RPC
error goes out as JSON with the HTTP status its code has (:data:`LEGACY_STATUS` before
2026-07-28, :data:`MODERN_STATUS` from it); an answer is an event stream only once something
comes before its responses (:func:`respond`), as the official SDK answers 2026-07-28.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..connect.alarms import alarms
from ..connect.lines import line_of
from ..connect.sse import event, priming
from ..enforce import RATE_LIMITED
from ..protocol.jsonrpc import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .http_streams import AnswerLines, Exchange, RequestId

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

PING_SECONDS = 15.0
"""An event stream silent this long gets a comment, so that no proxy in between closes it."""

RESUMABLE_SECONDS = 0.1
"""How long an answer that would be a primed event stream may take to come whole and go out as
JSON instead: most answers take far less; a slow one gets its stream, primed, at this point."""

WATCH_SECONDS = 0.05
"""How long an answer may take before the proxy watches for its client going away."""

RETRY_MILLISECONDS = 1000
"""How long a client whose event stream broke waits before it reconnects (SEP-1699)."""

LEGACY_STATUS: dict[int, int] = {PARSE_ERROR: 400, INVALID_REQUEST: 400, RATE_LIMITED: 429}
"""The HTTP status of a JSON answer carrying these errors, before 2026-07-28; else 200."""
MODERN_STATUS: dict[int, int] = {
    **LEGACY_STATUS,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
"""Likewise from 2026-07-28, which gives its errors statuses, whoever answers them (the server
or the proxy): the status says what a JSON-RPC error says, to what reads HTTP only."""

_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


async def disconnected(receive: Receive) -> None:
    """Returns once the client has gone away."""
    while (await receive())["type"] != "http.disconnect":
        pass


class Departure:
    """Whether the client of one answer has gone away: :attr:`gone` is done once it has.

    Watching takes a task reading ``receive``, made only once the answer has taken
    :data:`WATCH_SECONDS`: most answers come sooner, and a client that leaves sooner is
    noticed then. :meth:`close` when the answer is over.
    """

    def __init__(self, receive: Receive) -> None:
        self.gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._receive = receive
        self._watch: asyncio.Future[None] | None = None
        self._closed = False
        self._alarm = alarms().set(WATCH_SECONDS, self._start)

    def _start(self) -> None:
        if not self._closed:
            self._watch = asyncio.ensure_future(disconnected(self._receive))
            self._watch.add_done_callback(self._ended)

    def _ended(self, watch: asyncio.Future[None]) -> None:
        if watch.cancelled():
            return
        watch.exception()  # a receive that failed: the connection is gone all the same
        if not self.gone.done():
            self.gone.set_result(None)

    def close(self) -> None:
        """Stop watching."""
        self._closed = True
        alarms().cancel(self._alarm)
        if self._watch is not None:
            self._watch.cancel()


def accepts(accept: str | None) -> tuple[bool, bool]:
    """Whether an ``Accept`` header takes JSON, and event streams (no header takes both)."""
    if accept is None:
        return True, True
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    anything = "*/*" in kinds
    return (
        anything or "application/json" in kinds or "application/*" in kinds,
        anything or "text/event-stream" in kinds or "text/*" in kinds,
    )


def loads(line: bytes) -> Any:
    """The JSON value of ``line``; None when it is not JSON."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


async def stream(
    send: Send,
    lines: AnswerLines,
    gone: asyncio.Future[None],
    extra: Headers,
    *,
    primed: str | None = None,
    taken: list[bytes] | None = None,
) -> None:
    """Send ``lines`` (after those ``taken`` from them already) as events until they end or
    the client goes away; first, when ``primed`` names an event id, the priming event that
    tells the client it may resume (SEP-1699)."""
    await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS + extra})
    if primed is not None:
        head = priming(primed, RETRY_MILLISECONDS)
        await send({"type": "http.response.body", "body": head, "more_body": True})
    for already in taken or []:
        await send({"type": "http.response.body", "body": event(already), "more_body": True})
    while (line := await lines.next(gone, PING_SECONDS)) is not None:
        data = event(line) if line else b": ping\n\n"
        await send({"type": "http.response.body", "body": data, "more_body": True})
    if not gone.done():
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def respond(
    send: Send,
    exchange: Exchange,
    gone: asyncio.Future[None],
    extra: Headers,
    *,
    batch: bool,
    statuses: dict[int, int],
    primed: str | None = None,
) -> None:
    """Answer a POST with ``exchange``'s responses as one JSON body when they are all there is
    (see :class:`~.http_streams.Exchange`), else as an event stream (``primed`` as for
    :func:`stream`). A client that takes events gets them once :data:`PING_SECONDS` pass
    without the answer, so that its connection is not idle that long; or, when the stream
    would be ``primed``, once :data:`RESUMABLE_SECONDS` pass: a slow answer goes on a stream
    the client is told it may resume (SEP-1699), as every answer did before 2026-07-28."""
    taken: list[bytes] = []
    if exchange.held is not None:
        patience = PING_SECONDS if primed is None else RESUMABLE_SECONDS
        first = await exchange.lines.next(gone, patience if exchange.streaming else None)
        if first is None:
            if not gone.done():
                await answer_json(send, exchange.held, extra, batch=batch, statuses=statuses)
            return
        if first:
            taken.append(first)
        else:
            exchange.stream()
    await stream(send, exchange.lines, gone, extra, primed=primed, taken=taken)


async def answer_json(
    send: Send, replies: list[bytes], extra: Headers, *, batch: bool, statuses: dict[int, int]
) -> None:
    """Answers as JSON (one, or a batch's array); 202 when there are none. A lone error gets
    the status ``statuses`` gives its code."""
    if not replies:
        await answer_status(send, 202, extra)
        return
    if len(replies) == 1 and not (batch and not replies[0].lstrip().startswith(b"[")):
        body = replies[0].strip()
    else:
        # Each answer may be a message or (from a server that reads batches) an array of them.
        items = [r.strip()[1:-1] if r.lstrip().startswith(b"[") else r.strip() for r in replies]
        body = b"[" + b",".join(item for item in items if item) + b"]"
    # Only an error has a status of its own: a body that cannot hold the key "error" (not
    # even spelled with escapes) is not read again, which a large result would cost.
    message = loads(body) if b'"error"' in body or b"\\u" in body else None
    error = message.get("error") if isinstance(message, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    status = statuses.get(code, 200) if isinstance(code, int) else 200
    if status == 429:
        data = error.get("data") if isinstance(error, dict) else None
        wait = data.get("retryAfter") if isinstance(data, dict) else None
        if isinstance(wait, int):
            extra = [*extra, (b"retry-after", str(wait).encode())]
    await answer(send, status, body, b"application/json", extra)


async def answer_events(send: Send, lines: list[bytes], extra: Headers) -> None:
    """``lines`` as one whole event stream, for a client that takes only events."""
    body = b"".join(event(line) for line in lines)
    headers = [*_SSE_HEADERS, (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def answer_error(
    send: Send, status: int, request_id: RequestId | None, code: int, text: str
) -> None:
    """A JSON-RPC error the proxy answers with itself, with an HTTP status."""
    made = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}
    await answer(send, status, line_of(made), b"application/json")


async def answer_status(send: Send, status: int, extra: Headers | None = None) -> None:
    """An HTTP status alone."""
    await answer(send, status, b"", None, extra)


async def answer(
    send: Send,
    status: int,
    body: bytes,
    kind: bytes | None,
    extra: Headers | None = None,
) -> None:
    """A whole answer: status, body of type ``kind``, and ``extra`` headers."""
    headers = [(b"content-type", kind)] if kind is not None else []
    headers += [(b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})

"""Which HTTP answer each message for the client goes out on.

Over streamable HTTP the answer to a POST of requests is the stream of what the server sends
while they are pending, ending with their responses; what the server sends unasked goes out on
the session's GET stream. Messages arrive here as lines, already decided about, from one
upstream: a response goes to the exchange of its request, a progress notification to the
exchange that gave its token, a notification of a subscription (2026-07-28 tags those with the
id of the ``subscriptions/listen`` request whose stream it belongs on) to that request's,
anything else to the oldest exchange still streaming, then the GET stream, then a bounded
buffer kept until a GET stream is opened. A stream whose client leaves :data:`MAX_UNREAD`
lines (or :data:`MAX_UNREAD_BYTES`) unread has stalled, and is ended: a GET stream's lines
are buffered, and the client opens another to go on; a POST's answer ends as if its client had
gone away (from 2026-07-28 its requests are cancelled), and what comes for it after goes where
a departed client's would.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections import deque
from typing import Any

from ..connect.alarms import alarms
from ..connect.lines import line_of
from ..protocol.wire import META_SUBSCRIPTION_ID

RequestId = int | str


MAX_UNREAD = 1000
"""Lines a stream's client may leave unread before the stream is ended: past a burst, that
many means its connection has stalled, and they would pile up without bound."""
MAX_UNREAD_BYTES = 8 * 1024 * 1024
"""Bytes, likewise (in more than one line: a line alone always goes)."""


class AnswerLines:
    """The lines of one answer or GET stream, in order, None last, for one reader.

    An :class:`asyncio.Queue` would hold them, but waiting on one together with the client's
    going away and a ping timer takes a task and :func:`asyncio.wait` per line; :meth:`next`
    takes one future, woken by whichever comes first (the ping on the loop's one timer,
    :mod:`~strictmcp.connect.alarms`).
    """

    def __init__(self) -> None:
        self._items: deque[bytes | None] = deque()
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        return len(self._items)

    @property
    def stalled(self) -> bool:
        """Whether the client leaves so much unread that its connection has stalled."""
        items = self._items
        return len(items) >= MAX_UNREAD or (self._size > MAX_UNREAD_BYTES and len(items) > 1)

    def put(self, line: bytes | None) -> None:
        """Add a line (None: the end)."""
        self._items.append(line)
        if line is not None:
            self._size += len(line)
        self._wake()

    def take_all(self) -> list[bytes | None]:
        """Every line not read yet, removed."""
        items = list(self._items)
        self._items.clear()
        self._size = 0
        return items

    async def next(self, gone: asyncio.Future[None], ping: float | None = None) -> bytes | None:
        """The next line, or None at the end or once ``gone`` (the client went away) is done;
        ``b""`` when ``ping`` seconds pass without one."""
        if gone.done():
            return None
        if not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            # Bound to this wait: a ping that rings late must not wake the next one.
            wake = functools.partial(_settle, waiter)
            gone.add_done_callback(wake)
            alarm = alarms().set(ping, wake) if ping is not None else None
            try:
                await waiter
            finally:
                self._waiter = None
                gone.remove_done_callback(wake)
                if alarm is not None:
                    alarms().cancel(alarm)
            if not self._items:
                return None if gone.done() else b""
        line = self._items.popleft()
        if line is not None:
            self._size -= len(line)
        return line

    def _wake(self) -> None:
        if self._waiter is not None:
            _settle(self._waiter)


def _settle(waiter: asyncio.Future[None], *_: object) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Exchange:
    """One POST waiting for the answers to its requests.

    ``ids`` maps the id each request was sent upstream with to the client's own, ``tokens``
    likewise for progress tokens: a stateless client's ids are renamed so as not to collide
    with another client's. ``lines`` ends with None once every request is answered.

    Whether the answer is one JSON body or an event stream is decided as late as it can be:
    while the client takes JSON (``whole``) and only responses have come, they are
    :attr:`held`, and ``lines`` gets nothing but its end; the first message that must go
    before them (progress, logging, a request of the server's) makes the answer a stream
    (:meth:`stream`) when the client takes one (``streaming``), and is dropped when it does
    not. A client that takes only events gets a stream from the start.
    """

    def __init__(
        self,
        ids: dict[RequestId, RequestId],
        tokens: dict[RequestId, RequestId],
        *,
        streaming: bool,
        whole: bool = True,
    ) -> None:
        self.ids = ids
        self.tokens = tokens
        self.streaming = streaming
        self.waiting = set(ids)
        self.lines = AnswerLines()
        #: The requests still waiting when the client's stream stalled (and was ended).
        self.stalled: set[RequestId] = set()
        #: The responses kept for a JSON answer; None once the answer is a stream.
        self.held: list[bytes] | None = [] if whole else None
        if not self.waiting:
            self.lines.put(None)

    def put(self, line: bytes, messages: list[dict[str, Any]]) -> None:
        """A line for this exchange (``messages`` are its contents), in the client's ids."""
        answered = [_id_of(m) for m in messages if "method" not in m]
        renamed = False
        for message in messages:
            sent_as = _id_of(message) if "method" not in message else None
            if sent_as in self.ids and self.ids[sent_as] != sent_as:
                message["id"] = self.ids[sent_as]
                renamed = True
            token = _token_of(message)
            if token in self.tokens and self.tokens[token] != token:
                message["params"]["progressToken"] = self.tokens[token]
                renamed = True
            meta = _meta_of(message)
            subscription = _request_id(meta.get(META_SUBSCRIPTION_ID))
            if subscription in self.ids and self.ids[subscription] != subscription:
                meta[META_SUBSCRIPTION_ID] = self.ids[subscription]
                renamed = True
        if renamed:
            line = line_of(messages if line.lstrip().startswith(b"[") else messages[0])
        if not self.waiting:
            return
        held = self.held
        if held is None:
            self.lines.put(line)
        elif answered and (len(answered) == len(messages) or not self.streaming):
            held.append(line)
        elif self.streaming:
            self.stream()
            self.lines.put(line)
        # else: a message for a client that takes only JSON, which has no place for it
        for sent_as in answered:
            self.settle(sent_as)
        if self.waiting and self.lines.stalled:
            self.stalled = set(self.waiting)
            self.end()

    def stream(self) -> None:
        """Make the answer an event stream from now on: the responses held go first."""
        if self.held is not None:
            for line in self.held:
                self.lines.put(line)
            self.held = None

    def settle(self, sent_as: RequestId | None) -> None:
        """One request answered; the end of the exchange after the last."""
        if sent_as in self.waiting:
            self.waiting.discard(sent_as)
            if not self.waiting:
                self.lines.put(None)

    def end(self) -> None:
        """Nothing more will come."""
        self.waiting.clear()
        self.lines.put(None)


class Router:
    """The exchanges and the GET stream of one upstream; see the module documentation.

    A ``shared`` router serves many clients (the stateless revisions): what cannot be told
    to belong to one of them is dropped rather than shown to another.
    """

    def __init__(self, buffered: int, *, shared: bool = False) -> None:
        self.shared = shared
        self._exchanges: dict[RequestId, Exchange] = {}
        self._progress: dict[RequestId, Exchange] = {}
        self._open: dict[Exchange, None] = {}  # in the order they were opened
        self.standalone: AnswerLines | None = None
        self._buffer: deque[bytes] = deque(maxlen=buffered)

    @property
    def busy(self) -> bool:
        """Whether any answer or stream is open."""
        return bool(self._open) or self.standalone is not None

    def open(self, exchange: Exchange) -> Exchange:
        """Route the answers of ``exchange``'s requests to it from now on."""
        for sent_as in exchange.ids:
            self._exchanges[sent_as] = exchange
        for token in exchange.tokens:
            self._progress[token] = exchange
        self._open[exchange] = None
        return exchange

    def pending(self, sent_as: RequestId) -> bool:
        """Whether a request sent as ``sent_as`` waits for its answer in an open exchange."""
        exchange = self._exchanges.get(sent_as)
        return exchange is not None and sent_as in exchange.waiting

    def close(self, exchange: Exchange) -> None:
        """The client's answer is over (or it went away): nothing more goes to it."""
        for sent_as in exchange.ids:
            if self._exchanges.get(sent_as) is exchange:
                del self._exchanges[sent_as]
        for token in exchange.tokens:
            if self._progress.get(token) is exchange:
                del self._progress[token]
        self._open.pop(exchange, None)

    def listen(self) -> AnswerLines | None:
        """Open the GET stream, with what was buffered for it; None if one is open already."""
        if self.standalone is not None:
            return None
        self.standalone = AnswerLines()
        while self._buffer:
            self.standalone.put(self._buffer.popleft())
        return self.standalone

    def unlisten(self, stream: AnswerLines) -> None:
        """The GET stream closed."""
        if self.standalone is stream:
            self.standalone = None

    def deliver(self, line: bytes) -> None:
        """Send one line on the answer it belongs to."""
        try:
            body = json.loads(line)
        except ValueError:
            body = None
        messages = [m for m in (body if isinstance(body, list) else [body]) if isinstance(m, dict)]
        target = self._target(messages)
        if target is not None:
            target.put(line, messages)
            if target.stalled:
                self.close(target)
        elif self.shared:
            return
        elif self.standalone is not None and not self.standalone.stalled:
            self.standalone.put(line)
        else:
            if self.standalone is not None:
                self._drop_laggard(self.standalone)
            self._buffer.append(line)

    def _drop_laggard(self, stream: AnswerLines) -> None:
        """End a GET stream whose client reads no more: what it did not take is kept, in
        order (the buffer's bound applies), for the next one."""
        self.standalone = None
        self._buffer.extend(line for line in stream.take_all() if line is not None)
        stream.put(None)

    def end(self) -> None:
        """The upstream is gone: every answer and stream ends."""
        for exchange in list(self._open):
            exchange.end()
        if self.standalone is not None:
            self.standalone.put(None)

    def _target(self, messages: list[dict[str, Any]]) -> Exchange | None:
        for message in messages:
            answered = _id_of(message) if "method" not in message else None
            if answered is not None:
                return self._exchanges.get(answered)
            token = _token_of(message)
            if token is not None and token in self._progress:
                return self._progress[token]
            subscription = _request_id(_meta_of(message).get(META_SUBSCRIPTION_ID))
            if subscription is not None and subscription in self._exchanges:
                return self._exchanges[subscription]
        if self.shared:
            return None
        return next((e for e in self._open if e.streaming and e.waiting), None)


def _id_of(message: dict[str, Any]) -> RequestId | None:
    return _request_id(message.get("id"))


def _request_id(value: Any) -> RequestId | None:
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _meta_of(message: dict[str, Any]) -> dict[str, Any]:
    """The ``_meta`` of a notification's params, or of a result (empty when it has none)."""
    body = message.get("params") if "method" in message else message.get("result")
    meta = body.get("_meta") if isinstance(body, dict) else None
    return meta if isinstance(meta, dict) else {}


def _token_of(message: dict[str, Any]) -> RequestId | None:
    if message.get("method") != "notifications/progress":
        return None
    params = message.get("params")
    token = params.get("progressToken") if isinstance(params, dict) else None
    return token if isinstance(token, (int, str)) and not isinstance(token, bool) else None

"""An MCP server reached over streamable HTTP, as an :class:`~.upstream.Upstream`.

Each message is POSTed; a request's answer, JSON or an event stream, is read and every message
it carries is queued for :meth:`HttpUpstream.receive`, in the order it came. The session id the
server gives in its ``initialize`` answer is sent with everything after it, as is the protocol
version once negotiated (or, from 2026-07-28, the version each request declares, with its
``Mcp-Method`` and ``Mcp-Name``). After ``notifications/initialized`` a GET stream is opened
for what the server sends unasked, when the server offers one.

A server may close an answer's event stream before the response, once it has given an event
id (SEP-1699): the stream is then resumed with a GET naming the last id, after the delay the
server asked for, as long as each reconnection brings something new.

What waits to be received is bounded as a spawned server's unread lines are: past twice the
message limit, no answer or stream is read further (the server waits on its connection) until
half of it has been received.

An HTTP failure fails only the requests of that POST, with a JSON-RPC error the proxy's client
reads like any answer: ``UPSTREAM_CLOSED`` when the server cannot be reached or ends the
exchange early, ``UPSTREAM_INVALID`` when its answer cannot be read, or when the server refuses
the request with HTTP 401 or 403 (then ``data`` is ``{"httpStatus": status}`` and the message
says whether credentials were sent, with the hints of the server's ``WWW-Authenticate``
challenge, :func:`~.http_headers.challenge_hint`). A cancellation aborts the
request's POST; from 2026-07-28 that is the whole signal, before it the notification is sent too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from ..protocol.jsonrpc import DEFAULT_MAX_SIZE
from ..protocol.wire import STATELESS_VERSIONS, declared_version
from . import http_headers as h
from .lines import Backlog, line_of
from .sse import EventReader, EventTooLarge
from .upstream import LONG_LIVED, UPSTREAM_CLOSED, UPSTREAM_INVALID

_CONNECT_SECONDS = 10.0
_CLOSE_SECONDS = 5.0
"""Seconds the DELETE ending the session may take, when closing."""
_RETRY_MILLISECONDS = 1000
"""The delay before resuming a stream whose server named none."""

RequestId = int | str


class _Failed(Exception):
    """The POST's answer cannot be used: its requests get ``code``, ``text`` and ``data``;
    ``ended`` when the server says the session is over, which ends this upstream too."""

    def __init__(
        self, code: int, text: str, *, ended: bool = False, data: dict[str, Any] | None = None
    ) -> None:
        super().__init__(text)
        self.code = code
        self.text = text
        self.ended = ended
        self.data = data


class HttpUpstream:
    """The MCP server at ``url``; see the module documentation.

    ``max_size`` bounds each message read; ``timeout`` each read of an answer (but not of
    a :data:`~.upstream.LONG_LIVED` request's stream), and the connection; ``client`` (an
    ``httpx2.AsyncClient``) is made when not given and then closed with this upstream.
    ``input_schema`` gives the schemas tool calls' ``Mcp-Param-*``
    headers are made from (none are sent without it). ``auth`` gives every request the
    proxy's own credentials (on the client made here); ``tls`` is the TLS context it verifies
    servers with (by default one of its own: a context holds the loaded CA certificates, about
    0.8 MB, so that many upstreams share one, see docs/benchmarks.md).
    """

    def __init__(
        self,
        url: str,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        timeout: float = 300.0,
        client: httpx2.AsyncClient | None = None,
        input_schema: h.SchemaOf | None = None,
        auth: httpx2.Auth | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.url = url
        self._input_schema = input_schema
        self.max_size = max_size
        self._own_client = client is None
        self._credentials = auth is not None
        connect = min(timeout, _CONNECT_SECONDS)
        self._client = client or httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout, connect=connect),
            follow_redirects=False,
            auth=auth,
            verify=tls if tls is not None else True,
        )
        self._endless = httpx2.Timeout(None, connect=connect)
        self._received = Backlog(2 * max_size)
        # The POST of each request in flight, and whether it was sent as 2026-07-28.
        self._posts: dict[RequestId, tuple[asyncio.Task[None], bool]] = {}
        self._listening: asyncio.Task[None] | None = None
        self._handshake: asyncio.Event | None = None
        self.session_id: str | None = None
        self.version: str | None = None
        # Messages written and not yet POSTed, and the task POSTing them.
        self._outbox: deque[bytes] = deque()
        self._posting: asyncio.Task[None] | None = None
        self._closed = False

    # --- Upstream ----------------------------------------------------------------------------

    @property
    def blocked(self) -> bool:
        """Whether messages written wait behind a POST under way."""
        return bool(self._outbox)

    def write(self, lines: list[bytes]) -> None:
        """Queue these messages, to be POSTed one at a time in order (a request's answer is
        read in the background, a notification's is awaited before the next is sent)."""
        if self._closed:
            return
        self._outbox.extend(lines)
        if self._posting is None:
            self._posting = asyncio.create_task(self._post_all())

    async def drain(self) -> None:
        """Wait until every message written is POSTed (or its POST failed, then raised)."""
        posting = self._posting
        if posting is not None:
            await asyncio.wait({posting})
            if not posting.cancelled():
                posting.result()

    async def send(self, line: bytes) -> None:
        """POST one message, after those written."""
        self.write([line])
        await self.drain()

    @property
    def waiting(self) -> bool:
        """Whether :meth:`receive` has a message at once."""
        return self._received.waiting

    async def _post_all(self) -> None:
        try:
            while self._outbox:
                await self._post(self._outbox.popleft())
        finally:
            self._posting = None

    async def _post(self, line: bytes) -> None:
        """POST one message: a request's answer is read in the background."""
        if self._closed:
            return
        try:
            body = json.loads(line)
        except ValueError:
            return  # the session sends on only what it could read
        messages = [m for m in (body if isinstance(body, list) else [body]) if isinstance(m, dict)]
        if self._handshake is not None:
            await self._handshake.wait()  # everything after initialize needs its session id
        if self._aborted_by(messages):
            return
        headers = h.request_headers(body, self.version, self._input_schema)
        requests = [m for m in messages if "method" in m and _id_of(m) is not None]
        if not requests:
            await self._notify(line, headers)
            if any(m.get("method") == "notifications/initialized" for m in messages):
                self._listen()
            return
        initialize = next((m for m in requests if m.get("method") == "initialize"), None)
        if initialize is not None:
            self._handshake = asyncio.Event()
            self.version = None
            headers.pop(h.PROTOCOL_VERSION, None)
        ids = [request_id for m in requests if (request_id := _id_of(m)) is not None]
        endless = any(m.get("method") in LONG_LIVED for m in requests)
        task = asyncio.create_task(self._exchange(line, headers, ids, initialize, endless))
        modern = declared_version(body) in STATELESS_VERSIONS
        for request_id in ids:
            self._posts[request_id] = (task, modern)

    async def receive(self) -> bytes | str | None:
        """The next message the server sent; None once closed."""
        return await self._received.get()

    def _session_over(self) -> None:
        """The server forgot the session (restarted, or expired it): what is still in flight
        belongs to it, and the proxy's session ends as it would when a process exits."""
        self.session_id = None
        if not self._closed:
            self._received.put(None)

    async def aclose(self) -> int:
        """Abort what is in flight, end the server's session (DELETE) and close; 0."""
        if self._closed:
            return 0
        self._closed = True
        posts = [task for task, _ in self._posts.values()]
        others = [task for task in (self._posting, self._listening) if task is not None]
        tasks = [*posts, *others]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.session_id is not None:
            with contextlib.suppress(httpx2.HTTPError):
                await self._client.delete(
                    self.url, headers=self._headers({}), timeout=_CLOSE_SECONDS
                )
        if self._own_client:
            await self._client.aclose()
        self._received.put(None)
        return 0

    # --- requests ----------------------------------------------------------------------------

    async def _exchange(
        self,
        line: bytes,
        headers: dict[str, str],
        ids: list[RequestId],
        initialize: dict[str, Any] | None,
        endless: bool,
    ) -> None:
        """POST requests and queue every message of the answer; fail those left unanswered.
        An ``endless`` answer may stay silent as long as it likes: no read of it times out."""
        waiting = set(ids)
        failure = _Failed(UPSTREAM_CLOSED, "The server's answer ended before the response")
        reader = EventReader(self.max_size)
        try:
            timeout = self._endless if endless else httpx2.USE_CLIENT_DEFAULT
            async with self._client.stream(
                "POST", self.url, content=line, headers=self._headers(headers), timeout=timeout
            ) as response:
                if initialize is not None:
                    self.session_id = response.headers.get(h.SESSION_ID) or self.session_id
                    self._handshake_done()
                async for message in self._answer(response, len(ids) == 1, reader):
                    if self._take(message, ids, waiting, initialize):
                        return
                    await self._received.room()
            await self._resume(reader, ids, waiting)
            if not waiting:
                return
        except _Failed as failed:
            failure = failed
        except EventTooLarge:
            failure = _Failed(UPSTREAM_INVALID, "The server's answer is larger than the limit")
        except (httpx2.HTTPError, httpx2.StreamError):
            failure = _Failed(
                UPSTREAM_CLOSED, "The connection to the server failed (strictmcp proxy)"
            )
        except Exception:  # anything else must fail the requests, not leave them hanging
            failure = _Failed(UPSTREAM_INVALID, "The server's answer could not be read")
        finally:
            if initialize is not None:
                self._handshake_done()
            for request_id in ids:
                post = self._posts.get(request_id)
                if post is not None and post[0] is asyncio.current_task():
                    del self._posts[request_id]
        for request_id in ids:
            if request_id in waiting:
                self._fail(request_id, failure.code, failure.text, failure.data)
        if failure.ended:
            self._session_over()

    def _take(
        self,
        message: dict[str, Any],
        ids: list[RequestId],
        waiting: set[RequestId],
        initialize: dict[str, Any] | None,
    ) -> bool:
        """Queue one message of the answer to a POST of ``ids``; whether none is left waiting."""
        self._learn(message, initialize)
        answered = _id_of(message) if "method" not in message else None
        if answered is None and len(ids) == 1 and _is_answer(message):
            answered = ids[0]  # a rejection whose id the server could not read
            message["id"] = answered
        if answered is not None:
            waiting.discard(answered)
        self._queue(message)
        return not waiting

    async def _resume(
        self, reader: EventReader, ids: list[RequestId], waiting: set[RequestId]
    ) -> None:
        """Resume the answer's event stream while requests wait for it (see the module
        documentation); raises as reading the answer does."""
        while waiting and (last := reader.last_id) is not None:
            delay = reader.retry if reader.retry is not None else _RETRY_MILLISECONDS
            await asyncio.sleep(delay / 1000)
            reader = reader.resumed()
            headers = self._headers({"accept": "text/event-stream", "last-event-id": last})
            async with self._client.stream("GET", self.url, headers=headers) as response:
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code != 200 or kind != "text/event-stream":
                    return
                async for message in self._events(response, reader):
                    if self._take(message, ids, waiting, None):
                        return
                    await self._received.room()
            if reader.last_id == last:
                return  # nothing new: the server cannot resume this stream

    async def _answer(
        self, response: httpx2.Response, single: bool, reader: EventReader
    ) -> AsyncIterator[dict[str, Any]]:
        """The messages of the answer to a POST of requests."""
        status = response.status_code
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if status == 404 and self.session_id is not None:
            raise _Failed(
                UPSTREAM_CLOSED, "The server ended the session (strictmcp proxy)", ended=True
            )
        if status in (401, 403):
            raise self._refused(response)
        if status >= 400 and kind == "application/json":
            body = await self._body(response)
            answer = _parsed(body)
            if single and isinstance(answer, dict) and "error" in answer:
                yield answer  # a JSON-RPC error the server gave an HTTP status to
                return
        if status >= 300 or status in {202, 204}:
            raise _Failed(UPSTREAM_INVALID, f"The server answered HTTP {status} (strictmcp proxy)")
        if kind == "application/json":
            answer = _parsed(await self._body(response))
            for message in answer if isinstance(answer, list) else [answer]:
                if not isinstance(message, dict):
                    raise _Failed(UPSTREAM_INVALID, "The server's answer was not JSON-RPC")
                yield message
        elif kind == "text/event-stream":
            async for message in self._events(response, reader):
                yield message
        else:
            raise _Failed(UPSTREAM_INVALID, "The server's answer was neither JSON nor events")

    def _refused(self, response: httpx2.Response) -> _Failed:
        """The failure of a request the server refused (HTTP 401 or 403), with its hints."""
        status = response.status_code
        if self._credentials:
            what = "the server refused the credentials"
        elif status == 401:
            what = "the server asks for credentials, and none were sent"
        else:
            what = "the server refused the request, sent without credentials"
        sent = [
            part
            for name, value in response.request.headers.items()
            if not h.transport_header(name)
            for part in (value, value.partition(" ")[2])
        ]
        hint = h.challenge_hint(response.headers.get("www-authenticate"), sent)
        text = f"{what} (HTTP {status}{f'; {hint}' if hint else ''})"
        return _Failed(UPSTREAM_INVALID, text, data={"httpStatus": status})

    async def _events(
        self, response: httpx2.Response, reader: EventReader
    ) -> AsyncIterator[dict[str, Any]]:
        async for chunk in response.aiter_bytes():
            for event in reader.feed(chunk):
                if event.name != "message" or not event.data.strip():
                    continue  # a priming event for resumption, or another kind
                message = _parsed(event.data)
                if not isinstance(message, dict):
                    raise _Failed(UPSTREAM_INVALID, "The server sent an event that is not JSON-RPC")
                yield message

    async def _body(self, response: httpx2.Response) -> bytes:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self.max_size:
                raise _Failed(UPSTREAM_INVALID, "The server's answer is larger than the limit")
        return bytes(body)

    async def _notify(self, line: bytes, headers: dict[str, str]) -> None:
        """POST a notification or a response; the server owes nothing back but 202."""
        with contextlib.suppress(httpx2.HTTPError):
            await self._client.post(self.url, content=line, headers=self._headers(headers))

    def _aborted_by(self, messages: list[dict[str, Any]]) -> bool:
        """Abort the POST of a request being cancelled; whether the cancellation is done
        (from 2026-07-28, where closing the answer is the only cancellation there is)."""
        if len(messages) != 1 or messages[0].get("method") != "notifications/cancelled":
            return False
        params = messages[0].get("params")
        cancelled = params.get("requestId") if isinstance(params, dict) else None
        post = self._posts.pop(cancelled, None) if isinstance(cancelled, (int, str)) else None
        if post is None:
            return self.version in STATELESS_VERSIONS
        task, modern = post
        task.cancel()
        return modern

    # --- the stream of what the server sends unasked -----------------------------------------

    def _listen(self) -> None:
        if self.session_id is not None and self._listening is None and not self._closed:
            self._listening = asyncio.create_task(self._stream())

    async def _stream(self) -> None:
        """Queue what the GET stream carries, until it ends; a server without one says 405."""
        headers = self._headers({"accept": "text/event-stream"})
        with contextlib.suppress(httpx2.HTTPError, EventTooLarge, _Failed):
            async with self._client.stream("GET", self.url, headers=headers) as response:
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code != 200 or kind != "text/event-stream":
                    return
                async for message in self._events(response, EventReader(self.max_size)):
                    self._queue(message)
                    await self._received.room()

    # --- helpers -----------------------------------------------------------------------------

    def _headers(self, extra: dict[str, str]) -> dict[str, str]:
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        if self.session_id is not None:
            headers[h.SESSION_ID] = self.session_id
        if self.version is not None:
            headers[h.PROTOCOL_VERSION] = self.version
        headers.update(extra)
        return headers

    def _handshake_done(self) -> None:
        if self._handshake is not None:
            self._handshake.set()
            self._handshake = None

    def _learn(self, message: dict[str, Any], initialize: dict[str, Any] | None) -> None:
        """The protocol version, from the answer to ``initialize``."""
        if initialize is None or _id_of(message) != _id_of(initialize):
            return
        result = message.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str) and version.isascii() and version.isprintable():
            self.version = version

    def _queue(self, message: dict[str, Any]) -> None:
        if not self._closed:
            self._received.put(line_of(message))

    def _fail(
        self, request_id: RequestId, code: int, text: str, data: dict[str, Any] | None = None
    ) -> None:
        error: dict[str, Any] = {"code": code, "message": text}
        if data is not None:
            error["data"] = data
        self._queue({"jsonrpc": "2.0", "id": request_id, "error": error})


def _parsed(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        # Nested too deeply is unreadable too; escaping, it would leave the requests waiting.
        raise _Failed(UPSTREAM_INVALID, "The server's answer was not valid JSON") from None


def _id_of(message: dict[str, Any]) -> RequestId | None:
    value = message.get("id")
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _is_answer(message: dict[str, Any]) -> bool:
    return "method" not in message and ("result" in message or "error" in message)

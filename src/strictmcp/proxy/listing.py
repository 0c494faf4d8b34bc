"""Learning a server's tools before checking a call, when the conversation has no current listing.

A client may call a tool it never listed here: from 2026-07-28 requests are self-contained
and may reach a proxy replica that never saw a ``tools/list``, and clients of every revision
call tools they know of from elsewhere (or listed before the server said its tools changed).
Before such a call the transport lists the tools itself, every page, through the session, so
that the conversation learns them; the client never sees those answers.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..connect.lines import line_of
from ..connect.paging import follow_pages
from ..protocol import Decoded, decode
from ..protocol.wire import (
    META_PREFIX,
    META_PROTOCOL_VERSION,
    STATELESS_VERSIONS,
    declared_version,
)

if TYPE_CHECKING:
    from .session import ProxySession

_VERSION_BYTES = META_PROTOCOL_VERSION.encode()
_OWN_ID = "strictmcp-"
"""Prefix of the ids of requests the proxy makes itself."""
_OWN_ID_BYTES = _OWN_ID.encode()

Ask = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Sends one request of the proxy's own (its id set by the callee); the answer, or None."""


def may_need_listing(line: bytes, session: ProxySession) -> bool:
    """Whether ``line`` may be a tool call that ``session`` cannot check until the tools are
    listed (again); cheap enough for every line (most are not even parsed later)."""
    if b"tools/call" not in line:
        return False
    conversation = session.conversation
    registry = conversation.tools
    # Before a handshake has begun the server could not answer a listing; a 2026-07-28
    # request needs none.
    started = conversation.revision is not None or _VERSION_BYTES in line
    return started and (not registry.listed or registry.stale)


async def list_before(
    line: bytes, session: ProxySession, ask: Ask, decoded: Decoded | None = None
) -> None:
    """List the tools first when ``line`` is a tool call and ``session`` has no current
    listing to check it against. ``decoded`` is ``line`` already read, if it was; a line is
    only ever read by the strict decoder, so that what lists the tools is what is checked."""
    if not may_need_listing(line, session):
        return
    if decoded is None:
        decoded = decode(line, session.conversation.revision, max_size=session.max_size)
    if not decoded.valid or decoded.batch or not decoded.messages:
        return  # refused as it is, with no listing needed
    message = decoded.messages[0]
    if (
        message.kind == "request"
        and message.method == "tools/call"
        and (
            session.conversation.revision is not None
            or declared_version(message.raw) in STATELESS_VERSIONS
        )
    ):
        await fetch_tools(ask, message.raw)


def input_schema(session: ProxySession, name: str) -> Any:
    """The input schema tool ``name`` was listed with in ``session``; None when it was not,
    or is not offered there (its schema says nothing to a client it is unknown to)."""
    if not session.enforcer.offer.offers(name):
        return None
    tool = session.conversation.tools.get(name)
    return tool.definition.get("inputSchema") if tool is not None else None


class OwnRequests:
    """Requests the proxy makes itself: their ids, and their answers, kept from the client."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[dict[str, Any] | None]] = {}
        self._numbers = itertools.count(1)

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def make(self, request: dict[str, Any]) -> tuple[str, bytes]:
        """``request`` with an id of the proxy's own, as a line; the id."""
        request_id = f"{_OWN_ID}{next(self._numbers)}"
        self._waiting[request_id] = asyncio.get_running_loop().create_future()
        return request_id, line_of({**request, "id": request_id})

    async def answer(self, request_id: str) -> dict[str, Any] | None:
        """The answer to a request made here; None if the server went away first."""
        try:
            return await self._waiting[request_id]
        finally:
            self._waiting.pop(request_id, None)

    def claim(self, line: bytes) -> bool:
        """Whether ``line``, on its way to the client, answers a request made here (then it
        is taken: the client never asked it)."""
        if _OWN_ID_BYTES not in line:
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        answered = message.get("id") if isinstance(message, dict) else None
        waiter = self._waiting.get(answered) if isinstance(answered, str) else None
        if waiter is None:
            return False
        if not waiter.done():
            waiter.set_result(message)
        return True

    def end(self) -> None:
        """The server is gone: nothing made here will be answered."""
        for waiter in self._waiting.values():
            if not waiter.done():
                waiter.set_result(None)


async def fetch_tools(ask: Ask, request: dict[str, Any]) -> bool:
    """List the server's tools, all pages, carrying ``request``'s ``_meta`` envelope (the
    2026-07-28 revision wants one on every request); whether the listing was complete."""
    params = request.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    # The envelope only: a progress token or other request-specific entries stay with the call.
    kept = (
        {k: v for k, v in meta.items() if k.startswith(META_PREFIX)}
        if isinstance(meta, dict)
        else {}
    )
    envelope = {"_meta": kept} if kept else {}
    answered = True

    async def fetch(cursor: str | None) -> object:
        nonlocal answered
        page_params = {**envelope, "cursor": cursor} if cursor is not None else envelope
        ask_for: dict[str, Any] = {"jsonrpc": "2.0", "method": "tools/list"}
        if page_params:
            ask_for["params"] = page_params
        answer = await ask(ask_for)
        result = answer.get("result") if answer is not None else None
        if not isinstance(result, dict):
            answered = False
            return None
        return result.get("nextCursor")

    return await follow_pages(fetch) is None and answered

"""The server side of a connection: JSON-RPC messages to and from one MCP server.

An :class:`Upstream` carries one message per line, as stdio does, whatever the server's
transport is; the proxy, ``strictmcp lint`` and ``strictmcp check`` all talk to a server
through one.
"""

from __future__ import annotations

import json
from typing import Protocol

from ..protocol.jsonrpc import CONNECTION_CLOSED, INTERNAL_ERROR

UPSTREAM_CLOSED = CONNECTION_CLOSED
"""-32000: the server exited (or closed its output) before answering the request."""
UPSTREAM_INVALID = INTERNAL_ERROR
"""-32603 (internal error): the server answered with a message that could not be read, was
not valid for its request, or could be mistaken for the answer to another request; ``data``
lists the findings (rule codes, never values), or for a server that refused the request
with HTTP 401 or 403 is ``{"httpStatus": status}``. Not -32002, which MCP gives to "resource not
found": a client must not mistake the proxy's word for the server's."""

LONG_LIVED = frozenset({"subscriptions/listen"})
"""Requests whose answer is a stream of notifications, open until the client closes it: no
timeout of the proxy's applies to them."""
_LONG_LIVED_BYTES = tuple(method.encode() for method in LONG_LIVED)


def long_lived(line: bytes) -> list[int | str]:
    """The ids of the :data:`LONG_LIVED` requests in ``line``; cheap for any other line."""
    if not any(method in line for method in _LONG_LIVED_BYTES):
        return []
    try:
        body = json.loads(line)
    except ValueError:
        return []
    return [
        message["id"]
        for message in (body if isinstance(body, list) else [body])
        if isinstance(message, dict)
        and message.get("method") in LONG_LIVED
        and isinstance(message.get("id"), (int, str))
    ]


class Sink(Protocol):
    """Where messages go, written without waiting: :meth:`write` takes them at once, and a
    writer that wants to keep what it holds bounded waits for :meth:`drain` while
    :attr:`blocked`. The relay batches through one: the messages it decided from one read
    go in one write."""

    @property
    def blocked(self) -> bool:
        """Whether a writer should wait for :meth:`drain` before writing more."""

    def write(self, lines: list[bytes]) -> None:
        """Send these messages (each a JSON text and its ``\\n``), in order, without waiting;
        the list is not kept."""

    async def drain(self) -> None:
        """Wait until what was written is on its way and :attr:`blocked` is over."""


class Upstream(Sink, Protocol):
    """One MCP server, reached over stdio or streamable HTTP: a :class:`Sink` of the messages
    for it, and the source of its own."""

    async def send(self, line: bytes) -> None:
        """Send one message (a JSON text and its ``\\n``) to the server, after those written."""

    @property
    def waiting(self) -> bool:
        """Whether :meth:`receive` has a message at once (a reader deciding several before
        writing what they make knows when to stop)."""

    async def receive(self) -> bytes | str | None:
        """The next message the server sent, as one line; :data:`~.lines.OVERSIZED` for one
        over the size bound, dropped unread (the reader may still fail the request it
        answered); None once the server is gone."""

    async def aclose(self) -> int:
        """Stop talking to the server and release it; its exit status (0 if not a process)."""

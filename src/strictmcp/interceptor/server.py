"""The interceptor server's side of the conversation, sans I/O: one JSON-RPC line in, the
answers out (:meth:`InterceptorServer.answer`).

It speaks MCP's handshake (``initialize``, declaring the extension as its ``interceptor``
capability with the events its interceptors hook, and ``ping``) and the extension's two
methods, ``interceptors/list`` (with the ``event`` filter) and ``interceptor/invoke``. A line
that is no JSON-RPC message gets the JSON-RPC error its envelope calls for, an invocation
that is malformed or names no interceptor -32602, a handler that fails -32603; nothing a
client sends ends the server. Requests are answered one at a time, in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import __version__
from ..protocol import LATEST, Revision, Severity, decode, error_response
from ..protocol.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, Message, refusal_for
from .model import InvokeError, Registry

SERVER_NAME = "strictmcp-interceptor"
#: The largest line read, as the proxy's default bound on a message.
MAX_SIZE = 4 * 1024 * 1024


class InterceptorServer:
    """Answers one client's messages with ``registry``'s interceptors."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    async def answer(self, line: bytes | str) -> Any:
        """The answer to one line (a response, a batch's list of them), or None when none
        is due (a notification, a response, an empty line)."""
        if not line.strip():
            return None
        decoded = decode(line, max_size=MAX_SIZE)
        if not decoded.valid:
            refused = [v for v in decoded.violations if v.severity is Severity.ERROR]
            return refusal_for(decoded.error_id, refused)
        answers = [await self._answer(message) for message in decoded.messages]
        kept = [a for a in answers if a is not None]
        if decoded.batch:
            return kept or None
        return kept[0] if kept else None

    async def _answer(self, message: Message) -> dict[str, Any] | None:
        if message.kind != "request":
            return None  # notifications and responses ask for nothing
        params = message.params if message.params is not None else {}
        try:
            result = await self._result(message.method or "", params)
        except InvokeError as error:
            return error_response(message.id, error.code, error.message, error.data)
        return {"jsonrpc": "2.0", "id": message.id, "result": result}

    async def _result(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if method == "interceptor/invoke":
            return await self.registry.invoke(params)
        if method == "interceptors/list":
            event = params.get("event")
            if event is not None and not isinstance(event, str):
                raise InvokeError(INVALID_PARAMS, "Invalid params", {"reason": "event"})
            return self.registry.listing(event)
        if method == "initialize":
            return self._initialized(params.get("protocolVersion"))
        if method == "ping":
            return {}
        raise InvokeError(METHOD_NOT_FOUND, "Method not found")

    def _initialized(self, asked: Any) -> dict[str, Any]:
        """The ``initialize`` result: the revision asked for when strictmcp knows it."""
        known = {r.value for r in Revision}
        revision = asked if isinstance(asked, str) and asked in known else LATEST.value
        return {
            "protocolVersion": revision,
            "capabilities": {"interceptor": {"supportedEvents": self.registry.events()}},
            "serverInfo": {"name": SERVER_NAME, "version": __version__},
        }

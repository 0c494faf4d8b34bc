"""A server of a handshake revision only (2025-11-25), as most servers run today, for the
bridge tests: it knows nothing of the stateless revision.

    python legacy_server.py RECORD_FILE [mute]

Every message it reads is recorded as one JSON line ``{"pid": PID, "message": MESSAGE}`` in
``RECORD_FILE``: each process is one upstream session, so the tests see which session got
what. Before ``initialize`` every request is refused (``server/discover`` with -32601, as
such a server answers it); then:

- ``tools/list``: ``echo`` (its ``text``), ``whoami`` (this process's pid, and the client
  name and capabilities it was initialized with), ``ask`` (asks the client to sample a
  message, then answers with the sampled text, or with the error the client gave as an
  ``isError`` result), ``slow`` (answers after ``seconds``);
- calls run concurrently; ``notifications/cancelled`` cancels one.

With ``mute``, ``initialize`` is never answered: a server that hangs in its handshake.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

_TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
_SECONDS = {"type": "object", "properties": {"seconds": {"type": "number"}}}
_TOOLS = [
    {"name": "echo", "description": "Echo the text.", "inputSchema": _TEXT},
    {"name": "whoami", "description": "Which session this is.", "inputSchema": {"type": "object"}},
    {"name": "ask", "description": "Ask the client's model.", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Answer after a while.", "inputSchema": _SECONDS},
]


class Server:
    def __init__(self, record: Path, mute: bool) -> None:
        self.record = record
        self.mute = mute
        self.client: dict[str, Any] | None = None
        self.calls: dict[Any, asyncio.Task[None]] = {}
        self.asked: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.numbers = itertools.count(1)

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def result(self, ident: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def error(self, ident: Any, code: int, text: str) -> None:
        self.send({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": text}})

    def handle(self, message: dict[str, Any]) -> None:
        with self.record.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"pid": os.getpid(), "message": message}) + "\n")
        method, ident = message.get("method"), message.get("id")
        if method is None:
            waiter = self.asked.pop(str(ident), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(message)
            return
        if ident is None:
            if method == "notifications/cancelled":
                call = self.calls.pop((message.get("params") or {}).get("requestId"), None)
                if call is not None:
                    call.cancel()
            return
        params = message.get("params") or {}
        if method == "initialize" and self.mute:
            return
        if method == "initialize":
            self.client = params
            self.result(
                ident,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                    "serverInfo": {"name": "legacy", "version": "1.0.0"},
                    "instructions": "A server of a handshake revision.",
                },
            )
        elif self.client is None:
            self.error(ident, -32601, "Method not found")
        elif method == "tools/list":
            self.result(ident, {"tools": _TOOLS})
        elif method == "tools/call":
            self.calls[ident] = asyncio.ensure_future(self.call(ident, params))
        elif method == "ping":
            self.result(ident, {})
        else:
            self.error(ident, -32601, "Method not found")

    async def call(self, ident: Any, params: dict[str, Any]) -> None:
        name, arguments = params.get("name"), params.get("arguments") or {}
        try:
            if name == "echo":
                text = str(arguments.get("text"))
            elif name == "whoami":
                assert self.client is not None
                text = json.dumps(
                    {
                        "pid": os.getpid(),
                        "client": self.client.get("clientInfo", {}).get("name"),
                        "capabilities": sorted(self.client.get("capabilities", {})),
                    }
                )
            elif name == "ask":
                answer = await self.ask()
                if "error" in answer:
                    message = answer["error"].get("message")
                    content = [{"type": "text", "text": message}]
                    self.result(ident, {"content": content, "isError": True})
                    return
                text = "sampled: " + answer["result"]["content"]["text"]
            elif name == "slow":
                await asyncio.sleep(float(arguments.get("seconds", 1)))
                text = "done"
            else:
                self.error(ident, -32602, "Unknown tool")
                return
            self.result(ident, {"content": [{"type": "text", "text": text}]})
        finally:
            self.calls.pop(ident, None)

    async def ask(self) -> dict[str, Any]:
        ident = f"s{next(self.numbers)}"
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.asked[ident] = waiter
        content = {"type": "text", "text": "What is the capital of France?"}
        params = {"messages": [{"role": "user", "content": content}], "maxTokens": 10}
        self.send(
            {"jsonrpc": "2.0", "id": ident, "method": "sampling/createMessage", "params": params}
        )
        return await waiter


async def main() -> None:
    server = Server(Path(sys.argv[1]), sys.argv[2:] == ["mute"])
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if line.strip():
            server.handle(json.loads(line))


if __name__ == "__main__":
    asyncio.run(main())

"""A streamable HTTP MCP server whose one tool floods its answer's event stream.

    python flood_http_server.py COUNT_FILE

It listens on a free loopback port and says where on its stdout (``http://127.0.0.1:PORT/mcp``).
Its tool ``flood`` (arguments ``{"n": N}``) answers with an event stream of N log messages of
2 KB, numbered from 0, then the result; the stream is written as fast as the connection takes
it (uvicorn waits while the client does not read), and every 100 messages COUNT_FILE says how
many have been written: what the client took from it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from proxy_fixtures.http_server import serve  # found through the path just set

_TOOL = {
    "name": "flood",
    "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
}


def main() -> None:
    """Serve until killed."""
    count = Path(sys.argv[1])

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (event := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break

        async def respond(status: int, kind: str = "application/json", data: bytes = b"") -> None:
            headers = [(b"content-type", kind.encode()), (b"mcp-session-id", b"flood-1")]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": data})

        if scope["method"] != "POST":
            await respond(405)
            return
        message = json.loads(body)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            await respond(202)
            return
        params = message.get("params") or {}
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "flood", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [_TOOL]}
        elif method == "tools/call":
            start = [(b"content-type", b"text/event-stream"), (b"mcp-session-id", b"flood-1")]
            await send({"type": "http.response.start", "status": 200, "headers": start})
            for n in range(int(params["arguments"]["n"])):
                data = {"level": "info", "logger": "flood", "data": f"{n} " + "x" * 2048}
                note = {"jsonrpc": "2.0", "method": "notifications/message", "params": data}
                event = f"data: {json.dumps(note)}\n\n".encode()
                await send({"type": "http.response.body", "body": event, "more_body": True})
                if n % 100 == 99:
                    count.write_text(str(n + 1), encoding="utf-8")
            done = {"content": [{"type": "text", "text": "flooded"}]}
            answer = {"jsonrpc": "2.0", "id": request_id, "result": done}
            await send(
                {"type": "http.response.body", "body": f"data: {json.dumps(answer)}\n\n".encode()}
            )
            return
        else:
            error = {"code": -32601, "message": "Method not found"}
            await respond(
                200, data=json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
            )
            return
        await respond(
            200, data=json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
        )

    anyio.run(serve, app)


if __name__ == "__main__":
    main()

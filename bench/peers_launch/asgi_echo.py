"""The HTTP floor for bench/peers.py: a bare ASGI app on uvicorn (h11) answering itself.

``python asgi_echo.py PORT`` serves 127.0.0.1:PORT: every POST body is one JSON-RPC message,
answered in-process by bench/echo_server.py's ``answer`` with one ``application/json`` body
(202 and no body for a notification). No MCP library, no session, no validation, no upstream:
what an HTTP round trip costs on the server framework strictmcp's ``--listen`` uses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import uvicorn

from echo_server import answer

Receive = Any
Send = Any


async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    body = b""
    more = True
    while more:
        event = await receive()
        body += event.get("body", b"")
        more = event.get("more_body", False)
    try:
        reply = answer(json.loads(body)) if scope["method"] == "POST" else None
    except ValueError:
        reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    if reply is None:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    data = json.dumps(reply, separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def main() -> int:
    port = int(sys.argv[1])
    uvicorn.run(app, host="127.0.0.1", port=port, http="h11", lifespan="off", log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())

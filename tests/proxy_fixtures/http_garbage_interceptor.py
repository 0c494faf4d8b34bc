"""An interceptor endpoint over streamable HTTP that answers ``interceptor/invoke`` with
garbage, for the tests of ``[[interceptor]]`` with ``url``.

    python http_garbage_interceptor.py MODE

It listens on a free loopback port and prints its URL (``http://127.0.0.1:PORT/mcp``) once
it accepts connections. ``initialize`` is answered properly (a session id given), every
notification with 202, and every other request by MODE:

- ``html``: 200 with an HTML page;
- ``badjson``: 200, ``application/json`` that is no JSON;
- ``notrpc``: 200, a JSON array of numbers;
- ``wrongid``: a valid result, for another request id (the invocation's is never answered);
- ``neither``: a result of neither interceptor type;
- ``status``: HTTP 500 with an empty body;
- ``events``: an event stream whose one event is no JSON;
- ``huge``: a JSON body over the proxy's size bound;
- ``initialize``: as ``html``, from ``initialize`` on (the session never starts);
- ``auth``: no garbage: every request without ``Authorization: Bearer fixture-token`` is
  HTTP 401, and every invocation with it valid.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from proxy_fixtures.http_server import serve  # found through the path just set

MODE = sys.argv[1] if len(sys.argv) > 1 else "html"
_JSON = [(b"content-type", b"application/json")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    request = json.loads(body) if body else {}
    method = request.get("method") if isinstance(request, dict) else None
    authorization = dict(scope["headers"]).get(b"authorization")
    if MODE == "auth" and authorization != b"Bearer fixture-token":
        await _send(send, 401, [(b"www-authenticate", b'Bearer realm="fixture"')], b"")
    elif method == "initialize" and MODE != "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"interceptor": {}},
            "serverInfo": {"name": "garbage", "version": "0"},
        }
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        headers = [*_JSON, (b"mcp-session-id", b"garbage-session")]
        await _send(send, 200, headers, json.dumps(answer).encode())
    elif method is None or "id" not in request:
        await _send(send, 202, [], b"")
    else:
        await _garbage(send, request["id"])


async def _garbage(send: Any, request_id: Any) -> None:
    if MODE == "auth":
        answer = {"jsonrpc": "2.0", "id": request_id, "result": {"valid": True}}
        await _send(send, 200, _JSON, json.dumps(answer).encode())
    elif MODE in ("html", "initialize"):
        await _send(send, 200, [(b"content-type", b"text/html")], b"<html>no</html>")
    elif MODE == "badjson":
        await _send(send, 200, _JSON, b'{"jsonrpc": "2.0", "id": ')
    elif MODE == "notrpc":
        await _send(send, 200, _JSON, b"[1, 2, 3]")
    elif MODE == "wrongid":
        answer = {"jsonrpc": "2.0", "id": 987654, "result": {"valid": True}}
        await _send(send, 200, _JSON, json.dumps(answer).encode())
    elif MODE == "neither":
        answer = {"jsonrpc": "2.0", "id": request_id, "result": {"something": "else"}}
        await _send(send, 200, _JSON, json.dumps(answer).encode())
    elif MODE == "status":
        await _send(send, 500, [], b"")
    elif MODE == "events":
        stream = [(b"content-type", b"text/event-stream")]
        await _send(send, 200, stream, b"event: message\ndata: {not json\n\n")
    elif MODE == "huge":
        await _send(send, 200, _JSON, b'{"x": "' + b"a" * (5 * 1024 * 1024) + b'"}')


async def _send(send: Any, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


if __name__ == "__main__":
    anyio.run(serve, app)

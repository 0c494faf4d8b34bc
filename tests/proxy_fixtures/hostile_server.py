"""A line-level MCP server that answers as an attacker would, for the fail-closed tests: it
records every line it receives, byte for byte, to the file named by its first argument.

- ``initialize``: a result at the client's revision; ``tools/list``: ``run`` (an argv array)
  and ``answer`` (a ``mode`` string);
- ``tools/call`` of ``answer`` answers as its ``mode`` says: ``string-id`` (the id as a
  string), ``padded-id`` (``" 07 "`` for 7), ``twice`` (two answers), ``other-id`` (an id
  never sent), ``null-id`` (an error with ``"id": null``), ``garbage`` (a line that is not
  JSON), ``dupkeys`` (two ``id`` members), ``nan`` (a ``NaN`` in the result), ``huge`` (a line
  of 200 kB), ``slow`` (half a second, then a plain answer), ``silent`` (no answer),
  ``elicit-bad`` (first asks the client an elicitation whose schema breaks the rules);
- ``ping``: ``{}``; any other request: ``{"echo": METHOD}``; notifications and responses:
  recorded only.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

_TOOLS = [
    {
        "name": "run",
        "inputSchema": {
            "type": "object",
            "properties": {"argv": {"type": "array", "items": {"type": "string"}}},
        },
    },
    {
        "name": "answer",
        "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}},
    },
]
_LOCK = threading.Lock()
_MODERN = "io.modelcontextprotocol/protocolVersion"
# Set for a 2026-07-28 request, whose results say what they are.
_STATELESS = threading.local()


def _write(*lines: bytes) -> None:
    with _LOCK:
        for line in lines:
            sys.stdout.buffer.write(line + b"\n")
        sys.stdout.buffer.flush()


def _result(ident: Any, result: Any) -> bytes:
    if getattr(_STATELESS, "on", False):
        result = {**result, "resultType": "complete"}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode()


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def _answer(ident: Any, mode: str) -> None:
    plain = _result(ident, _text("answered"))
    raw_id = json.dumps(ident).encode()
    if mode == "string-id":
        _write(_result(str(ident), _text("answered")))
    elif mode == "padded-id":
        _write(_result(f" 0{ident} ", _text("answered")))
    elif mode == "twice":
        _write(plain, _result(ident, _text("again")))
    elif mode == "other-id":
        _write(_result(424242, _text("answered")))
    elif mode == "null-id":
        _write(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"boom"}}')
    elif mode == "garbage":
        _write(b"this is not JSON")
    elif mode == "dupkeys":
        _write(
            b'{"jsonrpc":"2.0","id":' + raw_id + b',"id":' + raw_id + b',"result":{"content":[]}}'
        )
    elif mode == "nan":
        _write(b'{"jsonrpc":"2.0","id":' + raw_id + b',"result":{"content":[],"x":NaN}}')
    elif mode == "huge":
        _write(_result(ident, _text("x" * 200_000)))
    elif mode == "slow":
        threading.Timer(0.5, _write, (plain,)).start()
    elif mode == "silent":
        pass
    elif mode == "elicit-bad":
        schema = {"type": "object", "properties": {"who": {"type": "object"}}}
        ask = {
            "jsonrpc": "2.0",
            "id": "e1",
            "method": "elicitation/create",
            "params": {"message": "Who?", "requestedSchema": schema},
        }
        _write(json.dumps(ask).encode(), plain)
    else:
        _write(plain)


def main() -> None:
    """Serve stdin and stdout, one line at a time."""
    with open(sys.argv[1], "ab") as record:
        for line in sys.stdin.buffer:
            record.write(line)
            record.flush()
            message = json.loads(line)
            if "method" not in message or "id" not in message:
                continue
            method, ident = message["method"], message["id"]
            params = message.get("params") or {}
            _STATELESS.on = _MODERN in (params.get("_meta") or {})
            if method == "initialize":
                version = params.get("protocolVersion", "2025-11-25")
                capabilities: dict[str, Any] = {"tools": {}, "resources": {}, "prompts": {}}
                info = {"name": "hostile", "version": "1"}
                result = {"protocolVersion": version, "capabilities": capabilities}
                _write(_result(ident, {**result, "serverInfo": info}))
            elif method == "tools/list" and _STATELESS.on:
                listing = {"tools": _TOOLS, "cacheScope": "public", "ttlMs": 0}
                _write(_result(ident, listing))
            elif method == "tools/list":
                _write(_result(ident, {"tools": _TOOLS}))
            elif method == "tools/call" and params.get("name") == "answer":
                _answer(ident, str((params.get("arguments") or {}).get("mode", "")))
            elif method == "tools/call":
                _write(_result(ident, _text("ran")))
            elif method == "ping":
                _write(_result(ident, {}))
            else:
                _write(_result(ident, {"echo": method}))
    time.sleep(0.1)


if __name__ == "__main__":
    main()

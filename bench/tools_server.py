"""A stdio MCP server with many tools, for bench/gateway.py: ``python tools_server.py --tools N``.

Like bench/echo_server.py (no SDK, newline-delimited JSON-RPC, blocking reads), but it lists
``N`` tools, ``tool_000`` and on, each with an ``inputSchema`` of its own: bench/tool_schema.py's
with the tool's number in its title and one property more, ``field_NNN``, so that no two tools
share a schema a proxy could check once for all. Every tool echoes its arguments as
echo_server.py's ``create_issue`` does. Its ``tools/list`` answer is encoded once, at start, so
that listing costs the server little more than writing the bytes: a benchmark of what is in
front of it should not time the server.
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

from echo_server import REVISION
from tool_schema import SCHEMA

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def tools(count: int) -> list[dict[str, Any]]:
    """The ``count`` tools the server lists."""
    listed = []
    for number in range(count):
        schema = copy.deepcopy(SCHEMA)
        schema["title"] = f"tool_{number:03d} arguments"
        schema["properties"][f"field_{number:03d}"] = {"type": "string", "maxLength": 100}
        listed.append(
            {
                "name": f"tool_{number:03d}",
                "title": f"Tool {number}",
                "description": f"Tool number {number} of this server. It echoes its arguments.",
                "inputSchema": schema,
            }
        )
    return listed


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "--tools" or not args[1].isdigit():
        print("usage: tools_server.py --tools N", file=sys.stderr)
        return 2
    listed = tools(int(args[1]))
    names = {tool["name"] for tool in listed}
    listing = _dumps({"tools": listed}).encode()
    init = _dumps(
        {
            "protocolVersion": REVISION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "strictmcp-bench-tools", "version": "1.0.0"},
        }
    ).encode()
    read = sys.stdin.buffer.readline
    out = sys.stdout.buffer
    while line := read():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue
        head = b'{"jsonrpc":"2.0","id":' + _dumps(message["id"]).encode() + b',"result":'
        method = message["method"]
        params = message.get("params") or {}
        if method == "tools/list":
            body = listing
        elif method == "initialize":
            body = init
        elif method == "ping":
            body = b"{}"
        elif method == "tools/call" and params.get("name") in names:
            text = _dumps(params.get("arguments") or {})
            body = _dumps({"content": [{"type": "text", "text": text}], "isError": False}).encode()
        else:
            error = {"code": -32601, "message": "Method not found"}
            head = head.replace(b'"result":', b'"error":')
            body = _dumps(error).encode()
        out.write(head + body + b"}\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

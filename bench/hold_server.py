"""A tiny stdio MCP server for bench/memory.py: it holds tool calls until told to answer them.

Run ``python bench/hold_server.py HELD_FILE``. Standard library only (its own memory is small,
so that many of them fit: one per proxy session). It answers ``initialize``, ``ping`` and
``tools/list`` (two tools) at once. A call of ``hold`` is kept unanswered, and a line is
appended to HELD_FILE, so that the benchmark knows how many are held; a call of ``release``
answers every call held, then itself. Notifications get no answer.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_TOOLS = [
    {"name": "hold", "inputSchema": {"type": "object"}},
    {"name": "release", "inputSchema": {"type": "object"}},
]


def _result(request_id: Any, result: dict[str, Any], modern: bool) -> bytes:
    if modern:
        result = {**result, "resultType": "complete"}  # on every result from 2026-07-28
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"


def main() -> None:
    """Serve stdin and stdout until stdin ends."""
    out = sys.stdout.buffer
    held: list[tuple[Any, bool]] = []
    with open(sys.argv[1], "a", encoding="utf-8") as record:
        for line in sys.stdin.buffer:
            message = json.loads(line)
            if "method" not in message or "id" not in message:
                continue
            method, request_id = message["method"], message["id"]
            params = message.get("params") or {}
            meta = params.get("_meta") or {}
            modern = meta.get("io.modelcontextprotocol/protocolVersion") == "2026-07-28"
            if method == "initialize":
                version = params.get("protocolVersion", "2025-11-25")
                hello = {"name": "hold", "version": "1"}
                out.write(
                    _result(
                        request_id,
                        {
                            "protocolVersion": version,
                            "capabilities": {"tools": {}},
                            "serverInfo": hello,
                        },
                        modern,
                    )
                )
            elif method == "tools/list":
                out.write(_result(request_id, {"tools": _TOOLS}, modern))
            elif method == "tools/call" and params.get("name") == "hold":
                held.append((request_id, modern))
                record.write("held\n")
                record.flush()
                continue
            elif method == "tools/call":
                done = {"content": [{"type": "text", "text": "done"}]}
                for waiting, in_modern in held:
                    out.write(_result(waiting, done, in_modern))
                held.clear()
                out.write(_result(request_id, done, modern))
            else:
                out.write(_result(request_id, {}, modern))
            out.flush()


if __name__ == "__main__":
    main()

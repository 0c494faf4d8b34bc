"""A minimal, fast stdio MCP server for bench/proxy.py: it echoes a tool call's arguments.

Run ``python bench/echo_server.py``. No SDK: newline-delimited JSON-RPC read with blocking
reads of stdin, each answer written to stdout and flushed at once. It answers ``initialize``
(revision 2025-06-18), ``ping``, ``tools/list`` with one tool, ``create_issue``, whose
``inputSchema`` is bench/tool_schema.py's, and ``tools/call`` of that tool by echoing the
arguments as text and as ``structuredContent`` that satisfies the tool's ``outputSchema``.
Notifications get no answer; other requests get -32601. It does not validate anything: that
is the proxy's job, and a server that checked would hide the proxy's cost in its own.

With ``--probe-log FILE`` it keeps its own record of the calls it executed that a benchmark
marked as probes (``title`` equal to ``PROBE_TITLE``): one line per such call, the call's
``body`` as JSON, appended before the answer is written. bench/peers.py reads it to tell whether
a peer in front of this server let an invalid call through, from what the server executed
rather than from the answer. Calls that are not probes cost one dictionary look-up more.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from tool_schema import SCHEMA

REVISION = "2025-06-18"
TOOL_NAME = "create_issue"
MODERN = "2026-07-28"  # a request naming it in _meta gets a result of that revision
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
PROBE_TITLE = "strictmcp-bench-probe"
_probe_log: str | None = None

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "received": SCHEMA,
        "bytes": {"type": "integer", "minimum": 0},
    },
    "required": ["received", "bytes"],
    "additionalProperties": False,
}

TOOL: dict[str, Any] = {
    "name": TOOL_NAME,
    "title": "Create an issue",
    "description": "Create an issue in a repository. This server echoes the arguments back.",
    "inputSchema": SCHEMA,
    "outputSchema": OUTPUT_SCHEMA,
}

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def answer(message: Any) -> dict[str, Any] | None:
    """The response to one message, or None for a notification (or a response)."""
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return None
    request_id = message["id"]
    method = message["method"]
    params = message.get("params") or {}
    result: dict[str, Any]
    if method == "tools/call" and params.get("name") == TOOL_NAME:
        arguments = params.get("arguments") or {}
        probe = isinstance(arguments, dict) and arguments.get("title") == PROBE_TITLE
        if probe and _probe_log is not None:
            record_probe(_probe_log, arguments.get("body"))
        text = _dumps(arguments)
        result = {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"received": arguments, "bytes": len(text.encode())},
            "isError": False,
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "initialize":
        result = {
            "protocolVersion": REVISION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "strictmcp-bench-echo", "version": "1.0.0"},
        }
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    meta = params.get("_meta")
    if isinstance(meta, dict) and meta.get(_VERSION_KEY) == MODERN:
        result["resultType"] = "complete"  # required on every result from 2026-07-28
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def record_probe(path: str, body: Any) -> None:
    """Append one executed probe call to ``path`` (one ``write`` of one line, O_APPEND)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, json.dumps(body).encode() + b"\n")
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> int:
    global _probe_log  # noqa: PLW0603 - set once, before the first message
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--probe-log"] and len(args) == 2:
        _probe_log = args[1]
    elif args:
        print("usage: echo_server.py [--probe-log FILE]", file=sys.stderr)
        return 2
    read = sys.stdin.buffer.readline
    out = sys.stdout.buffer
    while line := read():
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            error = {"code": -32700, "message": "Parse error"}
            out.write(_dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode() + b"\n")
            out.flush()
            continue
        reply = answer(message)
        if reply is not None:
            out.write(_dumps(reply).encode() + b"\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

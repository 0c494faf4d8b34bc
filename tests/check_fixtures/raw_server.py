"""A line-level MCP server for client tests: it misbehaves in ways the SDK would not.

- ``initialize``: answers 2025-06-18; then, before answering ``tools/list``, it sends the
  client a ``ping`` and a ``sampling/createMessage`` request and a notification, and answers
  the listing only once both requests were answered (printing the answers to stderr);
- ``tools/list`` pages: three pages of one tool each, by cursor;
- ``hang``: never answered; ``garbage``: a line that is not JSON, then the answer;
- ``big``: a line over the client's bound, then the answer;
- ``exit``: writes to stderr and exits with status 7.

With an argument it is a hostile server for ``strictmcp check`` (see ``MODES``) instead:
``raw_server.py tools-not-list`` and so on.
"""

from __future__ import annotations

import json
import sys


def _argument(schema: dict[str, object]) -> dict[str, object]:
    """An MCP input schema with one required argument ``a`` of this schema."""
    return {"type": "object", "properties": {"a": schema}, "required": ["a"]}


# Tools no generator can serve well: refused by the engine, refused by hypothesis-jsonschema,
# unsatisfiable, or satisfiable only by examples too big to draw.
SLOW_ITEMS = {
    "type": "array",
    "minItems": 5000,
    "items": _argument({"type": "string", "minLength": 200}),
}
HOSTILE_TOOLS: list[object] = [
    7,
    {"name": "no_schema"},
    {"name": "schema_not_object", "inputSchema": 5},
    {"name": "long_string", "inputSchema": _argument({"type": "string", "minLength": 10**9})},
    {"name": "many_items", "inputSchema": _argument({"type": "array", "minItems": 10**6})},
    {"name": "tiny_multiple", "inputSchema": _argument({"type": "number", "multipleOf": 1e-300})},
    {
        "name": "contradiction",
        "inputSchema": _argument({"allOf": [{"type": "string"}, {"type": "integer"}]}),
    },
    {
        "name": "huge_pattern",
        "inputSchema": _argument({"type": "string", "pattern": "(a|b)" * 5000}),
    },
    {"name": "slow", "inputSchema": _argument(SLOW_ITEMS)},
]
# Names that would recolour, retitle or reorder a terminal if printed raw.
HOSTILE_NAME = "x\u202e\x1b]0;title\x07\x1b[31m"
HOSTILE_NAMES: list[object] = [
    {
        "name": HOSTILE_NAME,
        "inputSchema": {
            "type": "object",
            "properties": {HOSTILE_NAME: {"type": "integer", "minimum": 0, "maximum": 3}},
            "required": [HOSTILE_NAME],
        },
    }
]
MODES = {
    "tools-not-list": 'tools/list answers tools: "nope"',
    "tools-hostile": "tools/list answers HOSTILE_TOOLS",
    "names-hostile": "tools/list answers HOSTILE_NAMES, serverInfo has HOSTILE_NAME too",
    "list-error": "tools/list answers a JSON-RPC error whose message has HOSTILE_NAME",
    "flood": "floods notifications forever instead of answering",
    "wrong-id": "answers every request with another id",
    "huge-line": "answers initialize with one 64 MiB line",
    "silent": "reads everything, answers nothing",
    "exit-now": "exits at once with status 3",
}


def send(message: dict[str, object]) -> None:
    """One line to the client."""
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def hostile(mode: str) -> None:
    """Misbehave as ``MODES[mode]`` says; other requests get an empty success."""
    if mode == "exit-now":
        sys.exit(3)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        request_id, method = message["id"], message["method"]
        result: object = {}
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": HOSTILE_NAME},
            }
        elif method == "tools/list":
            tools = {"tools-not-list": "nope", "names-hostile": HOSTILE_NAMES}
            result = {"tools": tools.get(mode, HOSTILE_TOOLS)}
        if mode == "list-error" and method == "tools/list":
            error = {"code": -32603, "message": f"boom\n{HOSTILE_NAME}"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
            continue
        if mode == "silent":
            continue
        if mode == "wrong-id":
            request_id = [request_id]
        if mode == "huge-line" and method == "initialize":
            sys.stdout.write('{"padding": "' + "x" * (64 << 20) + '"}\n')
        if mode == "flood":
            _flood()
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


def _flood() -> None:
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
    chunk = (note + "\n") * 1024
    while True:
        sys.stdout.write(chunk)
        sys.stdout.flush()


def main() -> None:
    """Serve stdin and stdout."""
    waiting: dict[str, object] = {}
    listing_id: object = None
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method is None:
            waiting[str(message.get("id"))] = message.get("result", message.get("error"))
            sys.stderr.write(f"client answered {json.dumps(message)}\n")
            if len(waiting) == 2 and listing_id is not None:
                send({"jsonrpc": "2.0", "id": listing_id, "result": _page(None)})
            continue
        if "id" not in message:
            continue
        request_id = message["id"]
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            cursor = (message.get("params") or {}).get("cursor")
            if cursor is None and len(waiting) < 2:
                listing_id = request_id
                send({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
                send({"jsonrpc": "2.0", "id": "s-ping", "method": "ping"})
                send({"jsonrpc": "2.0", "id": "s-sample", "method": "sampling/createMessage"})
            else:
                send({"jsonrpc": "2.0", "id": request_id, "result": _page(cursor)})
        elif method == "garbage":
            sys.stdout.write("this is not json\n")
            send({"jsonrpc": "2.0", "id": request_id, "result": {"ok": True}})
        elif method == "big":
            sys.stdout.write('"' + "x" * 5000 + '"\n')
            send({"jsonrpc": "2.0", "id": request_id, "result": {"ok": True}})
        elif method == "exit":
            sys.stderr.write("about to fail: token=hunter2\n")
            sys.stderr.flush()
            sys.exit(7)
        elif method != "hang":
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


def _page(cursor: object) -> dict[str, object]:
    number = 0 if cursor is None else int(str(cursor))
    page: dict[str, object] = {
        "tools": [{"name": f"tool{number}", "inputSchema": {"type": "object"}}]
    }
    if number < 2:
        page["nextCursor"] = str(number + 1)
    return page


if __name__ == "__main__":
    if len(sys.argv) > 1:
        hostile(sys.argv[1])
    else:
        main()

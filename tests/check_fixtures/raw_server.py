"""A line-level MCP server for client tests: it misbehaves in ways the SDK would not.

- ``initialize``: answers 2025-06-18; then, before answering ``tools/list``, it sends the
  client a ``ping`` and a ``sampling/createMessage`` request and a notification, and answers
  the listing only once both requests were answered (printing the answers to stderr);
- ``tools/list`` pages: three pages of one tool each, by cursor;
- ``hang``: never answered; ``garbage``: a line that is not JSON, then the answer;
- ``big``: a line over the client's bound, then the answer;
- ``exit``: writes to stderr and exits with status 7.
"""

from __future__ import annotations

import json
import sys


def send(message: dict[str, object]) -> None:
    """One line to the client."""
    sys.stdout.write(json.dumps(message) + "\n")
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
    main()

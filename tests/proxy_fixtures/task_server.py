"""A line-level MCP server whose tool answers through tasks, in both designs: 2025-11-25's
(``params.task``, ``tasks/get``, ``tasks/result``) and 2026-07-28's extension (declared in a
request's own capabilities; ``tasks/get`` returns the final result inline).

Tools: ``report`` (``outputSchema`` wants an integer ``total``; ``taskSupport`` optional)
whose final result breaks its schema when called with ``{"lie": true}``, ``quick`` (no
task support) and ``batch`` (only as a task; checks its argument ``n``, an integer, and
refuses anything else with an ``isError`` result). Every task is done as soon as it is made.
Its task ids are sequential (``task-1``, ``task-2``...), which is what a proxy must not let
one client guess another's by. It records every request's method and params to the file
named by its first argument.
"""

from __future__ import annotations

import json
import sys
from typing import Any

MODERN = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"
STAMP = "2026-05-01T10:30:00Z"
TOOLS = [
    {
        "name": "report",
        "inputSchema": {"type": "object", "properties": {"lie": {"type": "boolean"}}},
        "outputSchema": {
            "type": "object",
            "properties": {"total": {"type": "integer"}},
            "required": ["total"],
        },
        "execution": {"taskSupport": "optional"},
    },
    {"name": "quick", "inputSchema": {"type": "object"}},
    {
        "name": "batch",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        },
        "execution": {"taskSupport": "required"},
    },
]


def final(lie: bool) -> dict[str, Any]:
    total: Any = "three" if lie else 3
    return {
        "content": [{"type": "text", "text": json.dumps({"total": total})}],
        "structuredContent": {"total": total},
    }


def batch_result(arguments: Any) -> dict[str, Any]:
    n = arguments.get("n") if isinstance(arguments, dict) else None
    if not isinstance(n, int) or isinstance(n, bool) or set(arguments) != {"n"}:
        return {"content": [{"type": "text", "text": "n must be an integer"}], "isError": True}
    return {"content": [{"type": "text", "text": f"batch {n} done"}]}


class Server:
    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}

    def task(self, task_id: str, modern: bool) -> dict[str, Any]:
        ttl = {"ttlMs": 60_000} if modern else {"ttl": 60_000}
        status = "working" if task_id not in self.tasks else "completed"
        return {
            "taskId": task_id,
            "status": status,
            "createdAt": STAMP,
            "lastUpdatedAt": STAMP,
            **ttl,
        }

    def answer(self, method: str, params: dict[str, Any]) -> tuple[str, Any]:
        meta = params.get("_meta") or {}
        modern = meta.get("io.modelcontextprotocol/protocolVersion") == MODERN
        complete = {"resultType": "complete"} if modern else {}
        if method == "initialize":
            server: dict[str, Any] = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
            return "result", {
                "protocolVersion": "2025-11-25",
                "capabilities": server,
                "serverInfo": {"name": "tasks", "version": "1"},
            }
        if method == "server/discover" and modern:
            # What a server of the stateless revision must implement, and the proxy asks it.
            return "result", {
                **complete,
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
                "ttlMs": 0,
                "cacheScope": "public",
            }
        if method == "tools/list":
            extra = {"ttlMs": 0, "cacheScope": "private"} if modern else {}
            return "result", {"tools": TOOLS, **complete, **extra}
        if method == "tools/call":
            arguments = params.get("arguments")
            lie = isinstance(arguments, dict) and bool(arguments.get("lie"))
            capabilities = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
            asked = (
                EXTENSION in (capabilities.get("extensions") or {})
                if modern
                else ("task" in params)
            )
            batch = params.get("name") == "batch"
            if not asked:
                if batch:
                    return "error", {"code": -32601, "message": "batch runs only as a task"}
                return "result", {**final(lie), **complete}
            task_id = f"task-{len(self.tasks) + 1}"
            created = self.task(task_id, modern)
            self.tasks[task_id] = batch_result(arguments) if batch else final(lie)
            if modern:
                return "result", {"resultType": "task", **created}
            return "result", {"task": created}
        if method in ("tasks/get", "tasks/result", "tasks/cancel"):
            task_id = str(params.get("taskId"))
            if task_id not in self.tasks:
                return "error", {
                    "code": -32602,
                    "message": "Failed to retrieve task: Task not found",
                }
            if method == "tasks/result":
                related = {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
                return "result", {**self.tasks[task_id], "_meta": related}
            if modern and method == "tasks/get":
                return "result", {
                    **complete,
                    **self.task(task_id, True),
                    "result": self.tasks[task_id],
                }
            if modern:
                return "result", complete
            return "result", self.task(task_id, False)
        return "error", {"code": -32601, "message": "Method not found"}


def main() -> None:
    """Serve stdin and stdout, one line at a time."""
    server = Server()
    with open(sys.argv[1], "a", encoding="utf-8") as record:
        for line in sys.stdin:
            message = json.loads(line)
            if "method" not in message or "id" not in message:
                continue
            params = message.get("params") or {}
            record.write(json.dumps({"method": message["method"], "params": params}) + "\n")
            record.flush()
            kind, body = server.answer(message["method"], params)
            reply = {"jsonrpc": "2.0", "id": message["id"], kind: body}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

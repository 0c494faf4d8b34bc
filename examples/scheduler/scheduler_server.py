"""A job scheduler MCP server with no dependencies: newline-delimited JSON-RPC on stdio.

``schedule_job`` takes a cron expression, a target path for the job's output and a SQL query
the job runs, and records the job in the SQLite database named by ``SCHEDULER_DB`` (created
with its tables at start). Like many real servers it checks nothing beyond its schema: a job
with a cron expression that never parses, a query over a table that does not exist or a
target outside its directory would be created and fail later, at 3 a.m. The policy beside it
(``policy.toml``) has the proxy catch those before a job is created, in the Validation
Protocol's ``validate`` tool and on real calls.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from typing import Any

TOOL = {
    "name": "schedule_job",
    "description": "Schedule a recurring report: run a SQL query on the jobs database on a"
    " cron schedule and write its rows to a file.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "cron": {
                "type": "string",
                "minLength": 1,
                "maxLength": 100,
                "description": "When to run: a five-field cron expression (UTC).",
            },
            "target_path": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "The absolute path of the CSV file the rows are written to.",
            },
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1000,
                "description": "The SQL query (SQLite) whose rows make the report.",
            },
        },
        "required": ["cron", "target_path", "query"],
        "additionalProperties": False,
    },
}
SCHEMA = """
CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL);
CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, cron TEXT, target TEXT, query TEXT);
"""


def database() -> sqlite3.Connection:
    """The jobs database, with its tables."""
    connection = sqlite3.connect(os.environ.get("SCHEDULER_DB", "jobs.db"))
    connection.executescript(SCHEMA)
    return connection


def answer(request: dict[str, Any], db: sqlite3.Connection) -> dict[str, Any] | None:
    """The response to one request, or None for a notification."""
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scheduler", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        job = params.get("arguments") or {}
        with db:
            cursor = db.execute(
                "INSERT INTO jobs (cron, target, query) VALUES (?, ?, ?)",
                (job.get("cron"), job.get("target_path"), job.get("query")),
            )
        result = {"content": [{"type": "text", "text": f"job {cursor.lastrowid} scheduled"}]}
    else:
        return {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -32601, "message": "Method not found"},
        }
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    """Serve until stdin closes."""
    db = database()
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line), db)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

"""An MCP server shaped like the reference ``mcp-server-sqlite`` (the same tool names, schemas
and descriptions, the server name ``sqlite``), in front of a real SQLite database.

    python sqlite_server.py CALLS_FILE --db-path DATABASE

Every ``tools/call`` it receives is appended to CALLS_FILE as one JSON line, before the query
runs. ``read_query``, ``write_query`` and ``create_table`` run their ``query`` as given, as the
reference server does (it checks only the first word); ``list_tables`` and ``describe_table``
read the catalog; ``append_insight`` keeps a note.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError


def _tool(name: str, description: str, **properties: str) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        input_schema={
            "type": "object",
            "properties": {
                key: {"type": "string", "description": text} for key, text in properties.items()
            },
            "required": list(properties),
        },
    )


TOOLS = [
    _tool(
        "read_query",
        "Execute a SELECT query on the SQLite database",
        query="SELECT SQL query to execute",
    ),
    _tool(
        "write_query",
        "Execute an INSERT, UPDATE, or DELETE query on the SQLite database",
        query="SQL query to execute",
    ),
    _tool(
        "create_table",
        "Create a new table in the SQLite database",
        query="CREATE TABLE SQL statement",
    ),
    _tool("list_tables", "List all tables in the SQLite database"),
    _tool(
        "describe_table",
        "Get the schema information for a specific table",
        table_name="Name of the table to describe",
    ),
    _tool("append_insight", "Add a business insight to the memo", insight="Business insight"),
]


def build(calls: Path, database: Path) -> Server[Any]:
    """The server, recording each call it receives to ``calls``."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        with calls.open("a", encoding="utf-8") as record:
            record.write(json.dumps({"name": params.name, "arguments": arguments}) + "\n")
        with sqlite3.connect(database) as db:
            if params.name in ("read_query", "write_query", "create_table"):
                rows = db.executescript(arguments["query"]) if ";" in arguments["query"] else None
                if rows is None:
                    rows = db.execute(arguments["query"])
                return _text(json.dumps(rows.fetchall()))
            if params.name == "list_tables":
                found = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                return _text(json.dumps(found.fetchall()))
            if params.name == "describe_table":
                info = db.execute(f"PRAGMA table_info({arguments['table_name']})")
                return _text(json.dumps(info.fetchall()))
        if params.name == "append_insight":
            return _text("Insight added to memo")
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown tool")

    return Server("sqlite", on_list_tools=list_tools, on_call_tool=call_tool)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def main() -> None:
    """Serve stdio until the client hangs up."""
    calls, flag, database = sys.argv[1:4]
    assert flag == "--db-path"
    server = build(Path(calls), Path(database))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

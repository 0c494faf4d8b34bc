"""An MCP server on the official SDK's low-level ``Server`` in front of a real SQLite database,
with no strictmcp in it and the injection hole the schema guard is for.

    python catalog_server.py CALLS_FILE DATABASE

Every ``tools/call`` it receives is appended to CALLS_FILE as one JSON line. Its tools:

- ``describe_table`` ``{table_name}``: the columns of a table, the name pasted into the SQL
  as text (its ``inputSchema`` says only ``string``): an injection reads the whole database;
- ``read_files`` ``{paths}``: the names it was given, counted (reads nothing);
- ``list_tables``: the tables of the database.
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

TOOLS = [
    types.Tool(
        name="describe_table",
        input_schema={
            "type": "object",
            "properties": {"table_name": {"type": "string"}},
            "required": ["table_name"],
        },
    ),
    types.Tool(
        name="read_files",
        input_schema={
            "type": "object",
            "properties": {"paths": {"type": "array", "items": {"type": "string"}}},
            "required": ["paths"],
        },
    ),
    types.Tool(name="list_tables", input_schema={"type": "object"}),
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
            if params.name == "describe_table":
                # The hole: the name goes into the statement as text.
                sql = f"SELECT name, type FROM pragma_table_info('{arguments['table_name']}')"
                return _text(json.dumps(db.execute(sql).fetchall()))
            if params.name == "list_tables":
                rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                return _text(json.dumps(rows.fetchall()))
        if params.name == "read_files":
            return _text(f"{len(arguments['paths'])} files")
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown tool")

    return Server("catalog-fixture", on_list_tools=list_tools, on_call_tool=call_tool)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def main() -> None:
    """Serve stdio until the client hangs up."""
    server = build(Path(sys.argv[1]), Path(sys.argv[2]))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

"""An MCP server on the official SDK's low-level ``Server`` that does what it is asked, for real,
with no strictmcp in it: the ground truth for guard tests through the proxy.

    python exec_server.py CALLS_FILE REPO

Every ``tools/call`` it receives is appended to CALLS_FILE as one JSON line. Its tools:

- ``git`` ``{argv}``: runs the real ``git`` with ``argv`` (no shell) in the repository REPO,
  with REPO as its home and no system configuration;
- ``query`` ``{sql}``: runs ``sql`` on the PostgreSQL server whose DSN is in
  ``STRICTMCP_TEST_PG_DSN``, committed, and answers the rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psycopg
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

TOOLS = [
    types.Tool(
        name="git",
        input_schema={
            "type": "object",
            "properties": {"argv": {"type": "array", "items": {"type": "string"}}},
            "required": ["argv"],
        },
    ),
    types.Tool(
        name="query",
        input_schema={
            "type": "object",
            "properties": {"sql": {"type": "string"}},
            "required": ["sql"],
        },
    ),
]


def build(calls: Path, repo: Path) -> Server[Any]:
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
        if params.name == "git":
            environment = {"PATH": os.environ["PATH"], "HOME": str(repo)}
            done = subprocess.run(
                ["git", *arguments["argv"]],
                cwd=repo,
                env={**environment, "GIT_CONFIG_NOSYSTEM": "1"},
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
            return _text(done.stdout + done.stderr)
        if params.name == "query":
            with psycopg.connect(os.environ["STRICTMCP_TEST_PG_DSN"], autocommit=True) as db:
                rows = db.execute(arguments["sql"].encode()).fetchall()
            return _text(json.dumps(rows, default=str))
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown tool")

    return Server("exec-fixture", on_list_tools=list_tools, on_call_tool=call_tool)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def main() -> None:
    """Serve stdio until the client hangs up."""
    server = build(Path(sys.argv[1]), Path(sys.argv[2]))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

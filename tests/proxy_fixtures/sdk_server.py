"""An MCP server on the official SDK's low-level ``Server``, over stdio, with no strictmcp in it.

    python sdk_server.py CALLS_FILE ROOT

Every ``tools/call`` it receives is appended to CALLS_FILE as one JSON line, so a test can
prove which calls reached it. Its tools:

- ``read_file`` ``{path}``: reads a file (the proxy's policy confines it to ROOT);
- ``echo`` ``{text}``: answers the text, with ``additionalProperties: false``;
- ``word_count`` ``{text}``: broken, returns the count as a string where its ``outputSchema``
  promises an integer;
- ``remote``: its ``inputSchema`` has an external ``$ref``, which strictmcp cannot check;
- ``crash``: the process exits with status 3 mid-request;
- ``hang``: never answers.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

TEXT = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}
NOTHING: dict[str, Any] = {"type": "object"}
TOOLS = [
    types.Tool(
        name="read_file",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
    types.Tool(name="echo", input_schema=TEXT),
    types.Tool(
        name="word_count",
        input_schema=TEXT,
        output_schema={
            "type": "object",
            "properties": {"words": {"type": "integer"}},
            "required": ["words"],
        },
    ),
    types.Tool(
        name="remote", input_schema={"type": "object", "$ref": "https://example.com/schema.json"}
    ),
    types.Tool(name="crash", input_schema=NOTHING),
    types.Tool(name="hang", input_schema=NOTHING),
]


def build(calls: Path) -> Server[Any]:
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
        if params.name == "read_file":
            return _text(Path(arguments["path"]).read_text(encoding="utf-8"))
        if params.name == "echo":
            return _text(str(arguments.get("text")))
        if params.name == "word_count":
            words = str(len(str(arguments.get("text")).split()))
            return types.CallToolResult(
                content=[_content(words)], structured_content={"words": words}
            )
        if params.name == "crash":
            os._exit(3)
        if params.name == "hang":
            await anyio.sleep_forever()
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown tool")

    return Server("proxy-fixture", on_list_tools=list_tools, on_call_tool=call_tool)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_content(text)])


def _content(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


async def main() -> None:
    """Serve stdio until the client hangs up."""
    server = build(Path(sys.argv[1]))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

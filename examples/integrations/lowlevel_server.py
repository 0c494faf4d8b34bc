"""A small file server on the MCP SDK's low-level ``Server``, protected by strictmcp.

    python examples/integrations/lowlevel_server.py ROOT [--http PORT] [--audit]

Serves stdio, or streamable HTTP on 127.0.0.1:PORT at /mcp. Its tools:

- ``read_file``: a policy's path guard keeps ``path`` inside ROOT (no ``..``, no symlink out,
  no ``ROOT_sibling`` that merely starts with ROOT's name);
- ``append_note``: appends to ROOT/notes.txt, a side effect the dry-run ``validate`` tool
  never causes;
- ``word_count``: deliberately broken, it returns the count as a string where its
  ``outputSchema`` promises an integer; strictmcp withholds that result.

``--audit`` logs findings instead of refusing calls; ``STRICTMCP_AUDIT_LOG=FILE`` writes
strictmcp's findings to FILE.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from example_cli import parse_arguments, read_policy
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from strictmcp.integrations.lowlevel import protect
from strictmcp.policy import Mode

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
TOOLS = [
    types.Tool(
        name="read_file",
        description="Read a text file under the server's root.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
    types.Tool(name="append_note", description="Append a line to notes.txt.", input_schema=TEXT),
    types.Tool(
        name="word_count",
        description="Count the words of a text.",
        input_schema=TEXT,
        output_schema={
            "type": "object",
            "properties": {"words": {"type": "integer"}},
            "required": ["words"],
        },
    ),
]


def build_server(root: Path, mode: Mode = "enforce") -> Server[Any]:
    """The server, protected: schemas strictly checked, ``read_file`` confined to ``root``."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "read_file":
            return _text(Path(arguments["path"]).read_text(encoding="utf-8"))
        if params.name == "append_note":
            with (root / "notes.txt").open("a", encoding="utf-8") as notes:
                notes.write(arguments["text"] + "\n")
            return _text("noted")
        if params.name == "word_count":
            words = str(len(arguments["text"].split()))  # the bug: a string, not an integer
            return types.CallToolResult(
                content=[_content(words)], structured_content={"words": words}
            )
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown tool")

    server = Server("strictmcp-lowlevel-example", on_list_tools=list_tools, on_call_tool=call_tool)
    policy = read_policy(root)
    return protect(server, policy=policy, strict=True, mode=mode)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_content(text)])


def _content(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    """Parse the command line and serve."""
    args = parse_arguments(__doc__ or "")
    server = build_server(args.root, args.mode)
    if args.http is None:
        anyio.run(_serve_stdio, server)
    else:
        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()

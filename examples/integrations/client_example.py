"""strictmcp in an MCP client: list tools, ask before calling, call, and see a result refused.

Run ``python examples/integrations/client_example.py``. The script starts itself as a tiny
MCP server over stdio (``--serve``: mcp's low-level ``Server``, below) and talks to it through
a :class:`~strictmcp.integrations.client.StrictClientSession`. The server has a bug: for
``a == 42`` its result breaks the tool's own ``outputSchema`` and carries a secret. The client
refuses that result, and its error says where and why without repeating the secret.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import StdioServerParameters
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

from strictmcp.integrations.client import ToolResultError, open_stdio_session
from strictmcp.integrations.client_validate import validate_call

SECRET = "s3cr3t-t0ken"

DIVIDE = types.Tool(
    name="divide",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number", "not": {"const": 0}}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {"quotient": {"type": "number"}},
        "required": ["quotient"],
    },
)


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[DIVIDE])


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    args = params.arguments or {}
    quotient = SECRET if args["a"] == 42 else args["a"] / args["b"]
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=str(quotient))],
        structured_content={"quotient": quotient},
    )


async def serve() -> None:
    server = Server("divider", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def main() -> None:
    params = StdioServerParameters(command=sys.executable, args=[__file__, "--serve"])
    async with open_stdio_session(params) as session:
        listing = await session.list_tools()
        print("tools:", [tool.name for tool in listing.tools])

        # This server advertises no validate tool, so the answer comes from its inputSchema.
        answer = await validate_call(session, "divide", {"a": 1, "b": 0})
        print(f"validate_call divide(1, 0): valid={answer.valid} (answered {answer.source})")
        for error in answer.errors:
            print("  error:", error)

        result = await session.call_tool("divide", {"a": 1, "b": 4})
        print("divide(1, 4) ->", result.structured_content)

        try:
            await session.call_tool("divide", {"a": 42, "b": 1})
        except ToolResultError as refused:
            print(refused)
            print("secret in the error:", SECRET in str(refused))


if __name__ == "__main__":
    anyio.run(serve if sys.argv[1:] == ["--serve"] else main)

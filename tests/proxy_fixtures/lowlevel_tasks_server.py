"""A server on the official SDK's low-level ``Server`` whose tools run as tasks (SEP-2663, the
conformance fixture's ``TaskStore``), protected by strictmcp's ``protect()``.

    python lowlevel_tasks_server.py enforce|audit   # stdio

Tools: ``count_words`` (its ``outputSchema`` wants an integer ``words``, which it delivers)
and ``broken_count`` (the same promise, delivering ``"many"``). Each runs as a task when the
request declared the tasks extension in its own client capabilities, inline otherwise, as a
server author would write it: ``tools/call`` registered directly (``on_call_tool``'s type
admits no ``CreateTaskResult``), the extension advertised in ``server.extensions``, the
``tasks/*`` methods added with ``add_request_handler``, the store run by the lifespan.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from proxy_fixtures import task_store  # found through the path just set
from proxy_fixtures.task_store import Job, TaskStore, Work
from strictmcp.integrations.lowlevel import protect
from strictmcp.policy import Mode

COUNT: dict[str, Any] = {
    "type": "object",
    "properties": {"words": {"type": "integer"}},
    "required": ["words"],
}
TEXT: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}
TOOLS = [
    types.Tool(
        name="count_words",
        description="Counts the words of a text, as a task when the client asks for one.",
        input_schema=TEXT,
        output_schema=COUNT,
    ),
    types.Tool(
        name="broken_count",
        description="Promises a number of words and delivers a word instead.",
        input_schema=TEXT,
        output_schema=COUNT,
    ),
]


def _counted(words: object) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{words} words")],
        structured_content={"words": words},
    )


def build(mode: Mode = "enforce", max_tasks: int = 1000) -> tuple[Server[Any], TaskStore]:
    """The protected server, and its task store (a test may start a task behind its back)."""
    store = TaskStore()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | dict[str, Any]:
        text = str((params.arguments or {}).get("text", ""))
        if params.name == "count_words":
            words: object = len(text.split())
        elif params.name == "broken_count":
            words = "many"
        else:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")

        async def work(job: Job) -> types.CallToolResult:
            # Yields once, so the task is still working when the call is answered.
            await anyio.sleep(0)
            return _counted(words)

        if task_store.negotiated(ctx):
            return store.start(work)
        return await work(task_store.synchronous())

    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[None]:
        async with store.running():
            yield

    server: Server[Any] = Server("lowlevel-tasks", lifespan=lifespan, on_list_tools=list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    server.extensions[task_store.TASKS] = {}
    for method, params_type, handler in store.methods():
        server.add_request_handler(method, params_type, handler)
    return protect(server, mode=mode, max_tasks=max_tasks), store


def counting(words: object) -> Work:
    """Work a test starts in the store directly, not through a call: its result is ``words``."""

    async def work(job: Job) -> types.CallToolResult:
        return _counted(words)

    return work


async def serve_stdio(mode: Mode) -> None:
    server, _ = build(mode)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve_stdio, "audit" if sys.argv[1:] == ["audit"] else "enforce")

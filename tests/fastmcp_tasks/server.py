"""A FastMCP server whose tools run as tasks (the ``fastmcp-tasks`` package's
``TasksExtension``, SEP-2663), protected by StrictMiddleware; stdio.

Runs in its own environment (``.venv-fastmcp-tasks``, made by ``make install-test``):
fastmcp-tasks needs a newer FastMCP than the main one and a redis-py other than the one
strictmcp pins. Docket, which runs the tasks, keeps them in memory (``memory://``).

Usage: ``server.py enforce|audit``.
"""

from __future__ import annotations

import sys
from typing import Any

from fastmcp import FastMCP

from fastmcp_tasks import TasksExtension
from strictmcp.integrations.fastmcp import StrictMiddleware

COUNT = {
    "type": "object",
    "properties": {"words": {"type": "integer"}},
    "required": ["words"],
}

mode = sys.argv[1] if len(sys.argv) > 1 else "enforce"
mcp = FastMCP(
    "tasks", middleware=[StrictMiddleware(mode="audit" if mode == "audit" else "enforce")]
)
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool(task=True, output_schema=COUNT)
async def count_words(text: str) -> dict[str, Any]:
    """Counts the words of a text, as a task when the client asks for one."""
    return {"words": len(text.split())}


@mcp.tool(task=True, output_schema=COUNT)
async def broken_count(text: str) -> dict[str, Any]:
    """Promises a number of words and delivers a word instead."""
    return {"words": "many"}


if __name__ == "__main__":
    mcp.run()

"""An MCP client on the official Python SDK 1.x (speaking 2025-03-26), run in its own virtual
environment by tests/test_proxy_old_client.py: it connects over streamable HTTP, lists the tools,
makes one valid call and one the proxy refuses, and prints what it got as one JSON line.
Everything the SDK logs goes to stderr, where the test looks for parse errors.

    python client_1x.py URL
"""

import json
import logging
import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str) -> None:
    async with (
        streamablehttp_client(url) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        tools = await session.list_tools()
        good = await session.call_tool("echo", {"text": "hello"})
        bad = await session.call_tool("echo", {"text": 5})
        print(
            json.dumps(
                {
                    "version": init.protocolVersion,
                    "tools": [tool.name for tool in tools.tools],
                    "good": [c.text for c in good.content if c.type == "text"],
                    "bad": bool(bad.isError),
                }
            )
        )


if __name__ == "__main__":
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    anyio.run(main, sys.argv[1])

"""FastMCP's proxy in front of a stdio server, for bench/peers.py (run in the fastmcp venv).

``python fastmcp_proxy.py stdio -- COMMAND [ARGS...]`` serves the proxy on stdin and stdout;
``python fastmcp_proxy.py http PORT -- COMMAND [ARGS...]`` serves it as streamable HTTP on
127.0.0.1:PORT, path ``/mcp``. The upstream is ``COMMAND`` over stdio, reached through
``fastmcp.server.create_proxy`` with FastMCP's defaults. FastMCP has no CLI for this.

Several upstreams, each after its own ``--`` (``stdio -- A... -- B... -- C...``), make FastMCP's
multi-server proxy: ``create_proxy`` of an ``MCPConfig`` naming them ``one``, ``two``,
``three`` and so on, whose tools FastMCP offers as ``one_TOOL`` and so on.
"""

from __future__ import annotations

import os
import sys
from typing import Any

os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")  # no look-up on PyPI
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
# The multi-server proxy logs a warning-worthy note at INFO on every request it forwards (a
# rich-formatted block on stderr): its cost is the log's, not the proxying's.
os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy

NAMES = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def main() -> int:
    split = sys.argv.index("--")
    options = sys.argv[1:split]
    commands: list[list[str]] = [[]]
    for arg in sys.argv[split + 1 :]:
        if arg == "--":
            commands.append([])
        else:
            commands[-1].append(arg)
    upstream: Any
    if len(commands) == 1:
        upstream = StdioTransport(command=commands[0][0], args=commands[0][1:])
    else:
        servers = {
            name: {"command": command[0], "args": command[1:], "transport": "stdio"}
            for name, command in zip(NAMES[: len(commands)], commands, strict=True)
        }
        upstream = {"mcpServers": servers}
    proxy = create_proxy(upstream, name="strictmcp-bench-fastmcp-proxy")
    if options == ["stdio"]:
        proxy.run(transport="stdio", show_banner=False)
    elif len(options) == 2 and options[0] == "http":
        port = int(options[1])
        proxy.run(transport="http", host="127.0.0.1", port=port, show_banner=False)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

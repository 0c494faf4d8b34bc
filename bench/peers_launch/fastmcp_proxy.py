"""FastMCP's proxy in front of a stdio server, for bench/peers.py (run in the fastmcp venv).

``python fastmcp_proxy.py stdio -- COMMAND [ARGS...]`` serves the proxy on stdin and stdout;
``python fastmcp_proxy.py http PORT -- COMMAND [ARGS...]`` serves it as streamable HTTP on
127.0.0.1:PORT, path ``/mcp``. The upstream is ``COMMAND`` over stdio, reached through
``fastmcp.server.create_proxy`` with FastMCP's defaults. FastMCP has no CLI for this.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")  # no look-up on PyPI
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")

from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy


def main() -> int:
    split = sys.argv.index("--")
    options, command = sys.argv[1:split], sys.argv[split + 1 :]
    upstream = StdioTransport(command=command[0], args=command[1:])
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

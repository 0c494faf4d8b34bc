"""A small file server on the MCP SDK's ``MCPServer``, protected by strictmcp.

    python examples/integrations/mcpserver_server.py ROOT [--http PORT] [--audit]

Serves stdio, or streamable HTTP on 127.0.0.1:PORT at /mcp. The tools are those of
``lowlevel_server.py``: ``read_file`` confined to ROOT by a path guard, ``append_note`` with
its side effect, and ``word_count``, whose result deliberately breaks its ``outputSchema``
(MCPServer's own check is pydantic in lax mode, which lets the string through).

Strict mode matters most here: MCPServer's advertised schemas do not forbid unknown
arguments and its pydantic models drop them silently; strictmcp refuses them.
``--audit`` logs findings instead of refusing calls; ``STRICTMCP_AUDIT_LOG=FILE`` writes
strictmcp's findings to FILE.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import mcp_types as types
from example_cli import parse_arguments, read_policy
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from strictmcp.integrations.mcpserver import StrictExtension
from strictmcp.policy import Mode


class WordCount(BaseModel):
    """``word_count``'s result, and so its ``outputSchema``."""

    words: int


def build_server(root: Path, mode: Mode = "enforce") -> MCPServer[Any]:
    """The server, protected: schemas strictly checked, ``read_file`` confined to ``root``."""
    policy = read_policy(root)
    strict = StrictExtension(policy=policy, strict=True, mode=mode)
    app = MCPServer("strictmcp-mcpserver-example", extensions=[strict])

    @app.tool()
    def read_file(path: str) -> str:
        """Read a text file under the server's root."""
        return Path(path).read_text(encoding="utf-8")

    @app.tool()
    def append_note(text: str) -> str:
        """Append a line to notes.txt."""
        with (root / "notes.txt").open("a", encoding="utf-8") as notes:
            notes.write(text + "\n")
        return "noted"

    @app.tool()
    def word_count(text: str) -> Annotated[types.CallToolResult, WordCount]:
        """Count the words of a text."""
        words = str(len(text.split()))  # the bug: a string, not an integer
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=words)],
            structured_content={"words": words},
        )

    return strict.install(app)


def main() -> None:
    """Parse the command line and serve."""
    args = parse_arguments(__doc__ or "")
    app = build_server(args.root, args.mode)
    if args.http is None:
        app.run()
    else:
        app.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()

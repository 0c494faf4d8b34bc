"""A small file server on FastMCP 4.1, protected by strictmcp.

    python examples/integrations/fastmcp_server.py ROOT [--http PORT] [--audit]

Serves stdio, or streamable HTTP on 127.0.0.1:PORT at /mcp. The tools are those of
``lowlevel_server.py``: ``read_file`` confined to ROOT by a path guard, ``append_note`` with
its side effect, and ``word_count``, whose result deliberately breaks its ``outputSchema``
(FastMCP sends a ``ToolResult`` a tool builds itself as it is).

``--audit`` logs findings instead of refusing calls; ``STRICTMCP_AUDIT_LOG=FILE`` writes
strictmcp's findings to FILE.
"""

from __future__ import annotations

from pathlib import Path

from example_cli import parse_arguments, read_policy
from fastmcp import FastMCP
from fastmcp.tools.base import ToolResult

from strictmcp.integrations.fastmcp import StrictMiddleware
from strictmcp.policy import Mode

WORD_COUNT = {"type": "object", "properties": {"words": {"type": "integer"}}, "required": ["words"]}


def build_server(root: Path, mode: Mode = "enforce") -> FastMCP:
    """The server, protected: schemas checked, ``read_file`` confined to ``root``."""
    policy = read_policy(root)
    mcp = FastMCP(
        "strictmcp-fastmcp-example", middleware=[StrictMiddleware(policy=policy, mode=mode)]
    )

    @mcp.tool
    def read_file(path: str) -> str:
        """Read a text file under the server's root."""
        return Path(path).read_text(encoding="utf-8")

    @mcp.tool
    def append_note(text: str) -> str:
        """Append a line to notes.txt."""
        with (root / "notes.txt").open("a", encoding="utf-8") as notes:
            notes.write(text + "\n")
        return "noted"

    @mcp.tool(output_schema=WORD_COUNT)
    def word_count(text: str) -> ToolResult:
        """Count the words of a text."""
        words = str(len(text.split()))  # the bug: a string, not an integer
        return ToolResult(structured_content={"words": words})

    return mcp


def main() -> None:
    """Parse the command line and serve."""
    args = parse_arguments(__doc__ or "")
    mcp = build_server(args.root, args.mode)
    if args.http is None:
        mcp.run(show_banner=False)
    else:
        mcp.run(transport="http", host="127.0.0.1", port=args.http, show_banner=False)


if __name__ == "__main__":
    main()

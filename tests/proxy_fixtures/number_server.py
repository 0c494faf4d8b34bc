"""A line-level MCP server with bounded numeric arguments; it records every line it receives,
byte for byte, to the file named by its first argument.

Tools: ``set_volume`` ``{level}``, an integer from 0 to 10, and ``scale`` ``{factor}``, a
number from 0 to 10. A call is answered with the arguments as this server (Python's ``json``)
read them, so a test can see what a literal became.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {
        "name": "set_volume",
        "description": "Set the volume.",
        "inputSchema": {
            "type": "object",
            "properties": {"level": {"type": "integer", "minimum": 0, "maximum": 10}},
            "required": ["level"],
            "additionalProperties": False,
        },
    },
    {
        "name": "scale",
        "description": "Scale the picture.",
        "inputSchema": {
            "type": "object",
            "properties": {"factor": {"type": "number", "minimum": 0, "maximum": 10}},
            "required": ["factor"],
            "additionalProperties": False,
        },
    },
]


def main() -> None:
    """Serve stdin and stdout, one line at a time."""
    with open(sys.argv[1], "ab") as record:
        for line in sys.stdin.buffer:
            record.write(line)
            record.flush()
            message = json.loads(line)
            if "method" not in message or "id" not in message:
                continue
            method = message["method"]
            result: dict[str, Any] = {}
            if method == "initialize":
                result = {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "numbers", "version": "1"},
                }
            elif method == "tools/list":
                result = {"tools": TOOLS}
            elif method == "tools/call":
                read = json.dumps(message["params"].get("arguments"))
                result = {"content": [{"type": "text", "text": read}], "isError": False}
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

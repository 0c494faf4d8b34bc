"""A tiny MCP server with no dependencies: newline-delimited JSON-RPC on stdin and stdout.

It trusts its arguments completely, as many real servers do: it would happily "look up" a
city called ``../../etc/passwd``. The proxy in front of it is what keeps such calls out.
Every call it receives is appended to the file named by ``WEATHER_CALLS`` (when set), so a
demo can show which calls reached it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 80, "pattern": "^[^/\\\\]+$"},
            "units": {"enum": ["metric", "imperial"]},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
    "outputSchema": {
        "type": "object",
        "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
        "required": ["temperature", "conditions"],
    },
}


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one request, or None for a notification."""
    method, params = request.get("method"), request.get("params") or {}
    if "id" not in request:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "weather", "version": "1.0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        record = os.environ.get("WEATHER_CALLS")
        if record:
            with open(record, "a", encoding="utf-8") as calls:
                calls.write(json.dumps(params) + "\n")
        city = str((params.get("arguments") or {}).get("city"))
        weather = {"temperature": 18.5, "conditions": "cloudy"}
        text = f"{city}: {weather['temperature']} degrees, {weather['conditions']}"
        result = {"content": [{"type": "text", "text": text}], "structuredContent": weather}
    else:
        return {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -32601, "message": "Method not found"},
        }
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    """Serve until stdin closes."""
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()

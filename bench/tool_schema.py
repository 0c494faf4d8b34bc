"""The tool ``inputSchema`` every benchmark uses, apart from bench/engine.py so that
bench/echo_server.py can import it without the engines engine.py compares (python-jsonschema
alone takes seconds to import): the echo server's own start-up is part of bench/startup.py's
figures.
"""

from __future__ import annotations

from typing import Any

# A realistic MCP tool inputSchema, as a server written with a typed SDK would publish it.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "create_issue arguments",
    "properties": {
        "repository": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$",
            "maxLength": 201,
            "description": "owner/name of the repository",
        },
        "title": {"type": "string", "minLength": 1, "maxLength": 256},
        "body": {"type": "string", "maxLength": 65536},
        "priority": {"type": "integer", "minimum": 0, "maximum": 4},
        "state": {"enum": ["open", "closed", "triage"]},
        "labels": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9:_-]*$", "maxLength": 50},
            "maxItems": 10,
            "uniqueItems": True,
        },
        "assignee": {
            "type": "object",
            "properties": {
                "login": {
                    "type": "string",
                    "pattern": "^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$",
                    "maxLength": 39,
                },
                "notify": {"type": "boolean"},
            },
            "required": ["login"],
            "additionalProperties": False,
        },
    },
    "required": ["repository", "title"],
    "additionalProperties": False,
}

"""The Validation Protocol's tool: a dry-run ``validate`` tool that answers ``{valid, errors,
warnings}``; its name, definition and capability.

A client (or a scheduler acting for one) asks ``validate`` with ``{tool, arguments}`` before it
commits to a call; :class:`strictmcp.enforce.DryRun` answers it. Servers advertise it under
``capabilities.experimental.toolValidation``; a server that already has a tool called
``validate`` keeps it, and strictmcp's goes by another name, which the capability says.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..protocol import Revision

PREFERRED_NAME = "validate"
FALLBACK_NAME = "strictmcp_validate"
CAPABILITY = "toolValidation"

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        # SEP-986 bounds every tool name to 128 characters; a longer one names no tool.
        "tool": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "description": "Name of the tool whose call to check",
        },
        "arguments": {"type": "object", "description": "The arguments that call would carry"},
    },
    "required": ["tool", "arguments"],
    "additionalProperties": False,
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "valid": {"type": "boolean"},
        "errors": {"type": "array", "items": {"type": "string"}},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["valid", "errors", "warnings"],
    "additionalProperties": False,
}


def choose_name(existing: Collection[str], preferred: str = PREFERRED_NAME) -> str:
    """The name for the validate tool that shadows no tool the server already has."""
    for name in (preferred, FALLBACK_NAME):
        if name not in existing:
            return name
    suffix = 2
    while f"{FALLBACK_NAME}_{suffix}" in existing:
        suffix += 1
    return f"{FALLBACK_NAME}_{suffix}"


_DESCRIPTION = (
    "Check a call before making it (dry run): answers whether `arguments` are valid "
    "for `tool`, with errors and warnings. The tool itself is not run."
)


def tool_definition(name: str, revision: Revision) -> dict[str, Any]:
    """The ``Tool`` to add to a ``tools/list`` result."""
    tool: dict[str, Any] = {"name": name, "description": _DESCRIPTION, "inputSchema": INPUT_SCHEMA}
    if revision.has_structured_output:
        tool["outputSchema"] = OUTPUT_SCHEMA
    return tool


def is_validate_tool(tool: Any) -> bool:
    """Whether ``tool`` is strictmcp's own validate tool (under any name, at any revision), as
    a proxy in front of a server lists it: not the server's, so never pinned."""
    return (
        isinstance(tool, dict)
        and tool.get("description") == _DESCRIPTION
        and tool.get("inputSchema") == INPUT_SCHEMA
    )


def capability(name: str) -> dict[str, Any]:
    """The entry for ``capabilities.experimental`` that advertises the validate tool."""
    return {CAPABILITY: {"tool": name}}

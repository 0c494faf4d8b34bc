"""An MCP server for ``strictmcp check`` tests, on the official SDK's low-level ``Server``.

    python sloppy_server.py [--faults] [--validate | --lying-validate]

The low-level server does not validate arguments itself, so each tool here does exactly the
checking it is written to do. Always listed, and well behaved (every argument checked with
strictmcp's engine, invalid input answered with ``isError``, output as declared):

- ``add`` ``{a, b}`` integers in -1000..1000, answers ``{sum}``;
- ``greet`` ``{name, lang?, when?}``: a short name of letters, an enum, a date.

With ``--faults``, three tools each with one planted fault:

- ``extra_args`` declares ``additionalProperties: false`` and never checks it;
- ``crash_long`` exits the process (status 3) on a ``name`` longer than its ``maxLength``;
- ``bad_output`` answers ``structuredContent`` that breaks its ``outputSchema``.

``--validate`` adds a correct Validation Protocol ``validate`` tool; ``--lying-validate``
adds one that answers ``valid: true`` to everything.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from strictmcp.schema import compile_schema

GOOD: dict[str, dict[str, Any]] = {
    "add": {
        "input": {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": -1000, "maximum": 1000},
                "b": {"type": "integer", "minimum": -1000, "maximum": 1000},
            },
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {"sum": {"type": "integer"}},
            "required": ["sum"],
            "additionalProperties": False,
        },
    },
    "greet": {
        "input": {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 20,
                    "pattern": "^[A-Za-z]+$",
                },
                "lang": {"enum": ["en", "fr"]},
                "when": {"type": "string", "format": "date"},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    },
}
FAULTY: dict[str, dict[str, Any]] = {
    "extra_args": {
        "input": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 100}},
            "required": ["text"],
            "additionalProperties": False,
        },
    },
    "crash_long": {
        "input": {
            "type": "object",
            "properties": {"name": {"type": "string", "maxLength": 8}},
            "required": ["name"],
        },
    },
    "bad_output": {
        "input": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}},
            "required": ["n"],
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {"square": {"type": "integer"}},
            "required": ["square"],
        },
    },
}
VALIDATE_INPUT = {
    "type": "object",
    "properties": {"tool": {"type": "string"}, "arguments": {"type": "object"}},
    "required": ["tool", "arguments"],
}


def _tools(specs: dict[str, dict[str, Any]], validate: bool) -> list[types.Tool]:
    tools = [
        types.Tool(name=name, input_schema=spec["input"], output_schema=spec.get("output"))
        for name, spec in specs.items()
    ]
    if validate:
        tools.append(types.Tool(name="validate", input_schema=VALIDATE_INPUT))
    return tools


def _result(text: str, structured: Any = None, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )


def _problems(specs: dict[str, dict[str, Any]], name: str, arguments: Any) -> list[str]:
    spec = specs.get(name)
    if spec is None:
        return [f"unknown tool {name}"]
    result = compile_schema(spec["input"]).validate(arguments)
    return [str(issue) for issue in result.issues]


def build(faults: bool, validate: str | None) -> Server[Any]:
    """The server with the tools the flags ask for."""
    specs = {**GOOD, **(FAULTY if faults else {})}
    listed = _tools(specs, validate is not None)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name, arguments = params.name, params.arguments or {}
        if name == "validate":
            if validate == "lying":
                verdict = {"valid": True, "errors": [], "warnings": []}
            else:
                errors = _problems(specs, arguments.get("tool", ""), arguments.get("arguments"))
                verdict = {"valid": not errors, "errors": errors, "warnings": []}
            return _result(json.dumps(verdict), verdict)
        if name == "extra_args":
            # The fault: only the declared argument is looked at, extras go through.
            text = arguments.get("text")
            if not isinstance(text, str) or len(text) > 100:
                return _result("text must be a string of at most 100 characters", error=True)
            return _result(text)
        if name == "crash_long":
            value = arguments.get("name")
            if not isinstance(value, str):
                return _result("name must be a string", error=True)
            if len(value) > 8:
                sys.stderr.write("fatal: name buffer overflow\n")
                sys.stderr.flush()
                os._exit(3)
            return _result(f"hello {value}")
        problems = _problems(specs, name, arguments)
        if problems:
            return _result("; ".join(problems), error=True)
        if name == "bad_output":
            n = arguments["n"]
            return _result(str(n * n), {"square": str(n * n)})
        if name == "add":
            total = arguments["a"] + arguments["b"]
            return _result(str(total), {"sum": total})
        return _result(f"hello {arguments['name']}")

    return Server("check-fixture", on_list_tools=list_tools, on_call_tool=call_tool)


def validate_mode(flags: set[str]) -> str | None:
    """Which validate tool the flags ask for: ``lying``, ``honest`` or none."""
    if "--lying-validate" in flags:
        return "lying"
    return "honest" if "--validate" in flags else None


async def main() -> None:
    """Serve stdio until the client hangs up."""
    flags = set(sys.argv[1:])
    server = build("--faults" in flags, validate_mode(flags))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)

"""The README's Python snippets run as written (the names their prose gives are given here: a
tool, its arguments, the bytes read); its other blocks, as every page's: test_docs_blocks.py."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from fastmcp import FastMCP
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(language: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


async def _no_tools(context: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[])


async def _no_call(context: Any, params: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[])


def _givens() -> dict[str, Any]:
    """What the prose around the snippets says the reader has."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    return {
        "tool": SimpleNamespace(inputSchema=schema),
        "arguments": {"path": 7},
        "raw_bytes": json.dumps(request).encode(),
        "server": Server("files", on_list_tools=_no_tools, on_call_tool=_no_call),
        "MCPServer": MCPServer,
        "FastMCP": FastMCP,
    }


def test_the_readme_has_python_and_toml_snippets() -> None:
    assert len(_blocks("python")) >= 4
    assert len(_blocks("toml")) >= 4


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_each_python_snippet_runs_as_written(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "policy.toml").write_text(
        f'[[guard]]\ntool = "read_*"\nargument = "/path"\nkind = "path"\n'
        f"roots = [{json.dumps(str(tmp_path))}]\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(_blocks("python")[index], _givens())
    if index == 0:
        assert "/path wrong-type" in printed.getvalue()  # the snippet prints what it found

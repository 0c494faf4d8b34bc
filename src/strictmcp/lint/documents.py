"""Tool lists in files: a ``tools/list`` result, a JSON-RPC response to one, or a bare list.

A file holds a ``tools/list`` result (``{"tools": [...]}``), a whole JSON-RPC response to
``tools/list`` (``{"jsonrpc": "2.0", "id": 1, "result": {"tools": [...]}}``), or a bare list
of tools. Each tool's place in the file is kept (``/result/tools/3``) so findings can be
mapped back to lines. Reading one needs no transport, so it sits with lint's rules, where
every command that reads tools from a file (``lint``, ``policy``) can use it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol import Revision
from ..schema.jsonio import JSONInputError, load_json
from ..schema.limits import Limits

MAX_FILE_SIZE = Limits().max_instance_size


class LintInputError(ValueError):
    """Input that holds no tool list; the message never quotes its contents."""


@dataclass(frozen=True)
class ToolSource:
    """Tools to lint, with what is known of where they came from.

    ``kind`` is ``file``, ``command`` or ``url``; ``text`` and ``prefixes`` (each tool's
    JSON Pointer in the file) exist for files only; ``revision`` and ``server_info`` for live
    servers only.
    """

    kind: str
    name: str
    tools: list[Any]
    prefixes: list[str] = field(default_factory=list)
    text: str | None = None
    revision: Revision | None = None
    server_info: Mapping[str, Any] | None = None


def tools_from_document(document: Any) -> tuple[list[Any], str]:
    """The tools a document holds and the pointer of the array holding them.

    Raises :class:`LintInputError` for anything that is not one of the three shapes.
    """
    if isinstance(document, list):
        return document, ""
    if not isinstance(document, dict):
        raise LintInputError("expected a tools/list result, a JSON-RPC response or a list")
    base = ""
    if "jsonrpc" in document:
        if "error" in document:
            raise LintInputError("the JSON-RPC response is an error, not a tools/list result")
        document, base = document.get("result"), "/result"
    if not isinstance(document, dict) or not isinstance(document.get("tools"), list):
        raise LintInputError('expected a "tools" array (a tools/list result)')
    return document["tools"], base + "/tools"


def load_file(path: str) -> ToolSource:
    """Read a file (``-``: standard input) of tools; raises :class:`LintInputError`."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as error:
        raise LintInputError(f"cannot read: {error.strerror}") from None
    try:
        document = load_json(data, max_size=MAX_FILE_SIZE)
    except JSONInputError as error:
        raise LintInputError(f"{error.message} [{error.code}]") from None
    tools, base = tools_from_document(document)
    text = data.decode("utf-8")
    return ToolSource(
        kind="file",
        name=path,
        tools=tools,
        prefixes=[f"{base}/{index}" for index in range(len(tools))],
        text=text,
    )

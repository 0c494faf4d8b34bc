"""Where a server's tools are read from, for the commands that judge or pin them: a file, or
a live server through the MCP client.

A file holds a ``tools/list`` result (``{"tools": [...]}``, and ``"prompts"`` beside it when
the prompts are to be read too), a whole JSON-RPC response to ``tools/list``
(``{"jsonrpc": "2.0", "id": 1, "result": {"tools": [...]}}``), or a bare list of tools. Each
tool's place in the file is kept (``/result/tools/3``) so findings can be mapped back to lines.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..protocol import Revision
from ..schema.jsonio import JSONInputError, load_json
from ..schema.limits import Limits
from .client import EXIT_CANNOT_START, ClientError, failure_text, open_client

if TYPE_CHECKING:
    import httpx2

MAX_FILE_SIZE = Limits().max_instance_size


class ToolSourceError(ValueError):
    """Input that holds no tool list; the message never quotes its contents.

    ``starting`` and ``stderr`` as :class:`~.client.ClientError`'s, for a live server.
    """

    def __init__(self, message: str, *, starting: bool = False, stderr: Sequence[str] = ()):
        super().__init__(message)
        self.starting = starting
        self.stderr = tuple(stderr)

    def report(self) -> str:
        """The message for a person: one line, and the server's stderr tail below it."""
        return failure_text(str(self), self.stderr)

    @property
    def exit_status(self) -> int:
        """127 for a server that cannot be started, else 2 (one that refused the credentials
        included): ``docs/cli.md``'s scheme."""
        return EXIT_CANNOT_START if self.starting else 2


@dataclass(frozen=True)
class ToolSource:
    """A server's tools, with what is known of where they came from.

    ``kind`` is ``file``, ``command`` or ``url``; ``text`` and ``prefixes`` (each tool's
    JSON Pointer in the file) exist for files only; ``revision`` and ``server_info`` for live
    servers only. ``prompts`` are the server's prompts when they were asked for and are known
    (an empty list from a live server without the prompts capability), else None.
    """

    kind: str
    name: str
    tools: list[Any]
    prefixes: list[str] = field(default_factory=list)
    text: str | None = None
    revision: Revision | None = None
    server_info: Mapping[str, Any] | None = None
    prompts: list[Any] | None = None


def tools_from_document(document: Any) -> tuple[list[Any], str]:
    """The tools a document holds and the pointer of the array holding them.

    Raises :class:`ToolSourceError` for anything that is not one of the three shapes.
    """
    if isinstance(document, list):
        return document, ""
    if not isinstance(document, dict):
        raise ToolSourceError("expected a tools/list result, a JSON-RPC response or a list")
    base = ""
    if "jsonrpc" in document:
        if "error" in document:
            raise ToolSourceError("the JSON-RPC response is an error, not a tools/list result")
        document, base = document.get("result"), "/result"
    if not isinstance(document, dict) or not isinstance(document.get("tools"), list):
        raise ToolSourceError('expected a "tools" array (a tools/list result)')
    return document["tools"], base + "/tools"


def load_file(path: str, *, prompts: bool = False) -> ToolSource:
    """Read a file (``-``: standard input) of tools (and with ``prompts``, its ``"prompts"``
    array, if it has one); raises :class:`ToolSourceError`."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as error:
        raise ToolSourceError(f"cannot read: {error.strerror}") from None
    try:
        document = load_json(data, max_size=MAX_FILE_SIZE)
    except JSONInputError as error:
        raise ToolSourceError(f"{error.message} [{error.code}]") from None
    tools, base = tools_from_document(document)
    text = data.decode("utf-8")
    return ToolSource(
        kind="file",
        name=path,
        tools=tools,
        prefixes=[f"{base}/{index}" for index in range(len(tools))],
        text=text,
        prompts=_prompts_of(document) if prompts else None,
    )


def _prompts_of(document: Any) -> list[Any] | None:
    """The ``"prompts"`` array beside the tools (a result's, or a response's result's); None
    when the file has none: it says nothing of the server's prompts."""
    holder = document.get("result", document) if isinstance(document, dict) else None
    found = holder.get("prompts") if isinstance(holder, dict) else None
    if found is not None and not isinstance(found, list):
        raise ToolSourceError('"prompts" must be an array (a prompts/list result\'s)')
    return found


def server_label(command: Sequence[str] | None, url: str | None) -> str:
    """How reports name a live server: the program without its arguments, the URL without
    credentials, query or fragment. Command lines and URLs carry tokens often enough, and
    reports end up in CI logs and uploaded artifacts."""
    if command:
        rest = len(command) - 1
        return command[0] + (f" (and {rest} argument{'s' * (rest != 1)})" if rest else "")
    parts = urlsplit(url or "")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        port = ""
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def load_live(
    command: Sequence[str] | None = None,
    url: str | None = None,
    *,
    revision: Revision | None = None,
    timeout: float = 30.0,
    prompts: bool = False,
    auth: httpx2.Auth | None = None,
) -> ToolSource:
    """List a live server's tools (and with ``prompts``, its prompts): the stdio server
    ``command``, or streamable HTTP ``url`` (with the credentials ``auth`` gives).

    ``revision`` is offered to the server (by default the client's usual offer; the
    revision the server answers with is the source's). Raises
    :class:`ToolSourceError` when the server cannot be started, reached or listed.
    """
    try:
        return asyncio.run(_list_live(command, url, revision, timeout, prompts, auth))
    except ClientError as error:
        raise ToolSourceError(str(error), starting=error.starting, stderr=error.stderr) from None


async def _list_live(
    command: Sequence[str] | None,
    url: str | None,
    revision: Revision | None,
    timeout: float,
    prompts: bool,
    auth: httpx2.Auth | None,
) -> ToolSource:
    async with open_client(command, url, revision=revision, timeout=timeout, auth=auth) as client:
        tools = await client.list_tools()
        listed: list[Any] | None = None
        if prompts:
            # A server without the capability has no prompts to list (and may not answer).
            has = "prompts" in client.capabilities
            listed = list(await client.list_prompts()) if has else []
        return ToolSource(
            prompts=listed,
            kind="command" if command else "url",
            name=server_label(command, url),
            tools=list(tools),
            revision=client.revision,
            server_info=client.server_info,
        )


def read_tools(
    target: str | None,
    command: Sequence[str] | None = None,
    url: str | None = None,
    *,
    revision: Revision | None = None,
    timeout: float = 30.0,
    prompts: bool = False,
    auth: httpx2.Auth | None = None,
) -> ToolSource:
    """The tools of the file ``target`` (``-``: standard input), else of the live server
    ``command`` or ``url`` (with the credentials ``auth`` gives): what every command that
    judges or pins tools reads; with ``prompts``, the prompts too. Raises
    :class:`ToolSourceError` naming which input failed, a server that cannot be started or
    answers too late included."""
    try:
        if target is not None:
            return load_file(target, prompts=prompts)
        return load_live(
            command or None, url, revision=revision, timeout=timeout, prompts=prompts, auth=auth
        )
    except ToolSourceError as error:
        raise ToolSourceError(
            f"{target or 'server'}: {error}", starting=error.starting, stderr=error.stderr
        ) from None
    except (OSError, TimeoutError) as error:
        raise ToolSourceError(f"cannot list the server's tools: {error}") from None

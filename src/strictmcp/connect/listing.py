"""A live server's tools, listed through the MCP client, in the shape a tools file is read
into (:class:`strictmcp.lint.documents.ToolSource`): for every command that reads a server's
tools (``lint``, ``policy``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from ..lint.documents import LintInputError, ToolSource
from ..protocol import Revision
from .client import ClientError, open_client


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
) -> ToolSource:
    """List a live server's tools: the stdio server ``command``, or streamable HTTP ``url``.

    ``revision`` is offered to the server (by default the client's usual offer, and the
    revision the server answers with is the one linted against). Raises
    :class:`LintInputError` when the server cannot be started, reached or listed.
    """
    try:
        return asyncio.run(_list_live(command, url, revision, timeout))
    except ClientError as error:
        raise LintInputError(str(error)) from None


async def _list_live(
    command: Sequence[str] | None, url: str | None, revision: Revision | None, timeout: float
) -> ToolSource:
    async with open_client(command, url, revision=revision, timeout=timeout) as client:
        tools = await client.list_tools()
        return ToolSource(
            kind="command" if command else "url",
            name=server_label(command, url),
            tools=list(tools),
            revision=client.revision,
            server_info=client.server_info,
        )

"""Tool results checked by strictmcp in the MCP Python SDK's client (``mcp`` 2.3).

:class:`StrictClientSession` is an ``mcp.ClientSession`` whose tool results are checked with
strictmcp's engine instead of the SDK's python-jsonschema check, against the ``outputSchema``
each tool was listed with under the negotiated revision. A result that breaks it raises
:class:`ToolResultError`, which names pointers and rule codes and never a value. The SDK's own
check is replaced, not kept alongside, for two reasons:

- its error text repeats the offending value (``'bad' is not of type 'integer'``);
- ``notifications/tools/list_changed`` does not refresh the schemas it checks against, so
  after a tool's ``outputSchema`` changes, new-shaped results are refused and old-shaped ones
  accepted until the application happens to list the tools again.

The session keeps a :class:`~strictmcp.protocol.ToolRegistry` built from its own ``tools/list``
results, every page of them. Before checking a result it lists again when it has no complete
listing, when the server said its tools changed, or when the tool is not in it. So nothing is
lost when ``mcp.Client`` serves a cached listing without going through the session.

On 2026-07-28 connections change notifications arrive only on a ``subscriptions/listen``
stream (``mcp.client.subscriptions.listen(session, tools_list_changed=True)`` or
``Client.listen``); the SDK hands its events to the session's message handler as well, which
is where the session notices them.

Ways in: :func:`open_stdio_session` and :func:`open_http_session` (or :func:`open_session` for
any transport) yield a session past its handshake; :class:`StrictClient` is ``mcp.Client``
with a strict session.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO, cast

import anyio
import anyio.lowlevel
import httpx2
import mcp_types as types
from pydantic import BaseModel

from ..connect.paging import MAX_PAGES, follow_pages
from ..extras import needs
from ..protocol import Revision, Rule, ToolRegistry, Violation, check_result, errors
from ..schema import Limits, quote_name

with needs("mcp"):
    from mcp import Client, ClientSession, StdioServerParameters
    from mcp.client import IncomingMessage, Transport
    from mcp.client.session import MessageHandlerFnT
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

logger = logging.getLogger(__name__)

MAX_TOOL_PAGES = MAX_PAGES
"""Pages of one ``tools/list`` listing followed before giving up; bounds a server whose cursors
never end. Tools on later pages are then unknown, and their results go unchecked (logged)."""

Handshake = Literal["initialize", "discover"]
"""``initialize`` negotiates a handshake revision (up to 2025-11-25); ``discover`` speaks
2026-07-28 and fails on servers that do not."""


class ToolResultError(RuntimeError):
    """A tool result strictmcp refused.

    ``violations`` say where (a JSON Pointer into the result) and which rule, and so does the
    message; neither ever contains a value from the result. A ``RuntimeError``, as the SDK's
    own output check raises, so code written to catch that keeps working.
    """

    def __init__(self, tool: str, violations: Sequence[Violation]) -> None:
        self.tool = tool
        self.violations = tuple(violations)
        lines = [f"Result of tool {quote_name(tool)} refused:"]
        for violation in self.violations:
            lines.append(f"- {violation}")
            lines += [
                f"  - {violation.pointer}{issue.instance_path}: {issue.message} "
                f"[{issue.code.value}]"
                for issue in violation.issues
            ]
        super().__init__("\n".join(lines))


class StrictClientSession(ClientSession):
    """A ``ClientSession`` whose tool results are checked by strictmcp.

    Takes ``ClientSession``'s arguments (``message_handler`` by keyword), plus ``limits`` for
    the engine (its defaults refuse results larger than about 4 MiB of JSON, for one).
    ``message_handler`` still receives every message; the session looks at
    ``notifications/tools/list_changed`` first.
    """

    def __init__(
        self,
        *args: Any,
        message_handler: MessageHandlerFnT | None = None,
        limits: Limits | None = None,
        **kwargs: Any,
    ) -> None:
        self._start_strict(message_handler, limits)
        # Through kwargs: a message_handler also given positionally then fails loudly.
        kwargs["message_handler"] = self._handle_message
        super().__init__(*args, **kwargs)

    def _start_strict(self, user_handler: MessageHandlerFnT | None, limits: Limits | None) -> None:
        self._user_handler = user_handler
        self._limits = limits
        self._registry: ToolRegistry | None = None
        self._refresh_lock = anyio.Lock()

    async def _handle_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification) and self._registry is not None:
            self._registry.mark_stale()
        if self._user_handler is not None:
            await self._user_handler(message)
        else:
            await anyio.lowlevel.checkpoint()  # what ClientSession's default handler does

    @property
    def tools(self) -> ToolRegistry | None:
        """The listing results are checked against as it stands (None before any listing)."""
        return self._registry

    async def tool_registry(self, name: str | None = None) -> ToolRegistry:
        """The listing results are checked against, brought up to date first.

        Every page of ``tools/list`` is fetched again when there is no complete listing for
        the negotiated revision, when the server said its tools changed since, or when
        ``name`` is given and not in the listing.
        """
        async with self._refresh_lock:
            registry = self._registry
            if (
                registry is None
                or not registry.listed
                or registry.stale
                or registry.revision is not _revision_of(self)
                or (name is not None and name not in registry)
            ):
                await _list_every_page(self)  # list_tools adds each page to the registry
                registry = self._listing_registry()
                registry.finish_listing()  # swaps in what there is when the page cap cut it short
        return registry

    async def list_tools(
        self, *, params: types.PaginatedRequestParams | None = None
    ) -> types.ListToolsResult:
        """Send ``tools/list``; the result also updates the listing results are checked against."""
        result = await super().list_tools(params=params)
        registry = self._listing_registry()
        page = _wire(result)
        if params is None or params.cursor is None:
            found = registry.update(page)
        elif registry.listing:
            found = registry.add_page(page)
        else:
            # A later page of a listing that was superseded meanwhile (tool_registry finished a
            # newer one) or that this session never began: starting a listing from it would
            # swap in only the tools of its last pages.
            return result
        _log("tools/list", found)
        return result

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        """Check ``result`` of tool ``name`` with strictmcp, in place of the SDK's check.

        ``call_tool`` runs this for every result that is not ``isError``. A tool the server
        does not list is logged and let through, as the SDK does.

        Raises:
            ToolResultError: ``structuredContent`` is missing, has the wrong type for the
                revision, or does not match the tool's ``outputSchema``; or that schema was
                refused when the tool was listed, so the result cannot be checked.
        """
        registry = await self.tool_registry(name)
        found = _result_violations(registry, name, _wire(result))
        refused = errors(found)
        if refused:
            raise ToolResultError(name, refused)
        _log(f"result of tool {quote_name(name)}", found)

    def _listing_registry(self) -> ToolRegistry:
        revision = _revision_of(self)
        if self._registry is None or self._registry.revision is not revision:
            self._registry = ToolRegistry(revision, limits=self._limits)
        return self._registry


@dataclass
class StrictClient(Client):
    """``mcp.Client`` with a :class:`StrictClientSession` (``limits`` goes to it).

    mcp 2.3.0 has no public way to choose the session class ``Client`` uses, so this relies on
    two private details, both confined to :meth:`_build_session`: ``Client._build_session``
    returns the session before it is entered, and ``ClientSession`` keeps its message handler
    in ``_message_handler``. The session is made strict in place, so everything ``Client``
    configured (negotiation, response cache, extensions, callbacks) stays exactly as built.
    If a later SDK changes either detail, the tests of this class fail.
    """

    limits: Limits | None = field(default=None, kw_only=True)

    async def _build_session(self, exit_stack: AsyncExitStack) -> ClientSession:
        session = await super()._build_session(exit_stack)
        # Switching the class rather than building a second session: a rebuild would have to
        # read every callback and the dispatcher back out of private attributes.
        session.__class__ = StrictClientSession
        strict = cast(StrictClientSession, session)
        strict._start_strict(strict._message_handler, self.limits)
        strict._message_handler = strict._handle_message
        return strict

    @property
    def session(self) -> StrictClientSession:
        """The connected :class:`StrictClientSession`."""
        return cast(StrictClientSession, super().session)


async def fetch_tool_registry(
    session: ClientSession, *, limits: Limits | None = None
) -> ToolRegistry:
    """Every page of ``session``'s tools, listed now, in a new registry for its revision."""
    registry = ToolRegistry(_revision_of(session), limits=limits)

    def add(page: types.ListToolsResult) -> None:
        _log("tools/list", registry.add_page(_wire(page)))

    await _list_every_page(session, add)
    registry.finish_listing()
    return registry


@asynccontextmanager
async def open_session(
    transport: Transport, *, handshake: Handshake = "initialize", **session_options: Any
) -> AsyncIterator[StrictClientSession]:
    """A :class:`StrictClientSession` over ``transport``, past its handshake.

    ``transport`` is any ``mcp.client.Transport``, such as ``stdio_client(...)`` or
    ``streamable_http_client(...)``. ``session_options`` are the session's keyword arguments
    (callbacks, ``client_info``, ``limits``...).
    """
    async with (
        transport as (read, write),
        StrictClientSession(read, write, **session_options) as session,
    ):
        if handshake == "initialize":
            await session.initialize()
        else:
            await session.discover()
        yield session


def open_stdio_session(
    server: StdioServerParameters,
    *,
    handshake: Handshake = "initialize",
    errlog: TextIO = sys.stderr,
    **session_options: Any,
) -> AbstractAsyncContextManager[StrictClientSession]:
    """Start ``server`` and yield a :class:`StrictClientSession` over its stdio, past the
    handshake (see :func:`open_session`). Use it as ``async with``."""
    return open_session(stdio_client(server, errlog), handshake=handshake, **session_options)


def open_http_session(
    url: str,
    *,
    handshake: Handshake = "initialize",
    http_client: httpx2.AsyncClient | None = None,
    terminate_on_close: bool = True,
    **session_options: Any,
) -> AbstractAsyncContextManager[StrictClientSession]:
    """Connect to a streamable HTTP endpoint and yield a :class:`StrictClientSession`, past the
    handshake (see :func:`open_session`). Use it as ``async with``."""
    transport = streamable_http_client(
        url, http_client=http_client, terminate_on_close=terminate_on_close
    )
    return open_session(transport, handshake=handshake, **session_options)


async def _list_every_page(
    session: ClientSession, on_page: Callable[[types.ListToolsResult], None] | None = None
) -> None:
    """One listing through ``session.list_tools``, its pages first to last, each given to
    ``on_page``; bounded by :data:`MAX_TOOL_PAGES` and refusing a cursor given twice."""

    async def fetch(cursor: str | None) -> object:
        params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        if on_page is not None:
            on_page(page)
        return page.next_cursor

    cut = await follow_pages(fetch, max_pages=MAX_TOOL_PAGES)
    if cut is not None:
        logger.warning("tools/list: stopped short (%s); later tools are unknown", cut)


def _result_violations(
    registry: ToolRegistry, name: str, result: dict[str, Any]
) -> list[Violation]:
    found = check_result(registry, name, result)
    tool = registry.get(name)
    if tool is None or tool.output_validator is not None or result.get("isError") is True:
        return found
    # A tool whose outputSchema was refused at listing has no validator, so check_result lets
    # its results through; a strict client cannot accept what it cannot check.
    quoted = quote_name(name)
    return found + [
        Violation(
            v.rule,
            f"the outputSchema of tool {quoted} was refused when it was listed, so its "
            f"result cannot be checked: {v.message}",
            "/structuredContent",
        )
        for v in errors(tool.violations)
        if v.rule is Rule.TOOL_OUTPUT_SCHEMA_INVALID
    ]


def _revision_of(session: ClientSession) -> Revision:
    # Before initialize() or discover() the SDK speaks 2025-11-25, and so does the registry.
    return Revision.parse(session.protocol_version or Revision.V2025_11_25.value)


def _wire(model: BaseModel) -> dict[str, Any]:
    # exclude_unset rather than exclude_none: an explicit null on the wire stays one, so
    # ``"structuredContent": null`` is checked as a value, not taken for an absent field.
    return model.model_dump(by_alias=True, mode="json", exclude_unset=True)


def _log(what: str, violations: Sequence[Violation]) -> None:
    # Only what was let through gets here: listing problems and result warnings.
    for violation in violations:
        logger.warning("%s: %s", what, violation)

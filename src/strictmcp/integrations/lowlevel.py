"""strictmcp for the official MCP SDK's low-level server (``mcp.server.lowlevel.Server``, 2.x).

::

    server = Server("files", on_list_tools=list_tools, on_call_tool=call_tool)
    protect(server, policy=Policy.load("policy.toml"), strict=True)

Two hooks, each where the SDK (2.3) shapes what it produces:

- ``tools/call`` is checked at the handler tier: the registered handler is wrapped with
  ``mcp.server.extension.compose_tool_call_handler``, so the call's params are already
  validated by the SDK and every result strictmcp makes goes through the SDK's per-revision
  serializer like a handler's own (``resultType`` only from 2026-07-28, the ``serverInfo``
  ``_meta`` stamp there). A ``Server.middleware`` short-circuit is sent as it is, unshaped.
- ``Server.middleware`` (the SDK's context-tier hook, which it marks provisional) rewrites three
  results it receives already serialized: ``tools/list`` gets the validate tool, ``initialize``
  and ``server/discover`` get ``capabilities.experimental.toolValidation``. The capability is
  added there because ``server/discover`` never reads ``create_initialization_options``.

A server that adds tasks itself (the SDK has none built in; an extension's
``add_request_handler("tasks/get", ...)``) has each task a call is answered with remembered,
and the task's final result, inlined in a ``tasks/get`` result (2026-07-28) or answering
``tasks/result`` (2025-11-25), judged by the middleware as the direct result would be
(:meth:`ServerCore.task_result`). A ``notifications/tasks/status`` the server sends is not
seen: the SDK's middleware wraps requests it receives, not what the server sends.

Calls are checked against what the server's own ``tools/list`` handler returns at the time of
the call, run with the call's context, every page, so a server that changes its tools or lists
them per caller is checked against the listing that caller would get. The listing is not
re-checked while it reads the same.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import mcp_types as types
from mcp_types.jsonrpc import INTERNAL_ERROR
from pydantic import BaseModel
from typing_extensions import Unpack

from ..connect.paging import follow_pages
from ..extras import needs
from ..protocol import task_id_of
from ..protocol.tasks import created_task
from ..protocol.wire import for_caller_alone
from ._server_core import ServerCore, ServerOptions

with needs("mcp"):
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.extension import Extension, compose_tool_call_handler
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

__all__ = ["protect"]

ToolSource = Callable[[ServerRequestContext[Any, Any]], Awaitable[list[dict[str, Any]]]]
"""Every tool the server lists, as ``tools/list`` dicts, for the request in hand."""

ServerT = TypeVar("ServerT", bound=Server[Any])

_log = logging.getLogger(__name__)

# A tools/list handler that never stops paginating must not hang every call.
_PAGE_LIMIT = 1000
# The results whose text hygiene looks at, besides a tool's (cleaned where it is called).
_ANSWERS_CLEANED = frozenset({"resources/read", "prompts/get", "completion/complete"})


def protect(server: ServerT, **options: Unpack[ServerOptions]) -> ServerT:
    """Validate every tool call of ``server``; returns ``server``, changed in place.

    Call it once, after the ``tools/list`` and ``tools/call`` handlers are registered (a
    handler registered later replaces the checked one). ``policy`` guards arguments,
    ``deep`` adds the checks registered with ``on_calls=True``, ``strict`` refuses arguments
    a schema does not declare, ``mode="audit"`` logs every finding on ``strictmcp.audit``
    and refuses nothing. ``validate_tool`` adds the Validation Protocol's dry-run tool,
    named ``validate_name`` unless the server has a tool by that name.
    """
    calls = server.get_request_handler("tools/call")
    if server.get_request_handler("tools/list") is None or calls is None:
        raise ValueError("the server has no tools/list or tools/call handler to protect")
    if any(isinstance(middleware, ListingMiddleware) for middleware in server.middleware):
        raise ValueError("the server is protected by strictmcp already")
    core = ServerCore(**options)
    source = _handler_source(server)
    checked = compose_tool_call_handler([ToolCallInterceptor(core, source)], calls.handler)
    server.add_request_handler("tools/call", calls.params_type, checked)
    server.middleware.append(ListingMiddleware(core, source))
    return server


class ToolCallInterceptor(Extension):
    """Checks each ``tools/call`` at the SDK's handler tier; see :class:`ServerCore`.

    ``source`` may be given later (``MCPServer`` takes its extensions before the server they
    will read the tools of exists); a call before then is refused with JSON-RPC ``-32603``,
    never run unchecked.
    """

    identifier = "dev.strictmcp/validation"

    def __init__(self, core: ServerCore, source: ToolSource | None) -> None:
        self.core = core
        self.source = source

    async def intercept_tool_call(
        self,
        params: types.CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        """Answer the call: checked and run, refused, or the validate tool's answer."""
        if self.source is None:
            _log.error("a tool call arrived before StrictExtension.install(); it was refused")
            raise MCPError(code=INTERNAL_ERROR, message="strictmcp is not installed on this server")
        listing = self.core.listing(ctx.protocol_version, await self.source(ctx))
        return await self.core.call(
            listing,
            params.name,
            params.arguments,
            lambda: call_next(ctx),
            _tool_output,
            created=lambda result: created_task(_wire(result)),
            request_id=ctx.request_id,
        )


class ListingMiddleware:
    """Shows each caller only its tools in ``tools/list``, less those the listing stage
    withholds, and adds the validate tool there, and its capability to the handshake results;
    judges the final results of tasks (``tasks/get``, ``tasks/result``); guards the other
    requests the policy guards, and cleans the results a client may show a model."""

    def __init__(self, core: ServerCore, source: ToolSource) -> None:
        self.core = core
        self.source = source

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Pass the request on; rewrite the result of the three methods concerned."""
        if ctx.method in ("tasks/get", "tasks/result"):
            return await self._task(ctx, call_next)
        if ctx.method in _ANSWERS_CLEANED:
            self.core.check_request(ctx.method, ctx.params)
            answer = await call_next(ctx)
            cleaned = self.core.clean_answer(ctx.method, _wire(answer))
            return answer if cleaned is None else cleaned
        self.core.check_request(ctx.method, ctx.params)
        handshake = ("initialize", "server/discover")
        if ctx.method != "tools/list" and not (self.core.validate_tool and ctx.method in handshake):
            return await call_next(ctx)
        result = _wire(await call_next(ctx))
        # initialize's result says which revision was just negotiated; ctx cannot know yet.
        version = result.get("protocolVersion", ctx.protocol_version)
        listing = self.core.listing(str(version), await self.source(ctx))
        if ctx.method == "tools/list":
            tools = [
                tool
                for tool in result.get("tools", [])
                if listing.shown(tool.get("name")) and self.core.shows(tool.get("name", ""))
            ]
            # Appended to the last page only, so a paginated listing has it once.
            validate = self.core.advertised(listing)
            if result.get("nextCursor") is None and validate is not None:
                tools.append(validate)
            result["tools"] = tools
            if self.core.enforcer.lists_per_caller:
                return for_caller_alone(result, listing.registry.revision)
            return result
        capabilities = dict(result.get("capabilities") or {})
        experimental = dict(capabilities.get("experimental") or {})
        experimental.update(self.core.capability(listing) or {})
        capabilities["experimental"] = experimental
        result["capabilities"] = capabilities
        return result

    async def _task(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """A task's final result, checked as the direct result of its call would be."""
        result = await call_next(ctx)
        body = _wire(result)
        listing = self.core.listing(ctx.protocol_version, await self.source(ctx))
        changed = self.core.task_result(listing, ctx.method, task_id_of(ctx.params), body)
        return result if changed is None else changed


def _handler_source(server: Server[Any]) -> ToolSource:
    async def source(ctx: ServerRequestContext[Any, Any]) -> list[dict[str, Any]]:
        entry = server.get_request_handler("tools/list")
        tools: list[dict[str, Any]] = []
        if entry is None:
            return tools
        handler = entry.handler

        async def fetch(cursor: str | None) -> object:
            # Called directly, not through the runner: an initialize in progress has not
            # opened the runner's gate yet, and the capability needs the tool names then.
            page_ctx = replace(
                ctx, method="tools/list", params=None if cursor is None else {"cursor": cursor}
            )
            page = _wire(await handler(page_ctx, types.PaginatedRequestParams(cursor=cursor)))
            tools.extend(page.get("tools", []))
            return page.get("nextCursor")

        cut = await follow_pages(fetch, max_pages=_PAGE_LIMIT)
        if cut is not None:
            _log.warning("tools/list paging stopped short (%s): later tools are unknown", cut)
        return tools

    return source


def _wire(result: HandlerResult) -> dict[str, Any]:
    """A handler or middleware result as the dict the SDK would send."""
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dict(result or {})


def _tool_output(result: HandlerResult) -> Mapping[str, Any] | None:
    """A ``tools/call`` result to check against the ``outputSchema``; None when it is not one.

    An ``input_required`` round (or an extension's claimed result shape) is not the tool's
    output yet.
    """
    if isinstance(result, BaseModel) and not isinstance(result, types.CallToolResult):
        return None
    dumped = _wire(result)
    return dumped if dumped.get("resultType", "complete") == "complete" else None

"""strictmcp for FastMCP 4.1 servers: one middleware.

::

    mcp = FastMCP("files", middleware=[StrictMiddleware(policy=Policy.load("policy.toml"))])

That is all a server needs: the middleware lists and answers the validate tool itself, and
advertises ``capabilities.experimental.toolValidation`` from its ``on_initialize`` and
``on_discover`` hooks, so there is nothing to pass to ``experimental_capabilities``. Put it
first in ``middleware=`` unless some middleware must see calls before they are checked.

- ``on_call_tool`` checks each call before anything inside it runs: FastMCP's own argument
  validation (pydantic, lax unless ``strict_input_validation``, with error texts that quote
  the rejected value), its extensions' interceptors and the tool. An unknown tool is JSON-RPC
  ``-32602`` here, where FastMCP alone would answer with an ``isError`` result.
- Calls are checked against the tools as this middleware's ``on_list_tools`` receives them
  (after the middleware inside it, such as FastMCP's ``DereferenceRefsMiddleware``, and
  deduplicated by version as FastMCP's ``tools/list`` does), read again at each call by
  running the ``on_list_tools`` hooks of the middleware inside this one: clients that never
  list (2026-07-28) are checked too, and middleware outside sees no extra listing.
- With ``[[access]]`` rules in the policy, ``on_list_tools`` shows each caller only the
  tools it may call, as the proxy does.
- The validate tool is added to the listing and answered in ``on_call_tool``, so it is
  callable without being registered; a server tool named ``validate`` keeps its name and the
  validate tool takes another, which the capability names.

- Tasks (the ``fastmcp-tasks`` package's ``TasksExtension``, SEP-2663): a call its
  interceptor, inside this middleware, answers with a ``CreateTaskResult`` is checked like
  any other before the task starts; the task is remembered, and its final result, which the
  extension's ``tasks/get`` handler inlines and which reaches this middleware's
  ``on_request`` (FastMCP runs the middleware's generic hooks around an extension's
  methods), is checked against the tool's ``outputSchema`` and replaced by the ``isError``
  result exactly as a direct result is. The task's body itself runs in a Docket worker,
  outside every middleware, so this is the one place its result can be judged.

Limits: tasks are remembered in this process (``max_tasks`` at most): a ``tasks/get``
answered by another replica, or after a restart, for a task created elsewhere is refused
in ``enforce`` mode (its result cannot be checked). A call that asks for a specific tool
version (FastMCP's ``_meta`` version selection) is checked against the listed, highest,
version; FastMCP Apps' hashed tool
names, which are never listed, are unknown tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types
from pydantic import BaseModel
from typing_extensions import Unpack

from ..extras import needs
from ..protocol import LATEST, task_id_of
from ..protocol.tasks import created_task
from ._server_core import Listing, ServerCore, ServerOptions

with needs("fastmcp"):
    from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
    from fastmcp.tools.base import InputRequiredToolResult, Tool, ToolResult
    from fastmcp.utilities.versions import dedupe_with_versions

__all__ = ["StrictMiddleware"]


class StrictMiddleware(Middleware):
    """Validates every tool call of the FastMCP server it is added to.

    The options are those of :func:`strictmcp.integrations.lowlevel.protect`. FastMCP's
    advertised schemas already close the arguments object (``additionalProperties: false``),
    so ``strict`` changes nothing for its function tools, only for tools whose schemas are
    written by hand.
    """

    def __init__(self, **options: Unpack[ServerOptions]) -> None:
        self.core = ServerCore(**options)

    async def on_list_tools(
        self,
        context: MiddlewareContext[types.ListToolsRequest],
        call_next: CallNext[types.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        """The tools inside that the caller may call, but those the listing stage withholds,
        and the validate tool."""
        tools = await call_next(context)
        listing = self.core.listing(_version(context), _wire(tools))
        shown = [t for t in tools if listing.shown(t.name) and self.core.shows(t.name)]
        definition = self.core.advertised(listing)
        if definition is None:
            return shown
        validate = Tool(
            name=definition["name"],
            description=definition["description"],
            parameters=definition["inputSchema"],
            output_schema=definition.get("outputSchema"),
        )
        return [*shown, validate]

    async def on_call_tool(
        self,
        context: MiddlewareContext[types.CallToolRequestParams],
        call_next: CallNext[types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """The call checked and run, refused, or answered by the validate tool; a task
        an extension answers it with is remembered (:meth:`on_request` checks its result)."""
        listing = await self._listing(context)
        message = context.message
        result = await self.core.call(
            listing,
            message.name,
            message.arguments,
            lambda: call_next(context),
            _tool_output,
            created=_created_task,
            request_id=_request_id(context),
        )
        if not isinstance(result, dict):
            # The tool's ToolResult, or an extension's own result (a CreateTaskResult).
            return result
        return ToolResult.from_mcp_result(types.CallToolResult.model_validate(result))

    async def on_request(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Any],
    ) -> Any:
        """A task's final result, inlined in ``tasks/get`` (2026-07-28), checked as the
        direct result of its call would be; every other request passed on untouched."""
        result = await call_next(context)
        if context.method != "tasks/get":
            return result
        body = _dumped(result)
        if body is None:
            return result
        # FastMCP hands these generic hooks the request's raw params.
        task_id = task_id_of(_dumped(context.message))
        listing = await self._listing(context)
        changed = self.core.task_result(listing, "tasks/get", task_id, body)
        return result if changed is None else changed

    async def on_initialize(
        self,
        context: MiddlewareContext[types.InitializeRequest],
        call_next: CallNext[types.InitializeRequest, types.InitializeResult | None],
    ) -> types.InitializeResult | None:
        """The handshake's result, with the validate tool's capability."""
        result = await call_next(context)
        if result is None or not self.core.validate_tool:
            return result
        listing = await self._listing(context, result.protocol_version)
        return result.model_copy(update={"capabilities": self._advertise(result, listing)})

    async def on_discover(
        self,
        context: MiddlewareContext[types.DiscoverRequest],
        call_next: CallNext[types.DiscoverRequest, types.DiscoverResult | dict[str, Any]],
    ) -> types.DiscoverResult | dict[str, Any]:
        """The discovery result, with the validate tool's capability."""
        result = await call_next(context)
        # A dict is an extension's own result shape, which has no capabilities to extend.
        if not isinstance(result, types.DiscoverResult) or not self.core.validate_tool:
            return result
        listing = await self._listing(context)
        return result.model_copy(update={"capabilities": self._advertise(result, listing)})

    def _advertise(
        self, result: types.InitializeResult | types.DiscoverResult, listing: Listing
    ) -> types.ServerCapabilities:
        capabilities = result.capabilities
        experimental = {
            **(capabilities.experimental or {}),
            **(self.core.capability(listing) or {}),
        }
        return capabilities.model_copy(update={"experimental": experimental})

    async def _listing(
        self, context: MiddlewareContext[Any], version: str | None = None
    ) -> Listing:
        """The listing this middleware's ``on_list_tools`` would receive now."""
        fastmcp_context = context.fastmcp_context
        if fastmcp_context is None:
            raise RuntimeError("StrictMiddleware runs only inside a FastMCP server")
        server = fastmcp_context.fastmcp

        async def innermost(context: MiddlewareContext[types.ListToolsRequest]) -> Sequence[Tool]:
            return await server.list_tools(run_middleware=False)

        call: CallNext[types.ListToolsRequest, Sequence[Tool]] = innermost
        chain = server.middleware
        inner = chain[chain.index(self) + 1 :] if self in chain else []
        for middleware in reversed(inner):
            call = _list_hook(middleware, call)
        request = MiddlewareContext(
            message=types.ListToolsRequest(method="tools/list"),
            fastmcp_context=fastmcp_context,
            method="tools/list",
        )
        return self.core.listing(version or _version(context), _wire(await call(request)))


def _list_hook(
    middleware: Middleware, call_next: CallNext[types.ListToolsRequest, Sequence[Tool]]
) -> CallNext[types.ListToolsRequest, Sequence[Tool]]:
    async def call(context: MiddlewareContext[types.ListToolsRequest]) -> Sequence[Tool]:
        return await middleware.on_list_tools(context, call_next)

    return call


def _version(context: MiddlewareContext[Any]) -> str:
    fastmcp_context = context.fastmcp_context
    request = fastmcp_context.request_context if fastmcp_context is not None else None
    # No request: the server's methods called directly, by no client of any revision.
    return request.protocol_version if request is not None else LATEST.value


def _wire(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The tools as FastMCP's ``tools/list`` sends them: one per name, the highest version."""
    return [
        tool.to_mcp_tool(name=tool.name).model_dump(by_alias=True, mode="json", exclude_none=True)
        for tool in dedupe_with_versions(list(tools), lambda tool: tool.name)
    ]


def _dumped(value: object) -> dict[str, Any] | None:
    """A model or mapping as its wire dict; None for anything else."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dict(value) if isinstance(value, Mapping) else None


def _created_task(result: ToolResult) -> Mapping[str, Any] | None:
    """The task an extension answered the call with, instead of running the tool now."""
    if isinstance(result, ToolResult):
        return None
    dumped = _dumped(result)
    return created_task(dumped) if dumped is not None else None


def _tool_output(result: ToolResult) -> Mapping[str, Any] | None:
    """What the ``outputSchema`` check reads of a result; None for an ``input_required``
    round or an extension's own result shape (a task)."""
    if isinstance(result, InputRequiredToolResult) or not isinstance(result, ToolResult):
        return None
    output: dict[str, Any] = {"isError": result.is_error}
    if result.structured_content is not None:
        output["structuredContent"] = result.structured_content
    return output


def _request_id(context: MiddlewareContext[Any]) -> int | str | None:
    """The JSON-RPC id of the request being answered, when FastMCP gives one."""
    fastmcp = context.fastmcp_context
    try:
        request_id = fastmcp.request_id if fastmcp is not None else None
    except (RuntimeError, ValueError):  # outside a request (a test harness): none to name
        return None
    return request_id if isinstance(request_id, (int, str)) else None

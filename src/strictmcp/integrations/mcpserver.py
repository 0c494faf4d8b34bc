"""strictmcp for the official MCP SDK's high-level server (``mcp.server.mcpserver.MCPServer``).

::

    strict = StrictExtension(policy=Policy.load("policy.toml"), strict=True)
    app = MCPServer("files", extensions=[strict])

    @app.tool()
    def read_file(path: str) -> str: ...

    strict.install(app)

Both steps are needed. ``MCPServer`` takes its extensions only when it is built, and only an
extension's ``intercept_tool_call`` runs at the handler tier, before the tool's pydantic
model sees the arguments: that model runs in lax mode and drops arguments it does not know,
and the ``inputSchema`` MCPServer advertises has no ``additionalProperties: false``, so a
misspelt or injected argument vanishes silently. With ``strict=True`` it is refused instead,
without changing the advertised schema. :meth:`StrictExtension.install` then gives the
extension the server's tools to check against (``MCPServer.list_tools()``, read at each call)
and adds the middleware that lists the validate tool and advertises
``capabilities.experimental.toolValidation``; ``MCPServer`` has no other way to add an
experimental capability, and ``server/discover`` would not read one anyway.

Checking is as :mod:`strictmcp.integrations.lowlevel` describes: the same hooks, on the SDK
server underneath. MCPServer validates a tool's structured output with pydantic, also in lax
mode, and a tool that returns its own ``CallToolResult`` is sent as it is: strictmcp checks
that result against the advertised ``outputSchema`` as well.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import Unpack

from ..extras import needs
from ._server_core import ServerCore, ServerOptions
from .lowlevel import ListingMiddleware, ToolCallInterceptor, ToolSource

with needs("mcp"):
    from mcp.server.context import ServerRequestContext
    from mcp.server.mcpserver import MCPServer

__all__ = ["StrictExtension"]


class StrictExtension(ToolCallInterceptor):
    """Validates every tool call of an ``MCPServer``; pass it to ``extensions=``, then install.

    The options are those of :func:`strictmcp.integrations.lowlevel.protect`. Until
    :meth:`install` has run, every tool call is refused with JSON-RPC ``-32603`` rather than
    run unchecked.
    """

    def __init__(self, **options: Unpack[ServerOptions]) -> None:
        core = ServerCore(**options)
        super().__init__(core, source=None)
        self._applied = False

    def settings(self) -> dict[str, Any]:
        """No settings: MCPServer lists the extension under ``capabilities.extensions`` bare.

        The validate tool is advertised where clients of every revision look for it,
        ``capabilities.experimental``; ``extensions`` reaches 2026-07-28 clients only.
        """
        # MCPServer reads an extension's settings exactly when it applies the extension:
        # install() relies on that to refuse a server whose calls it would never see.
        self._applied = True
        return {}

    def install(self, app: MCPServer[Any]) -> MCPServer[Any]:
        """Check ``app``'s calls against its tools, advertise the validate tool; return ``app``."""
        if not self._applied:
            raise ValueError(
                "pass this StrictExtension to MCPServer(extensions=[...]) before installing "
                "it: only there does it see the server's tool calls"
            )
        if self.source is not None:
            raise ValueError("this StrictExtension is installed already")
        self.source = _app_source(app)
        app.middleware.append(ListingMiddleware(self.core, self.source))
        return app


def _app_source(app: MCPServer[Any]) -> ToolSource:
    async def source(ctx: ServerRequestContext[Any, Any]) -> list[dict[str, Any]]:
        # What MCPServer's own tools/list handler returns, unpaginated as it is.
        return [
            tool.model_dump(by_alias=True, mode="json", exclude_none=True)
            for tool in await app.list_tools()
        ]

    return source

"""strictmcp inside MCP servers and clients built with the official SDK (2.x) and FastMCP (4.x).

Servers, one module per framework, each importing only what it needs:

- :func:`strictmcp.integrations.lowlevel.protect` for ``mcp.server.lowlevel.Server``;
- :class:`strictmcp.integrations.mcpserver.StrictExtension` for ``MCPServer``;
- :class:`strictmcp.integrations.fastmcp.StrictMiddleware` for ``fastmcp.FastMCP``.

Each validates every ``tools/call`` against the server's own ``tools/list``, applies a
policy's guards and deep checks, checks results against their ``outputSchema``, and serves
the Validation Protocol's dry-run ``validate`` tool. Findings are logged on
:data:`AUDIT_LOGGER`.

Clients: :class:`StrictClientSession` (and :class:`StrictClient` for ``mcp.Client``) check tool
results with strictmcp's engine, refresh on ``notifications/tools/list_changed`` and raise
:class:`ToolResultError`; :func:`validate_call` asks a server's ``validate`` tool when it has
one and falls back to local checks when it does not, saying which answered.

Needs the ``mcp`` extra (``pip install 'strictmcp[mcp]'``; ``[fastmcp]`` for FastMCP).
"""

from ..enforce import AUDIT_LOGGER
from .client import (
    StrictClient,
    StrictClientSession,
    ToolResultError,
    fetch_tool_registry,
    open_http_session,
    open_session,
    open_stdio_session,
)
from .client_validate import ValidationAnswer, validate_call

__all__ = [
    "AUDIT_LOGGER",
    "StrictClient",
    "StrictClientSession",
    "ToolResultError",
    "ValidationAnswer",
    "fetch_tool_registry",
    "open_http_session",
    "open_session",
    "open_stdio_session",
    "validate_call",
]

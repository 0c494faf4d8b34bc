"""The validating stdio proxy: strictmcp in front of an MCP server written in any language.

``strictmcp proxy [OPTIONS] -- COMMAND [ARGS]...`` (see :mod:`.cli`). The decisions live in
:class:`ProxySession`, which knows nothing of pipes; :func:`run` is the stdio transport. This
package does not import the MCP SDK.
"""

from .audit import Action, Auditor
from .session import (
    TOO_MANY_IN_FLIGHT,
    UPSTREAM_CLOSED,
    UPSTREAM_INVALID,
    UPSTREAM_TIMEOUT,
    ProxySession,
    Routed,
)
from .stdio import run

__all__ = [
    "TOO_MANY_IN_FLIGHT",
    "UPSTREAM_CLOSED",
    "UPSTREAM_INVALID",
    "UPSTREAM_TIMEOUT",
    "Action",
    "Auditor",
    "ProxySession",
    "Routed",
    "run",
]

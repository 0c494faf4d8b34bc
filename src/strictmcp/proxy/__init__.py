"""The validating proxy: strictmcp in front of an MCP server written in any language.

``strictmcp proxy [OPTIONS] -- COMMAND [ARGS]...`` or ``--upstream URL``, over stdio or, with
``--listen``, streamable HTTP (see :mod:`.cli`). The decisions live in :class:`ProxySession`,
which knows nothing of pipes or HTTP; :func:`run` is the stdio transport in front of a spawned
server, :class:`Relay` joins a session to any :class:`Upstream`, :class:`HttpUpstream` is a
server reached over HTTP and :class:`App` the HTTP endpoint. This package does not import the
MCP SDK; the HTTP pieces are loaded only when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..enforce import Action, Auditor
from .relay import Relay
from .session import (
    TOO_MANY_IN_FLIGHT,
    UPSTREAM_CLOSED,
    UPSTREAM_INVALID,
    UPSTREAM_TIMEOUT,
    ProxySession,
    Routed,
)
from .stdio import ProcessUpstream, run, run_upstream
from .upstream import Upstream

if TYPE_CHECKING:
    from .http_server import App
    from .http_upstream import HttpUpstream

_LAZY = {"App": ".http_server", "HttpUpstream": ".http_upstream"}

__all__ = [
    "TOO_MANY_IN_FLIGHT",
    "UPSTREAM_CLOSED",
    "UPSTREAM_INVALID",
    "UPSTREAM_TIMEOUT",
    "Action",
    "App",
    "Auditor",
    "HttpUpstream",
    "ProcessUpstream",
    "ProxySession",
    "Relay",
    "Routed",
    "Upstream",
    "run",
    "run_upstream",
]


def __getattr__(name: str) -> Any:
    # The HTTP client and server take a while to import; the stdio proxy needs neither.
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

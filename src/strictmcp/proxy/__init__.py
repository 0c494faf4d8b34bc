"""The validating proxy: strictmcp in front of an MCP server written in any language.

``strictmcp proxy [OPTIONS] -- COMMAND [ARGS]...`` or ``--upstream URL`` (``--url URL``), over
stdio or, with ``--listen``, streamable HTTP (see :mod:`.cli`). The decisions live in
:class:`ProxySession`, which knows nothing of pipes or HTTP; :class:`Relay` joins a session to
any :class:`~strictmcp.connect.upstream.Upstream` (a spawned process or an HTTP server, both
from :mod:`strictmcp.connect`), whatever carries the client's side: :func:`run` is the stdio
transport in front of a spawned server, :func:`run_upstream` in front of any upstream, and
:class:`App` the HTTP endpoint, one relay per session. This package does not import the
MCP SDK; the HTTP server is loaded only when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..connect.upstream import UPSTREAM_CLOSED, UPSTREAM_INVALID
from ..enforce import Action, Auditor
from .relay import Relay
from .session import TOO_MANY_IN_FLIGHT, UPSTREAM_TIMEOUT, ProxySession, Routed
from .stdio import run, run_upstream

if TYPE_CHECKING:
    from .http_server import App

_LAZY = {"App": ".http_server"}

__all__ = [
    "TOO_MANY_IN_FLIGHT",
    "UPSTREAM_CLOSED",
    "UPSTREAM_INVALID",
    "UPSTREAM_TIMEOUT",
    "Action",
    "App",
    "Auditor",
    "ProxySession",
    "Relay",
    "Routed",
    "run",
    "run_upstream",
]


def __getattr__(name: str) -> Any:
    # The HTTP server takes a while to import; the stdio proxy does not need it.
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

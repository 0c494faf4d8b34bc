"""Names the MCP wire gives things, in one place: the ``_meta`` keys of the request envelope
and the protocol versions by what they mean to a transport.

From 2026-07-28 every request carries its protocol version and the client's capabilities in
``_meta`` (there is no handshake); a subscription's notifications name the
``subscriptions/listen`` request they belong to there too.
"""

from __future__ import annotations

from typing import Any

from .revisions import Revision

META_PREFIX = "io.modelcontextprotocol/"
"""The prefix of the protocol's own keys in ``_meta``: a request's envelope."""
META_PROTOCOL_VERSION = f"{META_PREFIX}protocolVersion"
"""The protocol version a request declares (2026-07-28)."""
META_CLIENT_CAPABILITIES = f"{META_PREFIX}clientCapabilities"
"""The capabilities a client declares with each request (2026-07-28)."""
META_CLIENT_INFO = f"{META_PREFIX}clientInfo"
"""The client's name and version, which a request may carry (2026-07-28)."""
META_SERVER_INFO = f"{META_PREFIX}serverInfo"
"""The server's name and version, which a result may carry (2026-07-28)."""
META_SUBSCRIPTION_ID = f"{META_PREFIX}subscriptionId"
"""The id of the ``subscriptions/listen`` request a notification belongs to (2026-07-28)."""

STATELESS_VERSIONS = frozenset(r.value for r in Revision if r.stateless)
"""The protocol versions without a handshake: every request stands alone."""
HANDSHAKE_VERSIONS = frozenset(r.value for r in Revision if not r.stateless)
"""The protocol versions that start a session with ``initialize``."""


CACHE_SCOPE = "cacheScope"
"""Who a cacheable result (2026-07-28) may be served to from a cache: ``"public"``, any
caller; ``"private"``, only callers of the same authorization context."""


def for_caller_alone(result: dict[str, Any], revision: Revision) -> dict[str, Any]:
    """``result``, a cacheable result shaped by who asked (a listing filtered per caller),
    marked ``private``: a cache must never serve it to another caller, whatever scope the
    server gave the whole. Unchanged in a revision without cache hints."""
    if not revision.has_cache_hints and CACHE_SCOPE not in result:
        return result
    return {**result, CACHE_SCOPE: "private"}


def declared_capabilities(params: Any) -> dict[str, Any] | None:
    """The client capabilities a request's params (decoded) declare in their ``_meta``."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    declared = meta.get(META_CLIENT_CAPABILITIES) if isinstance(meta, dict) else None
    return declared if isinstance(declared, dict) else None


def declared_version(message: Any) -> str | None:
    """The protocol version a request (a decoded object) declares in its ``_meta``."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None

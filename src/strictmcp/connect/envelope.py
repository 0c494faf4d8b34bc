"""The ``_meta`` envelope of a request: from 2026-07-28 every request carries its protocol
version (and the client's) there, instead of a handshake having settled them."""

from __future__ import annotations

from typing import Any

ENVELOPE = "io.modelcontextprotocol/"
"""The prefix of the envelope's keys in ``_meta``."""
VERSION_KEY = f"{ENVELOPE}protocolVersion"
"""The envelope's key of the protocol version a request declares."""

MODERN = frozenset({"2026-07-28"})
"""The revisions without a handshake: every request stands alone."""


def declared_version(message: Any) -> str | None:
    """The protocol version a request declares in its ``_meta``, if it does."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(VERSION_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None

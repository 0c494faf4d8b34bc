"""Identity: who is calling, from a verified access token.

The HTTP proxy is an OAuth 2.1 protected resource (the MCP authorization specification,
2025-06-18 and later): :class:`TokenVerifier` turns a bearer token into an
:class:`~strictmcp.policy.Identity` once its signature (a key of the issuer's JWKS,
:class:`KeySet`, fetched and refreshed by :class:`Jwks`), issuer, audience and lifetime hold,
or refuses it with a :class:`TokenError` whose ``code`` is stable and whose ``description``
never quotes the token. The policy's ``[auth]`` section
(:class:`~strictmcp.policy.AuthSettings`) configures it.

It sits between the transport (``connect``) and the enforcement path (``enforce``): the proxy
and the SDK integrations both verify with it, and the enforcer authorizes the identity it
gives. Toward the upstream the proxy uses credentials of its own (:class:`UpstreamAuth`), never
the client's token.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import TokenError
    from .jwks import Jwks, KeySet
    from .tokens import TokenVerifier
    from .upstream import (
        Credentials,
        CredentialsError,
        UpstreamAuth,
        command_credentials,
        command_headers,
    )

__all__ = [
    "Credentials",
    "CredentialsError",
    "Jwks",
    "KeySet",
    "TokenError",
    "TokenVerifier",
    "UpstreamAuth",
    "command_credentials",
    "command_headers",
]

_MODULES = {
    "Credentials": "upstream",
    "CredentialsError": "upstream",
    "command_credentials": "upstream",
    "command_headers": "upstream",
    "Jwks": "jwks",
    "KeySet": "jwks",
    "TokenError": "errors",
    "TokenVerifier": "tokens",
    "UpstreamAuth": "upstream",
}


def __getattr__(name: str) -> Any:
    # Each name is imported from its module on first use: verifying tokens needs the [auth]
    # extra (PyJWT), and the proxy's own upstream credentials and HTTP answers do not.
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_MODULES[name]}", __name__), name)
    globals()[name] = value
    return value

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

from .jwks import Jwks, KeySet
from .tokens import TokenError, TokenVerifier
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

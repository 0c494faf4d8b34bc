"""The HTTP proxy as an OAuth 2.1 protected resource (MCP authorization, 2025-06-18 on).

:class:`Gate` is the step before routing: it serves the Protected Resource Metadata document
(RFC 9728) at its well-known paths, and lets a request on only with a bearer token the
:class:`~strictmcp.identity.TokenVerifier` accepts and that grants the policy's scopes.
Otherwise 401 with ``WWW-Authenticate: Bearer ... resource_metadata="..."`` (which is how an
MCP client finds the authorization server), or 403 ``insufficient_scope`` naming the scopes;
the body is a small JSON object with the OAuth ``error``, its description and strictmcp's
stable ``code``. Each refusal is an ``auth-refused`` record in the audit log (its status and
code), and an outage of the issuer's keys is said on stderr. Nothing from the token is ever
echoed or logged.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..identity.errors import TokenError
from ..policy import Identity
from . import http_asgi as io
from .http_asgi import Receive, Scope, Send

if TYPE_CHECKING:
    from ..enforce import Auditor
    from ..identity.tokens import TokenVerifier

WELL_KNOWN = "/.well-known/oauth-protected-resource"
_JSON = b"application/json"
_DPOP = (
    "DPoP-bound access tokens are not supported yet (SEP-1932); "
    "send the access token as a Bearer token"
)


class Gate:
    """Who may use the endpoint, as the policy's ``[auth]`` section says; ``auditor`` gets
    each refusal, and the outages of the issuer's keys."""

    def __init__(self, verifier: TokenVerifier, auditor: Auditor | None = None) -> None:
        self.verifier = verifier
        self.auditor = auditor
        if auditor is not None:
            verifier.keys.report = self._keys_outage
        settings = verifier.settings
        resource = urlsplit(settings.resource)
        # RFC 9728 inserts the well-known path before the resource's own path; the bare one
        # is served too, for clients that look there first.
        self.paths = frozenset({WELL_KNOWN + resource.path.rstrip("/"), WELL_KNOWN})
        metadata_url = f"{resource.scheme}://{resource.netloc}{WELL_KNOWN}"
        self.metadata_url = metadata_url + resource.path.rstrip("/")
        document = {
            "resource": settings.resource,
            "authorization_servers": [settings.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": list(settings.scopes),
            "resource_name": "strictmcp proxy",
        }
        self.metadata = json.dumps(document).encode()

    def at(self, path: str) -> Gate:
        """The gate of the resource at ``path`` of this one's origin (an ``[[endpoint]]``):
        the same issuer and keys, but its own audience, which a token must name, and its own
        metadata document."""
        settings = self.verifier.settings
        origin = urlsplit(settings.resource)
        resource = f"{origin.scheme}://{origin.netloc}{path}"
        from ..identity.tokens import TokenVerifier  # noqa: PLC0415 - the [auth] extra's

        verifier = TokenVerifier(replace(settings, resource=resource), keys=self.verifier.keys)
        return Gate(verifier, self.auditor)

    def _keys_outage(self, text: str, out: bool) -> None:
        assert self.auditor is not None  # only then reported
        self.auditor.say(text, level="error" if out else "info", event="issuer-keys")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request at one of its :attr:`paths` with the metadata document."""
        await self.metadata_answer(scope["method"], send)

    async def metadata_answer(self, method: str, send: Send) -> None:
        """The Protected Resource Metadata document, to a GET."""
        if method not in ("GET", "HEAD"):
            await io.answer_status(send, 405, [(b"allow", b"GET")])
            return
        await io.answer(send, 200, self.metadata, _JSON, [(b"cache-control", b"max-age=300")])

    async def admit(self, headers: dict[str, str], send: Send) -> Identity | None:
        """The caller's identity; None once the request has been refused."""
        settings = self.verifier.settings
        header = settings.token_header.lower()  # the request's are read by lower-case name
        raw = headers.get(header)
        if raw is None:
            await self._challenge(send, 401, None, "token-missing", "An access token is needed")
            return None
        scheme, _, token = raw.strip().partition(" ")
        if scheme.lower() == "dpop":
            await self._challenge(send, 401, "invalid_request", "token-dpop", _DPOP)
            return None
        if scheme.lower() != "bearer":
            if header == "authorization":
                what = "The Authorization header must be: Bearer <access token>"
                await self._challenge(send, 401, "invalid_request", "token-malformed", what)
                return None
            token = raw.strip()  # a gateway's header may carry the bare token
        try:
            identity = await self.verifier.verify(token.strip())
        except TokenError as error:
            if error.code.endswith("-unavailable"):  # the issuer, not the token, failed
                await self._challenge(send, 503, None, error.code, error.description)
            else:
                await self._challenge(send, 401, "invalid_token", error.code, error.description)
            return None
        missing = [scope for scope in settings.scopes if scope not in identity.scopes]
        if missing:
            what = f"The access token lacks the scope: {' '.join(missing)}"
            await self._challenge(
                send, 403, "insufficient_scope", "token-scope", what, scope=" ".join(missing)
            )
            return None
        return identity

    async def _challenge(
        self,
        send: Send,
        status: int,
        error: str | None,
        code: str,
        description: str,
        *,
        scope: str | None = None,
    ) -> None:
        params = []
        if error is not None:
            params += [f'error="{error}"', f'error_description="{description}"']
        if scope is not None:
            params.append(f'scope="{scope}"')
        params.append(f'resource_metadata="{self.metadata_url}"')
        if self.auditor is not None:
            # The status and the stable code: never the token, nor the description's reasons.
            refused = {"status": status, "code": code, "resource": self.verifier.settings.resource}
            self.auditor.event("auth-refused", **refused)
        extra = [(b"www-authenticate", ("Bearer " + ", ".join(params)).encode())]
        if status == 503:
            extra.append((b"retry-after", str(self.verifier.settings.jwks_refresh).encode()))
        body = {"error": error or "invalid_token", "error_description": description, "code": code}
        await io.answer(send, status, json.dumps(body).encode(), _JSON, extra)

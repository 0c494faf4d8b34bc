"""The proxy's own credentials toward the upstream server: never the client's token.

A client's access token is for the proxy (its audience is the proxy's resource URL); passing
it on would let the upstream, or anyone it forwards to, replay it, and is forbidden by the MCP
authorization specification. :class:`UpstreamAuth` gives every request to the upstream the
proxy's own ``Authorization``: a static bearer token read from an environment variable or a
file, or an OAuth access token the proxy gets with the client credentials grant, cached and
renewed before it expires.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncGenerator, Callable, Generator
from pathlib import Path

import httpx2

from ..policy import UpstreamSettings

_RENEW_BEFORE = 60.0
"""Seconds before its expiry a token is renewed: no request leaves with one about to lapse."""
_FETCH_SECONDS = 10.0


class CredentialsError(httpx2.TransportError):
    """The upstream's credentials could not be had; the message never quotes a secret. A
    transport error to the upstream client, so that waiting requests fail as when the
    upstream cannot be reached."""


def secret(env: str | None, file: str | None, what: str) -> str:
    """A secret named by an environment variable or a file (never written in the policy),
    without surrounding whitespace; :class:`CredentialsError` when it is missing or empty."""
    if env is not None:
        value = os.environ.get(env, "")
        where = f"the environment variable {env}"
    else:
        assert file is not None
        where = f"the file {file}"
        try:
            value = Path(file).read_text(encoding="utf-8")
        except OSError as error:
            raise CredentialsError(f"{what}: cannot read {where}: {error.strerror}") from None
    value = value.strip()
    if not value:
        raise CredentialsError(f"{what}: {where} is empty or unset")
    return value


class UpstreamAuth(httpx2.Auth):
    """``Authorization: Bearer ...`` on every request to the upstream, as ``settings`` say.

    A static token is read once, when this is made (a missing one is a
    :class:`CredentialsError` at start-up, not at the first call); a client-credentials
    token is fetched when first needed, shared by concurrent requests, and renewed once it is
    within a minute of its expiry.
    """

    def __init__(
        self,
        settings: UpstreamSettings,
        *,
        client: httpx2.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._client = client
        self._static: str | None = None
        self._token: tuple[str, float] | None = None
        self._lock = asyncio.Lock()
        #: How many tokens were fetched from the token endpoint (for tests and operators).
        self.fetches = 0
        if settings.token_url is None:
            self._static = secret(settings.bearer_env, settings.bearer_file, "upstream bearer")
        else:
            # Read now, so that a missing secret stops the proxy at start-up.
            secret(settings.client_secret_env, settings.client_secret_file, "client secret")

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise RuntimeError("UpstreamAuth is for the asynchronous client")

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        request.headers["authorization"] = f"Bearer {await self.token()}"
        yield request

    async def token(self) -> str:
        """The bearer token to send now."""
        if self._static is not None:
            return self._static
        async with self._lock:
            if self._token is not None and self._clock() < self._token[1] - _RENEW_BEFORE:
                return self._token[0]
            self._token = await self._fetch()
            return self._token[0]

    async def aclose(self) -> None:
        """Close the HTTP client this made to reach the token endpoint."""
        if self._client is not None:
            await self._client.aclose()

    async def _fetch(self) -> tuple[str, float]:
        settings = self.settings
        # Both given: a section with token_url and no client_id is refused when loaded.
        assert settings.token_url is not None
        assert settings.client_id is not None
        form = {
            "grant_type": "client_credentials",
            "client_id": settings.client_id,
            "client_secret": secret(
                settings.client_secret_env, settings.client_secret_file, "client secret"
            ),
        }
        if settings.scope is not None:
            form["scope"] = settings.scope
        if settings.resource is not None:
            form["resource"] = settings.resource
        if self._client is None:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(_FETCH_SECONDS), follow_redirects=False
            )
        self.fetches += 1
        try:
            response = await self._client.post(settings.token_url, data=form)
            answer = response.json()
        except (httpx2.HTTPError, ValueError):
            raise CredentialsError("the token endpoint cannot be reached or answered") from None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if response.status_code != 200 or not isinstance(token, str) or not token:
            raise CredentialsError(f"the token endpoint refused: {response.status_code}")
        lifetime = answer.get("expires_in", 300)
        if not isinstance(lifetime, (int, float)) or isinstance(lifetime, bool) or lifetime <= 0:
            lifetime = 300
        return token, self._clock() + float(lifetime)

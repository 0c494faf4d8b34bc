"""The proxy's own credentials toward the upstream server: never the client's token.

A client's access token is for the proxy (its audience is the proxy's resource URL); passing
it on would let the upstream, or anyone it forwards to, replay it, and is forbidden by the MCP
authorization specification. :class:`UpstreamAuth` gives every request to the upstream the
proxy's own ``Authorization``: a static bearer token read from an environment variable or a
file, or an OAuth access token the proxy gets with the client credentials grant, cached and
renewed before it expires.

The commands that read a server (``lint``, ``pin``, ``check``, ``policy``) reach one behind
authentication with the same code: :func:`command_credentials` makes their
:class:`Credentials` from ``--header NAME:VALUE`` and ``--bearer-env VAR`` (declared once, in
:func:`strictmcp.connect.command_line.credential_options`), or from a policy's ``[upstream]``
section through :class:`UpstreamAuth`.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from pathlib import Path

import httpx2

from ..connect.http_headers import TOKEN, transport_header
from ..policy import UpstreamSettings

_RENEW_BEFORE = 60.0
"""Seconds before its expiry a token is renewed: no request leaves with one about to lapse."""
_FETCH_SECONDS = 10.0
_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_HEADER_VALUE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?")
"""A header value that can be sent as it is: printable ASCII, no line break, nothing
around it (RFC 9110 5.5); a line break would start a header of the value's choosing."""


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


class Credentials(httpx2.Auth):
    """What a command that reads a server sends it: ``headers`` (lower-case names) on every
    request, and ``Authorization: Bearer ...`` as ``bearer`` gets it."""

    def __init__(self, headers: Mapping[str, str], bearer: UpstreamAuth | None = None) -> None:
        self.headers = dict(headers)
        self.bearer = bearer

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise RuntimeError("Credentials are for the asynchronous client")

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        request.headers.update(self.headers)
        if self.bearer is not None:
            request.headers["authorization"] = f"Bearer {await self.bearer.token()}"
        yield request

    async def aclose(self) -> None:
        """Close the token endpoint's client, if one was made."""
        if self.bearer is not None:
            await self.bearer.aclose()


def command_headers(specs: Sequence[str]) -> dict[str, str]:
    """The headers of ``--header NAME:VALUE`` options, by lower-case name; a value that is
    exactly ``$VAR`` is read from the environment variable ``VAR``, and ``$$`` is a ``$``.

    :class:`CredentialsError` for a malformed option, a header the transport sets itself, one
    given twice, a lone ``$``, a variable unset or empty, or a value a header cannot carry.
    No message quotes a value (nor the option, when it has no name: it may be a secret).
    """
    headers: dict[str, str] = {}
    for spec in specs:
        name, colon, raw = spec.partition(":")
        name = name.strip()
        if not colon or not TOKEN.fullmatch(name):
            raise CredentialsError(
                "--header: NAME:VALUE expected, NAME a header name such as X-Api-Key"
            )
        key = name.lower()
        if transport_header(key):
            raise CredentialsError(f"--header {name}: strictmcp sets this header itself")
        if key in headers:
            raise CredentialsError(f"--header {name}: given twice")
        value = raw.strip()
        variable = _VARIABLE.fullmatch(value)
        if variable is not None:
            value = secret(variable.group(1), None, f"--header {name}")
        elif "$" in value.replace("$$", ""):
            raise CredentialsError(
                f"--header {name}: write $$ for a literal $, or the whole value as $VARIABLE "
                "to read it from the environment"
            )
        else:
            value = value.replace("$$", "$")
        if not _HEADER_VALUE.fullmatch(value):
            where = f" (the environment variable {variable.group(1)})" if variable else ""
            raise CredentialsError(
                f"--header {name}: the value{where} is empty or is not printable ASCII on one line"
            )
        headers[key] = value
    return headers


def command_credentials(
    headers: Sequence[str],
    bearer_env: str | None,
    upstream: UpstreamSettings | None,
    *,
    url: str | None,
) -> Credentials | None:
    """The credentials a command sends the server at ``url``: its ``--header`` options, and
    the bearer token of ``--bearer-env`` or of the policy's ``[upstream]`` section; None
    when there are none, or no ``url`` (a policy's ``[upstream]`` says nothing of a stdio
    server). A static token is read now: :class:`CredentialsError` when it cannot be, or
    when the options cannot apply (no ``url``, two sources of one ``Authorization``)."""
    if url is None:
        if headers or bearer_env is not None:
            raise CredentialsError("--header and --bearer-env apply to --url only")
        return None
    sent = command_headers(headers)
    if bearer_env is not None and upstream is not None:
        raise CredentialsError(
            "--bearer-env: the policy's [upstream] section names the credentials already; "
            "give one of them"
        )
    settings = UpstreamSettings(bearer_env=bearer_env) if bearer_env is not None else upstream
    if settings is not None and "authorization" in sent:
        source = "--bearer-env" if bearer_env is not None else "the policy's [upstream] section"
        raise CredentialsError(f"--header Authorization: {source} sets it already")
    if settings is None:
        return Credentials(sent) if sent else None
    where = "--bearer-env" if bearer_env is not None else "--policy [upstream]"
    try:
        bearer = UpstreamAuth(settings)
    except CredentialsError as error:
        raise CredentialsError(f"{where}: {error}") from None
    return Credentials(sent, bearer)

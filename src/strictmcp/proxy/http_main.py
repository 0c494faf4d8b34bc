"""The modes of ``strictmcp proxy`` that involve HTTP, put together from its options.

Loaded only for those modes: the HTTP client and server take a while to import.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from ..connect.http_upstream import HttpUpstream
from ..connect.upstream import Upstream
from ..guards.policy import AuthSettings, UpstreamSettings, is_loopback
from ..identity import TokenVerifier, UpstreamAuth
from .http_auth import Gate
from .http_server import App, Limits, serve
from .http_sessions import Channel, NewSession, NewUpstream
from .listing import input_schema
from .session import ProxySession
from .stdio import run_upstream, spawn

__all__ = ["Limits", "gate", "listen", "stdio_to", "upstreams"]


def upstreams(
    command: Sequence[str],
    url: str | None,
    *,
    max_size: int,
    timeout: float,
    credentials: UpstreamSettings | None = None,
) -> NewUpstream:
    """How each proxy session reaches a server of its own: ``command`` spawned, or ``url``
    (with the proxy's own ``credentials``; never the client's).

    :class:`~strictmcp.identity.CredentialsError` at once when a static token named by
    ``credentials`` cannot be read.
    """
    # One for every session: a client-credentials token is fetched once and shared.
    auth = UpstreamAuth(credentials) if credentials is not None else None

    async def http(session: ProxySession) -> Upstream:
        assert url is not None
        return HttpUpstream(
            url,
            max_size=max_size,
            timeout=timeout,
            input_schema=functools.partial(input_schema, session),
            auth=auth,
        )

    async def spawned(session: ProxySession) -> Upstream:
        return await spawn(session, command)

    return http if url is not None else spawned


def gate(auth: AuthSettings) -> Gate:
    """The protected-resource step for ``auth``; :class:`~strictmcp.identity.CredentialsError`
    at once when the introspection secret it names cannot be read."""
    return Gate(TokenVerifier(auth))


async def stdio_to(session: ProxySession, reach: NewUpstream, *, timeout: float) -> int:
    """Our stdio in front of the server ``reach`` gives; the exit status."""
    return await run_upstream(session, await reach(session), timeout=timeout)


async def listen(
    new_session: NewSession,
    reach: NewUpstream,
    address: tuple[str, int],
    *,
    path: str,
    limits: Limits,
    timeout: float,
    announce: Callable[[str], None],
    gate: Gate | None = None,
) -> int:
    """Streamable HTTP on ``address`` at ``path`` until interrupted, as a protected resource
    when ``gate`` is given; 0."""
    host, port = address

    async def start(shared: bool) -> Channel:
        return await Channel.start(
            new_session, reach, timeout=timeout, buffered=limits.buffered, shared=shared
        )

    app = App(start, path=path, loopback=is_loopback(host), limits=limits, gate=gate)
    await serve(app, host, port, announce)
    return 0

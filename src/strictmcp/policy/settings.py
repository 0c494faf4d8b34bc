"""The settings of the ``[auth]``, ``[upstream]``, ``[rate_store]``, ``[[server]]``,
``[gateway]``, ``[[endpoint]]`` and ``[[flow]]`` tables, and what the ``tools`` and
``exclude_tools`` keys offer (:class:`ToolOffer`), as plain data: ``strictmcp.identity``,
``strictmcp.enforce`` and the proxy read them; :mod:`.tables` declares their keys and builds
them."""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from .names import full_name, tool_matches
from .options import PolicyError
from .urls import redis_url_problem

ASYMMETRIC_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""The JWS algorithms an ``[auth]`` section may accept: signatures checked with a public key.
HMAC (``HS*``) is left out on purpose: its key is a shared secret, and accepting it next to
public keys is how a token "signed" with the public key gets through."""


@dataclass(frozen=True)
class AuthSettings:
    """The ``[auth]`` section: the HTTP proxy as an OAuth 2.1 protected resource.

    Every request needs an access token (a JWT) signed by a key of ``issuer``'s JWKS (found
    from its metadata, or ``jwks_url``/``jwks_file``) with one of ``algorithms``, whose
    ``iss`` is ``issuer``, whose ``aud`` includes ``resource`` (the proxy's canonical URL,
    RFC 8707), which has not expired (``leeway`` seconds of clock skew either way), and which
    grants every scope of ``scopes``. ``jwks_refresh`` is the fewest seconds between two
    fetches of the JWKS for a ``kid`` it does not hold; ``token_header`` is where the token
    is read (``authorization``, or a gateway's header that forwards it). With
    ``introspection_url``, a token that is not a JWT (an opaque one) is checked there (RFC
    7662) with the proxy's ``client_id`` and its secret (``client_secret_env`` or
    ``client_secret_file``).
    """

    issuer: str
    resource: str
    jwks_url: str | None = None
    jwks_file: str | None = None
    algorithms: tuple[str, ...] = ASYMMETRIC_ALGORITHMS
    scopes: tuple[str, ...] = ()
    leeway: int = 30
    jwks_refresh: int = 60
    token_header: str = "authorization"
    introspection_url: str | None = None
    client_id: str | None = None
    client_secret_env: str | None = None
    client_secret_file: str | None = None


@dataclass(frozen=True)
class UpstreamSettings:
    """The ``[upstream]`` section: the proxy's own credentials toward an HTTP upstream.

    Either a static bearer token (``bearer_env`` or ``bearer_file``) or an OAuth client (the
    client credentials grant at ``token_url`` with ``client_id`` and a secret from
    ``client_secret_env`` or ``client_secret_file``, asking for ``scope`` and ``resource``).
    Secrets are named, never written here. The client's own token is never passed on.
    """

    bearer_env: str | None = None
    bearer_file: str | None = None
    token_url: str | None = None
    client_id: str | None = None
    client_secret_env: str | None = None
    client_secret_file: str | None = None
    scope: str | None = None
    resource: str | None = None


@dataclass(frozen=True)
class RateStoreSettings:
    """The ``[rate_store]`` table: the ``[[rate_limit]]`` buckets kept in Redis, so that
    every replica of the proxy counts the same calls.

    The server is named by ``url`` (``redis://`` or ``rediss://``, without a password), or,
    for a URL holding a secret, by the environment variable ``url_env`` or the file
    ``url_file``. ``on_unavailable`` says what a call of a limited tool gets while Redis
    cannot be reached within ``timeout_ms``: refused (``closed``, the default) or let
    through (``open``). ``prefix`` starts every key the proxy writes.
    """

    url: str | None = None
    url_env: str | None = None
    url_file: str | None = None
    on_unavailable: Literal["closed", "open"] = "closed"
    timeout_ms: int = 500
    prefix: str = "strictmcp:rate:"

    def read_url(self) -> str:
        """The Redis URL, read from where the table says; PolicyError when it cannot be read
        (the message names the variable or file, never the URL)."""
        if self.url is not None:
            return self.url
        if self.url_env is not None:
            url = os.environ.get(self.url_env, "").strip()
            source = f"the environment variable {self.url_env}"
        else:
            assert self.url_file is not None  # one of the three, checked when loaded
            source = f"the file {self.url_file}"
            try:
                url = Path(self.url_file).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                raise PolicyError(f"[rate_store]: {source} cannot be read") from None
        problem = redis_url_problem(url) if url else "is empty"
        if problem is not None:
            raise PolicyError(f"[rate_store]: the URL in {source} {problem}")
        return url


@dataclass(frozen=True)
class ToolOffer:
    """Which tools are offered, by name: those matched by a glob of every set of ``tools``
    (no set: all) and by no glob of ``exclude_tools``. The one filter behind the ``tools``
    and ``exclude_tools`` keys (at the top level, of a ``[[server]]``, of an
    ``[[endpoint]]``): a tool not offered is not listed, and a call of it is answered as a
    call of a tool that does not exist."""

    tools: tuple[tuple[str, ...], ...] = ()
    exclude_tools: tuple[str, ...] = ()

    @classmethod
    def of(cls, tools: Sequence[str] | None, exclude_tools: Sequence[str] = ()) -> ToolOffer:
        """What one table's ``tools`` (None: not given) and ``exclude_tools`` offer."""
        return cls(() if tools is None else (tuple(tools),), tuple(exclude_tools))

    @property
    def everything(self) -> bool:
        """Whether every tool is offered (nothing was narrowed)."""
        return not self.tools and not self.exclude_tools

    def offers(self, name: str) -> bool:
        """Whether the tool ``name`` is offered."""
        return all(any(tool_matches(name, glob) for glob in globs) for globs in self.tools) and (
            not any(tool_matches(name, glob) for glob in self.exclude_tools)
        )

    def within(self, other: ToolOffer) -> ToolOffer:
        """What this and ``other`` both offer."""
        return ToolOffer(self.tools + other.tools, self.exclude_tools + other.exclude_tools)

    def keeps(self, tool: Any) -> bool:
        """Whether a listed tool definition stays in the listing: it is offered, or it has
        no name (for the checks that refuse it to see it)."""
        name = tool.get("name") if isinstance(tool, dict) else None
        return not isinstance(name, str) or self.offers(name)

    def listed(self, tools: Sequence[Any]) -> list[Any]:
        """The tool definitions of a listing that stay in it (:meth:`keeps`)."""
        return [tool for tool in tools if self.keeps(tool)]


SERVER_NAME = r"[A-Za-z0-9-]{1,32}"
"""A ``[[server]]`` name: letters, digits and ``-``, so that no name holds the separator."""


def server_of(tool: str | None, servers: Collection[str], separator: str = "__") -> str | None:
    """The gateway's server the tool or prompt ``tool`` (as the client names it, ``server`` +
    ``separator`` + its own name, or that shortened to a portable name, where each
    character of the separator is ``_``) belongs to; None when its name names none of
    ``servers``."""
    if tool is None:
        return None
    server, found, _ = full_name(tool).partition(separator)
    if found and server in servers:
        return server
    # A shortened name this process did not shorten (an interceptor judging another
    # gateway's calls): ``.`` is ``_`` and the cut comes after the server's name (32
    # characters at most, and never a ``_``), so the server's name is before the first ``_``.
    server, found, _ = tool.partition("_")
    return server if found and server in servers else None


@dataclass(frozen=True)
class InterceptorSettings:
    """One ``[[interceptor]]`` table: an external interceptor server (the MCP interceptors
    extension) the proxy or gateway invokes on ``events`` in ``phase`` (``request``,
    ``response`` or ``both``), spawned by ``command`` (stdio) or reached at ``url``
    (streamable HTTP, with the proxy's own ``upstream`` credentials).
    ``mode`` ``audit`` records and never blocks; an interceptor that fails (down, late past
    ``timeout_ms``, a malformed answer) fails the message closed unless ``fail_open``.
    Mutations run by ``priority`` (lower first), then name."""

    name: str
    kind: Literal["validation", "mutation"]
    command: tuple[str, ...] | None = None
    url: str | None = None
    upstream: UpstreamSettings | None = None
    events: tuple[str, ...] = ("tools/call",)
    phase: Literal["request", "response", "both"] = "both"
    mode: Literal["enforce", "audit"] = "enforce"
    fail_open: bool = False
    priority: int = 0
    timeout_ms: int = 1000

    def hooks(self, event: str, phase: str) -> bool:
        """Whether the interceptor is invoked on ``event`` in ``phase``."""
        return self.phase in (phase, "both") and ("*" in self.events or event in self.events)


@dataclass(frozen=True)
class ServerSettings:
    """One ``[[server]]`` table: a server behind the gateway, spawned (``command``, with
    ``env`` and the variables ``env_from`` copies from the gateway's own environment) or
    reached over streamable HTTP (``url``, with the gateway's own ``upstream``
    credentials). ``tools`` (globs; None: all) and ``exclude_tools`` say which of its tools
    are offered, by the server's own names; ``pin`` is a lock file of ``strictmcp pin``
    holding them too; ``mode`` the mode of the policy's stages for its tools (None: the
    file's)."""

    name: str
    command: tuple[str, ...] | None = None
    url: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    env_from: tuple[tuple[str, str], ...] = ()
    upstream: UpstreamSettings | None = None
    tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    pin: str | None = None
    mode: Literal["enforce", "audit"] | None = None
    #: Whether the gateway is unready while this server is down (``/readyz``).
    required: bool = False

    @cached_property
    def offer(self) -> ToolOffer:
        """What its ``tools`` and ``exclude_tools`` offer, by the server's own names."""
        return ToolOffer.of(self.tools, self.exclude_tools)

    def offers(self, tool: str) -> bool:
        """Whether the server's tool named ``tool`` (its own name) is offered."""
        return self.offer.offers(tool)

    def environment(self) -> dict[str, str]:
        """What the server's process is given on top of the gateway's environment; a
        :class:`PolicyError` naming the variable (never its value) that ``env_from`` names
        and the gateway's environment lacks."""
        values = dict(self.env)
        for name, source in self.env_from:
            value = os.environ.get(source)
            if value is None:
                raise PolicyError(
                    f"[[server]] {self.name!r}: env_from.{name} names the environment variable "
                    f"{source}, which is not set"
                )
            values[name] = value
        return values


@dataclass(frozen=True)
class GatewaySettings:
    """The ``[gateway]`` table: how ``strictmcp gateway`` names and minds its servers.

    A tool ``t`` of the server ``s`` is offered as ``s`` + ``separator`` + ``t``. A server
    that exits or cannot start is started again after ``restart_delay`` seconds, the delay
    doubling up to ``restart_max_delay``; after ``max_restarts`` starts in a row that never
    reached an answered ``initialize`` it is left down. ``start_timeout`` bounds each request
    the gateway makes of a server on its own (its handshake, the pages of a merged listing)."""

    separator: str = "__"
    restart_delay: float = 1.0
    restart_max_delay: float = 30.0
    max_restarts: int = 10
    start_timeout: float = 30.0


AuditRecord = Literal["findings", "all"]
AUDIT_RECORDS: tuple[AuditRecord, ...] = ("findings", "all")
"""What ``[audit] record`` may say, the words of the command line's ``--audit``: the audit
log gets the findings, or ``all`` calls besides (allowed ones too)."""

FlowAction = Literal["refuse", "audit", "redact"]


@dataclass(frozen=True)
class FlowRule:
    """One ``[[flow]]`` table: what becomes of data read from a server matching
    ``sources`` (globs over ``[[server]]`` names; the file's ``from``) when a later request
    carries it to another server matching ``sinks`` (``to``). What is tainted: the secrets
    the redaction patterns know, and the values at ``sensitive`` (JSON Pointers into a result,
    ``*`` for any key or item) at least ``min_length`` characters long. ``action``: ``refuse``
    the request, ``audit`` it (report, send on), or ``redact`` (send it on with the data
    replaced)."""

    sources: tuple[str, ...]
    sinks: tuple[str, ...]
    sensitive: tuple[str, ...] = ()
    min_length: int = 8
    action: FlowAction = "refuse"

    def joins(self, source: str, sink: str) -> bool:
        """Whether this rule is about data read from ``source`` reaching ``sink`` (never a
        server writing back to itself)."""
        return (
            source != sink
            and any(fnmatchcase(source, glob) for glob in self.sources)
            and any(fnmatchcase(sink, glob) for glob in self.sinks)
        )


@dataclass(frozen=True)
class EndpointSettings:
    """One ``[[endpoint]]`` table: a virtual server at ``path`` of the HTTP proxy or gateway.

    It serves the ``[[server]]`` tables named in ``servers`` (None: all; the gateway only)
    and of their tools those ``tools`` and ``exclude_tools`` offer (globs over the names
    the client sees, namespaced in the gateway), within what the top-level keys offer.
    Under ``[auth]`` it is a protected resource of its own."""

    path: str
    servers: tuple[str, ...] | None = None
    tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()

    @cached_property
    def offer(self) -> ToolOffer:
        """What its ``tools`` and ``exclude_tools`` offer."""
        return ToolOffer.of(self.tools, self.exclude_tools)

"""Policies: which guard checks which argument of which tool, and whether findings block.

A policy attaches guards to arguments by a tool name glob and a JSON Pointer into the
arguments, where a ``*`` token stands for any array item or object key, so it protects servers
whose code we do not control::

    mode = "enforce"                 # or "audit": log and allow
    [[guard]]
    tool = "read_*"
    argument = "/path"
    kind = "path"
    roots = ["/srv/data"]

Every key of a ``[[guard]]`` entry besides ``tool``, ``argument``, ``kind`` and ``method``
configures the guard itself (lists become tuples). ``method`` (default ``tools/call``) puts a
guard on another request (``resources/read``, ``prompts/get``, ...): its ``argument`` then
reads into the request's ``params`` (``/uri``). ``[[deep]]`` entries declare built-in deep
checks the same way (``path``, ``sql`` against a live database, ``url`` reachability,
``cron``, ``time``), with ``on_calls`` (also before real calls, not only in the ``validate``
tool's dry run) and ``timeout`` (seconds).
This module owns the file's whole format: every table and every key is declared here
(``_TOP_KEYS``, ``_RULE_KEYS``, ``_OPTIONS``, ``_DEEP_OPTIONS``), and a policy with an unknown
table or key, or a value of the wrong type, is refused when it is loaded, never at the first
call. ``docs/policy.md`` documents the format; sections to come (identity, output integrity)
are declared here too, and name secrets by environment variable or
file (``..._env``, ``..._file``), never as literal values.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from functools import cached_property, partial
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from ..protocol import Severity, Violation
from ..protocol.tool_calls import ARGUMENTS
from ..schema import from_fragment, to_pointer
from .base import Guard, GuardFinding
from .claims import ClaimGuard, claims_in, substitute
from .database import SqlDatabaseCheck
from .deep import bounded
from .reach import UrlReachCheck
from .subdivisions import subdivision_flags
from .uris import URI_FIELDS, check_uri

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

Mode = Literal["enforce", "audit"]
_TOP_KEYS = (
    "access",
    "allow_subdivision_flags",
    "auth",
    "deep",
    "guard",
    "identity",
    "listing",
    "mode",
    "rate_limit",
    "rate_store",
    "result",
    "server_requests",
    "tool",
    "upstream",
)
_RULE_KEYS = ("tool", "argument", "kind")
TOOLS_CALL = "tools/call"
"""The method a ``[[guard]]`` or ``[[result]]`` entry is about unless it says ``method``."""
GUARD_METHODS = (
    TOOLS_CALL,
    "completion/complete",
    "prompts/get",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
)
"""The requests a ``[[guard]]`` may name as its ``method``: its ``argument`` reads into the
call's arguments for ``tools/call``, into the request's ``params`` for the others."""
RESULT_METHODS = (
    TOOLS_CALL,
    "completion/complete",
    "notifications/message",
    "notifications/progress",
    "prompts/get",
    "resources/read",
)
"""What a ``[[result]]`` entry may name as its ``method``: the answers to these requests
(their errors too) and these notifications."""
_PARAMS = "/params"
_DEEP_KEYS = ("on_calls", "timeout")
DEFAULT_DEEP_TIMEOUT = 5.0
"""Seconds a policy's deep check may take unless its entry says ``timeout``."""


@dataclass(frozen=True)
class _Option:
    """One option of a guard kind: a TOML ``type`` (an array of it when ``array``), the values
    allowed when only some are, and whether the entry must give it."""

    type: type[bool | int | float | str]
    array: bool = False
    choices: tuple[str, ...] = ()
    required: bool = False

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not fit, or None."""
        single, plural = _TYPE_NAMES[self.type]
        expected = f"an array of {plural}" if self.array else single
        if self.array and not isinstance(value, list):
            return f"must be {expected}"
        for item in value if self.array else [value]:
            # bool is an int in Python, never in TOML: `max_length = true` is refused; a
            # number may be written as an integer (`timeout = 2`).
            allowed = (int, float) if self.type is float else self.type
            if not isinstance(item, allowed) or (self.type is not bool and isinstance(item, bool)):
                return f"must be {expected}"
            if self.choices and item not in self.choices:
                return f"must be one of: {', '.join(self.choices)}"
        return None


_TYPE_NAMES = {
    bool: ("a boolean", "booleans"),
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    str: ("a string", "strings"),
}
_FLAG, _INT, _STR, _STRS = _Option(bool), _Option(int), _Option(str), _Option(str, array=True)
#: The ``[listing]`` table: the lint rules (codes or prefixes) run on every tool listing; the
#: codes are checked by whoever runs them, lint being a higher layer than the policy.
_LISTING_KEYS = {"rules": _STRS}
Hygiene = Literal["flag", "strip", "off"]
_HYGIENE = _Option(str, choices=("flag", "strip", "off"))
#: A ``[[result]]`` entry: what is done to the results of the tools its glob matches.
_RESULT_KEYS: dict[str, _Option] = {
    "method": _Option(str, choices=RESULT_METHODS),
    "tool": _STR,
    "hygiene": _HYGIENE,
    "label": _FLAG,
    "delimiter": _STR,
    "max_bytes": _INT,
    "max_items": _INT,
    "redact": _FLAG,
}
#: A ``[[tool]]`` entry: opt-in rewrites of how the tools its glob matches are called or listed.
_TOOL_KEYS: dict[str, _Option] = {
    "tool": _Option(str, required=True),
    "json_strings": _FLAG,
    "inline_refs": _FLAG,
}
#: The ``[server_requests]`` table: hygiene of what a server asks of the user or the model.
_SERVER_REQUEST_KEYS = {"hygiene": _HYGIENE}
_TOOL_RESULT_ONLY = ("label", "delimiter", "max_bytes", "max_items")
_TEXT_SLOT = "{text}"
#: Each guard kind's options, as a policy may set them: the guards' own Python-only
#: parameters (UrlGuard's ``resolver``) are not reachable from a file.
_OPTIONS: dict[str, dict[str, _Option]] = {
    "argv": {
        "allow_options": _STRS,
        "executables": _STRS,
        "first_is_executable": _FLAG,
        "match_basename": _FLAG,
        "allow_subcommands": _STRS,
        "operand_schemes": _STRS,
    },
    "path": {
        "roots": _Option(str, array=True, required=True),
        "must_exist": _FLAG,
        "entry": _Option(str, choices=("any", "file", "dir")),
        "readable": _FLAG,
        "writable": _FLAG,
        "allow_relative": _FLAG,
        "allow_home": _FLAG,
        "max_length": _INT,
        "max_components": _INT,
        "min_free_bytes": _INT,
        "max_file_bytes": _INT,
    },
    "sql": {
        "dialect": _STR,
        "read_only": _FLAG,
        "single_statement": _FLAG,
        "denied_functions": _STRS,
        "allow_functions": _STRS,
        "tables": _STRS,
        "max_length": _INT,
    },
    "text": {
        "min_length": _INT,
        "max_length": _INT,
        "allow_newlines": _FLAG,
        "forbid_control": _FLAG,
        "forbid_invisible": _FLAG,
        "forbid_bidi": _FLAG,
    },
    "url": {
        "schemes": _STRS,
        "hosts": _STRS,
        "resolve": _FLAG,
        "allow_private": _FLAG,
        "allow_ports": _Option(int, array=True),
        "allow_userinfo": _FLAG,
        "max_length": _INT,
    },
}


#: Each built-in deep check's options. A ``path`` deep check is the path guard (its free-space
#: and size warnings are what a guard entry rarely wants on every call); a ``sql`` one takes the
#: SQL guard's options, its dialect the database's.
_DEEP_OPTIONS: dict[str, dict[str, _Option]] = {
    "path": _OPTIONS["path"],
    "sql": {
        **{name: option for name, option in _OPTIONS["sql"].items() if name != "dialect"},
        "database": _Option(str, choices=("postgres", "sqlite"), required=True),
        "dsn_env": _STR,
        "dsn_file": _STR,
        "max_rows": _INT,
        "statement_timeout_ms": _INT,
        "connect_timeout": _INT,
    },
    "url": {
        **_OPTIONS["url"],
        "reachable": _FLAG,
        "request_timeout_ms": _INT,
        "max_redirects": _INT,
    },
    "cron": {"min_interval_seconds": _INT, "next_runs": _INT},
    "time": {"min_ahead_seconds": _INT, "max_ahead_seconds": _INT},
}
_DEEP_ENTRY = {"on_calls": _FLAG, "timeout": _Option(float)}


class PolicyError(ValueError):
    """A policy that cannot be loaded; the message says which entry and which key."""


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

_AUTH_OPTIONS: dict[str, _Option] = {
    "issuer": _Option(str, required=True),
    "resource": _Option(str, required=True),
    "jwks_url": _STR,
    "jwks_file": _STR,
    "algorithms": _Option(str, array=True, choices=ASYMMETRIC_ALGORITHMS),
    "scopes": _STRS,
    "leeway": _INT,
    "jwks_refresh": _INT,
    "token_header": _STR,
    "introspection_url": _STR,
    "client_id": _STR,
    "client_secret_env": _STR,
    "client_secret_file": _STR,
}


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

    @classmethod
    def from_dict(cls, entry: Any) -> AuthSettings:
        """The section from its TOML table."""
        where = "[auth]"
        options = _options(where, entry, _AUTH_OPTIONS)
        settings = cls(**options)
        for name in ("issuer", "resource", "jwks_url", "introspection_url"):
            url = getattr(settings, name)
            if url is not None and not _is_safe_url(url):
                raise PolicyError(
                    f"{where}: {name} must be an https:// URL without a fragment "
                    "(http:// only on a loopback address)"
                )
        if settings.jwks_url is not None and settings.jwks_file is not None:
            raise PolicyError(f"{where}: give jwks_url or jwks_file, not both")
        if not settings.algorithms:
            raise PolicyError(f"{where}: algorithms must name at least one algorithm")
        if settings.leeway < 0 or settings.leeway > 300:
            raise PolicyError(f"{where}: leeway must be between 0 and 300 seconds")
        if settings.jwks_refresh < 1:
            raise PolicyError(f"{where}: jwks_refresh must be at least 1 second")
        secrets = [settings.client_secret_env, settings.client_secret_file]
        if settings.introspection_url is not None and (
            settings.client_id is None or sum(s is not None for s in secrets) != 1
        ):
            raise PolicyError(
                f"{where}: introspection_url needs client_id and one of client_secret_env or "
                "client_secret_file"
            )
        return settings


_UPSTREAM_OPTIONS: dict[str, _Option] = {
    "bearer_env": _STR,
    "bearer_file": _STR,
    "token_url": _STR,
    "client_id": _STR,
    "client_secret_env": _STR,
    "client_secret_file": _STR,
    "scope": _STR,
    "resource": _STR,
}


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

    @classmethod
    def from_dict(cls, entry: Any) -> UpstreamSettings:
        """The section from its TOML table."""
        where = "[upstream]"
        settings = cls(**_options(where, entry, _UPSTREAM_OPTIONS))
        ways = [settings.bearer_env, settings.bearer_file, settings.token_url]
        if sum(way is not None for way in ways) != 1:
            raise PolicyError(f"{where}: give one of bearer_env, bearer_file or token_url")
        if settings.token_url is None:
            return settings
        if not _is_safe_url(settings.token_url):
            raise PolicyError(
                f"{where}: token_url must be an https:// URL (http:// only on loopback)"
            )
        secrets = [settings.client_secret_env, settings.client_secret_file]
        if settings.client_id is None or sum(s is not None for s in secrets) != 1:
            raise PolicyError(
                f"{where}: token_url needs client_id and one of client_secret_env or "
                "client_secret_file"
            )
        return settings


def _is_safe_url(url: str) -> bool:
    """An https URL, or an http one on loopback (a test's or a sidecar's): anything else
    would let a network attacker swap the keys or read the metadata."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    if parts.fragment or not parts.hostname:
        return False
    if parts.scheme == "https":
        return True
    return parts.scheme == "http" and is_loopback(parts.hostname)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback; of names only
    ``localhost`` is (RFC 6761), any other can resolve anywhere."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Identity:
    """Who is calling: what a verified access token says about its holder, never the token.

    ``claims`` are the token's verified claims, for rules that match on any of them; they are
    neither compared nor printed, so an identity can be logged by its ``subject`` and
    ``client_id`` only (:meth:`audit`).
    """

    subject: str | None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    groups: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> Identity:
        """The identity a verified JWT access token (RFC 9068) or an introspection answer
        (RFC 7662) describes: ``sub``, ``client_id`` (or ``azp``), ``scope`` (a string, or a
        list as in ``scp``) and ``groups``."""
        scope = claims.get("scope", claims.get("scp", ""))
        scopes = scope.split() if isinstance(scope, str) else scope
        groups = claims.get("groups", ())
        client = claims.get("client_id", claims.get("azp"))
        return cls(
            subject=_text(claims.get("sub")),
            client_id=_text(client),
            scopes=frozenset(s for s in scopes if isinstance(s, str))
            if isinstance(scopes, list)
            else frozenset(),
            groups=tuple(g for g in groups if isinstance(g, str))
            if isinstance(groups, list)
            else (),
            claims=dict(claims),
        )

    def audit(self) -> dict[str, str | None]:
        """What an audit record says about the caller: ``{subject, clientId}``."""
        return {"subject": self.subject, "clientId": self.client_id}

    @property
    def principal(self) -> tuple[str | None, str | None]:
        """Who this is, whatever the token: its subject and client. A session is bound to
        it, so that a client whose token was refreshed (other scopes, a later expiry) keeps
        its session and another caller's token never reaches it."""
        return self.subject, self.client_id


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


_IDENTITY_OPTIONS: dict[str, _Option] = {
    "subject": _Option(str, required=True),
    "client_id": _STR,
    "scopes": _STRS,
    "groups": _STRS,
}
_ACCESS_OPTIONS: dict[str, _Option] = {
    "tools": _Option(str, array=True, required=True),
    "subject": _STR,
    "client_id": _STR,
    "scopes": _STRS,
    "groups": _STRS,
}


def _fixed_identity(entry: Any) -> Identity:
    """The ``[identity]`` table: who the stdio proxy's client is, for its rules and audit.
    Its claims are ``sub`` (and ``client_id``) and those of its ``claims`` table."""
    where = "[identity]"
    if not isinstance(entry, Mapping):
        raise PolicyError(f"{where} must be a table")
    table = entry.get("claims", {})
    if not isinstance(table, Mapping) or not all(isinstance(v, str) for v in table.values()):
        raise PolicyError(f"{where}: claims must be a table of strings")
    declared = {**_IDENTITY_OPTIONS, "claims": _STR}  # checked above, as a table
    options = _options(where, {k: v for k, v in entry.items() if k != "claims"}, declared)
    client_id = options.get("client_id")
    own = {"sub": options["subject"]} | ({"client_id": client_id} if client_id else {})
    return Identity(
        subject=options["subject"],
        client_id=client_id,
        scopes=frozenset(options.get("scopes", ())),
        groups=options.get("groups", ()),
        claims=own | dict(table),
    )


@dataclass(frozen=True)
class AccessRule:
    """One ``[[access]]`` entry: the identities it matches may call the tools of ``tools``.

    Every condition given must hold: ``subject`` and ``client_id`` are globs over the token's
    ``sub`` and ``client_id``; the identity must hold every scope of ``scopes`` and at least
    one group of ``groups``; each claim of ``claims`` must equal one of the values listed (or,
    for a claim that is a list, contain one). A rule with no condition matches every
    authenticated identity.
    """

    tools: tuple[str, ...]
    subject: str | None = None
    client_id: str | None = None
    scopes: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    claims: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def matches(self, identity: Identity) -> bool:
        """Whether ``identity`` is one this rule is about."""
        if self.subject is not None and not _glob(identity.subject, self.subject):
            return False
        if self.client_id is not None and not _glob(identity.client_id, self.client_id):
            return False
        if not identity.scopes.issuperset(self.scopes):
            return False
        if self.groups and not set(self.groups).intersection(identity.groups):
            return False
        return all(_claim_holds(identity.claims.get(n), values) for n, values in self.claims)

    def allows(self, tool: str) -> bool:
        """Whether ``tool`` is among the tools this rule gives."""
        return any(fnmatchcase(tool, pattern) for pattern in self.tools)


def _glob(value: str | None, pattern: str) -> bool:
    return value is not None and fnmatchcase(value, pattern)


def _claim_holds(claim: Any, values: tuple[str, ...]) -> bool:
    if isinstance(claim, list):
        return any(isinstance(item, str) and item in values for item in claim)
    return isinstance(claim, str) and claim in values


_RATE_OPTIONS: dict[str, _Option] = {
    "tools": _Option(str, array=True, required=True),
    "calls": _Option(int, required=True),
    "period": _INT,
}


@dataclass(frozen=True)
class RateLimit:
    """One ``[[rate_limit]]`` entry: each identity may call each tool of ``tools`` at most
    ``calls`` times per ``period`` seconds (a token bucket: ``calls`` at once, then one more
    every ``period / calls`` seconds)."""

    tools: tuple[str, ...]
    calls: int
    period: int = 60

    def applies_to(self, tool: str) -> bool:
        """Whether ``tool`` is among this limit's tools."""
        return any(fnmatchcase(tool, pattern) for pattern in self.tools)


_RATE_STORE_OPTIONS: dict[str, _Option] = {
    "url": _STR,
    "url_env": _STR,
    "url_file": _STR,
    "on_unavailable": _Option(str, choices=("closed", "open")),
    "timeout_ms": _INT,
    "prefix": _STR,
}


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

    @classmethod
    def from_dict(cls, entry: Any) -> RateStoreSettings:
        """The table from its TOML form."""
        where = "[rate_store]"
        settings = cls(**_options(where, entry, _RATE_STORE_OPTIONS))
        ways = [settings.url, settings.url_env, settings.url_file]
        if sum(way is not None for way in ways) != 1:
            raise PolicyError(f"{where}: give one of url, url_env or url_file")
        if settings.url is not None:
            problem = redis_url_problem(settings.url)
            if problem is None and urlsplit(settings.url).password is not None:
                problem = "holds a password: give the URL in url_env or url_file instead"
            if problem is not None:
                raise PolicyError(f"{where}: url {problem}")
        if not 1 <= settings.timeout_ms <= 60_000:
            raise PolicyError(f"{where}: timeout_ms must be between 1 and 60000")
        return settings

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


def redis_url_problem(url: str) -> str | None:
    """Why ``url`` is not a Redis server's URL, or None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        return "must be a redis:// or rediss:// URL with a host"
    return None


def _rate_limit(index: int, entry: Any) -> RateLimit:
    where = f"[[rate_limit]] #{index}"
    limit = RateLimit(**_options(where, entry, _RATE_OPTIONS))
    if limit.calls < 1 or limit.period < 1:
        raise PolicyError(f"{where}: calls and period must be at least 1")
    return limit


def _access_rule(index: int, entry: Any) -> AccessRule:
    where = f"[[access]] #{index}"
    if not isinstance(entry, Mapping):
        raise PolicyError(f"{where} must be a table")
    claims = entry.get("claims", {})
    if not isinstance(claims, Mapping):
        raise PolicyError(f"{where}: claims must be a table of claim names")
    declared = {**_ACCESS_OPTIONS, "claims": _STR}  # checked below, as a table
    options = _options(where, {k: v for k, v in entry.items() if k != "claims"}, declared)
    wanted: list[tuple[str, tuple[str, ...]]] = []
    for name, value in claims.items():
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise PolicyError(f"{where}: claims.{name} must be a string or an array of strings")
        wanted.append((name, tuple(values)))
    return AccessRule(**options, claims=tuple(wanted))


@dataclass(frozen=True)
class GuardRule:
    """One guard on the arguments of the tools whose names match ``tool``."""

    tool: str
    argument: str
    guard: Guard
    #: The request whose params ``argument`` reads (for ``tools/call``, its arguments).
    method: str = TOOLS_CALL

    def applies_to(self, tool: str) -> bool:
        """Whether this rule is on ``tools/call`` and its glob matches a tool name
        (case-sensitive, like tool names)."""
        return self.method == TOOLS_CALL and fnmatchcase(tool, self.tool)

    @cached_property
    def tokens(self) -> tuple[str, ...] | None:
        """The argument pointer's tokens, parsed once: the policy runs on every call."""
        return from_fragment("#" + self.argument) if self.argument else ()


@dataclass(frozen=True)
class DeepRule(GuardRule):
    """A built-in deep check on the arguments of the tools whose names match ``tool``: run by
    the ``validate`` tool's dry run, and before real calls too when ``on_calls``; abandoned
    and reported after ``timeout`` seconds."""

    on_calls: bool = False
    timeout: float = DEFAULT_DEEP_TIMEOUT


@dataclass(frozen=True)
class ResultRule:
    """What is done to the results of the tools whose names match ``tool`` (a glob), or,
    with ``method``, to what the server sends for that method (its results and errors, or
    the notification itself; ``hygiene`` and ``redact`` only).

    ``hygiene``: ``flag`` (the default) records hidden characters and terminal sequences and
    annotates the result's ``_meta``, changing no content; ``strip`` removes them; ``off``
    looks at nothing. ``label`` marks the result as untrusted content in ``_meta``;
    ``delimiter`` (a template holding ``{text}``) wraps each text item. ``max_bytes`` and
    ``max_items`` bound a result's size and its number of content items (None: unbounded).
    ``redact`` replaces secrets (private keys, cloud access keys, bearer tokens).
    """

    tool: str = "*"
    hygiene: Hygiene = "flag"
    label: bool = False
    delimiter: str | None = None
    max_bytes: int | None = None
    max_items: int | None = None
    redact: bool = False
    method: str = TOOLS_CALL

    def applies_to(self, tool: str) -> bool:
        """Whether the glob matches a tool name (case-sensitive)."""
        return fnmatchcase(tool, self.tool)


@dataclass(frozen=True)
class ToolRule:
    """Opt-in rewrites for the tools whose names match ``tool`` (a glob), both off by default.

    ``json_strings``: an argument the ``inputSchema`` wants as an object or an array, sent as
    a string holding its JSON (some models do), is decoded before validation; the decoded
    value is what is checked and forwarded. ``inline_refs``: local ``$ref`` in the tool's
    listed schemas are inlined, for clients that drop ``$defs``.
    """

    tool: str = "*"
    json_strings: bool = False
    inline_refs: bool = False

    def applies_to(self, tool: str) -> bool:
        """Whether the glob matches a tool name (case-sensitive)."""
        return fnmatchcase(tool, self.tool)


DEFAULT_TOOL_RULE = ToolRule()
"""What applies to a tool no ``[[tool]]`` entry matches: no rewrite."""

DEFAULT_RESULT_RULE = ResultRule()
"""What applies to a tool no ``[[result]]`` entry matches: hygiene flags, nothing more."""


@dataclass(frozen=True)
class Policy:
    """Guards on tool arguments, and what their findings do.

    In ``enforce`` mode a call with an error finding is refused; in ``audit`` mode every
    finding is reported and the call goes ahead (shadow mode, for rolling a policy out).
    ``listing_rules`` are the ``[listing]`` table's lint selectors (None: the default);
    ``results`` the ``[[result]]`` entries, first match wins (:meth:`result_rule`);
    ``server_requests`` the hygiene of elicitation messages and sampling requests; ``tools``
    the ``[[tool]]`` entries, first match wins (:meth:`tool_rule`). ``allow_subdivision_flags``
    are the subdivision flags (ISO 3166-2 codes, upper case) whose tag characters every text
    check under this policy lets through besides the recommended ones: its text guards,
    result and request hygiene, and the listing stage.
    """

    rules: tuple[GuardRule, ...] = ()
    mode: Mode = "enforce"
    deep: tuple[DeepRule, ...] = ()
    listing_rules: tuple[str, ...] | None = None
    results: tuple[ResultRule, ...] = ()
    server_requests: Hygiene = "flag"
    tools: tuple[ToolRule, ...] = ()
    allow_subdivision_flags: tuple[str, ...] = ()

    def tool_rule(self, tool: str) -> ToolRule:
        """The first ``[[tool]]`` entry matching ``tool``, else :data:`DEFAULT_TOOL_RULE`."""
        for rule in self.tools:
            if rule.applies_to(tool):
                return rule
        return DEFAULT_TOOL_RULE

    def result_rule(self, tool: str | None, method: str = TOOLS_CALL) -> ResultRule:
        """The first ``[[result]]`` entry for ``method`` (for ``tools/call``, matching
        ``tool``; an answer to an unknown call matches none), else
        :data:`DEFAULT_RESULT_RULE`."""
        for rule in self.results:
            if rule.method != method:
                continue
            if method != TOOLS_CALL or (tool is not None and rule.applies_to(tool)):
                return rule
        return DEFAULT_RESULT_RULE

    #: The ``[auth]`` section: who may reach the HTTP proxy at all.
    auth: AuthSettings | None = None
    #: The ``[[access]]`` rules: which identity may call which tools.
    access: tuple[AccessRule, ...] = ()
    #: The ``[identity]`` table: the caller over stdio, where no token says who it is.
    identity: Identity | None = None
    #: The ``[upstream]`` section: the proxy's own credentials toward an HTTP upstream.
    upstream: UpstreamSettings | None = None
    #: The ``[[rate_limit]]`` entries: calls per identity and tool.
    rate_limits: tuple[RateLimit, ...] = ()
    #: The ``[rate_store]`` table: the rate limits' buckets kept in Redis (None: in memory).
    rate_store: RateStoreSettings | None = None

    def allows(self, identity: Identity | None, tool: str) -> bool:
        """Whether ``identity`` may call ``tool``: anyone may while there are no access
        rules; once there is one, only an identity some rule both matches and gives the
        tool to (an unknown caller, None, never)."""
        if not self.access:
            return True
        if identity is None:
            return False
        return any(rule.allows(tool) and rule.matches(identity) for rule in self.access)

    def check(
        self,
        tool: str,
        arguments: Any,
        *,
        pointer: str = ARGUMENTS,
        identity: Identity | None = None,
    ) -> list[Violation]:
        """Every finding of every guard that applies to this call by ``identity``, pointing
        into the message.

        Arguments a pattern does not reach (absent, or not a container where one is needed)
        are not checked: whether they must exist is the schema's business. A guard whose
        settings name the caller's claims is built for ``identity``'s (:func:`_bound`).
        """
        violations: list[Violation] = []
        for rule in self.rules:
            if not rule.applies_to(tool):
                continue
            for where, value in _select(arguments, rule.tokens):
                guard = _bound(rule.guard, identity)
                found = [guard] if isinstance(guard, GuardFinding) else guard.check(value)
                violations += [finding.at(pointer + where) for finding in found]
        return violations

    def guarded_methods(self) -> frozenset[str]:
        """The requests other than ``tools/call`` some ``[[guard]]`` is on
        (:meth:`check_request`)."""
        return frozenset(rule.method for rule in self.rules if rule.method != TOOLS_CALL)

    def check_request(
        self, method: str, params: Any, *, identity: Identity | None = None
    ) -> list[Violation]:
        """Every finding of the guards on ``method`` (a request other than ``tools/call``)
        about its ``params``, pointing into the message (``/params/uri``).

        Values a pattern does not reach are not checked, as for :meth:`check`; a resource
        URI meets its path and url guards together (:mod:`.uris`): a ``file:`` URI is the
        path guards', any other the url guards', and one neither kind allows is refused.
        """
        violations: list[Violation] = []
        uris: dict[str, tuple[Any, list[Guard], list[Guard]]] = {}
        fields = URI_FIELDS.get(method, ())
        for rule in self.rules:
            if rule.method != method:
                continue
            for where, value in _select(params, rule.tokens):
                guard = _bound(rule.guard, identity)
                if isinstance(guard, GuardFinding):
                    violations.append(guard.at(_PARAMS + where))
                elif where in fields and guard.kind in ("path", "url"):
                    _, paths, urls = uris.setdefault(where, (value, [], []))
                    (paths if guard.kind == "path" else urls).append(guard)
                else:
                    violations += [found.at(_PARAMS + where) for found in guard.check(value)]
        for where, (uri, paths, urls) in uris.items():
            violations += [found.at(_PARAMS + where) for found in check_uri(uri, paths, urls)]
        return violations

    async def check_deep(
        self,
        tool: str,
        arguments: Any,
        *,
        real_call: bool = False,
        pointer: str = ARGUMENTS,
        identity: Identity | None = None,
    ) -> list[Violation]:
        """The findings of the deep checks that apply to this call by ``identity`` (for a
        real call, those with ``on_calls``), run concurrently, each in a worker thread
        bounded by its timeout."""
        pending = []
        for rule in self.deep:
            if not rule.applies_to(tool) or not (rule.on_calls or not real_call):
                continue
            for where, value in _select(arguments, rule.tokens):
                guard = _bound(rule.guard, identity)
                if isinstance(guard, GuardFinding):
                    pending.append(_refused(guard.at(pointer + where)))
                    continue
                check = asyncio.to_thread(guard.check, value)
                pending.append(bounded(check, rule.timeout, f"{guard.kind} check", pointer + where))
        found = await asyncio.gather(*pending)
        return [violation for violations in found for violation in violations]

    def deep_on_calls(self, tool: str) -> bool:
        """Whether a real call of ``tool`` has deep checks to await."""
        return any(rule.on_calls and rule.applies_to(tool) for rule in self.deep)

    def blocks(self, violations: list[Violation]) -> bool:
        """Whether these findings refuse the call under this policy's mode."""
        return self.mode == "enforce" and any(v.severity is Severity.ERROR for v in violations)

    def covers(self, tool: str, argument: str) -> bool:
        """Whether some rule guards this argument pointer of this tool (for lint)."""
        return any(
            rule.applies_to(tool) and _pattern_matches(rule.argument, argument)
            for rule in self.rules
        )

    def covers_request(self, method: str, argument: str) -> bool:
        """Whether some rule on ``method`` (a request other than ``tools/call``) guards this
        pointer into its params (for lint)."""
        return any(
            rule.method == method and _pattern_matches(rule.argument, argument)
            for rule in self.rules
        )

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """Read a policy from a TOML file."""
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as error:
            raise PolicyError(f"cannot read the policy: {error.strerror}") from None
        except tomllib.TOMLDecodeError as error:
            raise PolicyError(f"the policy is not valid TOML: {error}") from None
        return cls.from_dict(data, base=Path(path).resolve().parent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, base: Path | None = None) -> Policy:
        """Build a policy from its TOML form (a mapping with ``mode``, ``guard`` and ``deep``
        entries). ``base`` is the directory relative path roots are read from (the policy
        file's, when loaded from one); without it a relative root is refused."""
        unknown = set(data) - set(_TOP_KEYS)
        if unknown:
            raise PolicyError(
                f"unknown top-level keys: {', '.join(sorted(unknown))} "
                f"(known: {', '.join(_TOP_KEYS)})"
            )
        mode = data.get("mode", "enforce")
        if mode not in ("enforce", "audit"):
            raise PolicyError('mode must be "enforce" or "audit"')
        flags = _flags(data.get("allow_subdivision_flags", []))
        # One list for the whole policy: a flag a text guard lets through is one hygiene
        # and the listing stage let through too.
        text = {"allow_subdivision_flags": flags} if flags else {}
        rules = _entries(
            data,
            base,
            "guard",
            _OPTIONS,
            {"method": _Option(str, choices=GUARD_METHODS)},
            lambda tool, argument, kind, options, entry: GuardRule(
                tool,
                argument,
                guard_kinds()[kind](**options, **(text if kind == "text" else {})),
                entry.get("method", TOOLS_CALL),
            ),
        )
        deep = _entries(
            data,
            base,
            "deep",
            _DEEP_OPTIONS,
            _DEEP_ENTRY,
            _deep_rule,
        )
        results = _array("result", data)
        identity = _fixed_identity(data["identity"]) if "identity" in data else None
        rate_limits = tuple(
            _rate_limit(i, entry) for i, entry in enumerate(_array("rate_limit", data), 1)
        )
        store = data.get("rate_store")
        rate_store = RateStoreSettings.from_dict(store) if store is not None else None
        if rate_store is not None and not rate_limits:
            raise PolicyError("[rate_store] needs [[rate_limit]] entries to keep")
        return cls(
            rules=rules,
            mode=mode,
            deep=deep,
            auth=AuthSettings.from_dict(data["auth"]) if "auth" in data else None,
            access=tuple(
                _access_rule(i, entry) for i, entry in enumerate(_array("access", data), 1)
            ),
            identity=identity,
            upstream=UpstreamSettings.from_dict(data["upstream"]) if "upstream" in data else None,
            rate_limits=rate_limits,
            rate_store=rate_store,
            listing_rules=_listing(data.get("listing")),
            results=tuple(_result(index, entry) for index, entry in enumerate(results, start=1)),
            server_requests=_server_requests(data.get("server_requests")),
            tools=tuple(
                ToolRule(**_options(f"[[tool]] #{index}", entry, _TOOL_KEYS))
                for index, entry in enumerate(_array("tool", data), start=1)
            ),
            allow_subdivision_flags=flags,
        )


def _bound(guard: Guard, identity: Identity | None) -> Guard | GuardFinding:
    """The guard that checks a call by ``identity``: ``guard`` itself, or, for settings that
    name claims, the guard built for its claims (or the finding refusing the call)."""
    if not isinstance(guard, ClaimGuard):
        return guard
    return guard.bind(identity.claims if identity is not None else {})


async def _refused(violation: Violation) -> list[Violation]:
    return [violation]


def _options(where: str, entry: Any, known: Mapping[str, _Option]) -> dict[str, Any]:
    """The options of a table, each checked against its declaration (lists become tuples)."""
    if not isinstance(entry, Mapping):
        raise PolicyError(f"{where} must be a table")
    unknown = sorted(key for key in entry if key not in known)
    if unknown:
        raise PolicyError(
            f"{where}: unknown keys: {', '.join(unknown)} (known: {', '.join(known)})"
        )
    missing = [name for name, option in known.items() if option.required and name not in entry]
    if missing:
        raise PolicyError(f"{where}: missing options: {', '.join(missing)}")
    for name, option in known.items():
        problem = option.problem(entry[name]) if name in entry else None
        if problem is not None:
            raise PolicyError(f"{where}: {name} {problem}")
    return {name: _frozen(entry[name]) for name in known if name in entry}


def _flags(value: Any) -> tuple[str, ...]:
    """The top-level ``allow_subdivision_flags``: ISO 3166-2 codes, upper case, sorted."""
    problem = _STRS.problem(value)
    if problem is not None:
        raise PolicyError(f"allow_subdivision_flags {problem}")
    try:
        return subdivision_flags(value)
    except ValueError as error:
        raise PolicyError(str(error)) from None


def _listing(table: Any) -> tuple[str, ...] | None:
    """The ``[listing]`` table's rule selectors, or None when it does not set them."""
    if table is None:
        return None
    rules = _options("[listing]", table, _LISTING_KEYS).get("rules")
    return tuple(rules) if rules is not None else None


def _array(key: str, data: Mapping[str, Any]) -> list[Any]:
    """The array of tables ``[[key]]`` (empty when absent)."""
    entries = data.get(key, [])
    if not isinstance(entries, list):
        raise PolicyError(f"{key} must be a list of [[{key}]] tables")
    return entries


def _result(index: int, entry: Any) -> ResultRule:
    where = f"[[result]] #{index}"
    table = _options(where, entry, _RESULT_KEYS)
    method = table.get("method", TOOLS_CALL)
    if method == TOOLS_CALL and "tool" not in table:
        raise PolicyError(f"{where}: missing options: tool")
    if method != TOOLS_CALL:
        # Labels, delimiters and bounds are about a tool's result; another method's
        # text gets hygiene (and redaction) only.
        extra = [key for key in ("tool", *_TOOL_RESULT_ONLY) if key in table]
        if extra:
            raise PolicyError(f'{where}: {", ".join(extra)} only for method = "{TOOLS_CALL}"')
    delimiter = table.get("delimiter")
    if delimiter is not None and delimiter.count(_TEXT_SLOT) != 1:
        raise PolicyError(f"{where}: delimiter must hold {_TEXT_SLOT} exactly once")
    for bound in ("max_bytes", "max_items"):
        if table.get(bound, 1) < 1:
            raise PolicyError(f"{where}: {bound} must be at least 1")
    return ResultRule(**table)


def _server_requests(table: Any) -> Hygiene:
    if table is None:
        return "flag"
    hygiene: Hygiene = _options("[server_requests]", table, _SERVER_REQUEST_KEYS).get(
        "hygiene", "flag"
    )
    return hygiene


_Rule = TypeVar("_Rule", bound=GuardRule)


def _entries(
    data: Mapping[str, Any],
    base: Path | None,
    section: str,
    kinds: Mapping[str, Mapping[str, _Option]],
    common: Mapping[str, _Option],
    build: Callable[[str, str, str, dict[str, Any], Mapping[str, Any]], _Rule],
) -> tuple[_Rule, ...]:
    """The rules of a ``[[section]]``, each entry checked and then built from its tool,
    argument, kind, options (lists as tuples) and the entry itself; a guard or check that
    refuses its configuration is reported as the entry's."""
    rules = []
    for index, entry in enumerate(_array(section, data), start=1):
        where = f"[[{section}]] #{index}"
        tool, argument, kind, options = _entry(where, entry, kinds, common)
        if kind == "path" and base is not None:
            # A policy kept beside the server it protects names its roots relative to itself.
            options["roots"] = tuple(str(base / root) for root in options["roots"])
        try:
            claims = tuple(dict.fromkeys(n for v in options.values() for n in claims_in(v)))
            if not claims:
                rules.append(build(tool, argument, kind, options, entry))
                continue
            # Settings that name claims are checked now with a stand-in value (a templated
            # root with "/", which exists), and built for each caller's values at call time.
            sample = substitute(options, dict.fromkeys(claims, "x"))
            if kind == "path":
                sample["roots"] = tuple("/" if claims_in(r) else r for r in options["roots"])
            rule = build(tool, argument, kind, sample, entry)
        except ValueError as error:
            raise PolicyError(f"{where} ({kind}): {error}") from None
        per_caller = partial(_guard_of, build, tool, argument, kind, entry=entry)
        rules.append(replace(rule, guard=ClaimGuard(kind, options, per_caller, claims)))
    return tuple(rules)


def _guard_of(
    build: Callable[[str, str, str, dict[str, Any], Mapping[str, Any]], GuardRule],
    tool: str,
    argument: str,
    kind: str,
    options: dict[str, Any],
    *,
    entry: Mapping[str, Any],
) -> Guard:
    """The guard ``build`` makes of an entry's ``options`` (a caller's claims filled in)."""
    return build(tool, argument, kind, options, entry).guard


def _deep_rule(
    tool: str, argument: str, kind: str, options: dict[str, Any], entry: Mapping[str, Any]
) -> DeepRule:
    check = _deep_check(kind, options)
    # A check abandoned at its timeout would go on in its thread, holding a connection: its
    # own bounds (the database's, the HTTP client's) must end it first.
    bound, what = 0.0, ""
    if isinstance(check, SqlDatabaseCheck):
        bound = check.connect_timeout + check.statement_timeout_ms / 1000
        what = "connect_timeout plus statement_timeout_ms"
    elif isinstance(check, UrlReachCheck) and check.reachable:
        bound = check.request_timeout_ms / 1000 * (check.max_redirects + 1)
        what = "request_timeout_ms for each of max_redirects + 1 requests"
    # Unsaid, the timeout leaves the check's own bounds a second to end it.
    timeout = float(entry.get("timeout", max(DEFAULT_DEEP_TIMEOUT, bound + 1)))
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    if bound >= timeout:
        raise ValueError(
            f"timeout ({timeout:g} s) must exceed {what} ({bound:g} s), so that the check"
            " ends on its own before it is abandoned"
        )
    return DeepRule(tool, argument, check, on_calls=entry.get("on_calls", False), timeout=timeout)


def _deep_check(kind: str, options: dict[str, Any]) -> Guard:
    """The built-in deep check of ``kind``; ValueError for a configuration it refuses."""
    from .path import PathGuard  # noqa: PLC0415 - import cycles: kinds import base
    from .schedule import CronCheck, TimeCheck  # noqa: PLC0415
    from .sql import SqlGuard  # noqa: PLC0415
    from .url import UrlGuard  # noqa: PLC0415

    if kind == "path":
        return PathGuard(**options)
    if kind == "url":
        reach = {
            name: options.pop(name)
            for name in ("reachable", "request_timeout_ms", "max_redirects")
            if name in options
        }
        return UrlReachCheck(UrlGuard(**options), **reach)
    if kind == "cron":
        return CronCheck(**options)
    if kind == "time":
        return TimeCheck(**options)
    database = {
        name: options.pop(name)
        for name in (
            "database",
            "dsn_env",
            "dsn_file",
            "max_rows",
            "statement_timeout_ms",
            "connect_timeout",
        )
        if name in options
    }
    guard = SqlGuard(dialect=database["database"], **options)
    return SqlDatabaseCheck(guard=guard, **database)


def _entry(
    where: str,
    entry: Any,
    kinds: Mapping[str, Mapping[str, _Option]],
    common: Mapping[str, _Option],
) -> tuple[str, str, str, dict[str, Any]]:
    if not isinstance(entry, Mapping):
        raise PolicyError(f"{where} must be a table")
    method = entry.get("method", TOOLS_CALL)
    # A guard on another request checks every one of them: it names no tool.
    required = _RULE_KEYS if method == TOOLS_CALL else _RULE_KEYS[1:]
    missing = [key for key in required if not isinstance(entry.get(key), str)]
    if missing:
        raise PolicyError(f"{where} needs string values for: {', '.join(missing)}")
    argument = entry["argument"]
    if argument and from_fragment("#" + argument) is None:
        raise PolicyError(f"{where}: argument must be a JSON Pointer such as /path or /files/*")
    kind = entry["kind"]
    if kind not in kinds:
        raise PolicyError(f"{where}: unknown kind {kind!r} (known: {', '.join(kinds)})")
    where = f"{where} ({kind})"
    known = {**common, **kinds[kind]}
    # The rule's own keys are declared with the kind's options, so that an unknown key's
    # message lists them all; they were checked above.
    options = _options(where, entry, dict.fromkeys(_RULE_KEYS, _STR) | known)
    if method != TOOLS_CALL and "tool" in entry:
        raise PolicyError(
            f'{where}: tool only for method = "{TOOLS_CALL}"; a guard on {method} checks every '
            "such request"
        )
    tool = entry.get("tool", "*")
    return tool, argument, kind, {k: v for k, v in options.items() if k in kinds[kind]}


def _frozen(value: Any) -> Any:
    # Guards are frozen dataclasses: TOML arrays become tuples so the guard stays hashable.
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


def guard_kinds() -> dict[str, Callable[..., Guard]]:
    """The guard kinds a policy can name, by ``kind``."""
    from .argv import ArgvGuard  # noqa: PLC0415 - import cycles: kinds import base
    from .path import PathGuard  # noqa: PLC0415
    from .sql import SqlGuard  # noqa: PLC0415
    from .text import TextGuard  # noqa: PLC0415
    from .url import UrlGuard  # noqa: PLC0415

    return {
        "argv": ArgvGuard,
        "path": PathGuard,
        "sql": SqlGuard,
        "text": TextGuard,
        "url": UrlGuard,
    }


def select(arguments: Any, pattern: str) -> Iterator[tuple[str, Any]]:
    """Each value a pattern reaches, with its exact JSON Pointer; ``*`` is any item or key.

    ``""`` is the arguments object itself. Iterative over an explicit frontier: the
    arguments were bounded by the schema engine, but a pattern may fan out over every item.
    """
    yield from _select(arguments, from_fragment("#" + pattern) if pattern else ())


def _select(arguments: Any, tokens: tuple[str, ...] | None) -> Iterator[tuple[str, Any]]:
    if tokens is None:
        return
    frontier: list[tuple[tuple[str | int, ...], Any]] = [((), arguments)]
    for token in tokens:
        step: list[tuple[tuple[str | int, ...], Any]] = []
        for path, value in frontier:
            step += list(_children(path, value, token))
        frontier = step
    for path, value in frontier:
        yield to_pointer(path), value


def _children(
    path: tuple[str | int, ...], value: Any, token: str
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(value, Mapping):
        if token == "*":
            yield from (((*path, key), item) for key, item in value.items())
        elif token in value:
            yield (*path, token), value[token]
    elif isinstance(value, list):
        if token == "*":
            yield from (((*path, index), item) for index, item in enumerate(value))
        elif token.isdigit() and int(token) < len(value):
            yield (*path, int(token)), value[int(token)]


def _pattern_matches(pattern: str, pointer: str) -> bool:
    pattern_tokens = from_fragment("#" + pattern) if pattern else ()
    pointer_tokens = from_fragment("#" + pointer) if pointer else ()
    if pattern_tokens is None or pointer_tokens is None:
        return False
    return len(pattern_tokens) == len(pointer_tokens) and all(
        p in ("*", q) for p, q in zip(pattern_tokens, pointer_tokens, strict=True)
    )

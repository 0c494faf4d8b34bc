"""The policy file's tables, each declared once: its name, whether it is one table or an
array of them, its keys (types, defaults, descriptions), a line of docs and the builder that
turns an entry into what :class:`~strictmcp.policy.Policy` holds.

:data:`TABLES` is the one registry: the loader (:meth:`Policy.from_dict`), the top-level
"known:" message and the reference page (``docs/policy-reference.md``) all read it, so a new
table is one :class:`Table` here. Rules that span tables are :func:`coherent`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..guards.subdivisions import subdivision_flags
from ..schema import from_fragment
from .callers import AccessRule, Identity, RateLimit
from .kinds import (
    DEEP_ENTRY,
    DEEP_OPTIONS,
    GUARD_ENTRY,
    GUARD_OPTIONS,
    RULE_OPTIONS,
    deep_rule,
    guard_rule,
)
from .options import Context, Option, PolicyError, checked
from .rules import RESULT_METHODS, TOOLS_CALL, Hygiene, ResultRule, ToolRule
from .settings import (
    ASYMMETRIC_ALGORITHMS,
    AUDIT_RECORDS,
    SERVER_NAME,
    AuditRecord,
    AuthSettings,
    EndpointSettings,
    FlowRule,
    GatewaySettings,
    InterceptorSettings,
    RateStoreSettings,
    ServerSettings,
    UpstreamSettings,
)
from .urls import is_safe_url, redis_url_problem

HYGIENE = ("flag", "strip", "off")
_TOOL_RESULT_ONLY = ("label", "delimiter", "max_bytes", "max_items")
_TEXT_SLOT = "{text}"


@dataclass(frozen=True)
class Table:
    """One table of the file: ``[name]``, or ``[[name]]`` when ``array``.

    ``build`` turns one entry (its TOML value, unchecked) into what the policy's ``policy_field``
    holds (for an array, each entry into one item of a tuple), given where it is for its
    messages (``[auth]``, ``[[guard]] #2``); ``absent`` is the field's value without the
    table. ``options`` are its keys, and ``kinds`` the options of each ``kind`` an entry may
    name (``[[guard]]``, ``[[deep]]``).
    """

    name: str
    policy_field: str
    doc: str
    options: Mapping[str, Option]
    build: Callable[[str, Any, Context], Any]
    array: bool = False
    kinds: Mapping[str, Mapping[str, Option]] = field(default_factory=dict)
    absent: Any = None

    @property
    def header(self) -> str:
        """How the file writes it: ``[name]`` or ``[[name]]``."""
        return f"[[{self.name}]]" if self.array else f"[{self.name}]"

    def load(self, data: Mapping[str, Any], context: Context) -> Any:
        """The field's value from the whole file's ``data``."""
        if self.name not in data:
            return () if self.array else self.absent
        if not self.array:
            return self.build(self.header, data[self.name], context)
        entries = data[self.name]
        if not isinstance(entries, list):
            raise PolicyError(f"{self.name} must be a list of [[{self.name}]] tables")
        return tuple(
            self.build(f"{self.header} #{index}", entry, context)
            for index, entry in enumerate(entries, start=1)
        )


_AUTH = {
    "issuer": Option(
        str,
        required=True,
        doc="The authorization server's issuer identifier (https; http only on loopback).",
    ),
    "resource": Option(
        str,
        required=True,
        doc=(
            "The proxy's canonical URL, as clients reach it (behind a balancer, its public URL): "
            "the audience tokens must name."
        ),
    ),
    "jwks_url": Option(
        str,
        default="discovered",
        doc=(
            "Where the issuer's keys are; by default the `jwks_uri` of its metadata (RFC 8414, "
            "else OpenID discovery), whose `issuer` must match."
        ),
    ),
    "jwks_file": Option(str, doc="A local JWKS file instead (the issuer is then never asked)."),
    "algorithms": Option(
        str,
        array=True,
        choices=ASYMMETRIC_ALGORITHMS,
        default="all of `RS256`...`RS512`, `PS256`...`PS512`, `ES256`...`ES512`, `EdDSA`",
        doc=(
            "The accepted signature algorithms. Only asymmetric ones can be named: `HS256` and "
            "`none` are always refused."
        ),
    ),
    "scopes": Option(
        str,
        array=True,
        default="`[]`",
        doc="The scopes every token must grant (also the metadata's `scopes_supported`).",
    ),
    "leeway": Option(
        int,
        default="`30`",
        doc="Seconds of clock skew allowed on `exp` and `nbf` (at most 300).",
    ),
    "jwks_refresh": Option(
        int,
        default="`60`",
        doc=(
            "The fewest seconds between two fetches of the JWKS for a `kid` it does not hold: "
            "random `kid`s cannot make the proxy hammer the issuer."
        ),
    ),
    "token_header": Option(
        str,
        default='`"authorization"`',
        doc=(
            "The request header holding the token: behind a gateway that authenticated the client"
            " and forwards its token in its own header (`x-forwarded-access-token`), name that "
            "header. The token is verified all the same; an unsigned identity header (`x-user`) "
            "is never trusted."
        ),
    ),
    "introspection_url": Option(
        str,
        doc=(
            "Opaque tokens (anything not a JWT) are checked at this RFC 7662 endpoint: the answer"
            " must be `active`, of `issuer` (when it names one), for `resource` (`aud`) and not "
            "expired; it is trusted for a minute at most, so a revoked token stops working within"
            " one. JWTs are still verified locally."
        ),
    ),
    "client_id": Option(
        str,
        doc=(
            "The proxy's client id at the introspection endpoint (required with "
            "`introspection_url`)."
        ),
    ),
    "client_secret_env": Option(
        str,
        doc="Where its secret is (one of them, with `introspection_url`); read at start-up.",
    ),
    "client_secret_file": Option(
        str,
        doc="Where its secret is (one of them, with `introspection_url`); read at start-up.",
    ),
}
_UPSTREAM = {
    "bearer_env": Option(str, doc="The environment variable holding a static token."),
    "bearer_file": Option(
        str,
        doc="The file holding a static token (surrounding whitespace ignored).",
    ),
    "token_url": Option(
        str,
        doc="The token endpoint of the client credentials grant (https; http only on loopback).",
    ),
    "client_id": Option(str, doc="The proxy's client id there (required with `token_url`)."),
    "client_secret_env": Option(
        str,
        doc="Where its client secret is (one of them, with `token_url`).",
    ),
    "client_secret_file": Option(
        str,
        doc="Where its client secret is (one of them, with `token_url`).",
    ),
    "scope": Option(str, doc="The scope to ask for."),
    "resource": Option(
        str,
        doc="The resource indicator to ask for (RFC 8707): the upstream's URL.",
    ),
}
_IDENTITY = {
    "subject": Option(str, required=True, doc="The subject the rules and records see."),
    "client_id": Option(str, doc="Its client id."),
    "scopes": Option(str, array=True, doc="Its scopes."),
    "groups": Option(str, array=True, doc="Its groups."),
    "claims": Option(
        str,
        table=True,
        doc=(
            "More claims, for `[[access]]` rules and `{claim.NAME}` settings: "
            '`claims = { tenant = "acme" }`. Its claims also hold `sub` (and `client_id`).'
        ),
    ),
}
_ACCESS = {
    "tools": Option(str, array=True, required=True, doc="Globs over tool names (`read_*`, `*`)."),
    "subject": Option(str, doc="A glob over the token's `sub`."),
    "client_id": Option(str, doc="A glob over the token's `client_id` (or `azp`)."),
    "scopes": Option(
        str,
        array=True,
        doc="Scopes the token must all grant (`scope`, or a `scp` list).",
    ),
    "groups": Option(
        str,
        array=True,
        doc="Groups of which the token's `groups` claim must hold at least one.",
    ),
    "claims": Option(
        str,
        array=True,
        table=True,
        doc=(
            "Claim names, each with a string or an array of strings: the claim must equal one "
            '(or, when the claim is a list, contain one): `claims = { tenant = ["acme"] }`.'
        ),
    ),
}
_RATE_LIMIT = {
    "tools": Option(str, array=True, required=True, doc="Globs over tool names."),
    "calls": Option(int, required=True, doc="Calls per period (and the most at once)."),
    "period": Option(int, default="`60`", doc="The period, in seconds."),
}
_RATE_STORE = {
    "url": Option(
        str,
        doc="The server: `redis://host:port/db` or `rediss://` (TLS), without a password.",
    ),
    "url_env": Option(
        str,
        doc=(
            "The environment variable or the file holding the URL, for one with a password "
            "(`redis://:secret@host`). Give exactly one of `url`, `url_env`, `url_file`; read "
            "when the proxy starts."
        ),
    ),
    "url_file": Option(
        str,
        doc=(
            "The environment variable or the file holding the URL, for one with a password "
            "(`redis://:secret@host`). Give exactly one of `url`, `url_env`, `url_file`; read "
            "when the proxy starts."
        ),
    ),
    "on_unavailable": Option(
        str,
        choices=("closed", "open"),
        default='`"closed"`',
        doc="What a limited call gets while Redis cannot be reached.",
    ),
    "timeout_ms": Option(
        int,
        default="`500`",
        doc="How long a call waits for Redis (1 to 60 000).",
    ),
    "prefix": Option(
        str,
        default='`"strictmcp:rate:"`',
        doc=(
            "What every key starts with (the rest is a SHA-256 of the limit, the caller and the "
            "tool)."
        ),
    ),
}
_RESULT = {
    "method": Option(
        str,
        choices=RESULT_METHODS,
        default='`"tools/call"`',
        doc=(
            "`tools/call`, `resources/read`, `prompts/get`, `completion/complete`, "
            "`prompts/list`, `resources/list`, `resources/templates/list`, "
            "`initialize`, `server/discover`, `tasks/get`, `tasks/list`, `tasks/cancel` (their "
            "results and their JSON-RPC errors), `notifications/message`, "
            "`notifications/progress` or `notifications/tasks/status`."
        ),
    ),
    "tool": Option(
        str,
        default="required for `tools/call`",
        doc="A glob over tool names; refused with another `method`.",
    ),
    "hygiene": Option(
        str,
        choices=HYGIENE,
        default='`"flag"`',
        doc=(
            "`flag` records what it finds (audit records at the `result` stage) and says so in "
            "the `_meta` key `dev.strictmcp/hygiene` (`{action, found}`), changing no content; "
            "`strip` removes it; `off` looks at nothing."
        ),
    ),
    "label": Option(
        bool,
        default="`false`",
        doc="`tools/call` only: mark the result untrusted in `_meta` (`dev.strictmcp/untrusted`).",
    ),
    "delimiter": Option(str, doc="`tools/call` only: wrap each text item; holds `{text}` once."),
    "max_bytes": Option(
        int,
        doc="`tools/call` only: a larger result is replaced by an `isError` result.",
    ),
    "max_items": Option(
        int,
        doc="`tools/call` only: a larger result is replaced by an `isError` result.",
    ),
    "redact": Option(
        bool,
        default="`false`",
        doc="Replace secrets (private keys, cloud access keys, bearer tokens).",
    ),
}
_TOOL = {
    "tool": Option(str, required=True, doc="A glob over tool names."),
    "json_strings": Option(
        bool,
        default="`false`",
        doc=(
            "An argument the `inputSchema` wants as an object or an array, sent as a string "
            "holding its JSON (some models do), is decoded before validation; the decoded "
            "value is what is checked and forwarded."
        ),
    ),
    "inline_refs": Option(
        bool,
        default="`false`",
        doc="Local `$ref` in the tool's listed schemas are inlined, for clients that drop `$defs`.",
    ),
}
_LISTING = {
    "rules": Option(
        str,
        array=True,
        default='`["SMT401"]`',
        doc=(
            "Lint rule codes or code prefixes (`SMT4`), `ALL` or `DEFAULT` (lint's default "
            "selection); `[]` runs none. SMT401 finds hidden characters in names, titles and "
            "descriptions: Unicode tag characters, bidirectional controls, zero-width and other "
            "invisible characters, control characters."
        ),
    ),
}
_SERVER_REQUESTS = {
    "hygiene": Option(
        str,
        choices=HYGIENE,
        default='`"flag"`',
        doc=(
            "`flag` records hidden characters and terminal sequences in elicitation messages "
            "and forms (titles, descriptions, choices) and sampling requests; `strip` removes "
            "them; `off` looks at nothing."
        ),
    ),
}

_SERVER = {
    "name": Option(
        str,
        required=True,
        doc=(
            "The server's name, unique: letters, digits and `-`, at most 32. Its tools and "
            "prompts are offered as name, separator, their own name (`files__read_file`)."
        ),
    ),
    "command": Option(
        str, array=True, doc="The command that starts it (stdio); one of `command` or `url`."
    ),
    "url": Option(
        str, doc="Its streamable HTTP endpoint (https; http only on loopback); one of the two."
    ),
    "env": Option(
        str,
        table=True,
        default="`{}`",
        doc="Variables set for the command, on top of the gateway's environment: plain values, "
        "never secrets.",
    ),
    "env_from": Option(
        str,
        table=True,
        default="`{}`",
        doc=(
            "Variables set for the command from the gateway's own environment (`API_KEY = "
            '"FILES_API_KEY"`): how a secret reaches it. A variable not set is refused at start.'
        ),
    ),
    "upstream": Option(
        dict,
        doc="The gateway's own credentials toward `url`: the keys of `[upstream]`.",
    ),
    "tools": Option(
        str,
        array=True,
        doc="Globs over the server's own tool names: only these are offered (default: all).",
    ),
    "exclude_tools": Option(
        str,
        array=True,
        default="`[]`",
        doc="Globs of its tools not offered: not listed, their calls answered as unknown tools.",
    ),
    "mode": Option(
        str,
        choices=("enforce", "audit"),
        doc=(
            "The mode of the policy's stages (guards, deep checks, access, rate limits) for "
            "this server's tools; default: the file's `mode`."
        ),
    ),
    "required": Option(
        bool,
        default="`false`",
        doc=(
            "Whether the gateway is unready (`/readyz` answers 503, naming it) while this "
            "server is down; without it, only when no server can serve."
        ),
    ),
    "pin": Option(
        str,
        doc=(
            "A lock file written by `strictmcp pin -- COMMAND` for this server: its own names, "
            "unchanged; only this server's tools (and prompts) are judged by it."
        ),
    ),
}
_GATEWAY = {
    "separator": Option(
        str,
        default='`"__"`',
        doc="Between a server's name and a tool's or prompt's: 1 to 4 of `_` and `.`.",
    ),
    "restart_delay": Option(
        float, default="`1.0`", doc="Seconds before a server that exited is started again."
    ),
    "restart_max_delay": Option(
        float, default="`30.0`", doc="The longest delay, which doubles after each failed start."
    ),
    "max_restarts": Option(
        int,
        default="`10`",
        doc="Starts in a row that never reach an answered `initialize` before it is left down.",
    ),
    "start_timeout": Option(
        float,
        default="`30.0`",
        doc="Seconds for each request the gateway makes of a server itself (handshake, listings).",
    ),
}
_AUDIT = {
    "record": Option(
        str,
        choices=AUDIT_RECORDS,
        default='`"findings"`',
        doc=(
            "What the audit log (`--audit-log`) gets: a record of each finding (`findings`), "
            "or also a `call` record of every client request when it ends, allowed ones too "
            "(`all`). `--audit` on the command line, when given, wins over it."
        ),
    ),
}
_FLOW = {
    "from": Option(
        str,
        array=True,
        required=True,
        doc="Globs over `[[server]]` names: the servers whose results are tainted.",
    ),
    "to": Option(
        str,
        array=True,
        required=True,
        doc="Globs over `[[server]]` names: the servers tainted data may not reach.",
    ),
    "sensitive": Option(
        str,
        array=True,
        default="`[]`",
        doc=(
            "JSON Pointers into a result (`/structuredContent/token`, `*` for any key or item) "
            "whose values are tainted too, besides the secrets the redaction patterns know."
        ),
    ),
    "min_length": Option(
        int,
        default="`8`",
        doc="Values shorter than this many characters are never tainted (at least 4).",
    ),
    "action": Option(
        str,
        choices=("refuse", "audit", "redact"),
        default='`"refuse"`',
        doc=(
            "`refuse` the request (`flow-cross-server`), `audit` it (reported, sent on), or "
            "`redact` (sent on with the data replaced)."
        ),
    ),
}
_ENDPOINT = {
    "path": Option(
        str,
        required=True,
        doc=(
            "Where it is served: `/` and up to 200 letters, digits and `-._~/`; unique, not "
            "the main `--path`, not under `/.well-known/`."
        ),
    ),
    "servers": Option(
        str,
        array=True,
        default="all",
        doc="The `[[server]]` tables it serves, by name (the gateway only).",
    ),
    "tools": Option(
        str,
        array=True,
        default="all",
        doc=(
            "Globs over the tool names the client sees (`files__read_*` in the gateway): only "
            "these are offered there, within what the top-level `tools` offers."
        ),
    ),
    "exclude_tools": Option(
        str,
        array=True,
        default="`[]`",
        doc="Globs of tools not offered there: not listed, their calls answered as unknown tools.",
    ),
}
_INTERCEPTOR = {
    "name": Option(
        str,
        required=True,
        doc="The interceptor's name on its server (`interceptor/invoke`), unique among them.",
    ),
    "command": Option(
        str,
        array=True,
        doc=(
            "The command that starts its server (stdio), supervised and restarted when it "
            "ends; give this or `url`."
        ),
    ),
    "url": Option(
        str,
        doc=(
            "Its streamable HTTP endpoint (https://, or http:// on loopback), instead of "
            "`command`: reached again after its session ends."
        ),
    ),
    "upstream": Option(
        dict,
        doc="With `url`: the proxy's own credentials toward it, the keys of `[upstream]`.",
    ),
    "events": Option(
        str,
        array=True,
        default='`["tools/call"]`',
        doc="The lifecycle events it is invoked on (`tools/call`, `resources/read`, `*` all).",
    ),
    "phase": Option(
        str,
        choices=("request", "response", "both"),
        default='`"both"`',
        doc="On the client's requests, the server's responses, or both.",
    ),
    "type": Option(
        str,
        choices=("validation", "mutation"),
        required=True,
        doc=(
            "`validation` (its `valid: false` refuses the message) or `mutation` (its "
            "payload replaces the message's)."
        ),
    ),
    "mode": Option(
        str,
        choices=("enforce", "audit"),
        default='`"enforce"`',
        doc="`audit` records its decisions and failures and never blocks or changes anything.",
    ),
    "fail_open": Option(
        bool,
        default="`false`",
        doc=(
            "Whether a failure (down, late, a malformed answer) lets the message through "
            "(recorded); by default it is refused, `interceptor-unavailable`."
        ),
    ),
    "priority": Option(
        int, default="`0`", doc="Mutations run lower first, then by name; validations all run."
    ),
    "timeout_ms": Option(
        int, default="`1000`", doc="How long one invocation may take (1 to 60000)."
    ),
}
_SEPARATOR = re.compile(r"[_.]{1,4}")
_ENDPOINT_PATH = re.compile(r"/[A-Za-z0-9._~/-]{1,200}")
WELL_KNOWN_PREFIX = "/.well-known/"
"""Where no ``[[endpoint]]`` may be: the metadata documents are served there."""
_NAME = re.compile(SERVER_NAME)


def _auth(where: str, entry: Any, context: Context) -> AuthSettings:
    settings = AuthSettings(**checked(where, entry, _AUTH))
    for name in ("issuer", "resource", "jwks_url", "introspection_url"):
        url = getattr(settings, name)
        if url is not None and not is_safe_url(url):
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


def _upstream(where: str, entry: Any, context: Context) -> UpstreamSettings:
    settings = UpstreamSettings(**checked(where, entry, _UPSTREAM))
    ways = [settings.bearer_env, settings.bearer_file, settings.token_url]
    if sum(way is not None for way in ways) != 1:
        raise PolicyError(f"{where}: give one of bearer_env, bearer_file or token_url")
    if settings.token_url is None:
        return settings
    if not is_safe_url(settings.token_url):
        raise PolicyError(f"{where}: token_url must be an https:// URL (http:// only on loopback)")
    secrets = [settings.client_secret_env, settings.client_secret_file]
    if settings.client_id is None or sum(s is not None for s in secrets) != 1:
        raise PolicyError(
            f"{where}: token_url needs client_id and one of client_secret_env or client_secret_file"
        )
    return settings


def _identity(where: str, entry: Any, context: Context) -> Identity:
    """Who the stdio proxy's client is, for its rules and audit. Its claims are ``sub`` (and
    ``client_id``) and those of its ``claims`` table."""
    options = checked(where, entry, _IDENTITY)
    client_id = options.get("client_id")
    own = {"sub": options["subject"]} | ({"client_id": client_id} if client_id else {})
    return Identity(
        subject=options["subject"],
        client_id=client_id,
        scopes=frozenset(options.get("scopes", ())),
        groups=options.get("groups", ()),
        claims=own | dict(options.get("claims", {})),
    )


def _access(where: str, entry: Any, context: Context) -> AccessRule:
    options = checked(where, entry, _ACCESS)
    claims = options.pop("claims", {})
    wanted = tuple((n, (v,) if isinstance(v, str) else tuple(v)) for n, v in claims.items())
    return AccessRule(**options, claims=wanted)


def _rate_limit(where: str, entry: Any, context: Context) -> RateLimit:
    limit = RateLimit(**checked(where, entry, _RATE_LIMIT))
    if limit.calls < 1 or limit.period < 1:
        raise PolicyError(f"{where}: calls and period must be at least 1")
    return limit


def _rate_store(where: str, entry: Any, context: Context) -> RateStoreSettings:
    settings = RateStoreSettings(**checked(where, entry, _RATE_STORE))
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


def _result(where: str, entry: Any, context: Context) -> ResultRule:
    table = checked(where, entry, _RESULT)
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


def _tool(where: str, entry: Any, context: Context) -> ToolRule:
    return ToolRule(**checked(where, entry, _TOOL))


def _listing(where: str, entry: Any, context: Context) -> tuple[str, ...] | None:
    # The codes are checked by whoever runs them, lint being a higher layer than the policy.
    rules = checked(where, entry, _LISTING).get("rules")
    return tuple(rules) if rules is not None else None


def _server_requests(where: str, entry: Any, context: Context) -> Hygiene:
    hygiene: Hygiene = checked(where, entry, _SERVER_REQUESTS).get("hygiene", "flag")
    return hygiene


def _audit(where: str, entry: Any, context: Context) -> AuditRecord:
    record: AuditRecord = checked(where, entry, _AUDIT).get("record", "findings")
    return record


def _server(where: str, entry: Any, context: Context) -> ServerSettings:
    options = checked(where, entry, _SERVER)
    name = options["name"]
    if not _NAME.fullmatch(name):
        raise PolicyError(f"{where}: name must be 1 to 32 letters, digits or '-'")
    where = f"[[server]] {name!r}"
    if ("command" in options) == ("url" in options):
        raise PolicyError(f"{where}: give one of command or url")
    if "command" in options and not options["command"]:
        raise PolicyError(f"{where}: command must not be empty")
    if "url" in options and not is_safe_url(options["url"]):
        raise PolicyError(f"{where}: url must be an https:// URL (http:// only on loopback)")
    if "upstream" in options:
        if "url" not in options:
            raise PolicyError(f"{where}: upstream is for a server reached by url")
        options["upstream"] = _upstream(f"{where} upstream", options["upstream"], context)
    for key in ("env", "env_from"):
        if key in options:
            options[key] = tuple(sorted(options[key].items()))
    if "pin" in options and context.base is not None:
        options["pin"] = str(context.base / options["pin"])
    return ServerSettings(**options)


def _gateway(where: str, entry: Any, context: Context) -> GatewaySettings:
    settings = GatewaySettings(**checked(where, entry, _GATEWAY))
    if not _SEPARATOR.fullmatch(settings.separator):
        raise PolicyError(f"{where}: separator must be 1 to 4 of '_' and '.'")
    for key in ("restart_delay", "restart_max_delay", "start_timeout"):
        if getattr(settings, key) <= 0:
            raise PolicyError(f"{where}: {key} must be a number above 0")
    if settings.max_restarts < 0:
        raise PolicyError(f"{where}: max_restarts must be 0 or more")
    return settings


def _flow(where: str, entry: Any, context: Context) -> FlowRule:
    options = checked(where, entry, _FLOW)
    for pointer in options.get("sensitive", ()):
        if pointer and (not pointer.startswith("/") or from_fragment("#" + pointer) is None):
            raise PolicyError(f"{where}: sensitive {pointer!r} is not a JSON Pointer")
    if options.get("min_length", 8) < 4:
        raise PolicyError(f"{where}: min_length must be at least 4")
    return FlowRule(
        sources=tuple(options.pop("from")),
        sinks=tuple(options.pop("to")),
        sensitive=tuple(options.pop("sensitive", ())),
        **options,
    )


def _endpoint(where: str, entry: Any, context: Context) -> EndpointSettings:
    options = checked(where, entry, _ENDPOINT)
    path = options["path"]
    if not _ENDPOINT_PATH.fullmatch(path) or path.startswith(WELL_KNOWN_PREFIX):
        raise PolicyError(
            f"{where}: path must be / and up to 200 letters, digits and -._~/ "
            f"(not under {WELL_KNOWN_PREFIX})"
        )
    where = f"[[endpoint]] {path!r}"
    if "servers" in options:
        if not options["servers"]:
            raise PolicyError(f"{where}: servers must name at least one [[server]]")
        options["servers"] = tuple(options["servers"])
    for key in ("tools", "exclude_tools"):
        if key in options:
            options[key] = tuple(options[key])
    return EndpointSettings(**options)


def _interceptor(where: str, entry: Any, context: Context) -> InterceptorSettings:
    options = checked(where, entry, _INTERCEPTOR)
    where = f"[[interceptor]] {options['name']!r}"
    if ("command" in options) == ("url" in options):
        raise PolicyError(f"{where}: give one of command or url")
    if "command" in options and not options["command"]:
        raise PolicyError(f"{where}: command must name the interceptor server to start")
    if "url" in options and not is_safe_url(options["url"]):
        raise PolicyError(f"{where}: url must be an https:// URL (http:// only on loopback)")
    if "upstream" in options:
        if "url" not in options:
            raise PolicyError(f"{where}: upstream is for an interceptor reached by url")
        options["upstream"] = _upstream(f"{where} upstream", options["upstream"], context)
    if not 1 <= options.get("timeout_ms", 1000) <= 60_000:
        raise PolicyError(f"{where}: timeout_ms must be between 1 and 60000")
    if "events" in options and not options["events"]:
        raise PolicyError(f"{where}: events must name at least one event")
    for key in ("command", "events"):
        if key in options:
            options[key] = tuple(options[key])
    return InterceptorSettings(kind=options.pop("type"), **options)


TABLES = (
    Table(
        "guard",
        "rules",
        "Guards on the arguments of tools (or the params of other requests), checked in order.",
        {**GUARD_ENTRY, **RULE_OPTIONS},
        guard_rule,
        array=True,
        kinds=GUARD_OPTIONS,
    ),
    Table(
        "deep",
        "deep",
        "Built-in deep checks: run by the validate tool's dry run, and before real calls with "
        "`on_calls`.",
        {**RULE_OPTIONS, **DEEP_ENTRY},
        deep_rule,
        array=True,
        kinds=DEEP_OPTIONS,
    ),
    Table(
        "listing",
        "listing_rules",
        "The checks the proxy runs on every tool listing.",
        _LISTING,
        _listing,
    ),
    Table(
        "result",
        "results",
        "What is done to the results of which tools, and to everything else a server sends a "
        "model may be shown (hygiene, labels, bounds, redaction); the first match wins.",
        _RESULT,
        _result,
        array=True,
    ),
    Table(
        "server_requests",
        "server_requests",
        "Hygiene of elicitation messages and sampling requests.",
        _SERVER_REQUESTS,
        _server_requests,
        absent="flag",
    ),
    Table(
        "audit",
        "audit_record",
        "What the audit log records, besides what `--audit` says (the proxy and the gateway).",
        _AUDIT,
        _audit,
        absent="findings",
    ),
    Table(
        "tool",
        "tool_rules",
        "Opt-in rewrites of how tools are called and listed; the first match wins.",
        _TOOL,
        _tool,
        array=True,
    ),
    Table(
        "auth",
        "auth",
        "Who may use the HTTP proxy: an OAuth 2.1 protected resource.",
        _AUTH,
        _auth,
    ),
    Table(
        "access",
        "access",
        "Which identity may call which tools; deny by default once there is one.",
        _ACCESS,
        _access,
        array=True,
    ),
    Table(
        "identity",
        "identity",
        "The caller over stdio (or over HTTP without `[auth]`), where no token says who it is.",
        _IDENTITY,
        _identity,
    ),
    Table(
        "upstream",
        "upstream",
        "The proxy's own credentials toward an HTTP upstream (`--upstream URL`).",
        _UPSTREAM,
        _upstream,
    ),
    Table(
        "rate_limit",
        "rate_limits",
        "Calls per identity and tool (a token bucket each).",
        _RATE_LIMIT,
        _rate_limit,
        array=True,
    ),
    Table(
        "rate_store",
        "rate_store",
        "The rate limits' buckets kept in Redis, shared by every replica.",
        _RATE_STORE,
        _rate_store,
    ),
    Table(
        "server",
        "servers",
        "The servers behind `strictmcp gateway`, in the order their names are tried.",
        _SERVER,
        _server,
        array=True,
    ),
    Table(
        "gateway",
        "gateway",
        "How `strictmcp gateway` names its servers' tools and restarts them.",
        _GATEWAY,
        _gateway,
    ),
    Table(
        "flow",
        "flows",
        "Data read from one of the gateway's servers on its way to another: refused, audited "
        "or redacted.",
        _FLOW,
        _flow,
        array=True,
    ),
    Table(
        "endpoint",
        "endpoints",
        "Virtual servers of the HTTP proxy or gateway: a path serving some servers and tools.",
        _ENDPOINT,
        _endpoint,
        array=True,
    ),
    Table(
        "interceptor",
        "interceptors",
        "External interceptor servers (the MCP interceptors extension) invoked in the one "
        "enforcement path, around strictmcp's own checks.",
        _INTERCEPTOR,
        _interceptor,
        array=True,
    ),
)
"""Every table of the policy file, in the order the reference page shows them."""

TOP_OPTIONS = {
    "mode": Option(
        str,
        choices=("enforce", "audit"),
        default='`"enforce"`',
        doc=(
            "`enforce` refuses a call with an error finding; `audit` reports every finding "
            "and lets the call through (shadow mode, to roll a policy out)."
        ),
    ),
    "allow_subdivision_flags": Option(
        str,
        array=True,
        default="`[]`",
        doc=(
            'Subdivision flags, by ISO 3166-2 code (`"US-CA"`), whose tag characters every '
            "text check lets through besides England's, Scotland's and Wales's."
        ),
    ),
    "validate_tool": Option(
        bool,
        default="`true`",
        doc="Whether the proxy (or gateway) adds its `validate` dry-run tool to the listing.",
    ),
    "tools": Option(
        str,
        array=True,
        default="all",
        doc=(
            "Globs over tool names (namespaced in the gateway): only these are offered, by the "
            "proxy and by the SDK integrations, and only these are linted and checked."
        ),
    ),
    "exclude_tools": Option(
        str,
        array=True,
        default="`[]`",
        doc="Globs of tools not offered: not listed, their calls answered as unknown tools.",
    ),
}
"""The keys of the file that are not tables."""

TOP_KEYS = tuple(sorted([*TOP_OPTIONS, *(table.name for table in TABLES)]))
"""Every key the file's top level may hold."""


def mode(data: Mapping[str, Any]) -> Any:
    """The top-level ``mode``."""
    value = data.get("mode", "enforce")
    if value not in TOP_OPTIONS["mode"].choices:
        raise PolicyError('mode must be "enforce" or "audit"')
    return value


def offered(data: Mapping[str, Any]) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """The top-level ``tools`` (None: not given) and ``exclude_tools``, as tuples of globs."""
    for key in ("tools", "exclude_tools"):
        problem = TOP_OPTIONS[key].problem(data[key]) if key in data else None
        if problem is not None:
            raise PolicyError(f"{key} {problem}")
    tools = data.get("tools")
    return (tuple(tools) if tools is not None else None), tuple(data.get("exclude_tools", ()))


def flags(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The top-level ``allow_subdivision_flags``: ISO 3166-2 codes, upper case, sorted."""
    value = data.get("allow_subdivision_flags", [])
    problem = TOP_OPTIONS["allow_subdivision_flags"].problem(value)
    if problem is not None:
        raise PolicyError(f"allow_subdivision_flags {problem}")
    try:
        return subdivision_flags(value)
    except ValueError as error:
        raise PolicyError(str(error)) from None

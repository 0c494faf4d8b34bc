"""The :class:`Policy`: what a policy file says, loaded through the table registry
(:data:`~strictmcp.policy.tables.TABLES`), and how it checks calls."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from ..guards.base import Guard, GuardFinding
from ..guards.deep import bounded
from ..guards.uris import URI_FIELDS, check_uri
from ..protocol import Severity, Violation
from ..protocol.tool_calls import ARGUMENTS
from .callers import AccessRule, Identity, RateLimit
from .options import Context, PolicyError
from .rules import (
    DEFAULT_RESULT_RULE,
    DEFAULT_TOOL_RULE,
    TOOLS_CALL,
    DeepRule,
    GuardRule,
    Hygiene,
    ResultRule,
    ToolRule,
    guard_for,
    pattern_matches,
    values_at,
)
from .settings import (
    AuditRecord,
    AuthSettings,
    EndpointSettings,
    FlowRule,
    GatewaySettings,
    InterceptorSettings,
    RateStoreSettings,
    ServerSettings,
    ToolOffer,
    UpstreamSettings,
    server_of,
)
from .tables import TABLES, TOP_KEYS, TOP_OPTIONS, flags, mode, offered

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

Mode = Literal["enforce", "audit"]
_PARAMS = "/params"


@dataclass(frozen=True)
class Policy:
    """Guards on tool arguments, and what their findings do.

    In ``enforce`` mode a call with an error finding is refused; in ``audit`` mode every
    finding is reported and the call goes ahead (shadow mode, for rolling a policy out).
    ``listing_rules`` are the ``[listing]`` table's lint selectors (None: the default);
    ``results`` the ``[[result]]`` entries, first match wins (:meth:`result_rule`);
    ``server_requests`` the hygiene of elicitation messages and sampling requests;
    ``tool_rules`` the ``[[tool]]`` entries, first match wins (:meth:`tool_rule`).
    ``allow_subdivision_flags`` are the subdivision flags (ISO 3166-2 codes, upper case)
    whose tag characters every text check under this policy lets through besides the
    recommended ones: its text guards, result and request hygiene, and the listing stage.
    """

    rules: tuple[GuardRule, ...] = ()
    mode: Mode = "enforce"
    deep: tuple[DeepRule, ...] = ()
    listing_rules: tuple[str, ...] | None = None
    results: tuple[ResultRule, ...] = ()
    server_requests: Hygiene = "flag"
    #: The ``[audit]`` table's ``record``: ``all`` when the audit log is to get a record of
    #: every call, allowed ones too, besides the findings.
    audit_record: AuditRecord = "findings"
    tool_rules: tuple[ToolRule, ...] = ()
    allow_subdivision_flags: tuple[str, ...] = ()

    def tool_rule(self, tool: str) -> ToolRule:
        """The first ``[[tool]]`` entry matching ``tool``, else :data:`DEFAULT_TOOL_RULE`."""
        for rule in self.tool_rules:
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
    #: The ``[[server]]`` tables: the servers behind ``strictmcp gateway``.
    servers: tuple[ServerSettings, ...] = ()
    #: The ``[gateway]`` table (None: its defaults).
    gateway: GatewaySettings | None = None
    #: The top-level ``validate_tool``: whether the ``validate`` dry-run tool is offered.
    validate_tool: bool = True
    #: The ``[[flow]]`` tables: data read from one gateway server on its way to another.
    flows: tuple[FlowRule, ...] = ()
    #: The ``[[interceptor]]`` tables: external interceptors in the enforcement path.
    interceptors: tuple[InterceptorSettings, ...] = ()

    def server_of(self, tool: str | None) -> str | None:
        """The ``[[server]]`` the tool or prompt ``tool`` belongs to, by its name; None
        outside a gateway."""
        if not self.servers:
            return None
        separator = self.gateway.separator if self.gateway is not None else "__"
        return server_of(tool, self._server_names, separator)

    @cached_property
    def _server_names(self) -> frozenset[str]:
        return frozenset(server.name for server in self.servers)

    #: The top-level ``tools`` (globs; None: all) and ``exclude_tools``: what is offered
    #: (:attr:`offer`).
    tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    #: The ``[[endpoint]]`` tables: virtual servers at paths of the HTTP proxy or gateway.
    endpoints: tuple[EndpointSettings, ...] = ()

    @cached_property
    def offer(self) -> ToolOffer:
        """The tools offered, as the top-level ``tools`` and ``exclude_tools`` say."""
        return ToolOffer.of(self.tools, self.exclude_tools)

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
        settings name the caller's claims is built for ``identity``'s (:func:`~.rules.guard_for`).
        """
        violations: list[Violation] = []
        for rule in self.rules:
            if not rule.applies_to(tool):
                continue
            for where, value in values_at(arguments, rule.tokens):
                guard = guard_for(rule.guard, identity)
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
            for where, value in values_at(params, rule.tokens):
                guard = guard_for(rule.guard, identity)
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
            for where, value in values_at(arguments, rule.tokens):
                guard = guard_for(rule.guard, identity)
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
        """Whether these findings refuse the request under this policy's mode."""
        return self.mode == "enforce" and any(v.severity is Severity.ERROR for v in violations)

    def mode_for(self, tool: str | None) -> Mode:
        """The mode the policy's stages run in for ``tool``: the ``mode`` of the gateway's
        ``[[server]]`` it belongs to (by its name, ``server`` + separator + ...), else the
        file's own."""
        return self.server_mode(self.server_of(tool)) if self._server_modes else self.mode

    def server_mode(self, server: str | None) -> Mode:
        """The mode the policy's stages run in for the gateway's ``server``: its ``mode``,
        else the file's own."""
        mode = self._server_modes.get(server) if self._server_modes else None
        return mode if mode is not None else self.mode

    @cached_property
    def _server_modes(self) -> dict[str | None, Mode]:
        # Asked at every policy stage of every call: one look-up, not a walk of the tables.
        return {server.name: server.mode for server in self.servers if server.mode is not None}

    def any_enforced(self) -> bool:
        """Whether the policy's stages enforce for some tool (the file's mode, or a server's)."""
        return self.mode == "enforce" or any(s.mode == "enforce" for s in self.servers)

    def covers(self, tool: str, argument: str) -> bool:
        """Whether some rule guards this argument pointer of this tool (for lint)."""
        return any(
            rule.applies_to(tool) and pattern_matches(rule.argument, argument)
            for rule in self.rules
        )

    def covers_request(self, method: str, argument: str) -> bool:
        """Whether some rule on ``method`` (a request other than ``tools/call``) guards this
        pointer into its params (for lint)."""
        return any(
            rule.method == method and pattern_matches(rule.argument, argument)
            for rule in self.rules
        )

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """Read a policy from a TOML file."""
        try:
            data = Path(path).read_bytes()
        except OSError as error:
            raise PolicyError(f"cannot read the policy: {error.strerror}") from None
        return cls.loads(data, base=Path(path).resolve().parent)

    @classmethod
    def loads(cls, data: bytes, *, base: Path | None = None) -> Policy:
        """A policy from the bytes of a TOML file (UTF-8), relative paths read from ``base``."""
        try:
            document = tomllib.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise PolicyError("the policy is not UTF-8 text") from None
        except tomllib.TOMLDecodeError as error:
            raise PolicyError(f"the policy is not valid TOML: {error}") from None
        return cls.from_dict(document, base=base)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, base: Path | None = None) -> Policy:
        """Build a policy from its TOML form (a mapping of the keys and tables of
        :data:`~strictmcp.policy.tables.TABLES`). ``base`` is the directory relative path
        roots are read from (the policy file's, when loaded from one); without it a relative
        root is refused."""
        unknown = set(data) - set(TOP_KEYS)
        if unknown:
            raise PolicyError(
                f"unknown top-level keys: {', '.join(sorted(unknown))} "
                f"(known: {', '.join(TOP_KEYS)})"
            )
        checked_mode = mode(data)
        context = Context(base, flags(data))
        validate_tool = data.get("validate_tool", True)
        problem = TOP_OPTIONS["validate_tool"].problem(validate_tool)
        if problem is not None:
            raise PolicyError(f"validate_tool {problem}")
        tools, exclude_tools = offered(data)
        policy = cls(
            mode=checked_mode,
            validate_tool=validate_tool,
            tools=tools,
            exclude_tools=exclude_tools,
            allow_subdivision_flags=context.flags,
            **{table.policy_field: table.load(data, context) for table in TABLES},
        )
        _coherent(policy)
        return policy


def _coherent(policy: Policy) -> None:
    """Refuse a policy whose tables, each valid, do not make sense together."""
    if policy.rate_store is not None and not policy.rate_limits:
        raise PolicyError("[rate_store] needs [[rate_limit]] entries to keep")
    names = [server.name for server in policy.servers]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise PolicyError(f"[[server]] names must be unique: {', '.join(twice)} given twice")
    if policy.gateway is not None and not policy.servers:
        raise PolicyError("[gateway] needs [[server]] tables to serve")
    if policy.flows and not policy.servers:
        raise PolicyError(
            "[[flow]] needs [[server]] tables: flows are between the servers of "
            "`strictmcp gateway` (the proxy has one server)"
        )
    for index, flow in enumerate(policy.flows, start=1):
        for key, globs in (("from", flow.sources), ("to", flow.sinks)):
            for glob in globs:
                if not any(fnmatchcase(server, glob) for server in names):
                    raise PolicyError(
                        f"[[flow]] #{index}: {key} {glob!r} matches no [[server]] name"
                    )
    paths = [endpoint.path for endpoint in policy.endpoints]
    twice = sorted({path for path in paths if paths.count(path) > 1})
    if twice:
        raise PolicyError(f"[[endpoint]] paths must be unique: {', '.join(twice)} given twice")
    for endpoint in policy.endpoints:
        unknown = [name for name in endpoint.servers or () if name not in names]
        if endpoint.servers is not None and not policy.servers:
            raise PolicyError(
                f"[[endpoint]] {endpoint.path!r}: servers names [[server]] tables, and there are "
                "none (an endpoint of the proxy serves its one server)"
            )
        if unknown:
            raise PolicyError(
                f"[[endpoint]] {endpoint.path!r}: servers names no [[server]] table "
                f"{', '.join(repr(name) for name in unknown)}"
            )


async def _refused(violation: Violation) -> list[Violation]:
    return [violation]

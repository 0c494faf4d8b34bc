"""strictmcp's own checks as interceptors: what ``strictmcp interceptor`` offers.

=====================  ==========  ==============================================================
``strictmcp/schema``   validation  a ``tools/call``'s arguments against the tool's
                                   ``inputSchema`` (request) and its result against the
                                   ``outputSchema`` (response); the tool definitions of a
                                   ``tools/list`` result (response), which it then takes as the
                                   session's tools
``strictmcp/guards``   validation  the policy's guards and deep checks on a ``tools/call``'s
                                   arguments (the dry run, :meth:`~strictmcp.enforce.Enforcer.
                                   dry_run`), and its ``[[guard]]`` entries on other requests
``strictmcp/hygiene``  mutation    the policy's ``[[result]]`` hygiene (strip, redact, label,
                                   bounds) on a ``tools/call`` result
``strictmcp/flow``     validation  the ``[[flow]]`` rules: a response taints what its server
                                   answered, a request to another server carrying it is invalid
``strictmcp/listing``  validation  the listing rules and the pins on a ``tools/list`` result
=====================  ==========  ==============================================================

The extension passes the payload alone. The tools a call is judged against are the ``--tools``
file's when one is given, else the latest ``tools/list`` result (response phase) this session
passed through ``strictmcp/schema`` or ``strictmcp/listing``; a tool in neither is unknown, and
its call invalid. A result (response phase) is a result of the tool the session's latest
``tools/call`` request named: the extension does not say which call a result answers, so a
session's calls are to be invoked one at a time. A call's server (for ``strictmcp/flow``) would
be a field of the invocation context if the extension defined one; it does not, so it is the
namespace prefix of the tool's name (``server__tool``, as the gateway names tools), which must
name one of the policy's ``[[server]]`` tables: a call whose server cannot be told is invalid.
Sessions are the invocation context's ``sessionId`` (none: the connection's own); the state of
at most :data:`MAX_SESSIONS` is kept, the least recently used forgotten first.

Findings are strictmcp's, value-free: a rule's message, a JSON Pointer into the payload, and
the codes in the result's ``info``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..enforce import Enforcer
from ..enforce.hygiene import clean_result
from ..enforce.listing import check_listing
from ..enforce.pins import PinFile
from ..lint.model import LintRule
from ..policy import DEFAULT_RESULT_RULE, Policy
from ..protocol import LATEST, Revision, Rule, ToolRegistry, Violation, check_call, check_result
from ..protocol.jsonrpc import INVALID_PARAMS
from ..protocol.tool_calls import unknown_tool
from .model import (
    Finding,
    Hook,
    Interceptor,
    Invocation,
    InvokeError,
    Mutation,
    Registry,
    Validation,
)

MAX_SESSIONS = 1024
TOOLS_CALL = "tools/call"
TOOLS_LIST = "tools/list"
_BOTH = (Hook((TOOLS_CALL,), "request"), Hook((TOOLS_CALL,), "response"))
_LISTED = Hook((TOOLS_LIST,), "response")
#: The code of a call whose server cannot be told (no namespace prefix names one).
SERVER_UNKNOWN = "interceptor-server-unknown"


class _Session:
    """One session's state: its enforcer (withheld tools, flow taints), its tools, the tool
    its latest call named."""

    def __init__(self, checks: StrictChecks) -> None:
        self.enforcer = Enforcer(
            policy=checks.policy, strict=checks.strict, listing=checks.listing, pins=checks.pins
        )
        self.registry = checks.tools if checks.tools is not None else ToolRegistry(checks.revision)
        self.called: str | None = None


class StrictChecks:
    """The five interceptors over ``policy`` (None: schemas and listing rules only).

    ``tools`` (a ``tools/list`` result) fixes the tool definitions for every session;
    ``listing`` and ``pins`` are the listing stage's rules and lock file (as the proxy's
    ``--listing-rules`` and ``--pin-file``); ``strict`` refuses undeclared arguments."""

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        tools: Mapping[str, Any] | None = None,
        revision: Revision = LATEST,
        strict: bool = False,
        listing: Sequence[LintRule] | None = None,
        pins: PinFile | None = None,
    ) -> None:
        self.policy = policy
        self.revision = revision
        self.strict = strict
        self.listing = listing
        self.pins = pins
        self.tools: ToolRegistry | None = None
        if tools is not None:
            self.tools = ToolRegistry(revision)
            self.tools.update(tools)
        self._sessions: OrderedDict[Hashable, _Session] = OrderedDict()

    def registry(self) -> Registry:
        """The interceptors, in the order ``interceptors/list`` gives them."""
        guarded = sorted(self.policy.guarded_methods()) if self.policy is not None else []
        guard_events = (TOOLS_CALL, *guarded)
        return Registry(
            [
                Interceptor(
                    "strictmcp/schema",
                    "validation",
                    (*_BOTH, _LISTED),
                    self._schema,
                    description="Tool call arguments and results against the tool's schemas.",
                ),
                Interceptor(
                    "strictmcp/guards",
                    "validation",
                    (Hook(guard_events, "request"),),
                    self._guards,
                    description="The policy's guards and deep checks on arguments.",
                ),
                Interceptor(
                    "strictmcp/hygiene",
                    "mutation",
                    (Hook((TOOLS_CALL,), "response"),),
                    self._hygiene,
                    description="The policy's result hygiene: strip, redact, label, bound.",
                ),
                Interceptor(
                    "strictmcp/flow",
                    "validation",
                    _BOTH,
                    self._flow,
                    description="The policy's [[flow]] rules across servers, per session.",
                ),
                Interceptor(
                    "strictmcp/listing",
                    "validation",
                    (_LISTED,),
                    self._listing,
                    description="The listing rules and pins on tools/list results.",
                ),
            ]
        )

    def session(self, invocation: Invocation) -> _Session:
        """The state of the invocation's session, made when first seen."""
        key = invocation.session
        session = self._sessions.get(key)
        if session is None:
            if len(self._sessions) >= MAX_SESSIONS:
                self._sessions.popitem(last=False)
            session = self._sessions[key] = _Session(self)
        else:
            self._sessions.move_to_end(key)
        return session

    # --- the interceptors -----------------------------------------------------------------------

    async def _schema(self, invocation: Invocation) -> Validation:
        session = self.session(invocation)
        payload = invocation.payload
        if invocation.event == TOOLS_LIST:
            return _validation(self._listed(session, payload))
        if invocation.phase == "request":
            name = _called(session, payload)
            if name is None:
                return _validation(_not_a_call())
            call = check_call(session.registry, payload, strict=self.strict)
            return _validation(call.violations, "/params")
        name = session.called
        tool = session.registry.get(name) if name is not None else None
        if name is None or tool is None or not isinstance(payload, Mapping):
            return _validation(_no_call(session, name))
        return _validation(check_result(session.registry, name, payload, tool=tool))

    async def _guards(self, invocation: Invocation) -> Validation:
        session = self.session(invocation)
        payload = invocation.payload
        if invocation.event != TOOLS_CALL:
            if self.policy is None or not isinstance(payload, Mapping):
                return Validation()
            found = self.policy.check_request(invocation.event, payload)
            return _validation(found, "/params")
        name = _called(session, payload)
        if name is None:
            return _validation(_not_a_call())
        dry = await session.enforcer.dry_run(session.registry).check(
            name, payload.get("arguments", {})
        )
        return _validation(dry.violations, "/params")

    async def _hygiene(self, invocation: Invocation) -> Mutation:
        session = self.session(invocation)
        payload, name = invocation.payload, session.called
        if not isinstance(payload, dict):
            raise InvokeError(INVALID_PARAMS, "Invalid params", {"reason": "payload"})
        if name is None:  # no rule can be chosen: refused, not passed through unlooked at
            raise InvokeError(INVALID_PARAMS, "Invalid params", {"reason": "no-call"})
        tool = session.registry.get(name)
        cleaned = session.enforcer.clean_result(session.registry, name, tool, payload)
        rule = self.policy.result_rule(name) if self.policy is not None else DEFAULT_RESULT_RULE
        found = clean_result(payload, name, rule).found  # the findings, for the answer's info
        findings = tuple(Finding.of(v) for v in found)
        if cleaned is None:
            return Mutation(payload, False, findings)
        return Mutation(cleaned, True, findings)

    async def _flow(self, invocation: Invocation) -> Validation:
        session = self.session(invocation)
        flows = session.enforcer.flows
        payload = invocation.payload
        if invocation.phase == "request":
            name = _called(session, payload)
            if name is None:
                return _validation(_not_a_call())
        else:
            name = session.called
        if flows is None:
            return Validation()
        server = self._server(name)
        if server is None:
            why = "the server of the call cannot be told: name it server__tool"
            return Validation((Finding(why, "error", "/name", SERVER_UNKNOWN),))
        if invocation.phase == "response":
            flows.taint(server, payload)
            return Validation()
        flowed = flows.check(server, payload.get("arguments"), "/arguments")
        if flowed.action is None:
            return Validation()
        level = "warn" if flowed.action == "audit" else "error"
        return Validation(
            tuple(
                Finding(v.message, level, v.pointer, str(v.code))  # type: ignore[arg-type]
                for v in flowed.found
            )
        )

    async def _listing(self, invocation: Invocation) -> Validation:
        return _validation(self._listed(self.session(invocation), invocation.payload))

    # --- helpers --------------------------------------------------------------------------------

    def _listed(self, session: _Session, payload: Any) -> list[Violation]:
        """The findings on a ``tools/list`` result, which becomes the session's tools (unless
        ``--tools`` fixed them): the definitions, the listing rules, the pins."""
        if not isinstance(payload, Mapping):
            return [Violation(Rule.INVALID_RESULT, "a tools/list result must be an object")]
        # With --tools fixed, the listing is still judged, in a registry of its own.
        registry = session.registry if self.tools is None else ToolRegistry(self.revision)
        found = registry.update(payload)
        tools = payload.get("tools")
        if isinstance(tools, list):
            rules = session.enforcer.listing
            for listed in check_listing(tools, rules, self.revision, "/tools", self.policy):
                found += listed.found
            if self.pins is not None:
                for index, tool in enumerate(tools):
                    found += self.pins.check(tool, f"/tools/{index}")
        return list(dict.fromkeys(found))

    def _server(self, name: str | None) -> str | None:
        """The gateway server a tool belongs to, by its namespace prefix (``[[flow]]`` rules
        come with ``[[server]]`` tables: a prefix names one of them, or none)."""
        return self.policy.server_of(name) if self.policy is not None else None


def _called(session: _Session, payload: Any) -> str | None:
    """The tool a ``tools/call`` request's params name (remembered for its result), or None."""
    name = payload.get("name") if isinstance(payload, Mapping) else None
    if not isinstance(name, str):
        return None
    session.called = name
    return name


def _not_a_call() -> list[Violation]:
    return [Violation(Rule.INVALID_PARAMS, "a tools/call request needs a string name", "/name")]


def _no_call(session: _Session, name: str | None) -> list[Violation]:
    if name is None:
        why = "no tools/call request of this session names the tool this result is of"
        return [Violation(Rule.INVALID_RESULT, why)]
    return list(unknown_tool(session.registry, name).violations)


def _validation(violations: Sequence[Violation], prefix: str = "") -> Validation:
    """strictmcp's findings as a validation result, pointers into the payload (``prefix``,
    the message's pointer to it, taken off)."""
    return Validation(
        tuple(
            Finding.of(_under(v, prefix) if prefix and v.pointer.startswith(prefix) else v)
            for v in violations
        )
    )


def _under(violation: Violation, prefix: str) -> Violation:
    return replace(violation, pointer=violation.pointer[len(prefix) :])

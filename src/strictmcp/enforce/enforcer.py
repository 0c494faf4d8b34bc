"""The decisions about one ``tools/call`` and its result, made the same way everywhere."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..guards.codes import GuardCode
from ..guards.deep import DeepValidators
from ..lint.model import LintRule
from ..policy import (
    DEFAULT_RESULT_RULE,
    DEFAULT_TOOL_RULE,
    Identity,
    Mode,
    Policy,
    ToolOffer,
    ToolRule,
)
from ..protocol import (
    CallCheck,
    CheckedTool,
    Revision,
    Rule,
    Severity,
    TaskRecord,
    ToolRegistry,
    Violation,
    check_call,
    check_result,
    errors,
)
from ..protocol.tool_calls import (
    ARGUMENTS,
    refused_arguments,
    refused_request,
    unknown_tool,
    withheld_result,
    withheld_tool_result,
)
from ..protocol.violations import under
from ..schema import quote_name
from .audit import Auditor, Stage, outcome
from .dry_run import DryRun
from .flows import FlowCode, Flowed, FlowTracker
from .hygiene import HygieneRule, clean_message, clean_request, clean_result
from .limits import (
    RATE_LIMITED,
    Limiter,
    RateLimiter,
    SharedRateLimiter,
    StoreUnavailable,
    limiter_for,
)
from .listing import check_listing, listing_rules
from .pins import PinFile, PinRule
from .rewrites import decode_json_strings, inline_refs

# The findings on a result that make it unfit to hand on; the others only get reported.
_RESULT_RULES = frozenset(
    {
        Rule.TOOL_STRUCTURED_CONTENT_INVALID,
        Rule.TOOL_STRUCTURED_CONTENT_MISSING,
        Rule.TOOL_STRUCTURED_CONTENT_NOT_OBJECT,
        Rule.TOOL_OUTPUT_SCHEMA_INVALID,
        # A task created for a call that did not ask for one is no answer to it.
        Rule.TASK_NOT_REQUESTED,
    }
)
# The stages the policy's own mode governs too (a policy in audit mode refuses nothing).
_POLICY_STAGES: frozenset[Stage] = frozenset({"access", "rate", "policy"})
# The requests naming a resource, whose server the gateway's routing says (FlowRoutes).
_RESOURCE_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
# The requests whose answer may be a task's deferred result (tasks/get's inline at 2026-07-28).
_TASK_METHODS = frozenset({"tasks/result", "tasks/get"})
_MAX_NAMES = 4096
# For isinstance on the proxy's path: a decoded object is a dict, answered without the ABC.
_MAPPING = (dict, Mapping)


class FlowRoutes(Protocol):
    """What the gateway says of where it routes, for the ``[[flow]]`` rules: the servers
    that cannot be told by a name (a tool's, a prompt's, a task's)."""

    def resource_server(self, uri: str) -> str | None:
        """The server a request for ``uri`` goes to (None: none, or several)."""

    def answering_server(self, request_id: int | str) -> str | None:
        """The server whose answer to the client's request ``request_id`` (one routed by a
        URI) was passed on last (None: none known); forgotten once asked."""

    def asking_server(self, request_id: int | str) -> str | None:
        """The server whose request (sampling, elicitation, roots) went to the client as
        ``request_id`` and is not answered yet (None: none)."""

    def servers_sent(self, method: str | None, params: Any) -> tuple[str, ...]:
        """The servers a client message that names none goes to (``logging/setLevel``, a
        notification): every one it is sent to; none for a request routed by what it names."""


@dataclass(frozen=True)
class _Linted:
    """The listing rules' findings on one page (by tool index), and what they were found
    under: the answer's digest, the page's pointer, the revision, the rules and the policy."""

    digest: bytes
    pointer: str
    revision: Revision
    rules: tuple[LintRule, ...]
    policy: Policy | None
    found: dict[int, tuple[Violation, ...]]


class Enforcer:
    """strictmcp's checks on tool calls and results, and what their findings do.

    In ``enforce`` mode a call is refused at the first stage with an error (a policy in audit
    mode never refuses), and a result that breaks its ``outputSchema`` is replaced; in
    ``audit`` mode everything goes through. Every stage reports its findings to ``auditor``
    (bound to ``mode``). ``strict`` also refuses arguments a tool's ``inputSchema`` does not
    declare. ``listing`` are the lint rules run on each listed tool (default:
    :func:`~strictmcp.enforce.listing_rules`, hidden characters): a tool with an error-level
    finding is withheld (:meth:`check_listing`) and its calls refused until it is listed
    clean; so is, with ``pins`` (a lock file), a tool whose definition changed or that
    appeared since pinning. ``limiter`` applies the policy's rate limits (by default
    :func:`~strictmcp.enforce.limits.limiter_for` the policy): give every enforcer of a
    process the same one (the proxy makes one per session), else each counts on its own.
    Limits kept in memory are taken in :meth:`check_call`; limits shared through Redis are
    awaited, first thing in :meth:`check_deep` (:meth:`awaits` says when). Calls are
    checked in two steps: :meth:`check_call` (schema and policy) is synchronous, for a
    proxy's hot path; :meth:`check_deep` awaits the shared limits and the deep checks.
    Only the tools the policy's top-level ``tools`` and ``exclude_tools`` offer, narrowed by
    ``offer`` (an ``[[endpoint]]``'s), are offered at all: in every mode, the others are left
    out of listings and their calls, real or dry run, answered as calls of unknown tools.

    Their decision is a :class:`~strictmcp.protocol.CallCheck`, the schema's verdict
    extended: answer the call with its ``error_result`` or ``jsonrpc_error``, else let the
    tool run; its ``violations`` are the findings of every stage so far, its ``tool`` the
    listed tool to check the result against. A call nothing was found in keeps the schema's
    verdict itself.
    """

    def __init__(
        self,
        *,
        policy: Policy | None = None,
        deep: DeepValidators | None = None,
        strict: bool = False,
        mode: Mode = "enforce",
        auditor: Auditor | None = None,
        listing: Sequence[LintRule] | None = None,
        pins: PinFile | None = None,
        limiter: Limiter | None = None,
        offer: ToolOffer | None = None,
    ) -> None:
        if mode not in ("enforce", "audit"):
            raise ValueError('mode must be "enforce" or "audit"')
        self.listing = tuple(listing) if listing is not None else listing_rules()
        self.pins = pins
        # The listing rules' findings on the last page linted, by its answer's digest, with
        # all they were found under: a page linted again is one of these that differs.
        self._linted: _Linted | None = None
        # Tools withheld from the latest listing that named them, with why: their calls are
        # refused, by name, until a listing shows them clean.
        self._withheld: dict[str, tuple[Violation, ...]] = {}
        # Pinned prompts withheld from the latest listing that named them, likewise.
        self._withheld_prompts: dict[str, tuple[Violation, ...]] = {}
        self.deep = deep
        self.strict = strict
        self.mode = mode
        #: Whether findings refuse calls (``enforce``) rather than only being reported.
        self.enforcing = mode == "enforce"
        self.auditor = (auditor if auditor is not None else Auditor()).in_mode(mode)
        self._narrowed = offer if offer is not None else ToolOffer()
        #: The gateway's ``[[flow]]`` taints of this session (None: no flow rules).
        self.flows: FlowTracker | None = None
        #: Where the gateway routes what no name tells (set by the gateway).
        self.routes: FlowRoutes | None = None
        self.use(policy, limiter_for(policy) if limiter is None else limiter)

    def use(
        self,
        policy: Policy | None,
        limiter: Limiter | None,
        listing: Sequence[LintRule] | None = None,
    ) -> None:
        """Judge by ``policy`` (with ``limiter`` holding its rate limits, and ``listing``'s
        rules on listings when given) from the next decision on: a policy reloaded while
        sessions are open."""
        self.policy = policy
        #: The tools offered; the others are not listed and are unknown to every caller.
        self.offer = (policy.offer if policy is not None else ToolOffer()).within(self._narrowed)
        self._limiter = limiter
        if listing is not None:
            self.listing = tuple(listing)
        # The requests besides tools/call the policy guards: every other passes unlooked at.
        self._guarded_methods = policy.guarded_methods() if policy is not None else frozenset()
        #: Whether some ``[[result]]`` entry redacts: only then can text that is plain ASCII
        #: (:attr:`~strictmcp.protocol.Decoded.plain`) need cleaning.
        self.redacts = policy is not None and any(rule.redact for rule in policy.results)
        self._flags = policy.allow_subdivision_flags if policy is not None else ()
        # A reload keeps what the session read tainted: the rules change, the taints stay.
        flows = policy.flows if policy is not None else ()
        if not flows:
            self.flows = None
        elif self.flows is None:
            self.flows = FlowTracker(flows)
        else:
            self.flows.use(flows)
        self._servers_of: dict[str, str | None] = {}

    def check_call(
        self,
        registry: ToolRegistry,
        name: str,
        arguments: Any,
        verdict: CallCheck | None = None,
        *,
        identity: Identity | None = None,
    ) -> CallCheck:
        """Whether ``identity`` may call ``name`` at all, and now (the policy's rate
        limits), then the arguments of the call against its ``inputSchema``, then the
        policy's guards.

        A call the policy's access rules deny ``identity`` is answered exactly as a call of
        an unknown tool (-32602), so that the tool's existence is not revealed. ``verdict``
        is the schema's verdict when the caller has it already (a
        :class:`~strictmcp.protocol.Conversation` checks every call it observes); else the
        call is checked here. The policy sees ``arguments`` only when they are an object.
        Decided afresh on every call: nothing is remembered from one identity to the next.
        A tool not offered is unknown to every caller, whatever the mode.
        """
        if not self.offer.offers(name):
            unknown = unknown_tool(registry, name)
            self._report(name, "arguments", unknown.violations, True, identity, "enforce")
            return unknown
        if not self._permitted(name, identity):
            return unknown_tool(registry, name)
        withheld = self._withheld.get(name) if self.enforcing else None
        listed = registry.get(name)
        if withheld is not None and listed is not None:
            self._report(name, "listing", withheld, True, identity)
            refusal = withheld_tool_result(registry.revision, listed, name, list(withheld))
            return CallCheck(withheld, error_result=refusal, tool=listed)
        limited = self._limited(name, identity)
        if limited is not None:
            return limited
        return self.check_arguments(registry, name, arguments, verdict, identity=identity)

    def check_arguments(
        self,
        registry: ToolRegistry,
        name: str,
        arguments: Any,
        verdict: CallCheck | None = None,
        *,
        identity: Identity | None = None,
    ) -> CallCheck:
        """The arguments of a call :meth:`check_call` let through its access rules and rate
        limits: against the tool's ``inputSchema`` (``verdict``, when the caller has it),
        then the policy's guards. Called again on arguments a ``redact`` flow rule replaced
        data in: what is sent is checked, never only what came."""
        if verdict is None:
            verdict = self._schema(registry, name, arguments)
        if verdict.violations:  # a verdict that refuses always says why
            if self._report(name, "arguments", verdict.violations, not verdict.allowed, identity):
                return verdict
            if not verdict.allowed:  # audit mode: reported, and the call goes ahead
                verdict = CallCheck(verdict.violations, tool=verdict.tool)
        if self.policy is None or not isinstance(arguments, _MAPPING):
            return verdict
        found = self.policy.check(name, arguments, identity=identity)
        blocked = self._report(name, "policy", found, bool(errors(found)), identity)
        return self._after(registry, name, verdict, found, blocked)

    def taint(
        self,
        method: str | None,
        params: Any,
        result: Any,
        owner: Hashable = None,
        request_id: int | str | None = None,
    ) -> None:
        """Taint what the gateway's server answered to ``method`` with ``params`` (``result``:
        its result, or its error; a ``tools/call``, ``prompts/get``, ``resources/read`` or
        ``completion/complete``, or a task's deferred result
        from ``tasks/result`` or, inline, ``tasks/get``) for ``owner`` (None: the
        session; a caller of a shared session), under the ``[[flow]]`` rules; ``request_id``
        is the request's as the gateway got it. A taint forgotten to make room is reported
        (``flow-taint-evicted``)."""
        flows = self.flows
        source = None
        if flows is not None and self.routes is not None and request_id is not None:
            # A URI's server is the one that answered, not the one the URI is routed to now.
            source = self.routes.answering_server(request_id)
        if source is None:
            source = self._flow_server(method, params)
        if method == "tasks/get" and isinstance(result, _MAPPING):
            result = result.get("result")  # 2026-07-28: a task's final result, inline
        if flows is None or source is None or not isinstance(result, _MAPPING):
            return
        self._tainted(flows.taint(source, result, owner), method)

    def _tainted(self, evicted: int, method: str | None) -> None:
        """Report the taints ``evicted`` to make room for those of a ``method`` message."""
        if evicted:
            message = (
                f"{evicted} tainted values forgotten: taints are kept up to a bound per session"
                " (per caller when stateless), and for a bounded number of stateless callers"
            )
            self.auditor.record(
                [Violation(FlowCode.EVICTED, message, "", Severity.WARNING)],
                direction="s2c",
                method=method,
                stage="flow",
                action="allowed",
            )

    def taint_sent(self, message: dict[str, Any]) -> None:
        """Taint what a gateway's server sent the client of its own accord, under the
        ``[[flow]]`` rules: a log message's params (the gateway names the server first in
        its ``logger``) and a request's (a sampling request's messages, an elicitation's
        text: the server that asked), as its results are; the session's taints."""
        flows, routes, policy = self.flows, self.routes, self.policy
        params = message.get("params")
        if flows is None or routes is None or policy is None or not isinstance(params, _MAPPING):
            return
        source: str | None = None
        request_id = message.get("id")
        if isinstance(request_id, (int, str)):
            source = routes.asking_server(request_id)
        elif message.get("method") == "notifications/message":
            logger = params.get("logger")
            head = logger.partition("/")[0] if isinstance(logger, str) else ""
            source = head if any(server.name == head for server in policy.servers) else None
        if source is not None:
            self._tainted(flows.taint(source, params), message.get("method"))

    def check_flow(
        self,
        registry: ToolRegistry,
        method: str | None,
        params: Any,
        *,
        identity: Identity | None = None,
        owner: Hashable = None,
    ) -> tuple[CallCheck | None, Any]:
        """The ``[[flow]]`` rules on a client message about to go to a gateway's server (or,
        one that names none, such as ``logging/setLevel`` or a notification, to each it is
        sent to): all of its params (a tool's or a prompt's name and arguments, a
        resource's URI, a completion's value, ``_meta``, a stateless retry's
        ``inputResponses``), since whatever the server is sent can carry data. The refusal
        to answer it with (an ``isError`` result for a tool call, else -32602), or None, and
        the params to send (``params`` itself unless a ``redact`` rule replaced data).
        Findings are reported at the ``flow`` stage, in the policy's mode for the server."""
        flows = self.flows
        if flows is None or not isinstance(params, _MAPPING):
            return None, params
        sink = self._flow_server(method, params)
        if sink is not None:
            sinks: tuple[str, ...] = (sink,)
        elif self.routes is not None:
            sinks = self.routes.servers_sent(method, params)
        else:
            return None, params
        for sink in sinks:
            if flows.idle(sink, owner):
                continue
            refused, params = self._flow_to(registry, sink, method, params, identity, owner)
            if refused is not None:
                return refused, params
        return None, params

    def _flow_to(
        self,
        registry: ToolRegistry,
        sink: str,
        method: str | None,
        params: Any,
        identity: Identity | None,
        owner: Hashable,
    ) -> tuple[CallCheck | None, Any]:
        """:meth:`check_flow` toward one server, ``sink``."""
        assert self.flows is not None
        flowed = self.flows.check(sink, params, "/params", owner)
        if flowed.action is None:
            return None, params
        name = params.get("name")
        tool = name if isinstance(name, str) and method == "tools/call" else None
        if not self._flow_acts(flowed, sink, method, tool, identity):
            return None, params
        if flowed.action == "redact":
            return None, flowed.params
        listed = registry.get(tool) if tool is not None else None
        if listed is not None and tool is not None:
            refusal = refused_arguments(registry.revision, listed, tool, flowed.found)
            return CallCheck(tuple(flowed.found), error_result=refusal, tool=listed), params
        error = refused_request(method or "", flowed.found)
        refused = CallCheck(
            tuple(flowed.found),
            jsonrpc_error=(error["code"], error["message"]),
            jsonrpc_data=error["data"],
        )
        return refused, params

    def check_answer_flow(
        self,
        method: str | None,
        answer: dict[str, Any],
        *,
        identity: Identity | None = None,
        owner: Hashable = None,
    ) -> tuple[list[Violation], dict[str, Any]]:
        """The ``[[flow]]`` rules on the client's ``answer`` to a gateway's server's own
        request (``method``: a sampling, elicitation or roots request), about to go to the
        server that asked: the findings that withhold it (empty: none), and the answer to
        send (``answer`` itself unless a ``redact`` rule replaced data in its ``result`` or
        ``error``). Findings are reported at the ``flow`` stage, in the mode of the server
        that asked."""
        flows, routes, request_id = self.flows, self.routes, answer.get("id")
        if flows is None or routes is None or not isinstance(request_id, (int, str)):
            return [], answer
        sink = routes.asking_server(request_id)
        if sink is None or flows.idle(sink, owner):
            return [], answer
        key = "result" if "result" in answer else "error"
        flowed = flows.check(sink, answer.get(key), "/" + key, owner)
        if flowed.action is None:
            return [], answer
        if not self._flow_acts(flowed, sink, method, None, identity):
            return [], answer
        if flowed.action == "redact":
            return [], {**answer, key: flowed.params}
        return errors(flowed.found), answer

    def _flow_acts(
        self,
        flowed: Flowed,
        sink: str,
        method: str | None,
        tool: str | None,
        identity: Identity | None,
    ) -> bool:
        """Report what ``flowed`` found in a message to ``sink`` at the ``flow`` stage, in
        that server's mode; whether it acts on the message (refuses or redacts)."""
        mode, acts = self._server_mode(sink), flowed.action != "audit"
        self.auditor.record(
            flowed.found,
            direction="c2s",
            method=method,
            tool=tool,
            stage="flow",
            action=outcome(acts, mode, "replaced" if flowed.action == "redact" else "refused"),
            identity=identity,
            mode=mode,
        )
        return acts and mode == "enforce"

    def _flow_server(self, method: str | None, params: Any) -> str | None:
        """The gateway's server a request goes to (and its answer comes from): a tool's or
        a prompt's by its name, a resource's as the gateway routes its URI, a completion's
        by its reference (a prompt's name, or a resource's URI)."""
        policy, flows = self.policy, self.flows
        if policy is None or flows is None or not isinstance(params, _MAPPING):
            return None
        if method in ("tools/call", "prompts/get"):
            name = params.get("name")
            if not isinstance(name, str):
                return None
            # A name's server, asked twice per call: remembered, for the names in use.
            if name in self._servers_of:
                return self._servers_of[name]
            if len(self._servers_of) >= _MAX_NAMES:
                self._servers_of.clear()
            server = self._servers_of[name] = policy.server_of(name)
            return server
        if method in _TASK_METHODS or method == "tasks/cancel":  # the server whose task it is
            task = params.get("taskId")
            return policy.server_of(task) if isinstance(task, str) else None
        if method == "completion/complete":  # by its reference, as the gateway routes it
            ref = params.get("ref")
            if not isinstance(ref, _MAPPING):
                return None
            if ref.get("type") != "ref/resource":
                name = ref.get("name")
                return policy.server_of(name) if isinstance(name, str) else None
            params = ref
        elif method not in _RESOURCE_METHODS:
            return None
        uri = params.get("uri")
        if isinstance(uri, str) and self.routes is not None:
            return self.routes.resource_server(uri)
        return None

    def guards_request(self, method: str | None) -> bool:
        """Whether the policy has guards on ``method``, a request other than ``tools/call``
        (:meth:`check_request`)."""
        return method in self._guarded_methods

    def check_request(
        self, method: str, params: Any, *, identity: Identity | None = None
    ) -> dict[str, Any] | None:
        """The policy's guards on a request other than ``tools/call`` (``[[guard]]`` entries
        with its ``method``: a ``resources/read`` URI, ``prompts/get`` arguments, a
        ``completion/complete`` value) by ``identity``: the JSON-RPC error to answer it with
        (:func:`~strictmcp.protocol.tool_calls.refused_request`), or None to send it on.
        Findings are reported at the ``policy`` stage; a policy in audit mode, or this
        enforcer, refuses nothing."""
        policy = self.policy
        if policy is None or method not in self._guarded_methods:
            return None
        found = policy.check_request(method, params, identity=identity)
        if not found:
            return None
        blocked = self.enforcing and policy.blocks(found)
        self.auditor.record(
            found,
            direction="c2s",
            method=method,
            stage="policy",
            action="refused" if blocked else "allowed",
            identity=identity,
        )
        return refused_request(method, found) if blocked else None

    def awaits(self, name: str) -> bool:
        """Whether a real call of ``name`` has checks to await (:meth:`check_deep`): rate
        limits shared through Redis, or deep checks (:meth:`has_deep`)."""
        shared = self._limiter
        return (isinstance(shared, SharedRateLimiter) and shared.applies_to(name)) or (
            self.has_deep(name)
        )

    def has_deep(self, name: str) -> bool:
        """Whether a real call of ``name`` has deep checks to await (:meth:`check_deep`): the
        policy's with ``on_calls``, or the tool author's registered for calls."""
        return (self.policy is not None and self.policy.deep_on_calls(name)) or (
            self.deep is not None and name in self.deep
        )

    @property
    def withheld(self) -> frozenset[str]:
        """The names of the tools withheld from their latest listing, whose calls are refused."""
        return frozenset(self._withheld)

    def withheld_because(self, name: str) -> tuple[Violation, ...]:
        """Why the tool ``name`` is withheld (its error-level findings); empty when it is not."""
        return self._withheld.get(name, ())

    def check_listing(
        self,
        tools: Sequence[Any],
        revision: Revision,
        *,
        pointer: str = "/result/tools",
        known: Collection[str] | None = None,
        digest: bytes | None = None,
    ) -> set[int]:
        """The listing stage on one page of a ``tools/list`` result: the listing rules and the
        pins, if any; the indices of the tools to withhold (none in ``audit`` mode), every
        finding reported. ``pointer`` locates ``tools`` in the message. A tool listed clean
        is no longer refused. ``known`` are the names the caller's registry holds now: a
        withheld tool no longer among them is forgotten (a call of it is refused as unknown),
        which bounds what is kept however many names a server goes through. ``digest`` is the
        answer's :func:`~strictmcp.protocol.answer_digest`, when known: a page identical to
        the last one linted, under the same rules, policy and revision, takes its findings
        (each still reported, and the pins still checked)."""
        linted = self._lint(tools, revision, pointer, digest)
        withheld: set[int] = set()
        for index, tool in enumerate(tools):
            name = tool.get("name") if isinstance(tool, Mapping) else None
            name = name if isinstance(name, str) else None
            found = list(linted.get(index, ()))
            if self.pins is not None:
                found += self.pins.check(tool, f"{pointer}/{index}")
            if not found:
                if name is not None:
                    self._withheld.pop(name, None)
                continue
            refused = self.enforcing and bool(errors(found))
            self.auditor.record(
                found,
                direction="s2c",
                method="tools/list",
                tool=name,
                stage="listing",
                action=outcome(bool(errors(found)), self.mode, "withheld"),
            )
            if refused:
                withheld.add(index)
                if name is not None:
                    self._withheld[name] = tuple(errors(found))
        if known is not None and len(self._withheld) > len(known):
            self._withheld = {n: v for n, v in self._withheld.items() if n in known}
        return withheld

    def _lint(
        self, tools: Sequence[Any], revision: Revision, pointer: str, digest: bytes | None
    ) -> dict[int, tuple[Violation, ...]]:
        """The listing rules' findings on ``tools``, by index."""
        rules, policy, kept = self.listing, self.policy, self._linted
        if (
            kept is not None
            and digest == kept.digest
            and (pointer, revision) == (kept.pointer, kept.revision)
            and rules is kept.rules
            and policy is kept.policy
        ):
            return kept.found
        found = {
            item.index: item.found
            for item in check_listing(tools, rules, revision, pointer, policy)
        }
        if digest is not None:
            self._linted = _Linted(digest, pointer, revision, rules, policy, found)
        return found

    def check_prompt_listing(
        self, prompts: Sequence[Any], *, pointer: str = "/result/prompts"
    ) -> set[int]:
        """The pins on one page of a ``prompts/list`` result, when the lock file pins prompts:
        the indices of the prompts to withhold (changed or new; none in ``audit`` mode), every
        finding reported. A prompt listed as pinned is no longer refused."""
        pins = self.pins
        if pins is None or pins.prompts is None:
            return set()
        withheld: set[int] = set()
        for index, prompt in enumerate(prompts):
            name = prompt.get("name") if isinstance(prompt, Mapping) else None
            found = pins.check_prompt(prompt, f"{pointer}/{index}")
            if not found:
                if isinstance(name, str):
                    self._withheld_prompts.pop(name, None)
                continue
            refused = self.enforcing and bool(errors(found))
            action = outcome(bool(errors(found)), self.mode, "withheld")
            self.auditor.record(
                found, direction="s2c", method="prompts/list", stage="listing", action=action
            )
            if refused:
                withheld.add(index)
                # Only pinned names are kept (a new one is refused for being new): what is
                # kept is bounded by the lock file, not by what a server lists.
                if isinstance(name, str) and name in pins.prompts:
                    self._withheld_prompts[name] = tuple(errors(found))
        return withheld

    def check_prompt_get(self, name: Any) -> list[Violation]:
        """Why a ``prompts/get`` of ``name`` is refused, reported: a prompt the latest listing
        had changed since pinning, or one never pinned; empty when it goes on (always in
        ``audit`` mode, and when prompts are not pinned)."""
        pins = self.pins
        if pins is None or pins.prompts is None or not isinstance(name, str):
            return []
        found = list(self._withheld_prompts.get(name, ()))
        if name not in pins.prompts:
            message = f"prompt {quote_name(name)} was not listed when the prompts were pinned"
            found = [Violation(PinRule.NEW, message, "/params/name")]
        if not found:
            return []
        action = outcome(True, self.mode)
        self.auditor.record(
            found, direction="c2s", method="prompts/get", stage="listing", action=action
        )
        return found if self.enforcing else []

    def tool_rule(self, name: str) -> ToolRule:
        """The policy's ``[[tool]]`` entry for ``name`` (no rewrite without a policy)."""
        return self.policy.tool_rule(name) if self.policy is not None else DEFAULT_TOOL_RULE

    def decode_arguments(
        self, registry: ToolRegistry, name: str, arguments: Any, max_size: int
    ) -> dict[str, Any] | None:
        """With ``json_strings`` on for ``name`` (:mod:`.rewrites`): the arguments with their
        JSON-string values decoded, to validate and forward instead, or None to keep them.
        Each decoding is reported; in ``audit`` mode nothing is changed."""
        if not isinstance(arguments, _MAPPING) or not self.tool_rule(name).json_strings:
            return None
        tool = registry.get(name)
        if tool is None:
            return None
        schema = tool.definition.get("inputSchema")
        decoded, found = decode_json_strings(schema, arguments, "/params/arguments", max_size)
        if decoded is None:
            return None
        action = outcome(True, self.mode, "replaced")
        self.auditor.record(
            found, direction="c2s", method="tools/call", tool=name, stage="arguments", action=action
        )
        return decoded if self.enforcing else None

    def rewrite_listing(self, tools: list[Any], *, pointer: str = "/result/tools") -> list[Any]:
        """The listed ``tools`` as the client gets them: with ``inline_refs`` on for a tool,
        its schemas' local references inlined (a schema that cannot be, left as it is and
        reported). The same list when nothing is rewritten, and always in ``audit`` mode."""
        if self.policy is None or not self.policy.tool_rules or not self.enforcing:
            return tools
        out = []
        for index, tool in enumerate(tools):
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str) or not self.tool_rule(name).inline_refs:
                out.append(tool)
                continue
            rewritten = dict(tool)
            for key in ("inputSchema", "outputSchema"):
                if key not in tool:
                    continue
                inlined = inline_refs(tool[key])
                rewritten[key] = inlined.schema
                if inlined.problem is not None:
                    rule, message = inlined.problem
                    where = f"{pointer}/{index}/{key}"
                    self.auditor.record(
                        [Violation(rule, message, where, Severity.WARNING)],
                        direction="s2c",
                        method="tools/list",
                        tool=name,
                        stage="listing",
                        action="allowed",
                    )
            out.append(rewritten)
        return out

    async def check_deep(
        self,
        registry: ToolRegistry,
        name: str,
        arguments: Mapping[str, Any],
        decision: CallCheck,
        *,
        identity: Identity | None = None,
    ) -> CallCheck:
        """The deep checks for real calls of ``name`` (the policy's declared ``on_calls``, and
        the tool author's registered for calls), after :meth:`check_call` let the call of
        ``identity`` go ahead with ``decision``. A policy in audit mode never refuses for its
        own."""
        if not decision.allowed:
            return decision
        shared = self._limiter
        if isinstance(shared, SharedRateLimiter) and shared.applies_to(name):
            limited = await self._shared_limited(shared, name, identity)
            if limited is not None:
                return limited
        if not isinstance(arguments, _MAPPING):
            return decision
        found: list[Violation] = []
        blocked = False
        if self.policy is not None and self.policy.deep:
            declared = await self.policy.check_deep(
                name, arguments, real_call=True, identity=identity
            )
            found += declared
            # The policy's deep checks follow its mode too; the tool author's, the enforcer's.
            mode = self._policy_mode(name)
            blocked = self._report(name, "deep", declared, bool(errors(declared)), identity, mode)
        if self.deep is not None:
            written = await self.deep.run(name, arguments, real_call=True)
            found += written
            blocked = (
                self._report(name, "deep", written, bool(errors(written)), identity) or blocked
            )
        return self._after(registry, name, decision, found, blocked)

    def check_result(
        self,
        registry: ToolRegistry,
        name: str,
        tool: CheckedTool | None,
        result: Mapping[str, Any],
        *,
        identity: Identity | None = None,
    ) -> dict[str, Any] | None:
        """The ``isError`` result replacing ``result`` of a call (by ``identity``) checked
        against ``tool`` (the decision's), or None to hand ``result`` on."""
        if tool is None:  # an unknown tool let through in audit mode: no schema to check
            return None
        found = under("/result", check_result(registry, name, result, tool=tool))
        return self.judge_result(registry, name, found, tool, identity=identity)

    def judge_result(
        self,
        registry: ToolRegistry,
        name: str,
        found: list[Violation],
        tool: CheckedTool | None = None,
        *,
        identity: Identity | None = None,
    ) -> dict[str, Any] | None:
        """As :meth:`check_result`, for a response already checked: ``found`` is what the
        checks found in it (a :class:`~strictmcp.protocol.Conversation`'s). Without ``tool``
        the registry's current listing of ``name`` words the replacement."""
        if not found:
            return None
        if tool is None:
            tool = registry.get(name)
        broken = [v for v in errors(found) if v.rule in _RESULT_RULES]
        acts = bool(broken) and tool is not None
        replaced = self.enforcing and acts
        self.auditor.record(
            found,
            direction="s2c",
            method="tools/call",
            tool=name,
            stage="result",
            action=outcome(acts, self.mode, "replaced"),
            identity=identity,
        )
        if not replaced or tool is None:
            return None
        return withheld_result(registry.revision, tool, name, broken)

    def clean_result(
        self,
        registry: ToolRegistry,
        name: str,
        tool: CheckedTool | None,
        result: dict[str, Any],
        *,
        plain: bool = False,
    ) -> dict[str, Any] | None:
        """Hygiene of a result of ``name`` (:mod:`.hygiene`, under the policy's
        ``[[result]]`` entry for it, else flags only): the result to hand on instead, or None
        to hand on ``result`` itself. A result over its bounds, or whose cleaned
        ``structuredContent`` no longer matches the ``outputSchema``, is replaced by an
        ``isError`` result. ``audit`` mode reports and changes nothing. ``plain``: the text
        the result was read from is known to hold nothing for hygiene to find
        (:attr:`~strictmcp.protocol.Decoded.plain`)."""
        rule = self.policy.result_rule(name) if self.policy is not None else DEFAULT_RESULT_RULE
        cleaned = clean_result(result, name, rule, plain=plain, allow_subdivision_flags=self._flags)
        if cleaned.refused:
            self._report_result(name, cleaned.found, tool is not None)
            self._report_result(name, cleaned.refused, tool is not None)
            if not self.enforcing or tool is None:
                return None
            hidden = any(v.rule is HygieneRule.HIDDEN_KEY for v in cleaned.refused)
            why = "has keys with hidden characters" if hidden else "exceeds a bound on results"
            return withheld_result(registry.revision, tool, name, cleaned.refused, why)
        if not cleaned.changed:
            return None
        rewritten = rule.hygiene == "strip" or rule.redact
        self._report_result(name, cleaned.found, rewritten)
        if not self.enforcing:
            return None
        value = cleaned.value
        if tool is not None and value.get("structuredContent") != result.get("structuredContent"):
            found = under("/result", check_result(registry, name, value, tool=tool))
            broken = [v for v in errors(found) if v.rule in _RESULT_RULES]
            if broken:
                self._report_result(name, broken, True)
                return withheld_result(registry.revision, tool, name, broken)
        return value

    def check_task_result(
        self,
        registry: ToolRegistry,
        task: TaskRecord,
        payload: dict[str, Any],
        found: list[Violation],
        *,
        identity: Identity | None = None,
        plain: bool = False,
    ) -> dict[str, Any] | None:
        """The final result of a tool-call ``task``, delivered after the task was created
        (2025-11-25's ``tasks/result``, 2026-07-28's inline ``result``), judged and cleaned
        exactly as the direct result of the call would be: ``found`` is what the checks found
        in it. The result to hand on instead, or None to hand ``payload`` on."""
        if task.method != "tools/call" or task.name is None:
            return None
        name = task.name
        replaced = self.judge_result(registry, name, found, task.tool, identity=identity)
        if replaced is not None:
            return replaced
        listed = task.tool or registry.get(name)
        return self.clean_result(registry, name, listed, payload, plain=plain)

    def clean_server_request(
        self, method: str, params: dict[str, Any], pointer: str = "/params"
    ) -> dict[str, Any] | None:
        """Hygiene of a server's ``elicitation/create`` or ``sampling/createMessage`` params
        (the policy's ``[server_requests]``, flags by default), at ``pointer`` in the message
        that carries them: the params to send on instead, or None to send them as they came
        (always, in ``audit`` mode)."""
        hygiene = self.policy.server_requests if self.policy is not None else "flag"
        cleaned = clean_request(params, hygiene, pointer, allow_subdivision_flags=self._flags)
        if not cleaned.changed:
            return None
        action = outcome(hygiene == "strip", self.mode, "replaced")
        self.auditor.record(
            cleaned.found, direction="s2c", method=method, stage="result", action=action
        )
        return cleaned.value if self.enforcing else None

    def clean_message(
        self,
        message: dict[str, Any],
        method: str | None,
        tool: str | None = None,
        *,
        plain: bool = False,
    ) -> dict[str, Any] | None:
        """Hygiene of a message a server sent that is not a ``tools/call`` result
        (:func:`~strictmcp.enforce.hygiene.clean_message`: errors, ``resources/read``,
        ``prompts/get`` and ``completion/complete`` results, log and progress
        notifications), under the policy's ``[[result]]`` entry for ``method`` (the request
        it answers; for ``tools/call``, the entry for ``tool``), else flags only: the message
        to send on instead, or None to send it as it came (always, in ``audit`` mode).
        ``plain``: its text holds nothing for hygiene to find."""
        policy = self.policy
        rule = policy.result_rule(tool, method or "") if policy is not None else DEFAULT_RESULT_RULE
        if not rule.redact and (rule.hygiene == "off" or plain):
            return None
        cleaned = clean_message(message, method, rule, allow_subdivision_flags=self._flags)
        if not cleaned.found:
            return None
        rewritten = self.enforcing and cleaned.changed
        self.auditor.record(
            cleaned.found,
            direction="s2c",
            method=method,
            tool=tool,
            stage="result",
            action=outcome(rule.hygiene == "strip" or rule.redact, self.mode, "replaced"),
        )
        return cleaned.value if rewritten else None

    def _report_result(self, name: str, found: list[Violation], acts: bool) -> None:
        """Report findings on a result of ``name``, which replace it if ``acts``."""
        action = outcome(acts, self.mode, "replaced")
        self.auditor.record(
            found, direction="s2c", method="tools/call", tool=name, stage="result", action=action
        )

    def dry_run(
        self, registry: ToolRegistry, identity: Identity | None = None, owner: Hashable = None
    ) -> DryRun:
        """The Validation Protocol's ``validate`` tool for the tools in ``registry``, as
        ``identity`` calls it (``owner``: whose flow taints, as :meth:`check_flow` takes it)."""
        return DryRun(registry, self, identity, owner)

    def visible(self, tools: list[Any], identity: Identity | None) -> list[Any]:
        """The tool definitions of a ``tools/list`` result that are offered and that
        ``identity`` may call: the others are not shown to it (in audit mode, every tool
        offered is)."""
        if not self._enforces_access(None):
            return tools if self.offer.everything else self.offer.listed(tools)
        return [
            tool
            for tool in tools
            if not isinstance(tool, dict)
            or not isinstance(tool.get("name"), str)
            or self.shows(tool["name"], identity)
        ]

    @property
    def lists_per_caller(self) -> bool:
        """Whether a ``tools/list`` is shaped by who asked (:meth:`visible` leaves out what
        the caller may not call): such a listing is the caller's alone, never to be cached
        for another (:func:`~strictmcp.protocol.wire.for_caller_alone`)."""
        return self._enforces_access(None)

    def shows(self, name: str, identity: Identity | None) -> bool:
        """Whether a ``tools/list`` shows ``identity`` the tool ``name``: only if it is
        offered and the access rules let it call the tool (in audit mode, if offered)."""
        return self.offer.offers(name) and (
            not self._enforces_access(name) or self._allows(identity, name)
        )

    async def rehearse(
        self,
        registry: ToolRegistry,
        name: str,
        arguments: Any,
        *,
        identity: Identity | None = None,
        owner: Hashable = None,
    ) -> list[Violation]:
        """Everything a real call of ``name`` with ``arguments`` by ``identity`` would meet,
        the tool not run and nothing reported. A tool ``identity`` may not call is unknown
        to it. Guard findings that would not refuse the call (the policy, or this enforcer,
        in audit mode) are warnings; so are the deep checks' own warnings, and the flow
        rules' findings on arguments they would send on (``redact``, ``audit``; ``owner``:
        whose taints, as :meth:`check_flow` takes it). A tool withheld from the listing is
        refused whatever the arguments, as its calls are."""
        if not self.offer.offers(name) or (
            self._enforces_access(name) and not self._allows(identity, name)
        ):
            return list(unknown_tool(registry, name).violations)
        withheld = self._withheld.get(name) if self.enforcing else None
        if withheld is not None:
            return list(withheld)
        verdict = self._schema(registry, name, arguments)
        violations = list(verdict.violations)
        if not verdict.allowed or not isinstance(arguments, _MAPPING):
            return violations
        if self.policy is not None:
            refusing = self._policy_mode(name) == "enforce"
            found = self.policy.check(name, arguments, identity=identity)
            violations += found if refusing and bool(errors(found)) else _as_warnings(found)
            declared = await self.policy.check_deep(name, arguments, identity=identity)
            violations += (
                declared if refusing and bool(errors(declared)) else _as_warnings(declared)
            )
        if self.deep is not None:
            violations += await self.deep.run(name, arguments)
        sink = self._flow_server("tools/call", {"name": name})
        if self.flows is not None and sink is not None:
            flowed = self.flows.check(sink, arguments, ARGUMENTS, owner)
            refusing = flowed.action == "refuse" and self._server_mode(sink) == "enforce"
            violations += flowed.found if refusing else _as_warnings(flowed.found)
        # A deep path or sql check starts with the guard a [[guard]] entry may also run.
        return list(dict.fromkeys(violations))

    def _enforces_access(self, tool: str | None) -> bool:
        """Whether access rules hide ``tool`` and refuse its calls (not in audit mode); for
        None, whether they may hide any tool."""
        policy = self.policy
        if policy is None or not policy.access:
            return False
        if tool is None:
            return self.enforcing and policy.any_enforced()
        return self._policy_mode(tool) == "enforce"

    def _allows(self, identity: Identity | None, name: str) -> bool:
        return self.policy is None or self.policy.allows(identity, name)

    def _policy_mode(self, tool: str | None = None) -> Mode:
        """The mode the policy's stages run in for ``tool``: audit when the enforcer's or
        the policy's for that tool (its gateway server's ``mode``) is."""
        policy = self.policy
        return (
            "enforce"
            if self.enforcing and (policy is None or policy.mode_for(tool) == "enforce")
            else "audit"
        )

    def _server_mode(self, server: str) -> Mode:
        """The mode the policy's stages run in for the gateway's ``server``."""
        policy = self.policy
        return (
            "enforce"
            if self.enforcing and (policy is None or policy.server_mode(server) == "enforce")
            else "audit"
        )

    def _permitted(self, name: str, identity: Identity | None) -> bool:
        """Whether the call goes on as far as the access rules go; a denial is reported
        (as "would deny" when the policy or this enforcer is in audit mode)."""
        policy = self.policy
        if policy is None or policy.allows(identity, name):
            return True
        denial = Violation(
            GuardCode.ACCESS_DENIED,
            f"the caller may not call tool {quote_name(name)}",
            "/params/name",
        )
        return not self._report(name, "access", [denial], True, identity)

    def _limited(self, name: str, identity: Identity | None) -> CallCheck | None:
        """The refusal of a call over a rate limit kept in memory (:data:`RATE_LIMITED`,
        with the seconds to wait as ``retryAfter``); None when the call may go on (or, in
        audit mode, when the "would deny" has been reported)."""
        if not isinstance(self._limiter, RateLimiter):
            return None
        wait = self._limiter.take(identity, name)
        if wait is None:
            return None
        over = Violation(GuardCode.RATE_LIMITED, f"rate limit reached for tool {quote_name(name)}")
        return self._over_limit(name, identity, over, wait, "Rate limit reached")

    async def _shared_limited(
        self, limiter: SharedRateLimiter, name: str, identity: Identity | None
    ) -> CallCheck | None:
        """:meth:`_limited` for limits kept in Redis. While Redis cannot be reached, the call
        is refused as over its limit (retry in 1 s), unless the store's ``on_unavailable``
        is ``open``; the operator is told when Redis is lost and when it is back."""
        was_reachable = limiter.reachable
        try:
            wait = await limiter.take(identity, name)
        except StoreUnavailable as error:
            if was_reachable:
                opened = "let through" if limiter.fails_open else "refused"
                self.auditor.say(
                    f"the rate limit store (Redis) cannot be reached ({error}): calls of "
                    f"rate-limited tools are {opened} until it can"
                )
            lost = Violation(
                GuardCode.RATE_STORE_UNAVAILABLE,
                f"the rate limits of tool {quote_name(name)} could not be checked: their "
                "store cannot be reached",
            )
            if limiter.fails_open:
                self._report(name, "rate", [lost], False, identity)  # let through, by design
                return None
            return self._over_limit(name, identity, lost, 1, "Rate limit cannot be checked")
        if not was_reachable:
            self.auditor.say("the rate limit store (Redis) can be reached again")
        if wait is None:
            return None
        over = Violation(GuardCode.RATE_LIMITED, f"rate limit reached for tool {quote_name(name)}")
        return self._over_limit(name, identity, over, wait, "Rate limit reached")

    def _over_limit(
        self, name: str, identity: Identity | None, why: Violation, wait: int, heading: str
    ) -> CallCheck | None:
        """The refusal for ``why`` (reported; in audit mode "would deny", and None)."""
        if not self._report(name, "rate", [why], True, identity):
            return None
        text = f"{heading} for tool {quote_name(name)}; retry in {wait} s"
        return CallCheck(
            (why,), jsonrpc_error=(RATE_LIMITED, text), jsonrpc_data={"retryAfter": wait}
        )

    def _schema(self, registry: ToolRegistry, name: str, arguments: Any) -> CallCheck:
        return check_call(registry, {"name": name, "arguments": arguments}, strict=self.strict)

    def _after(
        self,
        registry: ToolRegistry,
        name: str,
        decision: CallCheck,
        found: list[Violation],
        blocked: bool,
    ) -> CallCheck:
        """The decision once a stage found ``found`` (reported), which refuses the call if
        ``blocked``."""
        if not found:
            return decision
        violations = decision.violations + tuple(found)
        tool = decision.tool
        if not blocked:
            return CallCheck(violations, tool=tool)
        # Only an enforced call refuses, and enforce mode got here only past a listed tool.
        assert tool is not None
        refusal = refused_arguments(registry.revision, tool, name, found)
        return CallCheck(violations, error_result=refusal, tool=tool)

    def _report(
        self,
        name: str,
        stage: Stage,
        violations: Sequence[Violation],
        acts: bool,
        identity: Identity | None,
        mode: Mode | None = None,
    ) -> bool:
        """Report a stage's findings on a call, which would refuse it if ``acts``, the stage
        having run in ``mode`` (by default the stage's own: the policy's stages follow the
        policy's mode too); whether they refuse it."""
        if mode is None:
            mode = self._policy_mode(name) if stage in _POLICY_STAGES else self.mode
        self.auditor.record(
            violations,
            direction="c2s",
            method="tools/call",
            tool=name,
            stage=stage,
            action=outcome(acts, mode),
            identity=identity,
            mode=mode,
        )
        return acts and mode == "enforce"


def _as_warnings(violations: list[Violation]) -> list[Violation]:
    return [Violation(v.rule, v.message, v.pointer, Severity.WARNING, v.issues) for v in violations]

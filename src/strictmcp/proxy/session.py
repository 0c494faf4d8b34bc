"""What the proxy decides about each line, independent of how lines travel.

A :class:`ProxySession` takes one line from either side and says what to send on and what to
answer the sender with. Every message goes through one :class:`~strictmcp.protocol.Conversation`;
a message the proxy does not change is sent on as the very bytes it came in, so the proxy is
transparent to everything it has no reason to touch.

Client to server: an invalid envelope is answered with its JSON-RPC error; a ``tools/call``
that the :class:`~strictmcp.enforce.Enforcer` refuses (its schema check, run by the
conversation, or the policy's guards) is answered with its ``isError`` result (an unknown tool
with -32602); a call of the validate tool is answered with the enforcer's dry run; another
request the policy guards (a ``resources/read`` URI, ``prompts/get`` arguments) and refuses is
answered with -32602. None of these reach the server. Server to client: ``tools/list`` gets the
validate tool and, when enforcing, loses the tools whose definitions cannot be checked, break
an error-level listing rule (hidden characters) or differ from their pin; ``initialize`` and
``server/discover`` get the capability; ``prompts/list`` loses the prompts that differ from
their pin (whose ``prompts/get`` is then refused); a tool result that breaks its
``outputSchema`` is replaced by an ``isError`` result, and its hygiene (and that of elicitation
and sampling requests, and of every other text a client may show a model: errors, resources,
prompts, log and progress notifications) flags or strips hidden characters and terminal
sequences.
In audit mode only the validate tool and its capability are added; everything else is logged.

The validate tool's name is chosen when the server first lists its tools; ``initialize``
advertises the name chosen so far, ``validate`` unless the server lists a tool of that name
before answering it.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any, overload

from ..connect.lines import Handoff, framed, line_of
from ..connect.upstream import UPSTREAM_CLOSED, UPSTREAM_INVALID
from ..enforce import Auditor, Enforcer, Limiter, PinFile, outcome
from ..enforce.audit import REQUEST, CallOutcome
from ..guards.validation import PREFERRED_NAME, capability, choose_name, tool_definition
from ..lint import LintRule
from ..policy import Identity, Mode, Policy, ToolOffer
from ..protocol import (
    RELATED_TASK,
    CallCheck,
    Conversation,
    Decoded,
    Direction,
    Message,
    Revision,
    Rule,
    TaskRecord,
    Violation,
    answer_digest,
    answer_id,
    decode,
    error_response,
    errors,
    own_message,
    task_id_of,
)
from ..protocol.jsonrpc import DEFAULT_MAX_SIZE, REQUEST_TIMEOUT, refusal_for
from ..protocol.prompts import withheld_prompt_error
from ..protocol.tasks import (
    DEFAULT_MAX_TASKS,
    MISSING_CAPABILITY,
    TASK_METHODS,
    UNKNOWN_TASK,
    UNKNOWN_TASK_TEXT,
    extension_declared,
)
from ..protocol.tasks import EXTENSION as TASKS_EXTENSION
from ..protocol.wire import declared_capabilities, for_caller_alone
from ..schema import to_pointer
from .interceptors import Interceptors, Refusal, interceptors_of
from .observe import SessionObserver

_STRAY = "answers no request the proxy forwarded and waits for"
# What the proxy keeps of a client request it forwarded, until its answer: the method, and
# who sent it (its answer may be shaped for them: a listing of their tools, their task ids),
# when it was read (perf_counter_ns) and the tool it calls (for its ``call`` record).
# A tuple, not a class: one is made per request.
_Forwarded = tuple[str, "Identity | None", int, "str | None"]
UPSTREAM_TIMEOUT = REQUEST_TIMEOUT
"""-32001: the server did not answer within the proxy's timeout; it was sent a cancellation."""
TOO_MANY_IN_FLIGHT = -32003
"""-32003: the client has too many requests waiting for the server; retry later."""
_TOOLS = "/result/tools/"
# What a server asks of the user or the model: their text gets the results' hygiene.
_SERVER_REQUESTS = frozenset({"elicitation/create", "sampling/createMessage"})
# Results whose text a client gives its model before any call (ProxySession._introduced).
_INTRODUCING = frozenset({"prompts/list", "initialize", "server/discover"})
# Answers that may carry a task's final result, and the notification that may.
_TASK_RESULTS = frozenset({"tasks/result", "tasks/get"})
_TASK_STATUS = "notifications/tasks/status"
# What names a task in a shared session: it speaks 2026-07-28, where tasks are an extension.
_NAMING_SHARED = TASK_METHODS[Revision.V2026_07_28]


@dataclass(slots=True)
class Routed:
    """What to do with one line: send ``forward`` on, send ``reply`` back to its sender.

    ``sent`` are the ids of client requests now waiting for the server (the transport times
    them); ``settled`` the ids of client requests no longer waiting (answered, or refused).
    """

    forward: list[bytes] = field(default_factory=list)
    reply: list[bytes] = field(default_factory=list)
    sent: list[int | str] = field(default_factory=list)
    settled: list[int | str] = field(default_factory=list)


class Intercepted(Awaitable[Routed]):
    """The awaited decision about a client request that waits for external interceptors
    (``[[interceptor]]``): the relay lets later lines go on meanwhile, but for those naming
    this request (:meth:`names`: its cancellation, its progress)."""

    __slots__ = ("decision", "progress", "request_id")

    def __init__(self, request: Message, decision: Coroutine[Any, Any, Routed]) -> None:
        self.decision = decision
        self.request_id = request.id
        meta = (request.params or {}).get("_meta")
        self.progress = meta.get("progressToken") if isinstance(meta, dict) else None

    def __await__(self) -> Generator[Any, None, Routed]:
        return self.decision.__await__()

    def names(self, message: Message) -> bool:
        """Whether the client's ``message`` is about this request."""
        params = message.params or {}
        if message.method == "notifications/cancelled":
            return _same_id(params.get("requestId"), self.request_id)
        if message.method == "notifications/progress" and self.progress is not None:
            return _same_id(params.get("progressToken"), self.progress)
        return message.kind == "request" and _same_id(message.id, self.request_id)


def _same_id(one: Any, other: Any) -> bool:
    return type(one) is type(other) and one == other


@dataclass(slots=True)
class _Item:
    """The outcome for one message: sent on as it came, sent on changed, dropped (no
    ``forward`` but ``changed``), or answered here (``dry_run`` gives the answer, when it has
    to be awaited; ``deep`` gives the answer to a call its deep checks refuse, or None to send
    the call on)."""

    forward: dict[str, Any] | None = None
    changed: bool = False
    reply: dict[str, Any] | None = None
    dry_run: Awaitable[dict[str, Any]] | None = None
    deep: Awaitable[dict[str, Any] | None] | None = None
    # A refused request whose id another request in flight holds: its answer settles nothing.
    settles: bool = True
    # What the message made the proxy say besides: to other requests it could be mistaken for.
    also: Routed | None = None
    # The client request a server's answer ends, when the proxy was waiting for it.
    ends: _Forwarded | None = None
    # ``forward`` as its JSON line, when it is known already (a listing sent before).
    text: bytes | None = None


@dataclass(frozen=True)
class _Listed:
    """The last ``tools/list`` answer read: its digest less the id, the revision it was read
    at, and the message read (the id aside, what an identical answer reads as)."""

    digest: bytes
    revision: Revision | None
    message: Message
    plain: bool


@dataclass(frozen=True)
class _Sent:
    """The last ``tools/list`` result sent on: what it was made of (the answer's digest, the
    revision, the tools kept, the validate tool's name, whether it was the caller's alone)
    and its JSON text."""

    digest: bytes
    revision: Revision
    tools: tuple[Any, ...]
    validate_name: str | None
    per_caller: bool
    text: bytes


class InForce:
    """The policy the sessions following it are judged by (:meth:`ProxySession.follow`): a
    reload replaces what it holds (:meth:`replace`), and each session takes the new policy
    before it decides its next message. No list of sessions is kept: one that ends is
    simply gone."""

    def __init__(self, policy: Policy | None, limiter: Limiter | None) -> None:
        self.policy = policy
        self.limiter = limiter
        self.listing_rules: tuple[LintRule, ...] | None = None
        self.record_calls = False  # read only once replaced: sessions start as they are made
        self.generation = 0

    def replace(
        self,
        policy: Policy | None,
        limiter: Limiter | None,
        listing_rules: tuple[LintRule, ...] | None,
        record_calls: bool,
    ) -> None:
        """Put ``policy`` (with its ``limiter`` and ``listing_rules``) in force, and say
        whether the audit log records every call (``[audit] record``)."""
        self.policy, self.limiter, self.listing_rules = policy, limiter, listing_rules
        self.record_calls = record_calls
        self.generation += 1


class ProxySession:
    """The decisions of one proxied session; see the module documentation.

    ``mode`` is the proxy's (``audit`` blocks and changes nothing but the validate tool); a
    policy in audit mode never blocks either. ``max_in_flight`` bounds the client requests
    waiting for the server, and with them everything kept per request. ``listing_rules`` are
    the lint rules run on every listing (default: hidden characters; see
    :mod:`strictmcp.enforce.listing`); ``pins`` a lock file the listed tools must match
    (:mod:`strictmcp.enforce.pins`). ``limiter`` holds the policy's rate limits: the same
    for every session of a proxy, so that a limit holds across an identity's sessions.
    ``max_tasks`` bounds the tasks remembered to check their final results
    (:mod:`strictmcp.protocol.tasks`). ``replica`` names this proxy among several behind one
    balancer: the task ids a shared session hands out start with it and a dot, so that a
    request naming a task (its ``Mcp-Name``) can be sent back to the replica that has it.
    ``offer`` narrows what the policy offers (an ``[[endpoint]]``'s).
    """

    def __init__(
        self,
        auditor: Auditor,
        *,
        policy: Policy | None = None,
        mode: Mode = "enforce",
        strict: bool = False,
        max_size: int = DEFAULT_MAX_SIZE,
        max_in_flight: int = 10_000,
        listing_rules: tuple[LintRule, ...] | None = None,
        pins: PinFile | None = None,
        limiter: Limiter | None = None,
        max_tasks: int = DEFAULT_MAX_TASKS,
        replica: str | None = None,
        validate_tool: bool = True,
        offer: ToolOffer | None = None,
    ) -> None:
        self.enforcer = Enforcer(
            policy=policy,
            strict=strict,
            mode=mode,
            auditor=auditor,
            listing=listing_rules,
            pins=pins,
            limiter=limiter,
            offer=offer,
        )
        #: Who the client is when its transport does not say (stdio: the policy's
        #: ``[identity]``); a transport that authenticates passes each message's caller.
        self.identity = policy.identity if policy is not None else None
        self.auditor = self.enforcer.auditor
        self.enforcing = self.enforcer.enforcing
        self.max_size = max_size
        self.conversation = Conversation(
            strict=strict, max_tracked=max_in_flight, max_tasks=max_tasks
        )
        #: The name of the ``validate`` dry-run tool offered; None when it is not offered.
        self.validate_name: str | None = PREFERRED_NAME if validate_tool else None
        self._max_in_flight = max_in_flight
        # Client requests forwarded and not yet answered, by id: one record each, popped
        # once (by the answer, or when given up on).
        self._waiting: OrderedDict[int | str, _Forwarded] = OrderedDict()
        # Requests given up on (timed out, or cancelled by the client), with what happened
        # to them: the server's late answer is dropped.
        self._given_up: OrderedDict[int | str, str] = OrderedDict()
        # Shared by many clients (stateless HTTP): the task ids clients see are the proxy's
        # own, unguessable, each mapped to the server's and to the caller that created it.
        self._shared = False
        self._tasks = _TaskIds(max_tasks, replica)
        # Shared: the id each client sent, by the one the proxy gave its request in flight
        # (:meth:`sent_as`), which the audit log names instead.
        self._sent_ids: dict[int | str, int | str] = {}
        #: Told every decision when metrics or traces are on (None: nothing is measured).
        self.observer: SessionObserver | None = None
        # The policy in force after reloads (follow), and the reload this session took last.
        self._in_force: InForce | None = None
        self._generation = 0
        #: The policy's external interceptors (``[[interceptor]]``; None: none).
        self.interceptors: Interceptors | None = (
            interceptors_of(policy.interceptors) if policy is not None else None
        )
        # The last tools/list answer read and the last listing sent on: an identical answer
        # (the same text but for its id) is not read, nor its listing encoded, again.
        self._last_listing: _Listed | None = None
        self._sent_listing: _Sent | None = None
        self._digested: tuple[bytes, bytes | None] = (b"", None)
        #: Set when the upstream reads in this process (the gateway): the lines sent on with
        #: the values they were decided on, and the upstream's lines with theirs.
        self.handoff_out: Handoff | None = None
        self.handoff_in: Handoff | None = None

    def follow(self, in_force: InForce) -> None:
        """Judge this session by whatever policy ``in_force`` holds, now and after every
        reload (the one it holds now is the one the session was made with)."""
        self._in_force = in_force
        self._generation = in_force.generation

    def use(
        self,
        policy: Policy | None,
        limiter: Limiter | None,
        listing_rules: tuple[LintRule, ...] | None = None,
    ) -> None:
        """Judge this session's next messages by ``policy`` (reloaded): its guards, access
        rules, limits and hygiene; what the session learned (tools, tasks) is kept."""
        self.enforcer.use(policy, limiter, listing_rules)
        self.identity = policy.identity if policy is not None else None

    def share(self) -> None:
        """Serve many clients in this one session (the stateless revision over HTTP): a
        task is reachable only through the id the proxy gave its creator, and only by the
        same identity."""
        self._shared = True

    def sent_as(self, own: int | str, sent: int | str | None) -> None:
        """The client's request ``sent`` (its id as the client sent it) goes on as ``own``,
        the proxy's id for it in a shared session, until ``sent`` is None: every record made
        of it and of its answer meanwhile names ``sent`` (:meth:`as_sent`)."""
        if sent is None:
            self._sent_ids.pop(own, None)
        else:
            self._sent_ids[own] = sent

    @overload
    def as_sent(self, request_id: int | str) -> int | str: ...
    @overload
    def as_sent(self, request_id: None) -> None: ...
    @overload
    def as_sent(self, request_id: int | str | None) -> int | str | None: ...
    def as_sent(self, request_id: int | str | None) -> int | str | None:
        """``request_id`` as its client sent it (see :meth:`sent_as`): what the audit log and
        spans name a client's request by."""
        if request_id is None or not self._sent_ids:
            return request_id
        return self._sent_ids.get(request_id, request_id)

    @property
    def shared(self) -> bool:
        """Whether this session serves many clients (:meth:`share`): its requests are
        independent of each other, and none waits for another's awaited decision."""
        return self._shared

    def caller(self, request_id: int | str) -> Identity | None:
        """Who sent the client request ``request_id`` the session forwarded and still waits
        for the answer to (an upstream that keeps callers apart asks); None when the
        transport did not say, or the proxy asked it itself."""
        forwarded = self._waiting.get(request_id)
        return forwarded[1] if forwarded is not None else None

    # --- lines -------------------------------------------------------------------------------

    async def from_client(self, line: bytes) -> Routed:
        """Decide about one line the client sent."""
        return await settled(self.decide(line, "c2s"))

    async def from_server(self, line: bytes) -> Routed:
        """Decide about one line the server sent."""
        return await settled(self.decide(line, "s2c"))

    def decide(
        self,
        line: bytes,
        direction: Direction,
        decoded: Decoded | None = None,
        identity: Identity | None = None,
    ) -> Routed | Awaitable[Routed]:
        """Decide about one line sent in ``direction``, at once when nothing needs awaiting.

        Only a call of the validate tool (its dry run) and a call with deep checks to run
        before it goes on do: then the line is read
        and checked here as any other, and the awaitable returned gives its answer. A transport
        that relays many lines thus pays for a coroutine only when one is needed.

        ``decoded`` is ``line`` as :func:`~strictmcp.protocol.decode` read it at the session's
        revision, for a transport that had to read it first (HTTP routes by what a body
        holds): the one reading every decision is made on. ``identity`` is who sent a client
        line, when the transport authenticated it; else the session's :attr:`identity`.
        """
        in_force = self._in_force
        if in_force is not None and in_force.generation != self._generation:
            self._generation = in_force.generation
            self.use(in_force.policy, in_force.limiter, in_force.listing_rules)
            self.auditor.record_calls(in_force.record_calls)
        timed = self.observer is not None or self.auditor.calls
        started = time.perf_counter_ns() if timed else 0
        if decoded is None:
            if not line or line.isspace():
                return Routed()  # a blank line between messages carries none
            if direction == "c2s":
                decoded = self.read(line)
            else:
                handed = self.handoff_in.take(line) if self.handoff_in is not None else None
                decoded = self._read_answer(line, handed)
        if decoded.violations and errors(decoded.violations):
            return self._unreadable(decoded.error_id, decoded.violations, direction)
        if self.interceptors is not None and not decoded.batch:
            event = self._intercepted_event(decoded.messages[0], direction)
            if event is not None:
                decision = self._intercepted(line, direction, decoded, identity, event)
                if direction == "s2c":
                    return decision
                return Intercepted(decoded.messages[0], decision)
        return self._decided(line, direction, decoded, identity, started)

    def _decided(
        self,
        line: bytes,
        direction: Direction,
        decoded: Decoded,
        identity: Identity | None,
        started: int,
    ) -> Routed | Awaitable[Routed]:
        caller = identity if identity is not None else self.identity
        if direction == "c2s":
            size = decoded.size
            items = [self._client_message(m, size, caller, started) for m in decoded.messages]
        else:
            items = [self._server_message(m, decoded, line) for m in decoded.messages]
        for item in items:
            if item.dry_run is not None or item.deep is not None:
                return self._after_dry_runs(line, direction, decoded, items, started, caller)
        return self._routed(line, direction, decoded, items, started, caller)

    def _intercepted_event(self, message: Message, direction: Direction) -> str | None:
        """The event external interceptors are invoked on for ``message`` (a client's
        request, or the server's answer to one the session waits for); None: none is."""
        assert self.interceptors is not None
        if direction == "c2s" and message.kind == "request" and message.id is not None:
            method = message.method
            return method if self.interceptors.hooks(method, "request") else None
        if direction == "s2c" and message.kind == "response" and message.id is not None:
            forwarded = self._waiting.get(message.id)
            method = forwarded[0] if forwarded is not None else None
            return method if self.interceptors.hooks(method, "response") else None
        return None

    async def _intercepted(
        self,
        line: bytes,
        direction: Direction,
        decoded: Decoded,
        identity: Identity | None,
        event: str,
    ) -> Routed:
        """A message external interceptors are invoked on, in the order that is a security
        property (:mod:`.interceptors`): a request is mutated, checked by strictmcp, then
        validated; a response validated, mutated, then checked and cleaned by strictmcp."""
        assert self.interceptors is not None
        timed = self.observer is not None or self.auditor.calls
        started = time.perf_counter_ns() if timed else 0
        message = decoded.messages[0]
        caller = identity if identity is not None else self.identity
        holder = "params" if direction == "c2s" else "result"
        payload = message.raw.get(holder)
        if direction == "c2s":
            mutated = await self.interceptors.request(
                event, payload, self.auditor, caller, "mutate"
            )
        else:
            forwarded = self._waiting.get(message.id) if message.id is not None else None
            who = forwarded[1] if forwarded is not None else None
            mutated = await self.interceptors.response(event, payload, self.auditor, who)
        if isinstance(mutated, Refusal):
            refusal = error_response(message.id, mutated.code, mutated.text, mutated.data)
            if direction == "c2s":  # never seen by the conversation: nothing to settle
                return Routed(reply=[line_of(refusal)])
            # The server's answer replaced by the refusal, which settles its request.
            line = line_of(refusal)
            decoded = self.read(line)
        elif mutated is not payload:
            line = line_of({**message.raw, holder: mutated})
            decoded = self.read(line)
            if decoded.violations and errors(decoded.violations):
                return self._unreadable(message.id, decoded.violations, direction)
        routed = await settled(self._decided(line, direction, decoded, identity, started))
        if direction == "s2c" or not routed.forward or message.id is None:
            return routed
        forwarded_request = json.loads(routed.forward[0])
        refused = await self.interceptors.request(
            event, forwarded_request.get("params"), self.auditor, caller, "validate"
        )
        if not isinstance(refused, Refusal):
            return routed
        # Refused after strictmcp let it through: the session stops waiting for it.
        self._waiting.pop(message.id, None)
        reply = error_response(message.id, refused.code, refused.text, refused.data)
        return Routed(reply=[line_of(self._answered(reply))], settled=[message.id])

    def read(self, data: bytes, value: Any = None) -> Decoded:
        """``data`` read as :meth:`decide` reads a line: strictly, at the session's revision
        (``value``: what it reads as, when known; see :func:`~strictmcp.protocol.decode`)."""
        return decode(data, self.conversation.revision, max_size=self.max_size, value=value)

    def _read_answer(self, line: bytes, value: Any) -> Decoded:
        """A server's ``line`` read as :meth:`read` does; the answer to a ``tools/list`` the
        same as the last one read but for its id is not read again: that one's message, with
        this id."""
        request_id = answer_id(line)
        forwarded = self._waiting.get(request_id) if request_id is not None else None
        if forwarded is None or forwarded[0] != "tools/list":
            return self.read(line, value)
        digest = self._digest(line)
        revision = self.conversation.revision
        kept = self._last_listing
        if kept is not None and digest == kept.digest and revision == kept.revision:
            was = kept.message
            raw = {**was.raw, "id": request_id}
            message = Message(was.kind, request_id, None, None, was.result, None, raw)
            return Decoded((message,), False, (), len(line), request_id, kept.plain)
        decoded = self.read(line, value)
        if digest is not None and not decoded.batch and not decoded.violations:
            (message,) = decoded.messages
            if message.kind == "response":
                self._last_listing = _Listed(digest, revision, message, decoded.plain)
        return decoded

    def _digest(self, line: bytes) -> bytes | None:
        """:func:`~strictmcp.protocol.answer_digest` of ``line``, taken once per line."""
        if self._digested[0] is not line:
            self._digested = (line, answer_digest(line))
        return self._digested[1]

    def oversized(self, direction: Direction) -> Routed:
        """A line over the size limit, already discarded unread: refused, or reported."""
        violation = Violation(
            Rule.MESSAGE_TOO_LARGE, f"the message is larger than {self.max_size} bytes"
        )
        return self._unreadable(None, (violation,), direction)

    async def _after_dry_runs(
        self,
        line: bytes,
        direction: Direction,
        decoded: Decoded,
        items: list[_Item],
        started: int,
        caller: Identity | None,
    ) -> Routed:
        for item in items:
            if item.dry_run is not None:
                item.reply = await item.dry_run
            elif item.deep is not None:
                item.reply = await item.deep
                if item.reply is not None:
                    item.forward = None
        return self._routed(line, direction, decoded, items, started, caller)

    def _routed(
        self,
        line: bytes,
        direction: Direction,
        decoded: Decoded,
        items: list[_Item],
        started: int = 0,
        caller: Identity | None = None,
    ) -> Routed:
        if self.observer is not None:
            self.observer.decided(direction, decoded.messages, items, started)
        if self.auditor.calls:
            self._calls_ended(direction, decoded, items, started, caller)
        routed = Routed()
        sent, settled = routed.sent, routed.settled
        from_client = direction == "c2s"
        forwarded: list[dict[str, Any]] = []
        replies: list[dict[str, Any]] = []
        changed = False
        also: list[Routed] = []
        for message, item in zip(decoded.messages, items, strict=True):
            forward, reply, request_id = item.forward, item.reply, message.id
            changed = changed or item.changed
            if forward is not None:
                forwarded.append(forward)
            if reply is not None:
                replies.append(reply)
            if item.also is not None:
                also.append(item.also)
            if request_id is None:
                continue
            if from_client:
                if message.kind == "request" and forward is not None:
                    sent.append(request_id)
                if reply is not None and item.settles:
                    settled.append(request_id)
            elif message.kind in ("response", "error") and item.settles:
                settled.append(request_id)
        handoff = self.handoff_out if from_client else None  # what the client's send on
        if not replies and not changed and framed(line):
            routed.forward.append(line)
            if handoff is not None and not decoded.batch:
                handoff.give(line, decoded.messages[0].raw)
        elif forwarded:
            text = items[0].text if len(items) == 1 and not decoded.batch else None
            if text is None or items[0].forward is not forwarded[0]:
                text = line_of(forwarded if decoded.batch else forwarded[0])
            routed.forward.append(text)
            if handoff is not None and not decoded.batch:
                handoff.give(text, forwarded[0])
        if replies:
            routed.reply.append(line_of(replies if decoded.batch else replies[0]))
        for more in also:
            routed.forward += more.forward
            routed.reply += more.reply
            settled += more.settled
        return routed

    def _calls_ended(
        self,
        direction: Direction,
        decoded: Decoded,
        items: list[_Item],
        started: int,
        caller: Identity | None,
    ) -> None:
        """The ``call`` record of each client request these decisions end: refused (or, for
        the validate tool, answered) by the proxy, or answered by the server."""
        now = time.perf_counter_ns()
        for message, item in zip(decoded.messages, items, strict=True):
            if direction == "c2s":
                request_id = message.id
                if message.kind != "request" or request_id is None or item.reply is None:
                    continue
                ended: CallOutcome = "answered" if item.dry_run is not None else "refused"
                method = message.method or ""
                self.auditor.call(
                    self.as_sent(request_id),
                    method,
                    _tool_of(message),
                    ended,
                    now - started,
                    caller,
                )
            elif item.ends is not None and message.id is not None:
                method, who, since, tool = item.ends
                forward = item.forward
                ended = "answered" if forward is not None and "error" not in forward else "error"
                answered = self.as_sent(message.id)
                self.auditor.call(answered, method, tool, ended, now - since, who)

    def _unreadable(
        self,
        request_id: int | str | None,
        violations: tuple[Violation, ...],
        direction: Direction,
    ) -> Routed:
        """A line that is not a valid message (``request_id`` is its id, when it could be
        read): the client gets its error; the server's is reported, and the client's request
        it answers (its id as read strictly, or the only request waiting) is failed at once
        rather than left waiting for the timeout."""
        found = errors(violations)
        token = REQUEST.set(self.as_sent(request_id))
        try:
            self.auditor.record(found, direction=direction, method=None, action="refused")
        finally:
            REQUEST.reset(token)
        if direction == "c2s":
            return Routed(reply=[line_of(refusal_for(request_id, found))])
        if request_id is None and len(self._waiting) == 1:
            request_id = next(iter(self._waiting))
        if request_id is None or request_id not in self._waiting:
            return Routed()
        text = "The server's answer was not a valid JSON-RPC message (strictmcp proxy)"
        return self._answer_invalid(request_id, text, found)

    # --- messages ----------------------------------------------------------------------------

    def _client_message(
        self, message: Message, size: int, caller: Identity | None, started: int
    ) -> _Item:
        token = REQUEST.set(self.as_sent(message.id))  # what every record meanwhile names
        try:
            return self._client_named(message, size, caller, started)
        finally:
            REQUEST.reset(token)

    def _client_named(
        self, message: Message, size: int, caller: Identity | None, started: int
    ) -> _Item:
        if self._shared and message.kind == "request" and message.method in _NAMING_SHARED:
            if not extension_declared(declared_capabilities(message.params)):
                return self._needs_extension(message)
            own = self._own_task(message, caller)
            if own is None:
                return self._unknown_task(message)
            message = own
        item = self._client_checked(message, size, caller, started)
        if message.method in _NAMING_SHARED and self._shared and item.forward is not None:
            item.changed = True  # sent on with the server's task id
        return item

    def _own_task(self, message: Message, caller: Identity | None) -> Message | None:
        """A shared session's request naming a task: with the server's id for it, or None
        when the caller did not create a task of that id through this proxy."""
        params = message.params or {}
        server_id = self._tasks.server_id(task_id_of(params), caller)
        if server_id is None:
            return None
        return own_message({**message.raw, "params": {**params, "taskId": server_id}})

    def _needs_extension(self, message: Message) -> _Item:
        """A shared session's ``tasks/*`` request without the tasks extension: answered as the
        server would (-32021), without handing the server a task id the caller was not given."""
        self.conversation.observe(message, "c2s")
        data: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
        text = "Missing required client capability: the tasks extension"
        reply = error_response(message.id, MISSING_CAPABILITY, text, data)
        return _Item(reply=self._answered(reply))

    def _unknown_task(self, message: Message) -> _Item:
        found = [Violation(Rule.TASK_UNKNOWN, UNKNOWN_TASK_TEXT, "/params/taskId")]
        self.auditor.record(found, direction="c2s", method=message.method, action="refused")
        self.conversation.observe(message, "c2s")
        reply = error_response(message.id, UNKNOWN_TASK, UNKNOWN_TASK_TEXT)
        return _Item(reply=self._answered(reply))

    def _client_checked(
        self, message: Message, size: int, caller: Identity | None, started: int
    ) -> _Item:
        params = message.params or {}
        name = params.get("name") if message.method == "tools/call" else None
        if (
            message.kind == "request"
            and name is not None
            and name == self.validate_name
            and self._listed()
        ):
            # Ours, not the server's: the name was chosen so as not to shadow any of its tools.
            dry_run = self.enforcer.dry_run(
                self.conversation.tools, caller, self._flow_owner(caller)
            )
            return _Item(dry_run=_answer(message, dry_run.answer(params.get("arguments"))))
        if message.kind == "request" and len(self._waiting) >= self._max_in_flight:
            busy = "Too many requests are waiting for the server"
            return _Item(reply=error_response(message.id, TOO_MANY_IN_FLIGHT, busy))
        rewritten = False
        if message.kind == "request" and isinstance(name, str):
            decoded = self.enforcer.decode_arguments(
                self.conversation.tools, name, params.get("arguments"), self.max_size
            )
            if decoded is not None:
                # The decoded arguments are what is checked and what the server gets.
                params = {**params, "arguments": decoded}
                message = own_message({**message.raw, "params": params})
                rewritten = True
        asked = (
            self.conversation.request_answered_by(message, "c2s")
            if self.enforcer.flows is not None and message.kind in ("response", "error")
            else None
        )
        found = self.conversation.observe(message, "c2s", size=size)
        call, tool = self.conversation.call, name if isinstance(name, str) and name else None
        if call is not None and tool is not None and call.violations:
            # The call's own findings are the enforcer's to report, at their stage.
            found = [v for v in found if v not in call.violations]
        if message.id is not None and _names_unknown_task(found):
            # Tasks belong to the session that made them: another's, or a forgotten one,
            # is not asked about (its answer could not be checked).
            action = outcome(True, self.enforcer.mode)
            self.auditor.record(found, direction="c2s", method=message.method, action=action)
            if self.enforcing:
                reply = error_response(message.id, UNKNOWN_TASK, UNKNOWN_TASK_TEXT)
                return _Item(reply=self._answered(reply))
        elif found:
            stopped = self._judged(message, found, "c2s", tool)
            if stopped is not None:
                return stopped
        if message.method == "prompts/get" and message.id is not None:
            refused = self.enforcer.check_prompt_get(params.get("name"))
            if refused:
                error = withheld_prompt_error(params["name"], refused)
                reply = error_response(message.id, error["code"], error["message"], error["data"])
                return _Item(reply=self._answered(reply))
        if self.enforcer.guards_request(message.method):
            guarded = self._guarded(message, params, caller)
            if guarded is not None:
                return guarded
        if asked is not None:
            return self._answer_flowed(message, asked, caller)
        if call is None or tool is None or message.id is None:
            return self._sent_on(message, caller, started, rewritten)
        decision = self.enforcer.check_call(
            self.conversation.tools, tool, params.get("arguments"), call, identity=caller
        )
        flow, forward = self._flowed(message, caller) if decision.allowed else (None, message.raw)
        if flow is None and forward is not message.raw:
            # Data replaced (redact): what is sent is checked as the call was, so that a
            # replacement cannot make a value no check saw (a path whose '..' the data hid).
            params = forward["params"]
            decision = self.enforcer.check_arguments(
                self.conversation.tools, tool, params.get("arguments"), identity=caller
            )
        decision, rewritten = flow or decision, rewritten or forward is not message.raw
        if not decision.allowed:
            reply = _refusal(message, decision)
        elif self.enforcer.awaits(tool):
            deep = self._deep(message, tool, params.get("arguments"), decision, caller, started)
            return _Item(forward=forward, changed=rewritten, deep=deep)
        else:
            self._waiting[message.id] = ("tools/call", caller, started, tool)
            return _Item(forward=forward, changed=rewritten)
        return _Item(reply=self._answered(reply))

    def _sent_on(
        self, message: Message, caller: Identity | None, started: int, rewritten: bool
    ) -> _Item:
        """A client's message other than a tool call, past its checks: under the flow rules,
        then sent on (a request waited for)."""
        flow, forward = self._flowed(message, caller)
        if flow is not None and message.id is None:
            return _Item(changed=True)  # a notification refused: no id to answer, dropped
        if flow is not None:
            return _Item(reply=self._answered(_refusal(message, flow)))
        if forward is not message.raw and self.enforcer.guards_request(message.method):
            # Data replaced (redact): what is sent is guarded as the request was.
            guarded = self._guarded(message, forward["params"], caller)
            if guarded is not None:
                return guarded
        if message.kind == "request" and message.id is not None:
            self._waiting[message.id] = (message.method or "", caller, started, None)
        return _Item(forward=forward, changed=rewritten or forward is not message.raw)

    def _flowed(
        self, message: Message, caller: Identity | None
    ) -> tuple[CallCheck | None, dict[str, Any]]:
        """The gateway's ``[[flow]]`` rules on a request or notification to its servers: the
        refusal, or None, and the message to send (its data replaced where a rule redacts)."""
        if self.enforcer.flows is None or message.kind not in ("request", "notification"):
            return None, message.raw
        params = message.params or {}
        refused, sent = self.enforcer.check_flow(
            self.conversation.tools,
            message.method,
            params,
            identity=caller,
            owner=self._flow_owner(caller),
        )
        return refused, message.raw if sent is params else {**message.raw, "params": sent}

    def _answer_flowed(self, message: Message, asked: Message, caller: Identity | None) -> _Item:
        """The client's answer to a gateway's server's own request (``asked``) under the
        ``[[flow]]`` rules: sent on, with data replaced where a rule redacts, or withheld,
        the server that asked told so in its place (value-free)."""
        withheld, sent = self.enforcer.check_answer_flow(
            asked.method, message.raw, identity=caller, owner=self._flow_owner(caller)
        )
        if withheld:
            text = "The client's answer carries data read from another server (strictmcp gateway)"
            return _Item(forward=_in_place_of(message.id, text, withheld), changed=True)
        return _Item(forward=sent, changed=sent is not message.raw)

    def _flow_owner(self, caller: Identity | None) -> Any:
        """Whose taints a message is about: the session's (None), or in a shared session,
        which has no session of the client's, its caller's."""
        return _principal(caller) if self._shared else None

    def _guarded(
        self, message: Message, params: dict[str, Any], caller: Identity | None
    ) -> _Item | None:
        """The answer to a request (besides ``tools/call``) of a method the policy guards,
        when its guards refuse it; None when it goes on."""
        method = message.method
        assert method is not None  # only a request's method is guarded
        refused = self.enforcer.check_request(method, params, identity=caller)
        if refused is None:
            return None
        if message.id is None:
            return _Item(changed=True)  # refused, and no id to answer: dropped
        code, text, data = refused["code"], refused["message"], refused["data"]
        return _Item(reply=self._answered(error_response(message.id, code, text, data)))

    def _judged(
        self,
        message: Message,
        found: list[Violation],
        direction: Direction,
        tool: str | None,
        method: str | None = None,
    ) -> _Item | None:
        """Report ``found`` and say what becomes of a message with error findings when
        enforcing (None: it goes on, as it does in audit mode or with warnings alone). No
        error rule is only reported (docs/architecture.md, "What is refused").

        A request is answered with its JSON-RPC error (the client's by the proxy, the
        server's to the server), a notification is dropped, an answer to no request is
        dropped, and an answer that breaks the rules for its request is replaced by an error
        for the side that asked (``method``: the request's). What every side is told is
        value-free."""
        if not found:
            return None
        blocking = errors(found)
        method = method or message.method
        action = outcome(bool(blocking), self.enforcer.mode)
        self.auditor.record(found, direction=direction, method=method, tool=tool, action=action)
        if not blocking or not self.enforcing:
            return None
        if message.kind == "notification":
            return _Item(changed=True)
        if message.kind == "request":
            reply = refusal_for(message.id, blocking)
            if any(v.rule is Rule.DUPLICATE_ID for v in blocking):
                # The id belongs to the request in flight: that one is still answered.
                return _Item(reply=reply, settles=False)
            if direction == "c2s":
                return _Item(reply=self._answered(reply))
            self.conversation.observe(own_message(reply), "c2s")
            return _Item(reply=reply)
        if message.id is None or any(v.rule is Rule.UNMATCHED_RESPONSE for v in blocking):
            return _Item(changed=True, settles=False)
        whose = "client" if direction == "c2s" else "server"
        text = f"The {whose}'s answer was not valid (strictmcp proxy)"
        return _Item(forward=_in_place_of(message.id, text, blocking), changed=True)

    def _answered(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Our answer to a request, which settles it in the conversation as the server's
        would."""
        self.conversation.observe(own_message(reply), "s2c")
        return reply

    async def _deep(
        self,
        message: Message,
        tool: str,
        arguments: Any,
        decision: CallCheck,
        caller: Identity | None,
        started: int,
    ) -> dict[str, Any] | None:
        """The answer to a call of ``caller`` its awaited checks refuse (shared rate limits,
        deep checks), or None when it goes to the server."""
        assert message.id is not None  # only requests are checked
        # Set again here: this runs after the decision that made it, in the awaiting task's
        # context, where another message of a batch may have been decided meanwhile.
        token = REQUEST.set(self.as_sent(message.id))
        try:
            decision = await self.enforcer.check_deep(
                self.conversation.tools, tool, arguments, decision, identity=caller
            )
        finally:
            REQUEST.reset(token)
        if decision.jsonrpc_error is not None:
            code, text = decision.jsonrpc_error
            return self._answered(error_response(message.id, code, text, decision.jsonrpc_data))
        if decision.error_result is None:
            self._waiting[message.id] = ("tools/call", caller, started, tool)
            return None
        return self._answered(_result(message, decision.error_result))

    def _server_message(self, message: Message, decoded: Decoded, line: bytes) -> _Item:
        answer = message.kind in ("response", "error")
        # An answer's is its request's; a server's request has an id of the server's own.
        token = REQUEST.set(self.as_sent(message.id) if answer else message.id)
        try:
            return self._server_named(message, decoded, line)
        finally:
            REQUEST.reset(token)

    def _server_named(self, message: Message, decoded: Decoded, line: bytes) -> _Item:
        answer = message.kind in ("response", "error")
        request = self.conversation.request_answered_by(message, "s2c") if answer else None
        forwarded = (
            self._waiting.pop(message.id, None) if answer and message.id is not None else None
        )
        item = self._server_checked(message, decoded, request, forwarded, line)
        if item.forward is message.raw and (self.enforcer.redacts or not decoded.plain):
            cleaned = self._cleaned(message, request, decoded.plain)
            if cleaned is not None:
                item = _Item(forward=cleaned, changed=True)
        if answer and item.forward is not None and not decoded.plain:
            asked = self._input_requests_cleaned(item.forward)
            if asked is not None:
                item = _Item(forward=asked, changed=True)
        if self.enforcer.flows is not None and request is not None and item.forward is not None:
            owner = self._flow_owner(forwarded[1] if forwarded is not None else None)
            # An error's text is read as a result's is (a database's "duplicate key ...").
            answered = item.forward.get("result", item.forward.get("error"))
            self.enforcer.taint(request.method, request.params, answered, owner, message.id)
        elif (
            self.enforcer.flows is not None
            and not answer
            and item.forward is not None
            and not self._shared  # a shared session's log lines and requests are no caller's
        ):
            self.enforcer.taint_sent(item.forward)
        if self._shared and item.forward is not None:
            # A task the server made is known to the client by the proxy's own id.
            method = request.method if request is not None else message.method
            caller = forwarded[1] if forwarded is not None else None
            public = self._tasks.public(item.forward, method, caller)
            if public is not None:
                item = _Item(forward=public, changed=True)
        item.ends = forwarded
        return item

    def _input_requests_cleaned(self, forward: dict[str, Any]) -> dict[str, Any] | None:
        """A 2026-07-28 ``input_required`` result's requests (a server's elicitation and
        sampling, carried in its answer) cleaned as the same requests sent on their own are
        (:meth:`~strictmcp.enforce.Enforcer.clean_server_request`): the message to send on
        instead, or None."""
        result = forward.get("result")
        asked = result.get("inputRequests") if isinstance(result, dict) else None
        if not isinstance(asked, dict) or not asked:
            return None
        requests = dict(asked)
        for key, request in asked.items():
            method = request.get("method") if isinstance(request, dict) else None
            params = request.get("params") if isinstance(request, dict) else None
            if method not in _SERVER_REQUESTS or not isinstance(params, dict):
                continue
            pointer = f"/result/inputRequests/{to_pointer([key])[1:]}/params"
            cleaned = self.enforcer.clean_server_request(method, params, pointer)
            if cleaned is not None:
                requests[key] = {**request, "params": cleaned}
        if all(requests[key] is asked[key] for key in asked):
            return None
        assert isinstance(result, dict)
        return {**forward, "result": {**result, "inputRequests": requests}}

    def _cleaned(
        self, message: Message, request: Message | None, plain: bool
    ) -> dict[str, Any] | None:
        """A message sent on as it came, with what of it a client may show a model (an
        error's text, a resource's contents, a prompt, a log line) cleaned as the results of
        ``request`` are (:meth:`~strictmcp.enforce.Enforcer.clean_message`); None: as it came."""
        method = request.method if request is not None else message.method
        params = request.params if request is not None else None
        name = params.get("name") if method == "tools/call" and params is not None else None
        tool = name if isinstance(name, str) else None
        return self.enforcer.clean_message(message.raw, method, tool, plain=plain)

    def _introduced(
        self, message: Message, request: Message | None, result: dict[str, Any], plain: bool
    ) -> dict[str, Any] | None:
        """A ``prompts/list``, ``initialize`` or ``server/discover`` ``result`` as the client
        gets it: the prompts the pins withhold left out (judged as the server listed them),
        then what a client gives its model cleaned (prompts' descriptions, the server's
        instructions), and the validate tool's capability added; None: as it came."""
        method = request.method if request is not None else None
        kept = self._prompt_listing(result) if method == "prompts/list" else None
        changed = kept
        answer = message.raw if kept is None else {**message.raw, "result": kept}
        cleaned = self.enforcer.clean_message(answer, method, plain=plain)
        if cleaned is not None:
            changed = cleaned["result"]
        if method != "prompts/list" and self.validate_name is not None:
            changed = _with_capability(changed or result, capability(self.validate_name))
        return changed

    def _server_checked(
        self,
        message: Message,
        decoded: Decoded,
        request: Message | None,
        forwarded: _Forwarded | None,
        line: bytes,
    ) -> _Item:
        """The server's ``message``: for an answer, ``request`` is the request it answers as
        the conversation pairs them, ``forwarded`` the proxy's record of it (None: the proxy
        forwarded no such request, or no longer waits for it); ``line`` the text it came in."""
        size = decoded.size
        answer = message.kind in ("response", "error")
        if answer and forwarded is None:
            why = self._given_up.pop(message.id, None) if message.id is not None else None
            if why is not None:
                self.auditor.say(f"dropped the server's late answer to a request that {why}")
                self.conversation.observe(message, "s2c", size=size)
                return _Item(changed=True)
            if self.enforcing:
                return self._stray(message, size)
        method = request.method if request is not None else message.method
        params = (request.params or {}) if request is not None else {}
        # The task a message is about, read before the message may make it forgotten.
        task = None
        if method in _TASK_RESULTS or message.method == _TASK_STATUS:
            named = params if request is not None else message.params
            task = self.conversation.task("c2s", task_id_of(named))
        # A listing identical to the last one checked is not checked again (its digest names
        # its content less the id): the tools' schemas and the listing rules' findings reused.
        digest = None
        if method == "tools/list" and not decoded.batch and message.kind == "response":
            digest = self._digest(line)
        found = self.conversation.observe(message, "s2c", size=size, digest=digest)
        tool = params.get("name") if method == "tools/call" else None
        tool = tool if isinstance(tool, str) else None
        result = message.result if message.kind == "response" else None
        changed: dict[str, Any] | None = None
        if isinstance(result, dict) and method == "tools/list":
            lister = forwarded[1] if forwarded is not None else None
            return self._listing_item(message, result, found, lister, digest)
        elif isinstance(result, dict) and method in (
            "prompts/list",
            "initialize",
            "server/discover",
        ):
            changed = self._introduced(message, request, result, decoded.plain)
        elif isinstance(result, dict) and tool is not None:
            registry = self.conversation.tools
            if found:
                changed = self.enforcer.judge_result(registry, tool, found)
                found = []
            if changed is None:
                listed = registry.get(tool)
                changed = self.enforcer.clean_result(
                    registry, tool, listed, result, plain=decoded.plain
                )
        elif method in _TASK_RESULTS or message.method == _TASK_STATUS:
            return self._task_message(message, method, found, task, decoded.plain)
        elif message.kind == "request" and message.method in _SERVER_REQUESTS:
            refused = self._judged(message, found, "s2c", None) if found else None
            if refused is not None:
                return refused
            asked = message.params if isinstance(message.params, dict) else None
            cleaned = self.enforcer.clean_server_request(message.method, asked) if asked else None
            if cleaned is None:
                return _Item(forward=message.raw)
            return _Item(forward={**message.raw, "params": cleaned}, changed=True)
        refused = self._judged(message, found, "s2c", tool, method) if found else None
        if refused is not None:
            return refused
        if changed is None:
            return _Item(forward=message.raw)
        return _Item(forward={**message.raw, "result": changed}, changed=True)

    def _stray(self, message: Message, size: int) -> _Item:
        """A server's answer to no request the proxy forwarded and still waits for (an id
        never sent, a second answer, ``"7"`` for 7, ``null``): never handed to the client,
        which may read it as the answer to another request; each request it could be
        mistaken for is failed at once instead."""
        found: list[Violation] = self.conversation.observe(message, "s2c", size=size)
        if not errors(found):
            found = [*found, Violation(Rule.UNMATCHED_RESPONSE, _STRAY, "/id")]
        self.auditor.record(found, direction="s2c", method=None, action="refused")
        if message.id is None:
            return _Item(changed=True, settles=False)
        also = Routed()
        for request_id in self.conversation.confusable(message, "s2c"):
            text = "The server answered with an id that could be mistaken for this request's"
            failed = self._answer_invalid(request_id, f"{text} (strictmcp proxy)", errors(found))
            also.forward += failed.forward
            also.reply += failed.reply
            also.settled += failed.settled
        return _Item(changed=True, settles=False, also=also)

    def _answer_invalid(self, request_id: int | str, text: str, found: list[Violation]) -> Routed:
        """Fail the client's request ``request_id`` with the proxy's own error, ``text`` and
        the findings (value-free) in ``data``, for a server answer that could not be handed
        on. The server is told to cancel it, and its answer, should one still come, is
        dropped. Sides as seen from the server: ``forward`` to the client, ``reply`` to it."""
        reply = _in_place_of(request_id, text, found)
        if self.observer is not None and request_id in self._waiting:
            self.observer.gave_up(request_id, "invalid", UPSTREAM_INVALID)
        self._answered(reply)
        given_up = self._give_up(
            request_id,
            "was failed for the server's invalid answer",
            "failed a {} request for the server's invalid answer",
            "strictmcp proxy: the server's answer was invalid",
        )
        return Routed(forward=[line_of(reply)], reply=given_up.forward, settled=[request_id])

    def _task_message(
        self,
        message: Message,
        method: str | None,
        found: list[Violation],
        task: TaskRecord | None,
        plain: bool,
    ) -> _Item:
        """A message that may carry a task's final result: the answer to ``tasks/result``
        (2025-11-25), to ``tasks/get`` or a status notification (2026-07-28, inline). The
        result is judged and cleaned as the direct result of the call would be; one for a
        task the session does not know is not handed on (fail closed)."""
        holder = "params" if message.kind == "notification" else "result"
        body = message.raw.get(holder)
        inline = method != "tasks/result"
        payload = body.get("result") if inline and isinstance(body, dict) else body
        if not isinstance(body, dict) or not isinstance(payload, dict):
            self._report_found(found, method)
            return _Item(forward=message.raw)
        if task is None and _names_unknown_task(found):
            action = outcome(True, self.enforcer.mode, "replaced")
            self.auditor.record(found, direction="s2c", method=method, action=action)
            if not self.enforcing:
                return _Item(forward=message.raw)
            if message.kind == "notification":
                return _Item(changed=True)
            reply = error_response(message.id, UNKNOWN_TASK, UNKNOWN_TASK_TEXT)
            return _Item(forward=reply, changed=True)
        if task is None or task.method != "tools/call":
            # Only a tool's result has a schema of the server's to hold it to; a task the
            # server asked of the client is the client's answer, checked and reported.
            self._report_found(found, method)
            return _Item(forward=message.raw)
        registry = self.conversation.tools
        changed = self.enforcer.check_task_result(registry, task, payload, found, plain=plain)
        if changed is None:
            return _Item(forward=message.raw)
        if inline:
            return _Item(forward={**message.raw, holder: {**body, "result": changed}}, changed=True)
        # The answer to tasks/result says which task it is for only in its _meta: kept.
        meta = payload.get("_meta")
        if isinstance(meta, dict) and RELATED_TASK in meta:
            own = changed.get("_meta")
            changed = {
                **changed,
                "_meta": {
                    **(own if isinstance(own, dict) else {}),
                    RELATED_TASK: meta[RELATED_TASK],
                },
            }
        return _Item(forward={**message.raw, "result": changed}, changed=True)

    def _report_found(self, found: list[Violation], method: str | None) -> None:
        if found:
            self.auditor.record(found, direction="s2c", method=method, action="allowed")

    def _listing_item(
        self,
        message: Message,
        result: dict[str, Any],
        found: list[Violation],
        lister: Identity | None,
        digest: bytes | None,
    ) -> _Item:
        """The server's answer to a ``tools/list``, as the client (``lister``) gets it."""
        shaped, text = self._listing(result, found, lister, digest)
        forward = {**message.raw, "result": shaped}
        line = _line_with_result(forward, text) if text is not None else None
        return _Item(forward=forward, changed=True, text=line)

    def _listing(
        self,
        result: dict[str, Any],
        found: list[Violation],
        lister: Identity | None,
        digest: bytes | None,
    ) -> tuple[dict[str, Any], bytes | None]:
        """The ``tools/list`` result the client (``lister``) gets: unusable tools withheld
        when enforcing, tools the enforcer's listing checks withhold (hidden characters, pins),
        tools not offered or that the lister may not call left out, and the validate tool
        added to the listing's last page; and its JSON text, when the answer's ``digest`` is
        known (None: to be encoded)."""
        # A definition strictmcp cannot check calls against would have every call refused.
        unusable = [v for v in errors(found) if _tool_index(v.pointer) is not None]
        withheld = unusable if self.enforcing else []
        kept = [v for v in found if v not in unusable]
        method = "tools/list"
        action = outcome(True, self.enforcer.mode, "withheld")
        self.auditor.record(
            unusable, direction="s2c", method=method, stage="listing", action=action
        )
        self.auditor.record(kept, direction="s2c", method=method, stage="listing", action="allowed")
        tools = result.get("tools")
        if not isinstance(tools, list):
            return result, None
        registry = self.conversation.tools
        known = frozenset(registry.names())
        poisoned = self.enforcer.check_listing(tools, registry.revision, known=known, digest=digest)
        tools = self.enforcer.rewrite_listing(tools)
        if self.enforcing:
            broken = {_tool_index(v.pointer) for v in withheld} | poisoned
            tools = [tool for index, tool in enumerate(tools) if index not in broken]
        tools = self.enforcer.visible(tools, lister)
        shown = tools
        validate = None
        if result.get("nextCursor") is None and self.validate_name is not None:
            validate = self.validate_name = choose_name(registry.names(), self.validate_name)
            tools = [*tools, tool_definition(validate, registry.revision)]
        per_caller = self.enforcer.lists_per_caller
        listed = {**result, "tools": tools}
        if per_caller:
            listed = for_caller_alone(listed, registry.revision)
        if digest is None:
            return listed, None
        # The same answer, the same tools kept (the very objects, read once), the same
        # validate tool: the same text as sent last time.
        sent = self._sent_listing
        if (
            sent is None
            or (sent.digest, sent.revision) != (digest, registry.revision)
            or (sent.validate_name, sent.per_caller) != (validate, per_caller)
            or len(sent.tools) != len(shown)
            or any(one is not other for one, other in zip(sent.tools, shown, strict=True))
        ):
            text = line_of(listed)[:-1]
            sent = _Sent(digest, registry.revision, tuple(shown), validate, per_caller, text)
            self._sent_listing = sent
        return listed, sent.text

    def _prompt_listing(self, result: dict[str, Any]) -> dict[str, Any] | None:
        """The ``prompts/list`` result without the prompts the pins withhold (None: as it
        came)."""
        prompts = result.get("prompts")
        if not isinstance(prompts, list):
            return None
        withheld = self.enforcer.check_prompt_listing(prompts)
        if not withheld:
            return None
        kept = [prompt for index, prompt in enumerate(prompts) if index not in withheld]
        return {**result, "prompts": kept}

    def _listed(self) -> bool:
        return self.conversation.tools.listed

    # --- faults ------------------------------------------------------------------------------

    def expire(self, request_id: int | str) -> Routed:
        """A request the server took too long to answer: the client gets a timeout error, the
        server a cancellation, and its answer, should it come, is dropped."""
        routed = self._give_up(
            request_id,
            "timed out",
            "the server did not answer a {} request in time",
            "timed out in strictmcp proxy",
        )
        if routed.settled:
            if self.observer is not None:
                self.observer.gave_up(request_id, "timeout", UPSTREAM_TIMEOUT)
            reply = error_response(
                request_id, UPSTREAM_TIMEOUT, "The server did not answer in time (strictmcp proxy)"
            )
            routed.reply.append(line_of(reply))
        return routed

    def cancel(self, request_id: int | str, reason: str) -> Routed:
        """A request the client gave up on (an HTTP client that went away): the server gets a
        cancellation saying ``reason``, its answer, should it come, is dropped, and the client,
        gone, gets nothing."""
        return self._give_up(
            request_id, "was cancelled", "the client cancelled a {} request", reason
        )

    def _give_up(self, request_id: int | str, why: str, said: str, reason: str) -> Routed:
        """Stop waiting for a request (nothing happens when it is not waiting): tell the
        operator ``said`` (with the method), the server to cancel it, and drop its answer,
        which the operator is then told came for a request that ``why``."""
        forwarded = self._waiting.pop(request_id, None)
        if forwarded is None:
            return Routed()
        method = forwarded[0]
        self._ended(request_id, forwarded, "timeout" if why == "timed out" else "cancelled")
        self._given_up[request_id] = why
        while len(self._given_up) > self._max_in_flight:
            self._given_up.popitem(last=False)
        self.auditor.say(said.format(method))
        routed = Routed(settled=[request_id])
        if method != "initialize":  # the spec forbids cancelling initialize
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": reason},
            }
            self.conversation.observe(own_message(cancel), "c2s")
            routed.forward.append(line_of(cancel))
        return routed

    def _ended(self, request_id: int | str, forwarded: _Forwarded, ended: CallOutcome) -> None:
        """The ``call`` record of a request the proxy stopped waiting for."""
        method, caller, since, tool = forwarded
        self.auditor.call(request_id, method, tool, ended, time.perf_counter_ns() - since, caller)

    def fail_waiting(self, why: str) -> list[bytes]:
        """Error replies for every request still waiting, when the server is gone."""
        replies = [line_of(error_response(i, UPSTREAM_CLOSED, why)) for i in self._waiting]
        for request_id, forwarded in self._waiting.items():
            self._ended(request_id, forwarded, "closed")
        if self.observer is not None:
            for request_id in self._waiting:
                self.observer.gave_up(request_id, "closed", UPSTREAM_CLOSED)
        self._waiting.clear()
        return replies


def _with_capability(result: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    capabilities = result.get("capabilities")
    capabilities = capabilities if isinstance(capabilities, dict) else {}
    experimental = capabilities.get("experimental")
    experimental = experimental if isinstance(experimental, dict) else {}
    return {
        **result,
        "capabilities": {**capabilities, "experimental": {**experimental, **entry}},
    }


class _TaskIds:
    """A shared session's task ids: the proxy's own (unguessable, after the ``replica``'s name
    if it has one) for each of the server's, with the identity that created it; the oldest
    forgotten past ``bound``."""

    def __init__(self, bound: int, replica: str | None = None) -> None:
        self._bound = bound
        self._prefix = f"{replica}." if replica else ""
        self._server: OrderedDict[str, tuple[str, Any]] = OrderedDict()  # public → server's
        self._public: dict[str, str] = {}  # server's → public

    def server_id(self, public: str | None, caller: Identity | None) -> str | None:
        """The server's id for ``public``, if ``caller`` created that task."""
        entry = self._server.get(public) if public is not None else None
        if entry is None or entry[1] != _principal(caller):
            return None
        return entry[0]

    def public(
        self, message: dict[str, Any], method: str | None, caller: Identity | None
    ) -> dict[str, Any] | None:
        """``message`` with the server's task id replaced by the public one (a new one for a
        task just created, owned by ``caller``); None when it names no task."""
        holder = "params" if "method" in message else "result"
        body = message.get(holder)
        server_id = body.get("taskId") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(server_id, str):
            return None
        public = self._public.get(server_id)
        if public is None:
            if method != "tools/call":
                return None  # a task no client was given: the router drops what is unasked
            public = self._prefix + secrets.token_urlsafe(24)
            self._public[server_id] = public
            self._server[public] = (server_id, _principal(caller))
            while len(self._server) > self._bound:
                _, (gone, _owner) = self._server.popitem(last=False)
                self._public.pop(gone, None)
        return {**message, holder: {**body, "taskId": public}}


def _principal(identity: Identity | None) -> tuple[str | None, str | None] | None:
    return None if identity is None else (identity.subject, identity.client_id)


def _tool_of(message: Message) -> str | None:
    name = (message.params or {}).get("name") if message.method == "tools/call" else None
    return name if isinstance(name, str) else None


def _names_unknown_task(found: list[Violation]) -> bool:
    return any(v.rule is Rule.TASK_UNKNOWN for v in found)


def _line_with_result(message: dict[str, Any], result: bytes) -> bytes:
    """``message`` as :func:`~strictmcp.connect.lines.line_of` writes it, its ``result``
    given as JSON text already."""
    keys = list(message)
    at = keys.index("result")
    before = line_of({key: message[key] for key in keys[:at]})[1:-2]
    after = line_of({key: message[key] for key in keys[at + 1 :]})[1:-2]
    parts = [*([before] if before else []), b'"result":' + result, *([after] if after else [])]
    return b"{" + b",".join(parts) + b"}\n"


def _tool_index(pointer: str) -> int | None:
    head = pointer[len(_TOOLS) :].split("/", 1)[0]
    return int(head) if pointer.startswith(_TOOLS) and head.isdigit() else None


def _in_place_of(request_id: int | str | None, text: str, found: list[Violation]) -> dict[str, Any]:
    """The proxy's error in place of an answer that is not handed on: ``text``, and the
    findings in ``data`` (never a value)."""
    return error_response(request_id, UPSTREAM_INVALID, text, [v.to_dict() for v in found])


def _refusal(request: Message, decision: CallCheck) -> dict[str, Any]:
    """The answer to ``request`` that ``decision`` refuses: its ``isError`` result, or its
    JSON-RPC error."""
    if decision.error_result is not None:
        return _result(request, decision.error_result)
    code, text = decision.jsonrpc_error or (UPSTREAM_INVALID, "Refused (strictmcp proxy)")
    return error_response(request.id, code, text, decision.jsonrpc_data)


def _result(request: Message, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.id, "result": result}


async def _answer(request: Message, result: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    return _result(request, await result)


async def settled(decided: Routed | Awaitable[Routed]) -> Routed:
    """The decision :meth:`ProxySession.decide` gave, awaited if it has to be."""
    return decided if isinstance(decided, Routed) else await decided

"""What one proxied session shows of itself: its counters and, when tracing is on, its spans.

A :class:`SessionObserver` is told every message the session decided (``ProxySession``'s one
point where a line's messages and their outcomes meet), and what the proxy answered for the
server (a timeout, an invalid answer, the server gone). For each request and notification it
keeps the OpenTelemetry MCP conventions' two sides: ``mcp.server`` (what the peer sent the
proxy, received until answered) and ``mcp.client`` (what the proxy sent on, sent until its
answer came), each a duration in :class:`~strictmcp.enforce.metrics.Metrics` and, when a
:class:`~.otel.Tracing` is given, a span. A request's record waits for its answer in one
bounded map; past the bound, the oldest is forgotten (its span ended as abandoned).

Nothing here sees a value: arguments, results and prompt variables are never recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..enforce.metrics import DURATION_BUCKETS, OVERHEAD_BUCKETS, Metrics, put
from ..protocol import Message, Revision

if TYPE_CHECKING:
    from .otel import Span, Tracing
    from .session import ProxySession

# Error codes the receiver of a request does not count as its own failure (the conventions'
# mcp.server.status.attributes): the caller's request could not be served.
_CALLER_ERRORS = frozenset({-32700, -32600, -32601, -32602, -32002})
_TARGETED = frozenset({"tools/call", "prompts/get"})
_MAX_PENDING = 10_000


class Outcome(Protocol):
    """What the session did with one message: sent on (``forward``), answered (``reply``)."""

    forward: dict[str, Any] | None
    reply: dict[str, Any] | None
    changed: bool


@dataclass(slots=True)
class _Pending:
    """A request sent on, until its answer: when it came, what it was, its two spans."""

    started: int
    sent: int
    method: str
    tool: str
    server: str
    received: Span | None = None
    onward: Span | None = None


class SessionObserver:
    """The counters and spans of one :class:`~.session.ProxySession`; see the module
    documentation. ``transport`` is the client side's (``pipe`` over stdio, ``tcp`` over
    HTTP), as ``network.transport`` says it."""

    def __init__(
        self,
        session: ProxySession,
        metrics: Metrics,
        *,
        transport: str = "pipe",
        tracing: Tracing | None = None,
    ) -> None:
        self._session = session
        self._metrics = metrics
        self._transport = transport
        self._tracing = tracing
        self._opened = time.perf_counter_ns()
        # Oldest first (a dict keeps insertion order, and is cheaper than an OrderedDict).
        self._pending: dict[tuple[str, int | str], _Pending] = {}
        self._overhead: dict[str, list[float]] = {}  # by direction, its strictmcp.proxy.overhead
        self._revision: Revision | None = None
        self._version = ""  # the revision's value, mcp.protocol.version
        self._ended = False
        if tracing is not None:
            session.auditor.noted = []
        metrics.opened(self, session.conversation.tasks_open)

    # --- what the session decided -------------------------------------------------------------

    def decided(
        self,
        direction: str,
        messages: Sequence[Message],
        outcomes: Sequence[Outcome],
        started: int,
    ) -> None:
        """The messages of one line, read ``started`` (``perf_counter_ns``), and what became
        of each: counted, their spans started or ended; a request sent on with a span being
        recorded carries its trace context in ``params._meta`` (``outcome.forward`` replaced)."""
        now = time.perf_counter_ns()
        overhead = self._overhead.get(direction)
        if overhead is None:
            overhead = self._overhead[direction] = self._metrics.overhead.slot((direction,))
        put(overhead, OVERHEAD_BUCKETS, (now - started) / 1000)
        noted = self._session.auditor.noted
        found: Sequence[tuple[str, str, str]] = ()
        if noted:
            found, noted[:] = list(noted), []
        for message, outcome in zip(messages, outcomes, strict=False):
            kind = message.kind
            if kind in ("response", "error"):
                self._answered(direction, message, outcome, now)
            elif message.method is not None:
                self._asked(direction, message, outcome, started, now, found)

    def _asked(
        self,
        direction: str,
        message: Message,
        outcome: Outcome,
        started: int,
        now: int,
        found: Sequence[tuple[str, str, str]],
    ) -> None:
        metrics = self._metrics
        method = metrics.method_label(message.method)
        tool = server = ""
        params = message.params or {}
        call = method == "tools/call" and direction == "c2s"
        if method in _TARGETED:
            name = params.get("name")
            name = name if isinstance(name, str) else None
            if call and name is not None and name == self._session.validate_name:
                tool = name
            else:
                tool = metrics.tool_label(name)
            server = self._session.auditor.server_of(name) or ""
        forwarded = outcome.forward is not None
        if call:
            decision = "allowed" if forwarded else "refused"
            if tool and tool == self._session.validate_name:
                decision = "validate"
            metrics.calls.add((decision, tool, server))
        received = onward = None
        tracing = self._tracing
        if tracing is not None:
            received, onward = self._spans(
                tracing, direction, message, outcome, method, tool, server, started, found
            )
        request_id = message.id
        if message.kind == "request" and request_id is not None and forwarded:
            pending = self._pending
            pending[direction, request_id] = _Pending(
                started, now, method, tool, server, received, onward
            )
            if len(pending) > _MAX_PENDING:
                lost = pending.pop(next(iter(pending)))
                self._end_spans(lost, None, None, "abandoned")
            return
        # A notification, or a request answered here: over as soon as decided.
        reply = outcome.reply
        code, error = _status(reply, server_side=True) if reply is not None else (None, None)
        put(self._operation(method, tool, error, code)[0], DURATION_BUCKETS, (now - started) / 1e9)
        if forwarded:
            put(self._operation(method, tool, None, None)[1], DURATION_BUCKETS, 0.0)
        if tracing is not None:
            if received is not None:
                tracing.end(received, code, error)
            if onward is not None:
                tracing.end(onward, None, None)

    def _answered(self, direction: str, message: Message, outcome: Outcome, now: int) -> None:
        asked = "s2c" if direction == "c2s" else "c2s"
        if message.id is None:
            return
        pending = self._pending.pop((asked, message.id), None)
        if pending is None:
            return
        metrics = self._metrics
        if pending.method == "tools/list":
            metrics.learn_tools(self._session.conversation.tools.names())
        # The answer as it came (the upstream's side), and as it went on (the asker's).
        raw = message.raw
        code, error = _status(raw, server_side=False)
        slots = self._operation(pending.method, pending.tool, error, code)
        put(slots[1], DURATION_BUCKETS, (now - pending.sent) / 1e9)
        sent = outcome.forward
        if sent is None:
            given, given_error = code, error
        elif sent is raw:  # sent on as it came: only the side that judges the codes differs
            given, given_error = code, None if code in _CALLER_ERRORS else error
        else:
            given, given_error = _status(sent, server_side=True)
        if given != code or given_error != error:
            slots = self._operation(pending.method, pending.tool, given_error, given)
        put(slots[0], DURATION_BUCKETS, (now - pending.started) / 1e9)
        tracing = self._tracing
        if tracing is not None:
            if pending.onward is not None:
                tracing.end(pending.onward, code, error)
            if pending.received is not None:
                tracing.end(pending.received, given, given_error)

    # --- what the proxy answered for the server -----------------------------------------------

    def gave_up(self, request_id: int | str, error_type: str, code: int) -> None:
        """The client's request ``request_id`` was answered with the proxy's ``code``, the
        server not having answered usably (``error_type``: ``timeout``, ``invalid``,
        ``closed``)."""
        pending = self._pending.pop(("c2s", request_id), None)
        server = pending.server if pending is not None else ""
        self._metrics.upstream_errors.add((error_type, server))
        if pending is None:
            return
        now = time.perf_counter_ns()
        onward = self._operation(pending.method, pending.tool, error_type, None)[1]
        put(onward, DURATION_BUCKETS, (now - pending.sent) / 1e9)
        server_error = None if code in _CALLER_ERRORS else str(code)
        received = self._operation(pending.method, pending.tool, server_error, code)[0]
        put(received, DURATION_BUCKETS, (now - pending.started) / 1e9)
        self._end_spans(pending, code, server_error, error_type)

    def ended(self, error: str | None = None) -> None:
        """The session is over (``error``: how, when it failed): its durations counted, every
        span still open ended."""
        if self._ended:
            return
        self._ended = True
        metrics = self._metrics
        metrics.closed(self)
        seconds = (time.perf_counter_ns() - self._opened) / 1e9
        revision = self._session.conversation.revision
        labels = (revision.value if revision is not None else "", self._transport, error or "")
        metrics.server_session.observe(labels, seconds)
        metrics.client_session.observe(labels, seconds)
        for pending in self._pending.values():
            self._end_spans(pending, None, None, "abandoned")
        self._pending.clear()

    # --- spans --------------------------------------------------------------------------------

    def _spans(
        self,
        tracing: Tracing,
        direction: str,
        message: Message,
        outcome: Outcome,
        method: str,
        tool: str,
        server: str,
        started: int,
        found: Sequence[tuple[str, str, str]],
    ) -> tuple[Span | None, Span | None]:
        """The two spans of a request or notification (the second only when it is sent on),
        the trace continued from its ``_meta`` or the HTTP request's headers; none when it
        has no trace context and the sampler does not start a trace for it."""
        params = message.params
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not isinstance(meta, dict):
            meta = None
        parent = tracing.parent(meta, direction == "c2s")
        if parent is None and not tracing.rooted():
            return None, None
        session = self._session
        attributes: dict[str, Any] = {
            "mcp.method.name": method,
            "network.transport": self._transport if direction == "c2s" else "pipe",
            "strictmcp.direction": direction,
        }
        revision = session.conversation.revision
        if revision is not None:
            attributes["mcp.protocol.version"] = revision.value
        session_id = tracing.session_id() if direction == "c2s" else None
        if session_id is not None and not session.shared:
            attributes["mcp.session.id"] = session_id
        if message.id is not None:
            # A client's request as the client sent it (not the shared session's own id).
            sent = session.as_sent(message.id) if direction == "c2s" else message.id
            attributes["jsonrpc.request.id"] = str(sent)
        if tool:
            key = "gen_ai.tool.name" if method == "tools/call" else "gen_ai.prompt.name"
            attributes[key] = tool
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
        if server:
            attributes["strictmcp.server"] = server
        forwarded = outcome.forward is not None
        attributes["strictmcp.decision"] = "forwarded" if forwarded else "answered"
        if found:
            attributes["strictmcp.stages"] = sorted({stage for stage, _, _ in found})
            attributes["strictmcp.actions"] = sorted({action for _, action, _ in found})
            attributes["strictmcp.rules"] = sorted({code for _, _, code in found})
        name = f"{method} {tool}" if tool else method
        received = tracing.start(
            name, server=True, attributes=attributes, started=started, parent=parent
        )
        if not forwarded:
            return received, None
        # Under [[flow]] rules nothing the client chose goes to a server unsearched: a trace
        # id and tracestate from its HTTP headers could carry data read from another server,
        # so what goes upstream starts a trace of its own.
        isolated = session.enforcer.flows is not None
        onward = tracing.start(
            name,
            server=False,
            attributes=attributes,
            started=None,
            parent=None if isolated else received,
        )
        carrier = tracing.carrier(onward, incoming=parent is not None and meta is not None)
        if carrier is not None and outcome.forward is not None and isinstance(params, dict):
            own = dict(meta) if isinstance(meta, dict) else {}
            own.update(carrier)
            outcome.forward = {**outcome.forward, "params": {**params, "_meta": own}}
            outcome.changed = True
        return received, onward

    def _end_spans(
        self, pending: _Pending, code: int | None, error: str | None, upstream_error: str
    ) -> None:
        tracing = self._tracing
        if tracing is None:
            return
        if pending.onward is not None:
            tracing.end(pending.onward, None, upstream_error)
        if pending.received is not None:
            tracing.end(pending.received, code, error)

    def _operation(
        self, method: str, tool: str, error: str | None, code: int | None
    ) -> tuple[list[float], list[float]]:
        """The slots of the server and client operation durations under these labels."""
        revision = self._session.conversation.revision
        if revision is not self._revision:  # an enum's value is slow to read: read it once
            self._revision = revision
            self._version = revision.value if revision is not None else ""
        return self._metrics.operation(method, tool, error, code, self._version, self._transport)


def _status(message: dict[str, Any] | None, *, server_side: bool) -> tuple[int | None, str | None]:
    """The JSON-RPC error code of ``message`` and its ``error.type`` as the conventions
    define it: on the receiving side (``server_side``) the caller's errors are none of its
    own; on the sending side every code is an error; a tool result with ``isError`` is
    ``tool_error``."""
    if message is None:
        return None, None
    error = message.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        if not isinstance(code, int) or isinstance(code, bool):
            return None, "_OTHER"
        if server_side and code in _CALLER_ERRORS:
            return code, None
        return code, str(code)
    result = message.get("result")
    if isinstance(result, dict) and result.get("isError") is True:
        return None, "tool_error"
    return None, None


class Telemetry:
    """What a proxy or gateway process measures: its :class:`Metrics`, and, when the
    environment asks for them (:func:`~.otel.configured`), spans and an OTLP export of the
    metrics; :meth:`attach` gives each session its observer."""

    def __init__(self, *, traces: bool = False, export: bool = False) -> None:
        self.metrics = Metrics()
        self.tracing: Tracing | None = None
        self._export: Any = None
        if traces or export:
            from . import otel  # noqa: PLC0415 - the [otel] extra's, only when asked for

            if traces:
                self.tracing = otel.Tracing()
            if export:
                self._export = otel.MetricsExport(self.metrics)

    def attach(self, session: ProxySession, transport: str) -> None:
        """Observe ``session``, whose client side is ``transport`` (``pipe`` or ``tcp``)."""
        session.observer = SessionObserver(
            session, self.metrics, transport=transport, tracing=self.tracing
        )

    def gather(self, others: Callable[[], Sequence[object]]) -> None:
        """Add ``others`` (other processes' :meth:`Metrics.snapshot`, read at each export)
        to what the OTLP export sends: the supervisor of ``--workers``, which serves no
        call, exports its workers' counters."""
        if self._export is not None:
            self._export.others = others

    def close(self) -> None:
        """Export what is left (spans and metrics), then stop exporting."""
        if self.tracing is not None:
            self.tracing.shutdown()
        if self._export is not None:
            self._export.shutdown()

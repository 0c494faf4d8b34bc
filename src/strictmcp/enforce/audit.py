"""What strictmcp reports: one audit record per finding, the same wherever it was found.

:func:`audit_records` makes every record, for the proxy's JSON Lines log (``--audit-log``) and
for the :data:`AUDIT_LOGGER` logger of the SDK integrations alike. Records carry rule codes,
severities and JSON Pointers into the message, never a value from a message: the audit log
often ends up somewhere far less protected than the traffic it describes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import IO, Any, Literal

from ..policy import Identity, Mode
from ..policy.settings import server_of
from ..protocol import Severity, Violation
from ..schema import quote_name
from . import logs
from .metrics import Metrics

AUDIT_LOGGER = "strictmcp.audit"
"""The logger the SDK integrations report on: one record per finding, its ``strictmcp``
attribute holding the finding's :func:`audit_records` entry."""

Action = Literal["allowed", "refused", "withheld", "replaced", "would deny"]
"""What strictmcp did at a stage: let the message through, refused it (answered it itself,
or dropped an unreadable one), removed a tool definition from a listing, replaced part of a
message (a tool result, cleaned text, decoded arguments), or, at a stage in audit mode, let
through as it came what enforce mode would have refused, withheld or replaced ("would
deny", the one audit-mode word at every stage; see :func:`outcome`)."""

Stage = Literal[
    "message",
    "access",
    "rate",
    "arguments",
    "policy",
    "deep",
    "result",
    "listing",
    "flow",
    "interceptor",
]
"""Which check found something: the message itself (envelope, method), the policy's access
rules (may this identity call this tool), its rate limits, a ``tools/call``'s arguments
against the ``inputSchema``, the policy's guards, the deep checks, a tool result against the
``outputSchema``, the tool definitions of a ``tools/list`` result, or the gateway's flows
(data read from one server on its way to another, ``[[flow]]``), or an external
interceptor (``[[interceptor]]``)."""


CallOutcome = Literal["answered", "error", "refused", "timeout", "cancelled", "closed"]
"""How a client's request ended, in its ``call`` record (``--audit all``): the server's
result, the server's JSON-RPC error (or the proxy's in its place, for an answer it could not
hand on), refused by the proxy (answered by it, not sent on), not answered in time, given
up by the client, or failed when the server went away."""

REQUEST: ContextVar[int | str | None] = ContextVar("strictmcp_request", default=None)
"""The id of the message being decided, which every record made meanwhile names. A context
variable, not an attribute: each HTTP request is decided in its own task, whose context is
its own, so that decisions awaited at once in one shared session never name each other's."""

_PLAIN_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def request_label(request_id: int | str) -> int | str:
    """How a record names a request: its id as sent when it is an integer or a short plain
    string; else a digest (an id is the client's free text, which a log must not carry)."""
    if isinstance(request_id, int) or _PLAIN_ID.fullmatch(request_id):
        return request_id
    return "sha256:" + hashlib.sha256(request_id.encode()).hexdigest()[:16]


def outcome(acts: bool, mode: Mode, action: Action = "refused") -> Action:
    """The action of a stage that ran in ``mode``, whose findings ``acts`` (they would refuse,
    withhold or replace, which is ``action``): ``action`` in enforce mode, "would deny" in
    audit mode, and "allowed" when they do not act in either."""
    if not acts:
        return "allowed"
    return action if mode == "enforce" else "would deny"


def audit_records(
    violations: Sequence[Violation],
    *,
    direction: str,
    method: str | None,
    tool: str | None,
    stage: Stage,
    action: Action,
    mode: Mode,
    time: str,
    identity: Identity | None = None,
    server: str | None = None,
    session: str | None = None,
    request: int | str | None = None,
) -> list[dict[str, Any]]:
    """The audit record of each violation: ``{time, direction, method, tool, stage, action,
    mode, code, severity, pointer}``, ``identity`` (``{subject, clientId}``, never a token)
    when the caller is known, ``server`` (the gateway's server the tool belongs to) when
    there is one, ``session`` (the proxy session's audit id) when given, ``request`` (the
    message's id, by :func:`request_label`) when it has one, and ``issues``
    (``[{code, pointer}]``) for a schema violation."""
    records = []
    for violation in violations:
        record: dict[str, Any] = {
            "time": time,
            "direction": direction,
            "method": method,
            "tool": tool,
            "stage": stage,
            "action": action,
            "mode": mode,
            "code": violation.code,
            "severity": violation.severity.value,
            "pointer": violation.pointer,
        }
        if identity is not None:
            record["identity"] = identity.audit()
        if server is not None:
            record["server"] = server
        if session is not None:
            record["session"] = session
        if request is not None:
            record["request"] = request_label(request)
        if violation.issues:
            record["issues"] = [
                {"code": i.code.value, "pointer": violation.pointer + i.instance_path}
                for i in violation.issues
            ]
        records.append(record)
    return records


class Auditor:
    """Reports findings to the sinks it is given, and to no other.

    ``log`` gets each :func:`audit_records` record as a JSON line; ``logger`` gets each as a
    warning whose ``strictmcp`` attribute is the record; ``stderr`` gets one line per stage of
    a message that had errors (the proxy's operator reads it). ``mode`` is the enforcement
    mode the records say they were made under, unless a stage that ran in another says its
    own (:meth:`record`'s ``mode``). ``session`` is the id each record gives its session
    (several proxies, or sessions, writing one log are told apart). ``metrics`` counts every
    record; ``noted``, when a
    list, gets each record's ``(stage, action, code)`` (a trace's span reads it). ``calls``:
    the log also gets a ``call`` record of every client request when it ends (:meth:`call`),
    allowed ones too (``--audit all``).
    """

    def __init__(
        self,
        log: IO[str] | None = None,
        *,
        stderr: IO[str] | None = None,
        logger: logging.Logger | None = None,
        mode: Mode = "enforce",
        command: str = "proxy",
        servers: frozenset[str] = frozenset(),
        separator: str = "__",
        metrics: Metrics | None = None,
        session: str | None = None,
        calls: bool = False,
    ) -> None:
        self.mode = mode
        self.calls = calls and log is not None
        self._log = log
        #: The id its records give their session: random, never the ``Mcp-Session-Id``
        #: (which a log reader could use to reach the session).
        self.session = session
        self.metrics = metrics
        self.noted: list[tuple[str, str, str]] | None = None
        self._stderr = stderr
        self._logger = logger
        self._command = command
        self._servers = servers
        self._separator = separator

    def record_calls(self, calls: bool) -> None:
        """Whether the log gets a ``call`` record of every client request from now on
        (:meth:`call`; a reloaded policy's ``[audit] record``); never without a log."""
        self.calls = calls and self._log is not None

    def server_of(self, tool: str | None) -> str | None:
        """The gateway's server ``tool`` belongs to, by its name; None outside a gateway."""
        return server_of(tool, self._servers, self._separator) if self._servers else None

    def in_mode(self, mode: Mode) -> Auditor:
        """This auditor, its sinks shared, for records made under ``mode``."""
        if mode == self.mode:
            return self
        bound = copy.copy(self)
        bound.mode = mode
        return bound

    def record(
        self,
        violations: Sequence[Violation],
        *,
        direction: str,
        method: str | None,
        action: Action,
        tool: str | None = None,
        stage: Stage = "message",
        identity: Identity | None = None,
        mode: Mode | None = None,
    ) -> None:
        """Report each violation (made by ``identity``, when known) found by a stage that ran
        in ``mode`` (by default, this auditor's); say on stderr what happened to a message
        that had errors."""
        if not violations:
            return
        if self.metrics is not None or self.noted is not None:
            self._count(violations, direction, tool, stage, action)
        if self._log is not None or self._logger is not None:
            now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
            records = audit_records(
                violations,
                direction=direction,
                method=method,
                tool=tool,
                stage=stage,
                action=action,
                mode=self.mode if mode is None else mode,
                time=now,
                identity=identity,
                server=self.server_of(tool),
                session=self.session,
                request=REQUEST.get(),
            )
            if self._log is not None:
                self._log.write("".join(json.dumps(r) + "\n" for r in records))
                self._log.flush()
            if self._logger is not None:
                for r in records:
                    # A schema finding stands for its issues: the line names them too.
                    issues = "".join(
                        f"; {issue['code']} at {issue['pointer'] or '(arguments)'}"
                        for issue in r.get("issues", ())
                    )
                    self._logger.warning(
                        "%s %s %s at the %s stage: %s at %s%s",
                        direction,
                        _what(method, tool),
                        action,
                        stage,
                        r["code"],
                        r["pointer"] or "(message)",
                        issues,
                        extra={"strictmcp": r},
                    )
        found = [v for v in violations if v.severity is Severity.ERROR]
        if found and self._stderr is not None:
            what = _what(method, tool)
            text = f"{direction} {what} {action}: " + "; ".join(str(v) for v in found)
            self.say(text, level="warning", event="finding", server=self.server_of(tool))

    def event(self, event: str, **fields: Any) -> None:
        """One record in the audit log of something the proxy did besides judging a
        message (``{time, event, ...fields}``: a policy reloaded, with its digests; an
        authentication refused, with its code)."""
        if self._log is None:
            return
        now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        self._log.write(json.dumps({"time": now, "event": event, **fields}) + "\n")
        self._log.flush()

    def call(
        self,
        request_id: int | str,
        method: str,
        tool: str | None,
        ended: CallOutcome,
        latency_ns: int,
        identity: Identity | None = None,
    ) -> None:
        """The ``call`` record of a client's request that ended (when :attr:`calls`):
        ``{time, event: "call", method, tool, request, outcome, latency_ms, session}``, with
        ``server`` and ``identity`` when there are; ``latency_ms`` is from the proxy reading
        the request to its answer (or refusal)."""
        if not self.calls:
            return
        fields: dict[str, Any] = {
            "method": method,
            "tool": tool,
            "request": request_label(request_id),
            "outcome": ended,
            "latency_ms": round(latency_ns / 1e6, 3),
        }
        server = self.server_of(tool)
        if server is not None:
            fields["server"] = server
        if self.session is not None:
            fields["session"] = self.session
        if identity is not None:
            fields["identity"] = identity.audit()
        self.event("call", **fields)

    def _count(
        self,
        violations: Sequence[Violation],
        direction: str,
        tool: str | None,
        stage: Stage,
        action: Action,
    ) -> None:
        server = self.server_of(tool)
        for violation in violations:
            if self.metrics is not None:
                self.metrics.finding(
                    violation.code,
                    stage=stage,
                    action=action,
                    direction=direction,
                    tool=tool,
                    server=server,
                )
            if self.noted is not None:
                self.noted.append((stage, action, violation.code))

    def say(
        self,
        text: str,
        *,
        level: logs.Level = "info",
        event: str = "notice",
        server: str | None = None,
    ) -> None:
        """One line for the operator on stderr, when there is one (:func:`.logs.say`, naming
        this auditor's session)."""
        if self._stderr is not None:
            logs.say(
                self._command,
                text,
                level=level,
                event=event,
                session=self.session,
                server=server,
                stream=self._stderr,
            )


def _what(method: str | None, tool: str | None) -> str:
    what = method or "message"
    return what if tool is None else f"{what} {quote_name(tool)}"

"""External interceptors (``[[interceptor]]``): servers of the MCP interceptors extension the
proxy and the gateway invoke in their one enforcement path (:meth:`ProxySession.decide`).

The order is a security property (docs/architecture.md, "Interceptors"): on a request, the
external mutations, then strictmcp's own checks, then the external validations, so that no
mutation sends on arguments nobody checked; on a response, the external validations, then
the external mutations, then strictmcp's own checks and hygiene last. Mutations run one after
the other by ``priority`` (lower first), then name; validations all run, and any ``valid:
false`` refuses (``interceptor-denied``). An interceptor that fails (its process down or
ended, no answer within ``timeout_ms``, an answer that is no result of its type) refuses
(``interceptor-unavailable``) unless it is ``fail_open``. One in ``audit`` mode is invoked
and recorded, and never blocks or changes anything.

Each interceptor's server is one child process (:class:`InterceptorProcess`) spoken to over
stdio, or one streamable HTTP session (:class:`InterceptorEndpoint`), started on first use
and started again on the next invocation after it ends; its invocations are multiplexed by
JSON-RPC id, so invocations for different messages run concurrently. Every decision is an
audit record at the ``interceptor`` stage; none names a value.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..connect.lines import line_of
from ..connect.process import ProcessUpstream
from ..enforce import Auditor, outcome
from ..policy import Identity, InterceptorSettings, UpstreamSettings
from ..protocol import Violation
from ..protocol.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from ..protocol.violations import Severity

if TYPE_CHECKING:
    from ..connect.http_upstream import HttpUpstream

#: How long a started server may take to answer ``initialize``.
START_TIMEOUT = 5.0
# A server that ends is started again at most this often: one that crashes at once is not
# restarted in a loop (the invocations in between fail closed).
_RESTART_DELAY = 0.2
# Seconds an HTTP exchange may outlast the longest timeout of its server's interceptors
# before its connection is dropped (the invocation has failed by then).
_SLACK = 1.0


class InterceptorCode(str, Enum):
    """Stable codes of external interceptors' decisions."""

    #: A validation answered ``valid: false``.
    DENIED = "interceptor-denied"
    #: The interceptor failed: down, late, or a malformed answer.
    UNAVAILABLE = "interceptor-unavailable"
    #: A mutation changed the payload.
    MODIFIED = "interceptor-modified"


class InterceptorFailed(Exception):
    """An invocation that gave no usable answer; the message says why, without values."""


@dataclass(frozen=True)
class Refusal:
    """A message an interceptor refuses: the JSON-RPC error code, its text and ``data``
    (``{code, interceptor, codes}``: the interceptor's own finding codes, when it gave
    any)."""

    code: int
    text: str
    data: dict[str, Any]


class _Connection:
    """One interceptor server: connected on first use and again on the first use after it
    ends (not sooner than :data:`_RESTART_DELAY` after), its requests multiplexed by
    JSON-RPC id. A transport gives :meth:`_connect`, :meth:`_send` and :meth:`_close`."""

    def __init__(self) -> None:
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next_id = 0
        self._starting: asyncio.Lock | None = None
        self._ended_at = 0.0
        self._ready = False

    async def request(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        """The result of one request, or :class:`InterceptorFailed`."""
        await self._running()
        return await self._request(method, params, timeout)

    async def _request(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        # A timer on the future rather than wait_for: no task per invocation.
        late = asyncio.get_running_loop().call_later(timeout, _expire, future)
        try:
            self._send(line_of(message))
            answer = await future
        except (OSError, RuntimeError):
            raise InterceptorFailed("is not running") from None
        finally:
            late.cancel()
            self._pending.pop(request_id, None)
        if "result" not in answer:
            raise InterceptorFailed("answered with an error")
        return answer["result"]

    async def _running(self) -> None:
        if self._ready:
            return
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._ready:
                return
            if time.monotonic() - self._ended_at < _RESTART_DELAY:
                raise InterceptorFailed("is restarting")
            await self._connect()
            initialize = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "strictmcp", "version": "0"},
            }
            try:
                await self._request("initialize", initialize, START_TIMEOUT)
                self._send(line_of({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            except (InterceptorFailed, OSError, RuntimeError):
                # Never used half started: the next invocation connects afresh.
                self._ended_at = time.monotonic()
                await self._close()
                raise InterceptorFailed("did not start") from None
            self._ready = True

    def _answered(self, line: bytes) -> None:
        """Hand one line the server sent to the request it answers."""
        try:
            answer = json.loads(line)
        except ValueError:
            return  # not an answer to anything: the invocation waiting times out
        key = answer.get("id") if isinstance(answer, dict) else None
        future = self._pending.get(key) if isinstance(key, int) else None
        if future is not None and not future.done():
            future.set_result(answer)

    def _ended(self) -> None:
        """The server is gone: what waits for it fails, the next invocation reconnects."""
        self._ready = False
        self._ended_at = time.monotonic()
        for future in list(self._pending.values()):
            if not future.done():
                future.set_exception(InterceptorFailed("ended"))

    async def _connect(self) -> None:
        raise NotImplementedError

    def _send(self, line: bytes) -> None:
        raise NotImplementedError

    async def _close(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        """Stop talking to the server."""
        self._ready = False
        await self._close()


class InterceptorProcess(_Connection):
    """One interceptor server over stdio: a child process, started again after it ends, on
    the transport the proxy's own servers use
    (:class:`~strictmcp.connect.process.ProcessUpstream`)."""

    def __init__(self, command: tuple[str, ...]) -> None:
        super().__init__()
        self.command = command
        self._process: ProcessUpstream | None = None
        self._reader: asyncio.Task[None] | None = None

    async def _connect(self) -> None:
        try:
            self._process = await ProcessUpstream.start(self.command)
        except OSError:
            self._ended_at = time.monotonic()
            raise InterceptorFailed("could not be started") from None
        self._reader = asyncio.create_task(self._read(self._process))

    def _send(self, line: bytes) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            raise RuntimeError("not running")
        process.write([line])

    async def _read(self, process: ProcessUpstream) -> None:
        try:
            while (line := await process.receive()) is not None:
                if isinstance(line, bytes):  # one over the bound answers nothing: it times out
                    self._answered(line)
        finally:
            if process is self._process:
                self._ended()  # what waits for it fails now, not after the process is stopped
            await process.aclose()

    async def _close(self) -> None:
        """End the process (its stdin closed, then stopped if it lingers)."""
        process, self._process = self._process, None
        if process is not None:
            await process.aclose()


class InterceptorEndpoint(_Connection):
    """One interceptor server over streamable HTTP (an
    :class:`~strictmcp.connect.http_upstream.HttpUpstream`, with the proxy's own
    ``credentials``), reached again after its session ends. A POST that fails (the server
    down, an answer that cannot be read, HTTP 401 or 403) fails its invocation; one that
    hangs is the invocation's timeout, its connection dropped after ``timeout`` seconds."""

    def __init__(self, url: str, credentials: UpstreamSettings | None, timeout: float) -> None:
        super().__init__()
        self.url = url
        self.credentials = credentials
        self.timeout = timeout
        self._upstream: HttpUpstream | None = None
        self._reader: asyncio.Task[None] | None = None

    async def _connect(self) -> None:
        # Only a url interceptor needs the HTTP client: a proxy without one never loads it.
        from ..connect.http_upstream import HttpUpstream  # noqa: PLC0415
        from ..identity.upstream import CredentialsError, UpstreamAuth  # noqa: PLC0415

        try:
            auth = UpstreamAuth(self.credentials) if self.credentials is not None else None
        except CredentialsError:
            self._ended_at = time.monotonic()
            raise InterceptorFailed("has credentials that cannot be read") from None
        upstream = HttpUpstream(self.url, timeout=self.timeout, auth=auth)
        self._upstream = upstream
        self._reader = asyncio.create_task(self._read(upstream))

    def _send(self, line: bytes) -> None:
        if self._upstream is None:
            raise RuntimeError("not connected")
        self._upstream.write([line])

    async def _read(self, upstream: HttpUpstream) -> None:
        while (line := await upstream.receive()) is not None:
            if isinstance(line, bytes):
                self._answered(line)
        if upstream is self._upstream:  # the server ended the session
            self._upstream = None
            self._ended()
            await upstream.aclose()

    async def _close(self) -> None:
        upstream, self._upstream = self._upstream, None
        if upstream is not None:
            await upstream.aclose()


class Interceptors:
    """The policy's ``[[interceptor]]`` tables, each with its process; see the module
    documentation. The processes are shared by every session of a proxy: build one per
    policy (:func:`interceptors_of`)."""

    def __init__(self, settings: Iterable[InterceptorSettings]) -> None:
        self.settings = tuple(settings)
        # One connection per server, whichever of its interceptors is invoked.
        connections: dict[Hashable, _Connection] = {}
        for entry in self.settings:
            key = _server(entry)
            if key in connections:
                continue
            if entry.command is not None:
                connections[key] = InterceptorProcess(entry.command)
            else:
                assert entry.url is not None  # the policy refuses a table with neither
                longest = max(s.timeout_ms for s in self.settings if _server(s) == key)
                connections[key] = InterceptorEndpoint(
                    entry.url, entry.upstream, longest / 1000 + _SLACK
                )
        self._connections = connections

    def hooks(self, event: str | None, phase: str) -> bool:
        """Whether some interceptor is invoked on ``event`` in ``phase``."""
        return event is not None and any(s.hooks(event, phase) for s in self.settings)

    async def request(
        self, event: str, payload: Any, auditor: Auditor, identity: Identity | None, step: str
    ) -> Any | Refusal:
        """A request's ``step``: ``mutate`` (the payload to go on with) or ``validate`` (the
        payload itself); a :class:`Refusal` when an interceptor refuses it."""
        return await self._step(event, "request", step, payload, auditor, identity)

    async def response(
        self, event: str, payload: Any, auditor: Auditor, identity: Identity | None
    ) -> Any | Refusal:
        """A response's validations, then its mutations: the payload to go on with, or a
        :class:`Refusal`."""
        checked = await self._step(event, "response", "validate", payload, auditor, identity)
        if isinstance(checked, Refusal):
            return checked
        return await self._step(event, "response", "mutate", payload, auditor, identity)

    async def _step(
        self,
        event: str,
        phase: str,
        step: str,
        payload: Any,
        auditor: Auditor,
        identity: Identity | None,
    ) -> Any | Refusal:
        kind = "mutation" if step == "mutate" else "validation"
        hooked = [s for s in self.settings if s.kind == kind and s.hooks(event, phase)]
        direction = "c2s" if phase == "request" else "s2c"
        record = _Recorder(auditor, event, direction, identity)
        if kind == "mutation":
            for entry in sorted(hooked, key=lambda s: (s.priority, s.name)):
                try:
                    result = await self._invoke(entry, event, phase, payload)
                except InterceptorFailed:
                    record.failed(entry)
                    if not (entry.fail_open or entry.mode == "audit"):
                        return _unavailable(entry)
                    continue
                if result.get("modified") is True:
                    record.modified(entry)
                    if entry.mode == "enforce":
                        payload = result["payload"]
            return payload
        # Validations see the same payload and run at once; every one is recorded.
        outcomes: list[dict[str, Any] | BaseException]
        if len(hooked) == 1:  # no task to make for the one
            try:
                outcomes = [await self._invoke(hooked[0], event, phase, payload)]
            except InterceptorFailed as failure:
                outcomes = [failure]
        else:
            outcomes = await asyncio.gather(
                *(self._invoke(entry, event, phase, payload) for entry in hooked),
                return_exceptions=True,
            )
        refusal: Refusal | None = None
        for entry, answer in zip(hooked, outcomes, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, InterceptorFailed):
                    raise answer
                record.failed(entry)
                if not (entry.fail_open or entry.mode == "audit") and refusal is None:
                    refusal = _unavailable(entry)
            elif answer.get("valid") is False:
                record.denied(entry)
                if entry.mode == "enforce" and refusal is None:
                    refusal = _denied(entry, _codes(answer))
        return refusal if refusal is not None else payload

    async def _invoke(
        self, entry: InterceptorSettings, event: str, phase: str, payload: Any
    ) -> dict[str, Any]:
        """One ``interceptor/invoke``: its result, checked to be one of the entry's type."""
        params = {"name": entry.name, "event": event, "phase": phase, "payload": payload}
        result = await self._connections[_server(entry)].request(
            "interceptor/invoke", params, entry.timeout_ms / 1000
        )
        valid = (
            isinstance(result, dict)
            and result.get("type", entry.kind) == entry.kind
            and (
                isinstance(result.get("valid"), bool)
                if entry.kind == "validation"
                else isinstance(result.get("modified"), bool)
                and (result["modified"] is False or "payload" in result)
            )
        )
        if not valid:
            raise InterceptorFailed("answered with no result of its type")
        return result  # type: ignore[no-any-return]

    async def close(self) -> None:
        """End every interceptor process, and every HTTP session."""
        await asyncio.gather(*(c.close() for c in self._connections.values()))


def _server(entry: InterceptorSettings) -> Hashable:
    """Which server ``entry`` is an interceptor of."""
    return entry.command if entry.command is not None else (entry.url, entry.upstream)


_SHARED: dict[tuple[InterceptorSettings, ...], Interceptors] = {}


def interceptors_of(settings: tuple[InterceptorSettings, ...]) -> Interceptors | None:
    """The :class:`Interceptors` of a policy's tables, one set of processes for every session
    of the proxy (None: the policy has none)."""
    if not settings:
        return None
    if settings not in _SHARED:
        _SHARED[settings] = Interceptors(settings)
    return _SHARED[settings]


class _Recorder:
    """The audit records of one step's decisions."""

    def __init__(
        self, auditor: Auditor, event: str, direction: str, identity: Identity | None
    ) -> None:
        self.auditor, self.event, self.direction, self.identity = (
            auditor,
            event,
            direction,
            identity,
        )

    def _record(
        self, entry: InterceptorSettings, code: InterceptorCode, text: str, action: Any
    ) -> None:
        violation = Violation(code, f"interceptor {entry.name!r} {text}", "", Severity.ERROR)
        self.auditor.record(
            [violation],
            direction=self.direction,
            method=self.event,
            stage="interceptor",
            action=action,
            identity=self.identity,
            mode=entry.mode,
        )

    def failed(self, entry: InterceptorSettings) -> None:
        acts = not entry.fail_open
        self._record(entry, InterceptorCode.UNAVAILABLE, "failed", outcome(acts, entry.mode))

    def denied(self, entry: InterceptorSettings) -> None:
        self._record(entry, InterceptorCode.DENIED, "refused it", outcome(True, entry.mode))

    def modified(self, entry: InterceptorSettings) -> None:
        action = outcome(True, entry.mode, "replaced")
        self._record(entry, InterceptorCode.MODIFIED, "changed it", action)


def _expire(future: asyncio.Future[dict[str, Any]]) -> None:
    if not future.done():
        future.set_exception(InterceptorFailed("did not answer in time"))


def _codes(result: dict[str, Any]) -> list[str]:
    info = result.get("info")
    codes = info.get("codes") if isinstance(info, dict) else None
    if not isinstance(codes, list):
        return []
    return [c for c in codes if isinstance(c, str) and len(c) <= 64][:32]


def _denied(entry: InterceptorSettings, codes: list[str]) -> Refusal:
    data = {"code": InterceptorCode.DENIED.value, "interceptor": entry.name, "codes": codes}
    return Refusal(INVALID_PARAMS, "Refused by an interceptor (strictmcp proxy)", data)


def _unavailable(entry: InterceptorSettings) -> Refusal:
    data = {"code": InterceptorCode.UNAVAILABLE.value, "interceptor": entry.name}
    return Refusal(INTERNAL_ERROR, "An interceptor failed (strictmcp proxy)", data)

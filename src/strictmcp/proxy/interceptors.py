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
stdio, started on first use and started again on the next invocation after it ends; its
invocations are multiplexed by JSON-RPC id, so invocations for different messages run
concurrently. Every decision is an audit record at the ``interceptor`` stage; none names a
value.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..connect.lines import line_of
from ..enforce import Auditor, outcome
from ..policy import Identity, InterceptorSettings
from ..protocol import Violation
from ..protocol.jsonrpc import DEFAULT_MAX_SIZE, INTERNAL_ERROR, INVALID_PARAMS
from ..protocol.violations import Severity

#: How long a started server may take to answer ``initialize``.
START_TIMEOUT = 5.0
# A server that ends is started again at most this often: one that crashes at once is not
# restarted in a loop (the invocations in between fail closed).
_RESTART_DELAY = 0.2


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


class InterceptorProcess:
    """One interceptor server over stdio: started on first use, restarted after it ends."""

    def __init__(self, command: tuple[str, ...]) -> None:
        self.command = command
        self._process: asyncio.subprocess.Process | None = None
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next_id = 0
        self._starting: asyncio.Lock | None = None
        self._ended_at = 0.0
        self._reader: asyncio.Task[None] | None = None

    async def request(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        """The result of one request, or :class:`InterceptorFailed`."""
        process = await self._running()
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        # A timer on the future rather than wait_for: no task per invocation.
        late = asyncio.get_running_loop().call_later(timeout, _expire, future)
        try:
            assert process.stdin is not None
            process.stdin.write(line_of(message))
            answer = await future
        except (OSError, RuntimeError):
            raise InterceptorFailed("is not running") from None
        finally:
            late.cancel()
            self._pending.pop(request_id, None)
        if "result" not in answer:
            raise InterceptorFailed("answered with an error")
        return answer["result"]

    async def _running(self) -> asyncio.subprocess.Process:
        if self._process is not None and self._process.returncode is None:
            return self._process
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._process is not None and self._process.returncode is None:
                return self._process
            if time.monotonic() - self._ended_at < _RESTART_DELAY:
                raise InterceptorFailed("is restarting")
            try:
                self._process = await asyncio.create_subprocess_exec(
                    *self.command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    limit=DEFAULT_MAX_SIZE + 2,
                )
            except OSError:
                self._ended_at = time.monotonic()
                raise InterceptorFailed("could not be started") from None
            self._reader = asyncio.create_task(self._read(self._process))
            initialize = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "strictmcp", "version": "0"},
            }
            process = self._process
            await self.request("initialize", initialize, START_TIMEOUT)
            assert process.stdin is not None
            process.stdin.write(line_of({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            return process

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        try:
            while True:
                line = await process.stdout.readline()
                if not line:
                    break
                try:
                    answer = json.loads(line)
                except ValueError:
                    continue  # not an answer to anything: the invocation waiting times out
                key = answer.get("id") if isinstance(answer, dict) else None
                future = self._pending.get(key) if isinstance(key, int) else None
                if future is not None and not future.done():
                    future.set_result(answer)
        except (OSError, ValueError):
            pass  # a line over the bound, or the pipe gone: the process is treated as ended
        finally:
            self._ended_at = time.monotonic()
            if process.returncode is None:
                process.kill()
            await process.wait()
            for future in list(self._pending.values()):
                if not future.done():
                    future.set_exception(InterceptorFailed("ended"))

    async def close(self) -> None:
        """End the process (its stdin closed, then killed if it lingers)."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 2.0)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()


class Interceptors:
    """The policy's ``[[interceptor]]`` tables, each with its process; see the module
    documentation. The processes are shared by every session of a proxy: build one per
    policy (:func:`interceptors_of`)."""

    def __init__(self, settings: Iterable[InterceptorSettings]) -> None:
        self.settings = tuple(settings)
        processes: dict[tuple[str, ...], InterceptorProcess] = {}
        for entry in self.settings:
            assert entry.command is not None  # the policy refuses one without
            processes.setdefault(entry.command, InterceptorProcess(entry.command))
        self._processes = processes

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
        assert entry.command is not None
        params = {"name": entry.name, "event": event, "phase": phase, "payload": payload}
        result = await self._processes[entry.command].request(
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
        """End every interceptor process."""
        await asyncio.gather(*(p.close() for p in self._processes.values()))


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

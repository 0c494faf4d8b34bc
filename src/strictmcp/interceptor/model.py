"""Interceptors as the MCP interceptors extension (SEP-2624) puts them on the wire.

An :class:`Interceptor` is a name, a type (``validation`` or ``mutation``), its hooks (the
lifecycle events and the phase of each), its ``mode`` and ``failOpen``, and a handler: an async
function of one :class:`Invocation` answering a :class:`Validation` or a :class:`Mutation`.
:class:`Registry` holds them in registration order and makes the extension's two answers:
``interceptors/list`` (:meth:`Registry.listing`) and ``interceptor/invoke``
(:meth:`Registry.invoke`, raising :class:`InvokeError` with the JSON-RPC error to answer).

The wire vocabulary is the conformance fixtures' (docs/interceptors.md): ``hooks`` an array of
``{events, phase}``, ``mode`` ``enforce`` (the default, omitted) or ``audit``, ``failOpen``
omitted when false. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..protocol import Severity, Violation
from ..protocol.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

Phase = Literal["request", "response"]
Kind = Literal["validation", "mutation"]
Level = Literal["info", "warn", "error"]
PHASES: tuple[Phase, ...] = ("request", "response")
# The extension's wildcards: every event, or every event in one phase.
_WILDCARDS = {"*": PHASES, "*/request": ("request",), "*/response": ("response",)}
_LEVELS: dict[Level, int] = {"info": 0, "warn": 1, "error": 2}
_LEVEL_OF = {Severity.ERROR: "error", Severity.WARNING: "warn", Severity.INFO: "info"}


@dataclass(frozen=True)
class Hook:
    """The lifecycle events an interceptor runs on, in one phase."""

    events: tuple[str, ...]
    phase: Phase

    def matches(self, event: str, phase: Phase | None = None) -> bool:
        """Whether this hook runs on ``event`` (in ``phase``, when given)."""
        if phase is not None and phase != self.phase:
            return False
        return any(
            hooked == event or (hooked in _WILDCARDS and self.phase in _WILDCARDS[hooked])
            for hooked in self.events
        )


@dataclass(frozen=True)
class Finding:
    """One message of a validation result: value-free (a rule's message, its code, and a JSON
    Pointer into the payload), as every strictmcp finding is."""

    message: str
    severity: Level
    path: str | None = None
    code: str | None = None

    @classmethod
    def of(cls, violation: Violation) -> Finding:
        """A strictmcp finding as a validation message."""
        level: Level = _LEVEL_OF[violation.severity]  # type: ignore[assignment]
        return cls(violation.message, level, violation.pointer, str(violation.code))

    def to_wire(self) -> dict[str, Any]:
        """The extension's ``{path?, message, severity}``."""
        wire: dict[str, Any] = {"message": self.message, "severity": self.severity}
        if self.path:
            wire["path"] = self.path
        return wire


@dataclass(frozen=True)
class Validation:
    """A validator's answer: valid unless a finding is an error."""

    findings: tuple[Finding, ...] = ()

    @property
    def valid(self) -> bool:
        """Whether no finding is an error."""
        return all(f.severity != "error" for f in self.findings)


@dataclass(frozen=True)
class Mutation:
    """A mutator's answer: the payload to go on with, and whether it differs."""

    payload: Any
    modified: bool
    findings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Invocation:
    """One ``interceptor/invoke``: the event, the phase, the payload and the invocation's
    ``context`` (an object, empty when none was sent); ``session`` is the key of the state a
    stateful interceptor keeps (the context's ``sessionId``, else None: the connection's)."""

    event: str
    phase: Phase
    payload: Any
    context: Mapping[str, Any] = field(default_factory=dict)

    @property
    def session(self) -> Hashable:
        """The key of the session the invocation belongs to."""
        session = self.context.get("sessionId")
        return session if isinstance(session, str) else None


Handler = Callable[[Invocation], Awaitable[Validation | Mutation]]


@dataclass(frozen=True)
class Interceptor:
    """One interceptor: its descriptor and its handler."""

    name: str
    kind: Kind
    hooks: tuple[Hook, ...]
    handler: Handler
    mode: Literal["enforce", "audit"] = "enforce"
    fail_open: bool = False
    description: str | None = None

    def hooks_on(self, event: str, phase: Phase | None = None) -> bool:
        """Whether the interceptor runs on ``event`` (in ``phase``, when given)."""
        return any(hook.matches(event, phase) for hook in self.hooks)

    def descriptor(self) -> dict[str, Any]:
        """What ``interceptors/list`` says of it (defaults omitted)."""
        wire: dict[str, Any] = {"name": self.name, "type": self.kind}
        if self.description is not None:
            wire["description"] = self.description
        wire["hooks"] = [{"events": list(h.events), "phase": h.phase} for h in self.hooks]
        if self.mode != "enforce":
            wire["mode"] = self.mode
        if self.fail_open:
            wire["failOpen"] = True
        return wire


class InvokeError(Exception):
    """An ``interceptor/invoke`` answered with a JSON-RPC error; ``data`` is value-free."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Registry:
    """The interceptors a server offers, in registration order (names unique)."""

    def __init__(self, interceptors: Iterable[Interceptor] = ()) -> None:
        self._by_name: dict[str, Interceptor] = {}
        for interceptor in interceptors:
            self.add(interceptor)

    def add(self, interceptor: Interceptor) -> None:
        """Register ``interceptor`` after the others; ValueError when its name is taken."""
        if interceptor.name in self._by_name:
            raise ValueError(f"interceptor {interceptor.name!r} is registered already")
        self._by_name[interceptor.name] = interceptor

    def __iter__(self) -> Any:
        return iter(self._by_name.values())

    def events(self) -> list[str]:
        """Every event some interceptor hooks, in registration order."""
        return list(dict.fromkeys(e for i in self for h in i.hooks for e in h.events))

    def listing(self, event: str | None = None) -> dict[str, Any]:
        """The ``interceptors/list`` result: every interceptor, or those hooking ``event``."""
        return {
            "interceptors": [i.descriptor() for i in self if event is None or i.hooks_on(event)]
        }

    async def invoke(self, params: Any) -> dict[str, Any]:
        """The ``interceptor/invoke`` result for ``params``; :class:`InvokeError` for params
        that are not an invocation (-32602), an unknown name (-32602), an event or phase the
        interceptor does not hook (-32602), or a handler that failed (-32603)."""
        interceptor, invocation = self.parse(params)
        return await run(interceptor, invocation)

    def parse(self, params: Any) -> tuple[Interceptor, Invocation]:
        """The interceptor and invocation ``params`` name; :class:`InvokeError` if none."""
        if not isinstance(params, Mapping):
            raise _invalid("params must be an object")
        name, event, phase = params.get("name"), params.get("event"), params.get("phase")
        context = params.get("context", {})
        if not isinstance(name, str) or not isinstance(event, str):
            raise _invalid("name and event must be strings")
        if phase not in PHASES:
            raise _invalid('phase must be "request" or "response"')
        if "payload" not in params:
            raise _invalid("payload is required")
        if not isinstance(context, Mapping):
            raise _invalid("context must be an object")
        interceptor = self._by_name.get(name)
        if interceptor is None:
            raise InvokeError(INVALID_PARAMS, "Unknown interceptor", {"reason": "unknown-name"})
        if not interceptor.hooks_on(event, phase):
            raise InvokeError(
                INVALID_PARAMS,
                "The interceptor does not hook this event and phase",
                {"interceptor": name, "reason": "not-hooked"},
            )
        return interceptor, Invocation(event, phase, params["payload"], context)


async def run(interceptor: Interceptor, invocation: Invocation) -> dict[str, Any]:
    """The interceptor's result for ``invocation``, on the wire. A handler that raised (other
    than its own :class:`InvokeError`) or answered for the other type is an
    :class:`InvokeError` (-32603) that names no cause."""
    try:
        answer = await interceptor.handler(invocation)
    except InvokeError:
        raise  # a handler's own refusal of what it was given
    except Exception:  # any failure of a handler is the invocation's, and says no more
        answer = None
    wire: dict[str, Any] = {
        "interceptor": interceptor.name,
        "type": interceptor.kind,
        "phase": invocation.phase,
    }
    if interceptor.kind == "validation" and isinstance(answer, Validation):
        wire["valid"] = answer.valid
        if answer.findings:
            wire["severity"] = max((f.severity for f in answer.findings), key=_LEVELS.__getitem__)
            wire["messages"] = [f.to_wire() for f in answer.findings]
            wire["info"] = {"codes": [f.code for f in answer.findings if f.code is not None]}
        return wire
    if interceptor.kind == "mutation" and isinstance(answer, Mutation):
        wire["modified"] = answer.modified
        wire["payload"] = answer.payload
        if answer.findings:
            wire["info"] = {"codes": [f.code for f in answer.findings if f.code is not None]}
        return wire
    raise InvokeError(
        INTERNAL_ERROR,
        "Interceptor execution failed",
        {"interceptor": interceptor.name, "reason": "handler-failed"},
    )


def _invalid(why: str) -> InvokeError:
    return InvokeError(INVALID_PARAMS, "Invalid params", {"reason": why})

"""The extension's chain execution over one registry's interceptors, for one lifecycle event.

The order is the extension's trust-boundary rule: a request (data about to be sent) is
mutated, then validated; a response (data received) is validated, then mutated, the mutations
only when every validation passed. Mutations run one after the other, each on the payload the
one before left, ordered by name (none of strictmcp's declares a ``priorityHint``, whose
default ties them all: the extension breaks ties by name). A validation with an ``error``
finding blocks, unless its interceptor is in ``audit`` mode; an audit mutator's payload is
computed and dropped. An interceptor that fails blocks unless it is ``failOpen`` (then it is
skipped) or in ``audit`` mode (a failure there is reported, never blocking).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .model import Interceptor, Invocation, InvokeError, Registry, run


@dataclass(frozen=True)
class ChainResult:
    """``allow`` iff the chain completed; the payload after the applied mutations (None
    when denied), and each interceptor's result (``None`` for one that failed)."""

    decision: str
    payload: Any
    results: tuple[tuple[str, dict[str, Any] | None], ...]


async def run_chain(registry: Registry, invocation: Invocation) -> ChainResult:
    """Run every interceptor of ``registry`` hooking the invocation's event and phase."""
    hooked = [i for i in registry if i.hooks_on(invocation.event, invocation.phase)]
    mutators = sorted((i for i in hooked if i.kind == "mutation"), key=lambda i: i.name)
    validators = [i for i in hooked if i.kind == "validation"]
    results: list[tuple[str, dict[str, Any] | None]] = []
    payload = invocation.payload
    steps = ("mutate", "validate") if invocation.phase == "request" else ("validate", "mutate")
    for step in steps:
        if step == "mutate":
            for interceptor in mutators:
                result = await _attempt(interceptor, _with(invocation, payload), results)
                if result is _BLOCKED:
                    return ChainResult("deny", None, tuple(results))
                if result is not None and interceptor.mode == "enforce":
                    payload = result["payload"]
        else:
            blocked = False
            for interceptor in validators:
                result = await _attempt(interceptor, _with(invocation, payload), results)
                blocked |= result is _BLOCKED or (
                    result is not None and not result["valid"] and interceptor.mode == "enforce"
                )
            if blocked:  # every validation ran first: all of them are reported
                return ChainResult("deny", None, tuple(results))
    return ChainResult("allow", payload, tuple(results))


_BLOCKED: dict[str, Any] = {}


async def _attempt(
    interceptor: Interceptor,
    invocation: Invocation,
    results: list[tuple[str, dict[str, Any] | None]],
) -> dict[str, Any] | None:
    """The interceptor's result; on failure None (it is skipped) or :data:`_BLOCKED`."""
    try:
        result = await run(interceptor, invocation)
    except InvokeError:
        results.append((interceptor.name, None))
        skipped = interceptor.fail_open or interceptor.mode == "audit"
        return None if skipped else _BLOCKED
    results.append((interceptor.name, result))
    return result


def _with(invocation: Invocation, payload: Any) -> Invocation:
    return Invocation(invocation.event, invocation.phase, payload, invocation.context)

"""Deep validators: checks a tool author writes for what no schema or guard can know.

(The built-in deep checks a policy declares, ``[[deep]]``, run through :func:`bounded` too;
see :mod:`strictmcp.policy`.)

A cron expression that parses, a database that answers, a file that is not too big: tool
authors register such checks per tool. They run in the dry-run ``validate`` tool, always, and
for real calls only when registered with ``on_calls=True``. Each is bounded in time (1 s by
default); a check that overruns or raises is reported, never propagated.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol import Severity, Violation
from ..protocol.tool_calls import ARGUMENTS
from ..schema import quote_name
from .base import GuardFinding
from .codes import GuardCode

DeepResult = Iterable[GuardFinding | str]
DeepCheck = Callable[[Mapping[str, Any]], DeepResult | Awaitable[DeepResult]]
"""A deep check gets a copy of the arguments and returns findings (or plain strings, which
are errors). It may be a coroutine function; a plain function runs in a worker thread."""


def error(message: str) -> GuardFinding:
    """An error a deep check reports: the call would fail."""
    return GuardFinding(GuardCode.DEEP_INVALID, message)


def warning(message: str) -> GuardFinding:
    """A warning a deep check reports: the call would work, but the caller should know."""
    return GuardFinding(GuardCode.DEEP_INVALID, message, Severity.WARNING)


@dataclass(frozen=True)
class _Registered:
    check: DeepCheck
    timeout: float
    on_calls: bool

    @property
    def name(self) -> str:
        return getattr(self.check, "__qualname__", type(self.check).__name__)


class DeepValidators:
    """Deep checks by tool name.

    >>> deep = DeepValidators()
    >>> @deep("schedule_backup")
    ... def target_exists(arguments):
    ...     return [] if arguments.get("target") else [error("no backup target given")]
    """

    def __init__(self, *, timeout: float = 1.0) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.timeout = timeout
        self._checks: dict[str, list[_Registered]] = {}

    def register(
        self, tool: str, check: DeepCheck, *, timeout: float | None = None, on_calls: bool = False
    ) -> None:
        """Add a deep check for ``tool``; ``on_calls`` also runs it before real calls."""
        self._checks.setdefault(tool, []).append(
            _Registered(check, timeout if timeout is not None else self.timeout, on_calls)
        )

    def __call__(
        self, tool: str, *, timeout: float | None = None, on_calls: bool = False
    ) -> Callable[[DeepCheck], DeepCheck]:
        """Register the decorated function as a deep check for ``tool``."""

        def decorate(check: DeepCheck) -> DeepCheck:
            self.register(tool, check, timeout=timeout, on_calls=on_calls)
            return check

        return decorate

    def __contains__(self, tool: object) -> bool:
        return tool in self._checks

    async def run(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        real_call: bool = False,
        pointer: str = ARGUMENTS,
    ) -> list[Violation]:
        """Run the checks for ``tool`` (for a real call, only those registered for calls)."""
        violations: list[Violation] = []
        for registered in self._checks.get(tool, []):
            if real_call and not registered.on_calls:
                continue
            violations += await _run_one(registered, arguments, pointer)
        return violations


async def _run_one(
    registered: _Registered, arguments: Mapping[str, Any], pointer: str
) -> list[Violation]:
    # A copy: a check must not be able to change the arguments a tool then receives.
    given = copy.deepcopy(dict(arguments))
    if inspect.iscoroutinefunction(registered.check):
        pending: Awaitable[Any] = registered.check(given)
    else:
        # A worker thread keeps the event loop free; one that overruns cannot be stopped,
        # only abandoned, which is why checks must be written to finish.
        pending = asyncio.to_thread(registered.check, given)
    return await bounded(pending, registered.timeout, quote_name(registered.name), pointer)


async def bounded(
    pending: Awaitable[DeepResult], timeout: float, name: str, pointer: str
) -> list[Violation]:
    """The findings of one deep check, at ``pointer``, awaited for at most ``timeout``
    seconds: a check that overruns or raises is reported as such (``name`` says which),
    never propagated."""
    try:
        result = await asyncio.wait_for(pending, timeout)
        findings = [item if isinstance(item, GuardFinding) else error(str(item)) for item in result]
    except asyncio.TimeoutError:
        message = f"deep check {name} did not finish within {timeout} s"
        return [Violation(GuardCode.DEEP_TIMEOUT, message, pointer)]
    except Exception as failure:  # a tool author's bug must not break the call
        # The exception's text may quote the arguments: only its type is reported.
        message = f"deep check {name} failed with {type(failure).__name__}"
        return [Violation(GuardCode.DEEP_FAILED, message, pointer)]
    return [finding.at(pointer) for finding in findings]

"""Rate limits per identity and tool: token buckets, in this process.

Each ``[[rate_limit]]`` of the policy gives every (identity, tool) pair its own bucket of
``calls`` tokens, refilled at ``calls / period`` a second; a call takes one, and a call that
finds none is refused with the time until the next token. Buckets are kept for the most
recently used pairs only, so that a stream of new identities cannot grow memory without
bound (a forgotten pair starts again full, which errs on the side of letting a call through,
never on refusing one wrongly).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from ..guards.policy import Identity, RateLimit

MAX_BUCKETS = 100_000
"""The most (identity, tool, limit) buckets remembered."""

RATE_LIMITED = -32029
"""The JSON-RPC error code of a call over its rate limit; its ``data`` is
``{"retryAfter": seconds}`` (an integer, at least 1)."""


_Key = tuple[int, "tuple[str | None, str | None] | None", str]
"""A bucket: the index of its limit, the caller's principal, the tool."""


class RateLimiter:
    """The policy's ``limits``, applied to calls as they come."""

    def __init__(
        self, limits: tuple[RateLimit, ...], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limits = limits
        self._clock = clock
        # (index of the limit, principal, tool) -> (tokens, when they were counted)
        self._buckets: OrderedDict[_Key, tuple[float, float]] = OrderedDict()

    def take(self, identity: Identity | None, tool: str) -> int | None:
        """Take a token for a call of ``tool`` by ``identity`` from every limit that applies;
        None when the call may go on, else the whole seconds until it may (then nothing is
        taken)."""
        now = self._clock()
        principal = identity.principal if identity is not None else None
        taken: list[tuple[_Key, float]] = []
        for index, limit in enumerate(self.limits):
            if not limit.applies_to(tool):
                continue
            key = (index, principal, tool)
            rate = limit.calls / limit.period
            tokens, then = self._buckets.get(key, (float(limit.calls), now))
            tokens = min(float(limit.calls), tokens + (now - then) * rate)
            if tokens < 1:
                return max(1, math.ceil((1 - tokens) / rate))
            taken.append((key, tokens - 1))
        for key, tokens in taken:
            self._buckets[key] = (tokens, now)
            self._buckets.move_to_end(key)
        while len(self._buckets) > MAX_BUCKETS:
            self._buckets.popitem(last=False)
        return None

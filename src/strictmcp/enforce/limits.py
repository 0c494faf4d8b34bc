"""Rate limits per identity and tool: token buckets, in this process or shared in Redis.

Each ``[[rate_limit]]`` of the policy gives every (identity, tool) pair its own bucket of
``calls`` tokens, refilled at ``calls / period`` a second; a call takes one, and a call that
finds none is refused with the time until the next token.

:class:`RateLimiter` keeps the buckets in memory, for the most recently used pairs only, so
that a stream of new identities cannot grow memory without bound (a forgotten pair starts
again full, which errs on the side of letting a call through, never on refusing one
wrongly). With a ``[rate_store]`` in the policy, :class:`SharedRateLimiter` keeps them in
Redis instead: every replica behind a balancer counts the same calls. A call's buckets are
read, refilled and taken from in one Lua script, atomically, on the Redis server's clock
(replicas' clocks never disagree about a refill); each key expires once its bucket would be
full again, which bounds Redis's memory the same way.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..extras import needs
from ..policy import Identity, Policy, RateLimit, RateStoreSettings

MAX_BUCKETS = 100_000
"""The most (identity, tool, limit) buckets remembered."""

RATE_LIMITED = -32004
"""The JSON-RPC error code of a call over its rate limit; its ``data`` is
``{"retryAfter": seconds}`` (an integer, at least 1). A code of JSON-RPC's server range that
MCP leaves free: 2026-07-28 reserves -32020 to -32099 for the specification."""


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


class StoreUnavailable(Exception):
    """The shared store could not be asked: what the call gets is the policy's
    ``on_unavailable``. The message names the kind of failure, never the URL."""


# KEYS: a call's buckets; ARGV: each bucket's capacity and refill rate (tokens a second).
# Nothing is taken unless every bucket has a token; the answer is 0, or the whole seconds
# until every bucket has one.
_TAKE = """
local time = redis.call('TIME')
local now = tonumber(time[1]) + tonumber(time[2]) / 1000000
local have = {}
local wait = 0
for i = 1, #KEYS do
  local capacity = tonumber(ARGV[2 * i - 1])
  local rate = tonumber(ARGV[2 * i])
  local bucket = redis.call('HMGET', KEYS[i], 'tokens', 'at')
  local tokens = tonumber(bucket[1]) or capacity
  local at = tonumber(bucket[2]) or now
  tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
  if tokens < 1 then
    wait = math.max(wait, math.ceil((1 - tokens) / rate))
  end
  have[i] = tokens
end
if wait > 0 then
  return wait
end
for i = 1, #KEYS do
  local capacity = tonumber(ARGV[2 * i - 1])
  local rate = tonumber(ARGV[2 * i])
  redis.call('HSET', KEYS[i], 'tokens', tostring(have[i] - 1), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[i], math.ceil(capacity / rate * 1000) + 1000)
end
return 0
"""


class SharedRateLimiter:
    """The policy's ``limits``, their buckets kept in the Redis server at ``url`` (through
    redis-py's asyncio client, one connection pool for the process); see the module
    documentation. :meth:`take` is awaited (:meth:`~strictmcp.enforce.Enforcer.awaits`),
    each call on its own connection of the pool, so that concurrent calls wait for Redis side
    by side, each for at most the timeout. ``settings`` says how long to wait for Redis and
    what a call gets when it cannot be reached (:attr:`fails_open`)."""

    def __init__(
        self, limits: tuple[RateLimit, ...], settings: RateStoreSettings, url: str
    ) -> None:
        # Imported here: only a policy with a [rate_store] needs the client.
        with needs("redis"):
            from redis.asyncio import Redis  # noqa: PLC0415
            from redis.asyncio.retry import Retry  # noqa: PLC0415
            from redis.backoff import NoBackoff  # noqa: PLC0415

        self.limits = limits
        self.fails_open = settings.on_unavailable == "open"
        #: Whether the last attempt reached Redis (the proxy says so when it changes).
        self.reachable = True
        self._prefix = settings.prefix
        self._timeout = settings.timeout_ms / 1000
        # No retries: a call waits at most the timeout, and the next call tries again.
        self._client: Any = Redis.from_url(
            url,
            socket_timeout=self._timeout,
            socket_connect_timeout=self._timeout,
            retry=Retry(NoBackoff(), 0),
        )
        self._script = self._client.register_script(_TAKE)

    def applies_to(self, tool: str) -> bool:
        """Whether some limit counts the calls of ``tool``."""
        return any(limit.applies_to(tool) for limit in self.limits)

    async def take(self, identity: Identity | None, tool: str) -> int | None:
        """As :meth:`RateLimiter.take`, counted in Redis: None when the call may go on, else
        the whole seconds until it may. Raises :class:`StoreUnavailable` when Redis cannot
        be asked within the timeout."""
        with needs("redis"):
            from redis.exceptions import RedisError  # noqa: PLC0415

        keys: list[str] = []
        args: list[float] = []
        principal = list(identity.principal) if identity is not None else None
        for index, limit in enumerate(self.limits):
            if not limit.applies_to(tool):
                continue
            # Hashed: a subject may hold any character; the limit's own numbers are part of
            # the key, so replicas running different policies never share a bucket.
            named = json.dumps([index, limit.calls, limit.period, principal, tool])
            keys.append(self._prefix + hashlib.sha256(named.encode()).hexdigest())
            args += [limit.calls, limit.calls / limit.period]
        if not keys:
            return None
        try:
            wait = await asyncio.wait_for(self._script(keys=keys, args=args), self._timeout)
        except (RedisError, OSError, asyncio.TimeoutError) as error:
            self.reachable = False
            raise StoreUnavailable(type(error).__name__) from None
        self.reachable = True
        return int(wait) or None

    async def aclose(self) -> None:
        """Close the connections to Redis."""
        await self._client.aclose()


Limiter = RateLimiter | SharedRateLimiter
"""Either kind of rate limiter an :class:`~strictmcp.enforce.Enforcer` applies."""


def limiter_for(policy: Policy | None) -> Limiter | None:
    """The limiter for ``policy``'s rate limits (None without any): in Redis with a
    ``[rate_store]``, else in memory. Make one per process and give it to every enforcer,
    so that all of them count together. Raises PolicyError when the Redis URL cannot be
    read."""
    if policy is None or not policy.rate_limits:
        return None
    if policy.rate_store is None:
        return RateLimiter(policy.rate_limits)
    store = policy.rate_store
    return SharedRateLimiter(policy.rate_limits, store, store.read_url())

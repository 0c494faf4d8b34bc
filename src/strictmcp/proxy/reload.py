"""The policy in force, and reloading it while sessions stay open (SIGHUP, ``--watch``).

A reload reads the file again and, only when it loads whole, puts it in force at once: every
open session judges its next message by it (:meth:`~.session.ProxySession.use`), and new
sessions start with it. A file that does not load, or that changes what only a restart can
change (:data:`RESTART_ONLY`), leaves the policy in force as it was; either way stderr and
the audit log say what happened, naming the two policies by the SHA-256 of their files.

What a reload keeps: each session's tools, tasks and pins (``--pin`` and ``[[server]] pin``
files are read at start), and the rate limits' buckets while ``[[rate_limit]]`` is unchanged
(a change starts every bucket full). ``[audit] record`` applies to open sessions too, unless
``--audit`` was given. What needs a restart: :data:`RESTART_ONLY`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..enforce import Auditor, Limiter, SharedRateLimiter, limiter_for
from ..lint import LintRule
from ..policy import Policy, PolicyError
from .session import InForce, ProxySession

RESTART_ONLY = (
    "auth",
    "upstream",
    "rate_store",
    "gateway",
    "servers",
    "endpoints",
    "interceptors",
)
"""The policy's fields a reload cannot change: what the listener, the upstreams and the
gateway's servers were built from (``[auth]``, ``[upstream]``, ``[rate_store]``,
``[gateway]``, ``[[server]]``, ``[[endpoint]]``, ``[[interceptor]]``)."""

WATCH_SECONDS = 1.0
"""How often ``--watch`` looks at the file."""


def digest(data: bytes) -> str:
    """How a policy file is named in what a reload says: the start of its SHA-256."""
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass
class Policies:
    """The policy file ``path``, the policy in force (``current``) and the sessions judged
    by it. ``listing`` gives the listing rules of a policy (None: ``--listing-rules`` holds
    them for good); ``auditor`` says what happened."""

    path: Path
    current: Policy
    digest: str
    auditor: Auditor
    limiter: Limiter | None
    listing: Callable[[Policy], tuple[LintRule, ...]] | None = None
    #: ``--audit`` as given on the command line, which a reload never overrides (None: the
    #: policy's ``[audit] record`` says).
    record: str | None = None
    in_force: InForce = field(init=False)
    _seen: tuple[float, int] | None = None
    _closing: set[asyncio.Future[None]] = field(default_factory=set)

    @classmethod
    def of(
        cls,
        path: str,
        policy: Policy,
        auditor: Auditor,
        listing: Callable[[Policy], tuple[LintRule, ...]] | None = None,
        record: str | None = None,
    ) -> Policies:
        """``policy``, loaded from ``path``, in force; PolicyError when the file cannot be
        read again, or its rate limits' store named."""
        holder = cls(Path(path), policy, digest(_read(Path(path))), auditor, limiter_for(policy))
        holder.listing = listing
        holder.record = record
        holder._seen = _stamp(holder.path)
        return holder

    def __post_init__(self) -> None:
        self.in_force = InForce(self.current, self.limiter)

    def joined(self, session: ProxySession) -> ProxySession:
        """``session``, judged from now on by whatever policy is in force."""
        session.follow(self.in_force)
        return session

    def reload(self) -> bool:
        """Read the file again and put it in force if it loads and changes nothing only a
        restart can; whether it was put in force."""
        self._seen = _stamp(self.path)
        old = self.digest
        try:
            data = _read(self.path)
            new = digest(data)
            if new == old:
                return False
            policy = Policy.loads(data, base=self.path.resolve().parent)
            changed = [name for name in RESTART_ONLY if _differs(self.current, policy, name)]
            if changed:
                tables = ", ".join(_TABLES[name] for name in changed)
                raise PolicyError(f"{tables} changed, which only a restart applies")
            rules = self.listing(policy) if self.listing is not None else None
            limiter = self.limiter
            if policy.rate_limits != self.current.rate_limits:
                limiter = limiter_for(policy)
        except PolicyError as error:
            self.auditor.event("policy-reload", outcome="refused", old=old, reason=str(error))
            self.auditor.say(f"policy reload refused, {old} stays in force: {error}")
            return False
        if limiter is not self.limiter and isinstance(self.limiter, SharedRateLimiter):
            self._closing.add(asyncio.ensure_future(self.limiter.aclose()))
        self.current, self.digest, self.limiter = policy, new, limiter
        self.in_force.replace(policy, limiter, rules, records_calls(self.record, policy))
        self.auditor.event("policy-reload", outcome="applied", old=old, new=new)
        self.auditor.say(
            f"policy reloaded: {old} -> {new} (open sessions take it at their next message)"
        )
        return True

    def on_hangup(self) -> None:
        """Reload on SIGHUP, on the running event loop."""
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.reload)

    async def watch(self) -> None:
        """Reload whenever the file changes (its modification time or size), until cancelled."""
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            if _stamp(self.path) != self._seen:
                self.reload()


_TABLES = {
    "auth": "[auth]",
    "upstream": "[upstream]",
    "rate_store": "[rate_store]",
    "gateway": "[gateway]",
    "servers": "[[server]]",
}


def records_calls(flag: str | None, policy: Policy | None) -> bool:
    """Whether the audit log gets a record of every call: as ``--audit`` says (``flag``)
    when given, else as ``policy``'s ``[audit] record`` says."""
    return (flag or (policy.audit_record if policy is not None else "findings")) == "all"


def _differs(old: Policy, new: Policy, name: str) -> bool:
    return bool(getattr(old, name) != getattr(new, name))


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise PolicyError(f"cannot read {path.name}: {error.strerror}") from None


def _stamp(path: Path) -> tuple[float, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime, status.st_size

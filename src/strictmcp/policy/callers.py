"""Who calls, and what the policy lets each caller do: the :class:`Identity` a verified token
(or the ``[identity]`` table) describes, the ``[[access]]`` rules and the ``[[rate_limit]]``
entries matched against it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from .names import tool_matches


@dataclass(frozen=True)
class Identity:
    """Who is calling: what a verified access token says about its holder, never the token.

    ``claims`` are the token's verified claims, for rules that match on any of them; they are
    neither compared nor printed, so an identity can be logged by its ``subject`` and
    ``client_id`` only (:meth:`audit`).
    """

    subject: str | None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    groups: tuple[str, ...] = ()
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> Identity:
        """The identity a verified JWT access token (RFC 9068) or an introspection answer
        (RFC 7662) describes: ``sub``, ``client_id`` (or ``azp``), ``scope`` (a string, or a
        list as in ``scp``) and ``groups``."""
        scope = claims.get("scope", claims.get("scp", ""))
        scopes = scope.split() if isinstance(scope, str) else scope
        groups = claims.get("groups", ())
        client = claims.get("client_id", claims.get("azp"))
        return cls(
            subject=_text(claims.get("sub")),
            client_id=_text(client),
            scopes=frozenset(s for s in scopes if isinstance(s, str))
            if isinstance(scopes, list)
            else frozenset(),
            groups=tuple(g for g in groups if isinstance(g, str))
            if isinstance(groups, list)
            else (),
            claims=dict(claims),
        )

    def audit(self) -> dict[str, str | None]:
        """What an audit record says about the caller: ``{subject, clientId}``."""
        return {"subject": self.subject, "clientId": self.client_id}

    @property
    def principal(self) -> tuple[str | None, str | None]:
        """Who this is, whatever the token: its subject and client. A session is bound to
        it, so that a client whose token was refreshed (other scopes, a later expiry) keeps
        its session and another caller's token never reaches it."""
        return self.subject, self.client_id


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class AccessRule:
    """One ``[[access]]`` entry: the identities it matches may call the tools of ``tools``.

    Every condition given must hold: ``subject`` and ``client_id`` are globs over the token's
    ``sub`` and ``client_id``; the identity must hold every scope of ``scopes`` and at least
    one group of ``groups``; each claim of ``claims`` must equal one of the values listed (or,
    for a claim that is a list, contain one). A rule with no condition matches every
    authenticated identity.
    """

    tools: tuple[str, ...]
    subject: str | None = None
    client_id: str | None = None
    scopes: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    claims: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def matches(self, identity: Identity) -> bool:
        """Whether ``identity`` is one this rule is about."""
        if self.subject is not None and not _glob(identity.subject, self.subject):
            return False
        if self.client_id is not None and not _glob(identity.client_id, self.client_id):
            return False
        if not identity.scopes.issuperset(self.scopes):
            return False
        if self.groups and not set(self.groups).intersection(identity.groups):
            return False
        return all(_claim_holds(identity.claims.get(n), values) for n, values in self.claims)

    def allows(self, tool: str) -> bool:
        """Whether ``tool`` is among the tools this rule gives."""
        return any(tool_matches(tool, pattern) for pattern in self.tools)


def _glob(value: str | None, pattern: str) -> bool:
    return value is not None and fnmatchcase(value, pattern)


def _claim_holds(claim: Any, values: tuple[str, ...]) -> bool:
    if isinstance(claim, list):
        return any(isinstance(item, str) and item in values for item in claim)
    return isinstance(claim, str) and claim in values


@dataclass(frozen=True)
class RateLimit:
    """One ``[[rate_limit]]`` entry: each identity may call each tool of ``tools`` at most
    ``calls`` times per ``period`` seconds (a token bucket: ``calls`` at once, then one more
    every ``period / calls`` seconds)."""

    tools: tuple[str, ...]
    calls: int
    period: int = 60

    def applies_to(self, tool: str) -> bool:
        """Whether ``tool`` is among this limit's tools."""
        return any(tool_matches(tool, pattern) for pattern in self.tools)

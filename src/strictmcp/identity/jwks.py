"""The issuer's public keys: read strictly, cached, refreshed at most once per interval.

A token names its key by ``kid``. An attacker can send tokens with a new random ``kid`` each
time; refetching the JWKS for each would turn the proxy into a amplifier against the issuer
and stall every caller behind the fetch. :class:`Jwks` fetches for an unknown ``kid`` at most
once per ``refresh`` seconds (one fetch in flight, every waiting caller sharing it); between
fetches an unknown ``kid`` is refused at once.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..extras import needs

with needs("auth"):
    from jwt import PyJWK
    from jwt.exceptions import PyJWKError, PyJWTError

MAX_JWKS_BYTES = 256 * 1024
"""The largest JWKS document read; a real one is a few kilobytes."""
MAX_KEYS = 64
"""The most keys of a JWKS that are looked at."""
MIN_RSA_BITS = 2048
#: The key type each algorithm family verifies with, and the curve of each EC algorithm.
KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


class KeysUnavailable(Exception):
    """The JWKS (or the issuer's metadata naming it) could not be had; the message says why
    without quoting the document."""


@dataclass
class KeySet:
    """The signing keys of a JWKS document, by ``kid``.

    Only public keys of an asymmetric type (RSA of at least 2048 bits, EC, OKP) meant for
    signatures are kept: a symmetric (``oct``) key in a JWKS would let anyone who read the
    JWKS sign. Keys sharing a ``kid`` are all dropped: which of them a token meant cannot be
    told. A key without ``kid`` is used only for a token without one, and only when it is the
    only such key.
    """

    keys: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    unnamed: Mapping[str, Any] | None = None
    # PyJWK objects by (kid, alg): parsing a key costs more than checking a signature with it.
    _parsed: dict[tuple[str | None, str], PyJWK] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, document: bytes) -> KeySet:
        """The keys of a JWKS document; :class:`KeysUnavailable` when it is not one."""
        if len(document) > MAX_JWKS_BYTES:
            raise KeysUnavailable("the JWKS document is too large")
        try:
            data = json.loads(document)
        except (ValueError, RecursionError):
            raise KeysUnavailable("the JWKS document is not JSON") from None
        entries = data.get("keys") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise KeysUnavailable("the JWKS document has no keys array")
        named: dict[str, Mapping[str, Any]] = {}
        duplicated: set[str] = set()
        unnamed: list[Mapping[str, Any]] = []
        for entry in entries[:MAX_KEYS]:
            if not _usable(entry):
                continue
            kid = entry.get("kid")
            if kid is None:
                unnamed.append(entry)
            elif isinstance(kid, str):
                if kid in named:
                    duplicated.add(kid)
                named[kid] = entry
        for kid in duplicated:
            del named[kid]
        return cls(named, unnamed[0] if len(unnamed) == 1 else None)

    def key(self, kid: str | None, alg: str) -> PyJWK | None:
        """The key ``kid`` names, bound to ``alg``; None when there is none, or when it is not
        of the type ``alg`` verifies with (an EC key for RS256, a P-384 key for ES256)."""
        entry = self.unnamed if kid is None else self.keys.get(kid)
        if entry is None or not _fits(entry, alg):
            return None
        parsed = self._parsed.get((kid, alg))
        if parsed is None:
            try:
                parsed = PyJWK(dict(entry), algorithm=alg)
            except (PyJWTError, PyJWKError, ValueError, TypeError):
                return None
            if entry["kty"] == "RSA" and _rsa_bits(parsed) < MIN_RSA_BITS:
                return None
            self._parsed[(kid, alg)] = parsed
        return parsed

    def __contains__(self, kid: str | None) -> bool:
        return (self.unnamed if kid is None else self.keys.get(kid)) is not None


def _usable(entry: Any) -> bool:
    """A public signing key of a type strictmcp verifies with."""
    if not isinstance(entry, dict) or entry.get("kty") not in ("RSA", "EC", "OKP"):
        return False
    if entry.get("use", "sig") != "sig" or "d" in entry:  # never a private key
        return False
    ops = entry.get("key_ops")
    return ops is None or (isinstance(ops, list) and "verify" in ops)


def _fits(entry: Mapping[str, Any], alg: str) -> bool:
    if entry.get("alg", alg) != alg or KEY_TYPES.get(alg[:2]) != entry["kty"]:
        return False
    if alg in CURVES:
        return bool(entry.get("crv") == CURVES[alg])
    return alg != "EdDSA" or entry.get("crv") == "Ed25519"


def _rsa_bits(key: PyJWK) -> int:
    size = getattr(key.key, "key_size", 0)
    return size if isinstance(size, int) else 0


Load = Callable[[], Awaitable[bytes]]


class Jwks:
    """The current :class:`KeySet` of an issuer, loaded with ``load`` when first needed.

    A ``kid`` the set does not hold makes it reload, unless it was loaded less than
    ``refresh`` seconds ago; the set is also reloaded once it is ``max_age`` seconds old, so
    that keys the issuer withdrew stop being accepted. A failed load is retried no sooner
    either, and meanwhile the keys held are used. ``report`` is told, once per outage, that
    the keys could not be loaded (and why, never the document; its flag True), and that they
    could again (False).
    """

    def __init__(
        self,
        load: Load,
        *,
        refresh: float,
        max_age: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        report: Callable[[str, bool], None] | None = None,
    ) -> None:
        #: Told once per outage of the issuer's keys; the operator's stderr, in the proxy.
        self.report = report
        self._out = False
        self._load = load
        self._refresh = refresh
        self._max_age = max(max_age, refresh)
        self._clock = clock
        self._keys: KeySet | None = None
        self._loaded_at = -float("inf")
        self._lock = asyncio.Lock()
        #: How many loads were attempted (for the operator, and for tests).
        self.loads = 0

    async def key(self, kid: str | None, alg: str) -> PyJWK | None:
        """The key named ``kid`` for ``alg``, reloading the set if it may and must; None when
        there is no such key. :class:`KeysUnavailable` when no set was ever loaded."""
        keys = self._keys
        stale = self._clock() - self._loaded_at >= self._max_age
        if keys is None or stale or kid not in keys:
            keys = await self._reload(kid)
        return keys.key(kid, alg)

    async def _reload(self, kid: str | None) -> KeySet:
        async with self._lock:
            age = self._clock() - self._loaded_at
            keys = self._keys
            if keys is not None and kid in keys and age < self._max_age:
                return keys  # another caller reloaded while this one waited
            if age < self._refresh:  # too soon to ask the issuer again
                if keys is None:
                    raise KeysUnavailable("the issuer's keys could not be loaded; retry later")
                return keys
            self._loaded_at = self._clock()
            self.loads += 1
            try:
                keys = KeySet.parse(await self._load())
            except KeysUnavailable as error:
                self._outage(str(error), held=keys is not None)
                if keys is None:
                    raise
                return keys  # the keys held stay in use until a load succeeds
            if self._out and self.report is not None:
                self.report("the issuer's keys could be loaded again", False)
            self._out = False
            self._keys = keys
            return keys

    def _outage(self, why: str, *, held: bool) -> None:
        if self._out:
            return  # said when it began
        self._out = True
        if self.report is not None:
            then = "the keys held stay in use" if held else "tokens are refused (503)"
            self.report(f"the issuer's keys cannot be loaded: {why}; {then} until they can", True)

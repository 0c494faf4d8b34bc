"""Guard settings that depend on who calls: ``{claim.NAME}`` placeholders in a policy.

A ``[[guard]]`` or ``[[deep]]`` entry's string options may name a claim of the caller's
verified identity (``roots = ["/srv/tenants/{claim.tenant}"]``); the guard a call is checked
with is then built for the caller's value of that claim. The value comes from a signed token,
but it is still put into a setting whose meaning it must not change, so it must be one plain
name component (:data:`SAFE_VALUE`): a value that could leave its slot (``/``, ``..``, NUL, a
glob character, an empty string) refuses the call, as does a missing claim (fail closed).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .base import Guard, GuardFinding
from .codes import GuardCode

PLACEHOLDER = re.compile(r"\{claim\.([A-Za-z0-9_:-]{1,64})\}")
"""``{claim.NAME}``: the caller's claim ``NAME`` (letters, digits, ``_``, ``:``, ``-``)."""

_OPENING = "{claim."

SAFE_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
"""What a claim's value must be to go into a setting: one name component of ASCII letters,
digits, ``_``, ``-`` and ``.``, starting with a letter or digit, at most 128 characters, and
(checked apart) without ``..``. Nothing that is a path separator, a parent directory, a glob,
an option (``-x``), a hidden name or a control character."""

MAX_BOUND = 1024
"""The most guards built for distinct claim values that are kept (least recently used go)."""


def claims_in(value: Any) -> tuple[str, ...]:
    """The claim names a setting (a string, or a tuple of strings) refers to, in order.

    Raises ValueError for a ``{claim.`` that does not open a well-formed placeholder, so that
    a typo is refused when the policy is loaded rather than taken literally.
    """
    names: list[str] = []
    for text in value if isinstance(value, tuple) else (value,):
        if not isinstance(text, str) or _OPENING not in text:
            continue
        found = PLACEHOLDER.findall(text)
        if text.count(_OPENING) != len(found):
            raise ValueError(
                "a {claim.NAME} placeholder is malformed (NAME: letters, digits, _, :, -)"
            )
        names += found
    return tuple(dict.fromkeys(names))


def substitute(options: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """``options`` with every ``{claim.NAME}`` replaced by ``values[NAME]``."""

    def fill(text: Any) -> Any:
        if not isinstance(text, str):
            return text
        return PLACEHOLDER.sub(lambda match: values[match.group(1)], text)

    return {
        name: tuple(fill(item) for item in value) if isinstance(value, tuple) else fill(value)
        for name, value in options.items()
    }


@dataclass(eq=False)
class ClaimGuard:
    """A guard whose settings name claims of the caller: built per caller (:meth:`bind`).

    ``options`` are the entry's options as written (placeholders in place), ``build`` makes
    the guard from options whose placeholders were filled. Guards built for the same values
    are reused (at most :data:`MAX_BOUND`): a guard is a pure function of its settings, so
    this shares no decision between callers, only the work of building it. A build that fails
    (a tenant's root that does not exist) is not kept, so it is tried again on the next call.
    """

    kind: str
    options: Mapping[str, Any]
    build: Callable[[dict[str, Any]], Guard]
    claims: tuple[str, ...]
    _built: OrderedDict[tuple[str, ...], Guard] = field(
        default_factory=OrderedDict, init=False, repr=False, compare=False
    )
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def bind(self, claims: Mapping[str, Any]) -> Guard | GuardFinding:
        """The guard for a caller with these verified ``claims``, or the finding that refuses
        the call: a claim missing or not a string (``identity-claim-missing``), a value that
        is not :data:`SAFE_VALUE` (``identity-claim-unsafe``), settings the guard refuses for
        this value (``identity-guard-unusable``). Messages name the claim, never its value."""
        values: dict[str, str] = {}
        for name in self.claims:
            value = claims.get(name)
            if not isinstance(value, str):
                return GuardFinding(
                    GuardCode.CLAIM_MISSING,
                    f"this {self.kind} guard depends on the caller's claim {name!r}, "
                    "which the caller does not have",
                )
            if SAFE_VALUE.fullmatch(value) is None or ".." in value:
                return GuardFinding(
                    GuardCode.CLAIM_UNSAFE,
                    f"the caller's claim {name!r} is not one plain name (letters, digits, "
                    "_, - and . inside), so this guard's settings cannot be made from it",
                )
            values[name] = value
        key = tuple(values[name] for name in self.claims)
        with self._lock:
            guard = self._built.get(key)
            if guard is not None:
                self._built.move_to_end(key)
                return guard
        try:
            guard = self.build(substitute(self.options, values))
        except (ValueError, TypeError):
            return GuardFinding(
                GuardCode.CLAIM_GUARD_UNUSABLE,
                f"this {self.kind} guard's settings for the caller cannot be used "
                "(a root that does not exist?)",
            )
        with self._lock:
            self._built[key] = guard
            while len(self._built) > MAX_BOUND:
                self._built.popitem(last=False)
        return guard

    def check(self, value: Any) -> list[GuardFinding]:
        """Checked without a caller (lint's examples, a call with no identity): refused,
        since no claim can fill the settings."""
        bound = self.bind({})
        return [bound] if isinstance(bound, GuardFinding) else bound.check(value)

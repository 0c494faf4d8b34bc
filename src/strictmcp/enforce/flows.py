"""Data flowing between the gateway's servers (``[[flow]]``): what a server returns is
tainted with its name, and a later request carrying it to another server is refused,
reported or sent with the data replaced.

Sans-IO: :meth:`FlowTracker.taint` takes a server's answer (a ``tools/call`` result, the
contents of ``resources/read``, the messages of ``prompts/get``) and :meth:`FlowTracker.check`
the params of a request about to go to a server; the caller says which servers they are.

What is tainted: every secret the redaction patterns know (:func:`~strictmcp.guards.secrets.
secrets_in`, with their looser flow forms), in any string of the answer or in what a base64,
hex or percent-encoded run of it decodes to; and the values at a rule's ``sensitive``
pointers, at least its ``min_length`` long. What is kept of each is a keyed digest (HMAC-SHA256
with a key made when the process starts, never written anywhere) with the servers it came
from, and, to find where a tainted value may start in a later request without scanning with
every digest, Python's own per-process keyed hash of its first characters: never a value.

A request's strings, and what each base64 (standard or URL-safe, at any alignment, padding
optional), hex (either case) or percent-encoded run in them decodes to (one layer; a
percent-decoded string is searched for base64 and hex runs too), are searched for tainted
values, verbatim. Data back to a server it came from is no flow.

Kept per session, or per caller in a shared (stateless) session: at most ``max_taints``
digests each; past that the oldest is forgotten, and :attr:`FlowTracker.evicted` counts it
(the caller reports it), so a session can be made to forget a taint by reading many secrets.
A shared session keeps at most ``max_callers`` callers' taints: the least recently tainted
caller's are forgotten for a new one, and counted the same way.
Nothing is shared between processes: behind several replicas, each keeps its own.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import unquote

from ..guards.secrets import secrets_in
from ..policy import FlowAction, FlowRule
from ..policy.rules import values_at
from ..protocol import Severity, Violation
from ..schema import from_fragment

DEFAULT_MAX_TAINTS = 4096
"""The most tainted values kept per session (or per caller of a shared session)."""
DEFAULT_MAX_CALLERS = 10_000
"""The most callers a shared session keeps taints for; the least recently tainted is forgotten."""
CLIENT = None
"""The source of a secret no server returned: the client (the model, or its user)."""

_KEY = secrets.token_bytes(32)
_STRICTNESS: dict[FlowAction, int] = {"audit": 0, "redact": 1, "refuse": 2}
_MAX_DEPTH = 64
# Base64 of 8 characters is 12 long; shorter runs decode to nothing worth a digest.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_HEX_RUN = re.compile(r"[0-9A-Fa-f]{16,}")
_URLSAFE = str.maketrans("-_", "+/")
# What one request's decoding may produce in all: a bound on the work a request can cause.
_MAX_DECODED = 4 * 1024 * 1024


class FlowCode(str, Enum):
    """Stable codes of flow findings."""

    #: Data read from one server, in a request to another.
    CROSS_SERVER = "flow-cross-server"
    #: A secret no server returned, in a request to a server a ``redact`` rule protects.
    CLIENT_SECRET = "flow-client-secret"
    #: A tainted value forgotten, the session's taints being at their bound.
    EVICTED = "flow-taint-evicted"


@dataclass(slots=True)
class _Taint:
    sources: tuple[str, ...]
    kind: str
    anchor: int
    length: int


@dataclass
class _Store:
    """One session's (or caller's) taints: digest -> what is known of it, oldest first; the
    anchors (hashes of first characters) with the lengths of the values starting so."""

    taints: OrderedDict[bytes, _Taint] = field(default_factory=OrderedDict)
    anchors: dict[int, dict[int, int]] = field(default_factory=dict)


@dataclass
class Flowed:
    """What :meth:`FlowTracker.check` found in a request: ``found`` (pointers into the
    message, server names, never a value), the strictest ``action`` of the rules they broke
    (None: nothing found), and ``params`` with the data replaced where a rule redacts (the
    very params when nothing was)."""

    found: list[Violation]
    action: FlowAction | None
    params: Any


class FlowTracker:
    """The ``[[flow]]`` rules of one session; see the module documentation.

    ``locate`` says which server a resource URI belongs to (the gateway routes them; None:
    unknown, and a resource's contents are then not tainted, nor a request for it checked).
    """

    def __init__(
        self,
        rules: tuple[FlowRule, ...],
        *,
        max_taints: int = DEFAULT_MAX_TAINTS,
        max_callers: int = DEFAULT_MAX_CALLERS,
        key: bytes = _KEY,
    ) -> None:
        if max_taints < 1:
            raise ValueError("max_taints must be at least 1")
        self.rules = rules
        self.locate: Callable[[str], str | None] | None = None
        #: Tainted values forgotten at the bound so far (the caller reports each).
        self.evicted = 0
        self._max_taints = max_taints
        self._max_callers = max_callers
        self._key = key
        self._anchor = min(rule.min_length for rule in rules) if rules else 8
        self._sensitive = [
            (rule, tokens)
            for rule in rules
            for pointer in rule.sensitive
            if (tokens := from_fragment("#" + pointer)) is not None
        ]
        self._redacts = [rule for rule in rules if rule.action == "redact"]
        self._stores: OrderedDict[Hashable, _Store] = OrderedDict()
        # By server name (the gateway's servers: a handful), what the globs say of each.
        self._tainting: dict[str, bool] = {}
        self._protected: dict[str, bool] = {}

    # --- taint ---------------------------------------------------------------------------------

    def taint(self, source: str, result: Any, owner: Hashable = None) -> int:
        """Taint what ``source`` answered (``result``: a result object) for ``owner`` (None:
        the session; a caller's key in a shared one); how many values were forgotten to make
        room (also added to :attr:`evicted`)."""
        if not self.taints_from(source):
            return 0
        before = self.evicted
        store = self._store(owner)
        budget = [_MAX_DECODED]
        for text in _strings(result, 0):
            if len(text) < self._anchor:
                continue
            for candidate, _, _ in _decodings(text, budget):
                for kind, start, end in secrets_in(candidate, loose=True):
                    self._add(store, candidate[start:end], source, kind)
        for rule, tokens in self._sensitive:
            if not any(fnmatchcase(source, glob) for glob in rule.sources):
                continue
            for _, value in values_at(result, tokens):
                for text in _strings(value, 0, numbers=True):
                    if len(text) >= rule.min_length:
                        self._add(store, text, source, "sensitive")
        return self.evicted - before

    def taints_from(self, source: str) -> bool:
        """Whether what ``source`` returns is tainted: it is a ``from`` server of some rule,
        or a ``to`` server of a ``redact`` rule (its own secrets are then no client's)."""
        known = self._tainting.get(source)
        if known is None:
            known = self._tainting[source] = any(
                fnmatchcase(source, glob) for rule in self.rules for glob in rule.sources
            ) or self._protects(source)
        return known

    def _protects(self, sink: str) -> bool:
        """Whether a ``redact`` rule protects ``sink`` (:data:`FlowCode.CLIENT_SECRET`)."""
        known = self._protected.get(sink)
        if known is None:
            known = self._protected[sink] = any(
                fnmatchcase(sink, glob) for rule in self._redacts for glob in rule.sinks
            )
        return known

    def _add(self, store: _Store, value: str, source: str, kind: str) -> None:
        if len(value) < self._anchor:
            return
        digest = self._digest(value)
        known = store.taints.get(digest)
        if known is not None:
            if source not in known.sources:
                known.sources = (*known.sources, source)
            store.taints.move_to_end(digest)
            return
        anchor = hash(value[: self._anchor])
        store.taints[digest] = _Taint((source,), kind, anchor, len(value))
        lengths = store.anchors.setdefault(anchor, {})
        lengths[len(value)] = lengths.get(len(value), 0) + 1
        while len(store.taints) > self._max_taints:
            _, gone = store.taints.popitem(last=False)
            held = store.anchors[gone.anchor]
            held[gone.length] -= 1
            if not held[gone.length]:
                del held[gone.length]
                if not held:
                    del store.anchors[gone.anchor]
            self.evicted += 1

    # --- check ---------------------------------------------------------------------------------

    def idle(self, sink: str, owner: Hashable = None) -> bool:
        """Whether nothing can be found in a request to ``sink`` for ``owner``: nothing is
        tainted for it, and no ``redact`` rule protects ``sink`` (most calls: one look)."""
        store = self._stores.get(owner) if self._stores else None
        return (store is None or not store.taints) and not self._protects(sink)

    def check(self, sink: str, params: Any, pointer: str, owner: Hashable = None) -> Flowed:
        """The flows of ``params`` (a request's arguments, or params, at ``pointer`` in the
        message) about to go to ``sink``, for ``owner`` (as :meth:`taint` took it)."""
        store = self._stores.get(owner) if self._stores else None
        protected = self._protects(sink)
        if (store is None or not store.taints) and not protected:
            return Flowed([], None, params)
        found: list[Violation] = []
        strictest: FlowAction | None = None
        replaced: dict[str, list[tuple[int, int, str]]] = {}
        budget = [_MAX_DECODED]
        for where, text in _leaves(params, "", 0):
            spans: list[tuple[int, int, str]] = []
            if store is not None and store.taints:
                named: set[int] = set()  # one finding per value, however often it is found
                for start, end, taint in self._hits(store, text, budget):
                    action = self._action(taint, sink)
                    if action is None:
                        continue
                    if action == "redact":
                        spans.append((start, end, f"[redacted: data of {_sources(taint, sink)}]"))
                    if id(taint) in named:
                        continue
                    named.add(id(taint))
                    message = (
                        f"carries data read from server {_sources(taint, sink)} ({taint.kind}); "
                        f"it may not be sent to server {sink!r}"
                    )
                    found.append(Violation(FlowCode.CROSS_SERVER, message, pointer + where))
                    strictest = _stricter(strictest, action)
            if protected:
                for start, end, kind in self._client_secrets(store, text, sink):
                    message = (
                        f"carries a secret ({kind}) no server returned; it is not sent to "
                        f"server {sink!r}"
                    )
                    found.append(
                        Violation(FlowCode.CLIENT_SECRET, message, pointer + where, Severity.ERROR)
                    )
                    strictest = _stricter(strictest, "redact")
                    spans.append((start, end, f"[redacted {kind}]"))
            if spans:
                replaced[where] = spans
        if strictest != "redact" or not replaced:
            return Flowed(found, strictest, params)
        return Flowed(found, strictest, _replace(params, "", replaced, 0))

    def _hits(
        self, store: _Store, text: str, budget: list[int]
    ) -> Iterator[tuple[int, int, _Taint]]:
        """Each tainted value in ``text`` or in what a run of it decodes to: the span of
        ``text`` to replace to remove it (a decoded one's whole run)."""
        for candidate, start, end in _decodings(text, budget):
            for at, length, taint in self._scan(store, candidate):
                yield (at, at + length, taint) if candidate is text else (start, end, taint)

    def _scan(self, store: _Store, text: str) -> Iterator[tuple[int, int, _Taint]]:
        width = self._anchor
        last = len(text) - width + 1
        if last <= 0:
            return
        anchors = store.anchors
        # Most requests hold no tainted value: one pass of the C-level set and hash, and done.
        if anchors.keys().isdisjoint(map(hash, {text[i : i + width] for i in range(last)})):
            return
        for at in range(last):
            lengths = anchors.get(hash(text[at : at + width]))
            for length in lengths or ():
                if at + length > len(text):
                    continue
                taint = store.taints.get(self._digest(text[at : at + length]))
                if taint is not None:
                    yield at, length, taint

    def _client_secrets(
        self, store: _Store | None, text: str, sink: str
    ) -> Iterator[tuple[int, int, str]]:
        """The secrets in ``text`` no server returned (a value ``sink`` itself returned is
        its own; one another server returned is a flow, found by the taints)."""
        for kind, start, end in secrets_in(text, loose=True):
            known = store.taints.get(self._digest(text[start:end])) if store else None
            if known is None:
                yield start, end, kind

    def _action(self, taint: _Taint, sink: str) -> FlowAction | None:
        """What the rules say of ``taint`` reaching ``sink``: the strictest action of those
        joining one of its sources to it; None when none does, or ``sink`` gave it itself."""
        if sink in taint.sources:
            return None
        action: FlowAction | None = None
        for rule in self.rules:
            if taint.length >= rule.min_length and any(
                rule.joins(source, sink) for source in taint.sources
            ):
                action = _stricter(action, rule.action)
        return action

    # --- keeping -------------------------------------------------------------------------------

    def _store(self, owner: Hashable) -> _Store:
        store = self._stores.get(owner)
        if store is None:
            store = self._stores[owner] = _Store()
            while len(self._stores) > self._max_callers:
                # A caller's taints forgotten are counted as the oldest taint is: a caller
                # whose data silently stopped being tainted would be a flow let through unsaid.
                _, gone = self._stores.popitem(last=False)
                self.evicted += len(gone.taints)
        else:
            self._stores.move_to_end(owner)
        return store

    def _digest(self, value: str) -> bytes:
        return hmac.digest(self._key, value.encode("utf-8", "surrogatepass"), "sha256")

    def forget(self, owner: Hashable = None) -> None:
        """Drop ``owner``'s taints (its session ended)."""
        self._stores.pop(owner, None)


def _sources(taint: _Taint, sink: str) -> str:
    return ", ".join(repr(source) for source in taint.sources if source != sink)


def _stricter(one: FlowAction | None, other: FlowAction) -> FlowAction:
    return other if one is None or _STRICTNESS[other] > _STRICTNESS[one] else one


def _strings(value: Any, depth: int, *, numbers: bool = False) -> Iterator[str]:
    """Every string in a JSON value (keys too), and with ``numbers`` every number as text."""
    if isinstance(value, str):
        yield value
    elif depth >= _MAX_DEPTH:
        return
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item, depth + 1, numbers=numbers)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1, numbers=numbers)
    elif numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        yield str(value)


def _leaves(value: Any, where: str, depth: int) -> Iterator[tuple[str, str]]:
    """Every string value in a JSON value, with its pointer (a key is no value to send)."""
    if isinstance(value, str):
        yield where, value
    elif depth < _MAX_DEPTH and isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{where}/{_escape(key)}", depth + 1)
    elif depth < _MAX_DEPTH and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{where}/{index}", depth + 1)


def _replace(
    value: Any, where: str, spans: dict[str, list[tuple[int, int, str]]], depth: int
) -> Any:
    """``value`` with the spans of the strings at each pointer replaced."""
    if isinstance(value, str):
        return _spliced(value, spans[where]) if where in spans else value
    if depth < _MAX_DEPTH and isinstance(value, dict):
        return {
            key: _replace(item, f"{where}/{_escape(key)}", spans, depth + 1)
            for key, item in value.items()
        }
    if depth < _MAX_DEPTH and isinstance(value, list):
        return [_replace(item, f"{where}/{i}", spans, depth + 1) for i, item in enumerate(value)]
    return value


def _spliced(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each span replaced by its marker; overlapping spans as one."""
    out: list[str] = []
    last = 0
    for start, end, marker in sorted(spans):
        if start < last:
            last = max(last, end)
            continue
        out += [text[last:start], marker]
        last = end
    out.append(text[last:])
    return "".join(out)


def _decodings(text: str, budget: list[int]) -> Iterator[tuple[str, int, int]]:
    """``text`` itself (spanning nothing), then what its encoded runs decode to, each with
    the span of ``text`` it came from, within what is left of ``budget`` (characters)."""
    yield text, 0, 0
    layers = [(text, False)]
    if "%" in text:
        unquoted = unquote(text, errors="replace")
        if unquoted != text:
            yield unquoted, 0, len(text)
            layers.append((unquoted, True))
    for layer, whole in layers:
        for decoded, start, end in _runs(layer, budget):
            yield decoded, *((0, len(text)) if whole else (start, end))


def _runs(text: str, budget: list[int]) -> Iterator[tuple[str, int, int]]:
    for run in _BASE64_RUN.finditer(text):
        body = run.group().rstrip("=").translate(_URLSAFE)
        for offset in range(4):
            part = body[offset:]
            part = part[: len(part) - 1] if len(part) % 4 == 1 else part
            try:
                raw = base64.b64decode(part + "=" * (-len(part) % 4))
            except (binascii.Error, ValueError):
                continue
            if _spend(budget, len(raw)):
                yield raw.decode("utf-8", "replace"), run.start(), run.end()
    for run in _HEX_RUN.finditer(text):
        for offset in range(2):
            part = run.group()[offset:]
            raw = bytes.fromhex(part[: len(part) - len(part) % 2])
            if _spend(budget, len(raw)):
                yield raw.decode("utf-8", "replace"), run.start(), run.end()


def _spend(budget: list[int], size: int) -> bool:
    if budget[0] < size:
        return False
    budget[0] -= size
    return True


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")

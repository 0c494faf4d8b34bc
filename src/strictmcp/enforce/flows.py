"""Data flowing between the gateway's servers (``[[flow]]``): what a server returns is
tainted with its name, and a later request carrying it to another server is refused,
reported or sent with the data replaced.

Sans-IO: :meth:`FlowTracker.taint` takes what a server sent (a ``tools/call`` result or
error, the contents of ``resources/read``, the messages of ``prompts/get``, a log message's
params) and :meth:`FlowTracker.check` the params of a message about to go to a server; the
caller says which servers they are.

What is tainted: every secret the redaction patterns know (:func:`~strictmcp.guards.secrets.
secrets_in`, with their looser flow forms), in any string of the answer or in what a base64,
hex or percent-encoded run of it decodes to; and the values at a rule's ``sensitive``
pointers, at least its ``min_length`` long. What is kept of each is a keyed digest (HMAC-SHA256
with a key made when the process starts, never written anywhere) with the servers it came
from, and, to find where a tainted value may start in a later request without scanning with
every digest, its *shadow*: each of the first bytes of its UTF-8 mapped to one of 16 letters
by a table drawn when the process starts (4 bits a byte, many bytes to each letter: never a
value, nor enough to tell one).

A request's strings (keys too, and numbers as their text, however deep), what each base64
(standard or URL-safe, at any alignment, padding optional) or hex (either case) run in them
decodes to (one layer), and what each whole string reads as written plainly (percent-encoding,
HTML references and JSON escapes undone, invisible characters dropped, compatibility forms
folded; its runs decoded too), are searched for tainted values, verbatim: the string's
shadow is searched for the taints' shadows by one compiled pattern (a trie of them), and
only where one matches are digests made. A run too short to
decode to the shortest tainted value is not decoded. Data back to a server it came from is
no flow.

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
import functools
import hmac
import html
import itertools
import re
import secrets
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
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
DEFAULT_DECODED = 4 * 1024 * 1024
DEFAULT_DECODED_PER_CHARACTER = 8
"""What the decodings of one message may produce in all, a bound on the work it can cause:
``DEFAULT_DECODED`` characters, and ``DEFAULT_DECODED_PER_CHARACTER`` more for each
character of its strings. A message's base64 and hex readings (six alignments, each run
once) and plain readings take less than that; only a message made to (encodings inside
encodings, characters NFKC expands) takes more, and then a request in a tainted session is
refused rather than sent on partly searched (:attr:`FlowCode.UNSEARCHED`)."""

_KEY = secrets.token_bytes(32)
_STRICTNESS: dict[FlowAction, int] = {"audit": 0, "redact": 1, "refuse": 2}
# Base64's characters hold hex's: a hex run is looked for only inside a base64 one.
_BASE64_CHARACTERS = "[A-Za-z0-9+/_-]"
_HEX_CHARACTERS = "[0-9A-Fa-f]"
# Base64's characters as b"a", any other byte as b" " (the bytes.translate table): whether a
# string holds a run long enough is one C-level find, where the run pattern takes about 10
# ns a character even when there is none.
_BASE64_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_BASE64_CLASS = bytes(b"a"[0] if byte in _BASE64_BYTES else b" "[0] for byte in range(256))
# The shadow of a byte: one of 16 letters, drawn per process (the bytes.translate table).
_SHADOW = bytes(b"abcdefghijklmnop"[byte & 15] for byte in secrets.token_bytes(256))
# Taints' shadows added since a store's pattern was compiled are looked for one by one
# until there are more than this, or than an eighth of those compiled: compiling (about 20
# ms for 1,000 shadows) then costs little per taint, however often taints are added.
_FRESH = 8
_URLSAFE = str.maketrans("-_", "+/")


class FlowCode(str, Enum):
    """Stable codes of flow findings."""

    #: Data read from one server, in a request to another.
    CROSS_SERVER = "flow-cross-server"
    #: A secret no server returned, in a request to a server a ``redact`` rule protects.
    CLIENT_SECRET = "flow-client-secret"
    #: A tainted value forgotten, the session's taints being at their bound.
    EVICTED = "flow-taint-evicted"
    #: A request with more encoded data than one is searched for, in a tainted session.
    UNSEARCHED = "flow-unsearched"


@dataclass(slots=True)
class _Taint:
    sources: tuple[str, ...]
    kind: str
    anchor: bytes
    length: int


@dataclass
class _Store:
    """One session's (or caller's) taints: digest -> what is known of it, oldest first; the
    anchors (shadows of first bytes) with the lengths of the values starting so; the
    pattern finding the anchors compiled so far, those added since, and the shortest length
    (no longer than any value kept: an evicted one may leave it shorter until the next
    compiling)."""

    taints: OrderedDict[bytes, _Taint] = field(default_factory=OrderedDict)
    anchors: dict[bytes, dict[int, int]] = field(default_factory=dict)
    pattern: re.Pattern[bytes] | None = None
    compiled: int = 0
    fresh: set[bytes] = field(default_factory=set)
    shortest: int = 0


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
    """The ``[[flow]]`` rules of one session; see the module documentation. Which server a
    request goes to, or an answer came from, is the caller's to say (the gateway routes)."""

    def __init__(
        self,
        rules: tuple[FlowRule, ...],
        *,
        max_taints: int = DEFAULT_MAX_TAINTS,
        max_callers: int = DEFAULT_MAX_CALLERS,
        key: bytes = _KEY,
        decoded: tuple[int, int] = (DEFAULT_DECODED, DEFAULT_DECODED_PER_CHARACTER),
    ) -> None:
        if max_taints < 1:
            raise ValueError("max_taints must be at least 1")
        #: Tainted values forgotten at the bound so far (the caller reports each).
        self.evicted = 0
        self._decoded, self._decoded_per_character = decoded
        self._max_taints = max_taints
        self._max_callers = max_callers
        self._key = key
        self._stores: OrderedDict[Hashable, _Store] = OrderedDict()
        self.rules: tuple[FlowRule, ...] = ()
        self._anchor = 0
        self._runs = _run_patterns(8)
        self._sensitive: list[tuple[FlowRule, tuple[str, ...]]] = []
        self._redacts: list[FlowRule] = []
        # By server name (the gateway's servers: a handful), what the globs say of each.
        self._tainting: dict[str, bool] = {}
        self._protected: dict[str, bool] = {}
        self.use(rules)

    def use(self, rules: tuple[FlowRule, ...]) -> None:
        """Judge by ``rules`` from now on (the policy reloaded), keeping every taint: a
        reload never forgets what a session read. A taint is found by the shadow of its
        first bytes, as many as the shortest ``min_length``; what was kept cannot be
        shadowed wider, so while anything is kept that width only ever narrows."""
        width = min((rule.min_length for rule in rules), default=8)
        if any(store.taints for store in self._stores.values()):
            width = min(width, self._anchor)
            if width < self._anchor:
                for store in self._stores.values():
                    _narrow(store, width)
        self.rules = rules
        self._anchor = width
        self._runs = _run_patterns(width)
        self._sensitive = [
            (rule, tokens)
            for rule in rules
            for pointer in rule.sensitive
            if (tokens := from_fragment("#" + pointer)) is not None
        ]
        self._redacts = [rule for rule in rules if rule.action == "redact"]
        self._tainting.clear()
        self._protected.clear()

    # --- taint ---------------------------------------------------------------------------------

    def taint(self, source: str, result: Any, owner: Hashable = None) -> int:
        """Taint what ``source`` answered (``result``: a result object) for ``owner`` (None:
        the session; a caller's key in a shared one); how many values were forgotten to make
        room (also added to :attr:`evicted`)."""
        if not self.taints_from(source):
            return 0
        before = self.evicted
        store = self._store(owner)
        budget = [self._decoded, 0]
        for text in _strings(result):
            if len(text) < self._anchor:
                continue
            budget[0] += self._decoded_per_character * len(text)
            decoded = _decodings(text, budget, self._anchor, self._runs)
            for candidate in (text, *(candidate for candidate, _, _ in decoded)):
                for kind, start, end in secrets_in(candidate, loose=True):
                    self._add(store, candidate[start:end], source, kind)
        for rule, tokens in self._sensitive:
            if not any(fnmatchcase(source, glob) for glob in rule.sources):
                continue
            for _, value in values_at(result, tokens):
                for text in _strings(value, numbers=True):
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
        anchor = value.encode("utf-8", "surrogatepass")[: self._anchor].translate(_SHADOW)
        store.taints[digest] = _Taint((source,), kind, anchor, len(value))
        lengths = store.anchors.get(anchor)
        if lengths is None:
            lengths = store.anchors[anchor] = {}
            store.fresh.add(anchor)
        lengths[len(value)] = lengths.get(len(value), 0) + 1
        if not store.shortest or len(value) < store.shortest:
            store.shortest = len(value)
        while len(store.taints) > self._max_taints:
            _, gone = store.taints.popitem(last=False)
            held = store.anchors[gone.anchor]
            held[gone.length] -= 1
            if not held[gone.length]:
                del held[gone.length]
                if not held:
                    del store.anchors[gone.anchor]
                    store.fresh.discard(gone.anchor)
            self.evicted += 1

    # --- check ---------------------------------------------------------------------------------

    def idle(self, sink: str, owner: Hashable = None) -> bool:
        """Whether nothing can be found in a request to ``sink`` for ``owner``: nothing is
        tainted for it, and no ``redact`` rule protects ``sink`` (most calls: one look)."""
        store = self._stores.get(owner) if self._stores else None
        return (store is None or not store.taints) and not self._protects(sink)

    def check(self, sink: str, params: Any, pointer: str, owner: Hashable = None) -> Flowed:
        """The flows of ``params`` (a request's arguments, or params, at ``pointer`` in the
        message) about to go to ``sink``, for ``owner`` (as :meth:`taint` took it). Object
        keys are searched as values are: a server is sent both. A finding in a key points
        at the object holding it, and one below such a key at that object too, so that no
        pointer quotes what was found."""
        store = self._stores.get(owner) if self._stores else None
        protected = self._protects(sink)
        tainted = store is not None and bool(store.taints)
        if not tainted and not protected:
            return Flowed([], None, params)
        # Compiled anew if due, before the shortest value held is read.
        pattern = self._pattern(store) if store is not None and tainted else None
        found: list[Violation] = []
        strictest: FlowAction | None = None
        replaced: dict[str, list[tuple[int, int, str]]] = {}  # values' spans, by pointer
        renamed: dict[str, list[tuple[int, int, str]]] = {}  # keys', by their member's pointer
        budget = [self._decoded, 0]  # what may still be decoded; 1 once something was left so
        # Every encoding of a value is at least as long as it: a shorter string holds none.
        # A secret no server returned is looked for in every string.
        floor = store.shortest if store is not None and tainted and not protected else 0
        texts: list[tuple[tuple[str | int, ...], str, bool]] = []
        if isinstance(params, str) and _may_hold(params, floor):
            texts.append(((), params, False))
        _texts(params, floor, texts)
        hidden: list[tuple[tuple[str | int, ...], str]] = []  # below a key data was found in
        for path, text, is_key in texts:
            budget[0] += self._decoded_per_character * len(text)
            hits = self._hits(store, pattern, text, budget) if store is not None and tainted else []
            secrets = list(self._client_secrets(store, text, sink)) if protected else []
            if not hits and not secrets:
                continue
            where = _pointer(path)
            shown = _pointer(path[:-1]) if is_key else where
            for above, pointed in hidden:
                if path[: len(above)] == above:
                    shown = pointed
                    break
            here, spans, action = self._found(sink, hits, secrets, pointer + shown)
            # A key and what it holds may point at one place: each finding said once.
            found += [finding for finding in here if finding not in found]
            if action is not None:
                strictest = _stricter(strictest, action)
            if is_key:
                hidden.append((path, shown))
            if spans:
                (renamed if is_key else replaced)[where] = spans
        if budget[1] and store is not None:
            # What was not decoded was not searched: the request is not sent on (nor redacted).
            action = self._unsearched(store, sink)
            if action is not None:
                message = (
                    f"carries more encoded data than is searched; it is not sent to server {sink!r}"
                )
                found.append(Violation(FlowCode.UNSEARCHED, message, pointer, Severity.ERROR))
                strictest = _stricter(strictest, "refuse" if action == "redact" else action)
        if strictest != "redact" or not (replaced or renamed):
            return Flowed(found, strictest, params)
        return Flowed(found, strictest, _replace(params, replaced, renamed))

    def _found(
        self,
        sink: str,
        hits: list[tuple[int, int, _Taint]],
        secrets: list[tuple[int, int, str]],
        at: str,
    ) -> tuple[list[Violation], list[tuple[int, int, str]], FlowAction | None]:
        """What one string holds (``hits``: tainted values; ``secrets``: secrets no server
        returned) on its way to ``sink``: the findings, pointed at ``at`` (one per value,
        however often it is found), the spans to replace where a rule redacts, and the
        strictest action."""
        found: list[Violation] = []
        spans: list[tuple[int, int, str]] = []
        strictest: FlowAction | None = None
        named: set[int] = set()
        for start, end, taint in hits:
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
            found.append(Violation(FlowCode.CROSS_SERVER, message, at))
            strictest = _stricter(strictest, action)
        for start, end, kind in secrets:
            message = (
                f"carries a secret ({kind}) no server returned; it is not sent to server {sink!r}"
            )
            found.append(Violation(FlowCode.CLIENT_SECRET, message, at, Severity.ERROR))
            strictest = _stricter(strictest, "redact")
            spans.append((start, end, f"[redacted {kind}]"))
        return found, spans, strictest

    def _hits(
        self, store: _Store, pattern: re.Pattern[bytes] | None, text: str, budget: list[int]
    ) -> list[tuple[int, int, _Taint]]:
        """Each tainted value in ``text`` or in what a run of it decodes to (``pattern``: the
        store's): the span of ``text`` to replace to remove it (a decoded one's whole run)."""
        if not _may_hold(text, store.shortest):
            return []
        hits = [(at, at + length, taint) for at, length, taint in self._scan(store, pattern, text)]
        for decoded, start, end in _decodings(text, budget, store.shortest, self._runs):
            hits += [(start, end, taint) for _, _, taint in self._scan(store, pattern, decoded)]
        return hits

    def _pattern(self, store: _Store) -> re.Pattern[bytes] | None:
        """The store's compiled pattern, compiled anew when enough anchors were added since
        it was (see :data:`_FRESH`); the anchors evicted since are left in it (a match of
        one finds no lengths)."""
        if len(store.fresh) > max(_FRESH, store.compiled // 8):
            store.pattern = re.compile(_trie(store.anchors))
            store.compiled = len(store.anchors)
            store.fresh.clear()
            store.shortest = min(length for held in store.anchors.values() for length in held)
        return store.pattern

    def _scan(
        self, store: _Store, pattern: re.Pattern[bytes] | None, text: str
    ) -> list[tuple[int, int, _Taint]]:
        """Each tainted value in ``text``: where it starts, its length."""
        width = self._anchor
        if len(text) < store.shortest:  # never shorter than width: no value is
            return []
        raw = text.encode("utf-8", "surrogatepass")
        shadow = raw.translate(_SHADOW)
        # Most requests hold no tainted value: a pass of the C-level pattern (and a find
        # per fresh anchor), and done.
        starts: set[int] = set()
        if pattern is not None:
            match = pattern.search(shadow)
            while match is not None:
                starts.add(match.start())
                match = pattern.search(shadow, match.start() + 1)
        for anchor in store.fresh:
            at = shadow.find(anchor)
            while at >= 0:
                starts.add(at)
                at = shadow.find(anchor, at + 1)
        found: list[tuple[int, int, _Taint]] = []
        if not starts:
            return found
        ascii = text.isascii()
        for start in sorted(starts):
            lengths = store.anchors.get(shadow[start : start + width])
            if lengths is None:
                continue
            if ascii:
                at = start
            elif raw[start] & 0xC0 == 0x80:
                continue  # inside a character: no value starts there
            else:
                at = len(raw[:start].decode("utf-8", "surrogatepass"))
            for length in lengths:
                if at + length > len(text):
                    continue
                taint = store.taints.get(self._digest(text[at : at + length]))
                if taint is not None:
                    found.append((at, length, taint))
        return found

    def _unsearched(self, store: _Store, sink: str) -> FlowAction | None:
        """What the rules say of a request to ``sink`` not searched whole: the strictest
        action of those joining a server ``store`` holds data of to ``sink``."""
        sources = {source for taint in store.taints.values() for source in taint.sources}
        action: FlowAction | None = None
        for rule in self.rules:
            if any(source != sink and rule.joins(source, sink) for source in sources):
                action = _stricter(action, rule.action)
        return action

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


def _strings(value: Any, *, numbers: bool = False) -> Iterator[str]:
    """Every string in a JSON value (keys too), and with ``numbers`` every number as text,
    however deep (no bound but the reader's: what is not walked is not tainted)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for key, item in node.items():
                yield key
                stack.append(item)
        elif isinstance(node, list):
            stack.extend(node)
        elif numbers and isinstance(node, (int, float)) and not isinstance(node, bool):
            yield _number_text(node)


def _texts(value: Any, floor: int, out: list[tuple[tuple[str | int, ...], str, bool]]) -> None:
    """Every string in a JSON value at least ``floor`` long, keys too, and every number as
    its text (:func:`_number_text`), however deep (what is not walked would go unsearched),
    added to ``out`` as ``(path, text, is_key)``, a key before anything below it; a key's
    path is its member's."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        items: Iterable[tuple[str | int, Any]]
        if isinstance(node, dict):
            items = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        for key, item in items:
            if type(key) is str and _may_hold(key, floor):
                out.append(((*path, key), key, True))
            if isinstance(item, str):
                if _may_hold(item, floor):
                    out.append(((*path, key), item, False))
            elif isinstance(item, (dict, list)):
                stack.append(((*path, key), item))
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                # A number a sensitive pointer tainted, sent as a number: found as its text is.
                text = _number_text(item)
                if len(text) >= floor:
                    out.append(((*path, key), text, False))


def _may_hold(text: str, shortest: int) -> bool:
    """Whether ``text`` may hold a value ``shortest`` long, verbatim or in any reading: every
    encoding of a value is at least as long as it, but NFKC can lengthen a string that is
    not ASCII (a ligature, a circled number), so only an ASCII one shorter holds none."""
    return len(text) >= shortest or not text.isascii()


def _pointer(path: tuple[str | int, ...]) -> str:
    return "".join(f"/{_escape(key)}" if type(key) is str else f"/{key}" for key in path)


def _replace(
    value: Any,
    spans: dict[str, list[tuple[int, int, str]]],
    keys: dict[str, list[tuple[int, int, str]]],
) -> Any:
    """``value`` with the spans of the strings at each pointer replaced (a number's text at
    its pointer: a string then), and those of the keys at each member's pointer (``keys``);
    a key replaced to one the object already has is made distinct by a number, so that no
    member is lost. Built top down, however deep."""
    top: list[Any] = [None]
    stack: list[tuple[Any, str, Any, Any]] = [(value, "", top, 0)]
    while stack:
        node, where, parent, slot = stack.pop()
        if isinstance(node, dict):
            made: dict[str, Any] = {}
            for key, item in node.items():
                member = f"{where}/{_escape(key)}"
                name = key
                if member in keys:
                    name = base = _spliced(key, keys[member])
                    number = 1
                    while name in made or name in node:
                        number += 1
                        name = f"{base} ({number})"
                made[name] = None
                stack.append((item, member, made, name))
            parent[slot] = made
        elif isinstance(node, list):
            listed: list[Any] = [None] * len(node)
            for index, item in enumerate(node):
                stack.append((item, f"{where}/{index}", listed, index))
            parent[slot] = listed
        elif where in spans and isinstance(node, str):
            parent[slot] = _spliced(node, spans[where])
        elif where in spans and isinstance(node, (int, float)) and not isinstance(node, bool):
            parent[slot] = _spliced(_number_text(node), spans[where])  # a number no more
        else:
            parent[slot] = node
    return top[0]


def _number_text(value: float) -> str:
    """A JSON number as text, one text for one value however it is written (``12.0`` as
    ``12``, as a reader takes ``1.2e1``): what is tainted and what is searched meet."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if isinstance(value, int) else repr(value)


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


def _trie(anchors: dict[bytes, dict[int, int]]) -> bytes:
    """A pattern matching each of ``anchors`` (shadows, all as long, of letters only), as a
    trie: at a position, one letter compared per branch of each level it gets to."""
    root: dict[int, Any] = {}
    for anchor in anchors:
        node = root
        for letter in anchor:
            node = node.setdefault(letter, {})
    return _branches(root)


def _narrow(store: _Store, width: int) -> None:
    """``store``'s taints found by the shadows of their first ``width`` bytes (narrower than
    they were): each anchor cut, those that then meet merged, the pattern compiled anew."""
    anchors: dict[bytes, dict[int, int]] = {}
    for taint in store.taints.values():
        taint.anchor = taint.anchor[:width]
        lengths = anchors.setdefault(taint.anchor, {})
        lengths[taint.length] = lengths.get(taint.length, 0) + 1
    store.anchors = anchors
    store.pattern = None
    store.compiled = 0
    store.fresh = set(anchors)


def _branches(node: dict[int, Any]) -> bytes:
    if not node:
        return b""
    if all(not below for below in node.values()):
        return b"[" + bytes(sorted(node)) + b"]"
    parts = [bytes((letter,)) + _branches(below) for letter, below in sorted(node.items())]
    return parts[0] if len(parts) == 1 else b"(?:" + b"|".join(parts) + b")"


def _run_patterns(width: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The base64 and hex runs long enough to decode to a value ``width`` bytes long: base64
    is 6 bits a character (4 bytes, unpadded, are 6 characters), hex 4."""
    return (
        re.compile(f"{_BASE64_CHARACTERS}{{{_base64_length(width)},}}={{0,2}}"),
        re.compile(f"{_HEX_CHARACTERS}{{{2 * width},}}"),
    )


def _base64_length(size: int) -> int:
    """The fewest base64 characters (unpadded) that ``size`` bytes take."""
    return -(-4 * size // 3)


def _decodings(
    text: str, budget: list[int], shortest: int, runs: tuple[re.Pattern[str], re.Pattern[str]]
) -> list[tuple[str, int, int]]:
    """What the encoded runs of ``text`` (``runs``: base64's and hex's patterns) decode to,
    each with the span of ``text`` it came from, and what all of ``text`` reads as written
    plainly (:data:`_PLAINLY`, each step on the last one's result, and the runs of each),
    within what is left of ``budget`` (characters); a run too short to decode to
    ``shortest`` characters is left."""
    # A run seen before (in a plain reading that left it as it was, or twice) is decoded once.
    seen: dict[str, list[tuple[str, int, int]]] = {}
    decoded = _runs(text, budget, shortest, runs, seen)
    read = text
    for needed, plainly in _PLAINLY:
        if not needed(read):
            continue
        other = plainly(read)
        if other == read or not _spend(budget, len(other)):
            continue
        read = other
        # What all of the text reads as has no span of its own in ``text``: all of it.
        decoded.append((read, 0, len(text)))
        more = _runs(read, budget, shortest, runs, seen)
        decoded += [(run, 0, len(text)) for run, _, _ in more]
    return decoded


def _unescaped(text: str) -> str:
    return _ESCAPE.sub(lambda match: chr(int(match.group(1), 16)), text)


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text.translate(_format_characters()))


@functools.cache
def _format_characters() -> dict[int, None]:
    """Characters that show nothing (zero-width spaces and joiners, bidirectional marks:
    Unicode's format characters), dropped before a string is read plainly: the
    ``str.translate`` table, made when first needed. Unicode has them in the first two
    planes and among the tags of the fourteenth only (the rest are ideographs, unassigned
    or private use), so only those are walked."""
    codes = itertools.chain(range(0x20000), range(0xE0000, 0xE1000))
    return {code: None for code in codes if unicodedata.category(chr(code)) == "Cf"}


_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
# Ways a string can be written that read as another, undone in this order, each when its
# mark is there: percent-encoding, HTML's character references, JSON's \u escapes written
# into the text, and invisible or compatibility characters (fullwidth letters, ligatures).
_PLAINLY: tuple[tuple[Callable[[str], bool], Callable[[str], str]], ...] = (
    (lambda text: "%" in text, lambda text: unquote(text, errors="replace")),
    (lambda text: "&" in text, html.unescape),
    (lambda text: "\\u" in text, _unescaped),
    (lambda text: not text.isascii(), _folded),
)


def _runs(
    text: str,
    budget: list[int],
    shortest: int,
    runs: tuple[re.Pattern[str], re.Pattern[str]],
    seen: dict[str, list[tuple[str, int, int]]],
) -> list[tuple[str, int, int]]:
    decoded: list[tuple[str, int, int]] = []
    floor = _base64_length(shortest)
    if len(text) < floor:
        return decoded
    classes = text.encode("utf-8", "surrogatepass").translate(_BASE64_CLASS)
    if classes.find(b"a" * floor) < 0:
        return decoded
    base64_run, hex_run = runs
    for run in base64_run.finditer(text):
        at = run.start()
        known = seen.get(run.group())
        if known is None:
            known = seen[run.group()] = _run_decodings(run.group(), budget, shortest, hex_run)
        decoded += [(value, at + start, at + end) for value, start, end in known]
    return decoded


def _run_decodings(
    run: str, budget: list[int], shortest: int, hex_run: re.Pattern[str]
) -> list[tuple[str, int, int]]:
    """What one base64 run decodes to at each alignment, and each hex run inside it at each,
    with the span of ``run`` each came from."""
    decoded: list[tuple[str, int, int]] = []
    body = run.rstrip("=").translate(_URLSAFE)
    if len(body) * 3 // 4 >= shortest:
        for offset in range(4):
            part = body[offset:]
            part = part[: len(part) - 1] if len(part) % 4 == 1 else part
            try:
                raw = base64.b64decode(part + "=" * (-len(part) % 4))
            except (binascii.Error, ValueError):
                continue
            if _spend(budget, len(raw)):
                decoded.append((raw.decode("utf-8", "replace"), 0, len(run)))
    if len(body) // 2 < shortest:
        return decoded
    for hexes in hex_run.finditer(run):
        for offset in range(2):
            part = hexes.group()[offset:]
            raw = bytes.fromhex(part[: len(part) - len(part) % 2])
            if _spend(budget, len(raw)):
                decoded.append((raw.decode("utf-8", "replace"), hexes.start(), hexes.end()))
    return decoded


def _spend(budget: list[int], size: int) -> bool:
    if budget[0] < size:
        budget[1] = 1
        return False
    budget[0] -= size
    return True


def _escape(key: str) -> str:
    if "~" not in key and "/" not in key:
        return key
    return key.replace("~", "~0").replace("/", "~1")

"""Free-text arguments: length in characters, and characters that do not show what they do.

Text from a model reaches people and other models. Characters that display as nothing can
smuggle instructions past a human reviewer (Unicode tag characters spell invisible ASCII;
runs of variation selectors encode arbitrary bytes), and bidirectional controls make text
display in another order than it is read (Trojan Source). :class:`TextGuard` finds them by
class, with these exact sets (categories from the running Python's ``unicodedata``):

- control (``TEXT_CONTROL_CHARACTER``): category Cc — C0 (U+0000..U+001F), DEL (U+007F), C1
  (U+0080..U+009F) — except tab, and except line feed and carriage return unless newlines are
  refused; with newlines refused also U+2028 and U+2029 (Zl, Zp); and always unpaired
  surrogates (Cs), which are not characters and make text unencodable as UTF-8;
- bidirectional (``TEXT_BIDI_CONTROL``): U+061C, U+200E, U+200F, U+202A..U+202E,
  U+2066..U+2069;
- invisible (``TEXT_INVISIBLE_CHARACTER``): category Cf that is not bidirectional, plus the
  default-ignorable code points outside Cf (U+034F, U+115F..U+1160, U+17B4..U+17B5,
  U+180B..U+180D, U+180F, U+2065, U+3164, U+FE00..U+FE0F, U+FFA0, U+FFF0..U+FFF8,
  U+E0000..U+E0FFF), less the Cf characters that display a glyph (the prepended concatenation
  marks U+0600..U+0605, U+06DD, U+070F, U+0890..U+0891, U+08E2, U+110BD, U+110CD).

Some invisible characters do real work in ordinary text, and are allowed there only:

- zero-width joiner and non-joiner (U+200D, U+200C) between two visible non-ASCII characters,
  the first perhaps followed by a presentation selector (emoji sequences such as a family, a
  profession or ``❤️‍🔥``; Persian and Indic words). Next to ASCII, at an end or next to each
  other they are the stuff of hidden text and of words split to pass filters;
- one text or emoji presentation selector (U+FE0E, U+FE0F) right after a visible character
  (``❤️``, keycaps). The other variation selectors carry up to a byte each, which is how
  "emoji smuggling" hides messages, and real uses (ideographic variation sequences) are rare
  in tool arguments: always reported;
- a byte order mark (U+FEFF) as the very first character;
- the tag characters of a subdivision flag: U+1F3F4, a subdivision's code in tag digits and
  tag lowercase letters, U+E007F CANCEL TAG. Only the flags Unicode recommends (England,
  Scotland, Wales) and those named in ``allow_subdivision_flags`` (ISO 3166-2 codes, checked
  against the list the package ships: :mod:`.subdivisions`); any other "flag" may spell a
  hidden word, and all its tags are reported (or removed) as one finding.

:func:`scrub` finds the same classes in text flowing back to the model (tool results,
elicitation messages, sampling requests), and removes them when asked; it also takes terminal
control sequences whole (CSI such as cursor moves, OSC such as hyperlinks, the other escape
sequences), so that neither ``[2K`` nor a link's target is left behind.

A visible character is one not in category C (control, format, surrogate, private use,
unassigned) or Z (space, separator), nor one of the invisible characters above. All the work is
done by compiled regular expressions, linear in the text: about 15 ms per million characters
of ordinary text, up to 0.4 s per million when the text is nothing but emoji sequences.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, ClassVar

from ..protocol.tool_names import BIDI_CONTROLS
from .base import GuardFinding, not_a_string
from .codes import GuardCode
from .subdivisions import RECOMMENDED_SUBDIVISION_FLAGS, flag_tags, subdivision_flags

_BIDI = BIDI_CONTROLS
_NEWLINES = "\n\r"
_SEPARATORS = "\u2028\u2029"
_JOINERS = "\u200c\u200d"
_PRESENTATION = "\ufe0e\ufe0f"
_BOM = "\ufeff"
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
_SOFT_HYPHEN = "\u00ad"

_Ranges = tuple[tuple[int, int], ...]

_INVISIBLE_NOT_FORMAT: _Ranges = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180D),
    (0x180F, 0x180F),
    (0x2065, 0x2065),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)
_VISIBLE_FORMAT: _Ranges = (
    (0x0600, 0x0605),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
)
_VARIATION_SELECTORS: _Ranges = (
    (0x180B, 0x180D),
    (0x180F, 0x180F),
    (0xFE00, 0xFE0F),
    (0xE0100, 0xE01EF),
)
_TAGS = (0xE0000, 0xE007F)
_TAG_TEXT = (0xE0020, 0xE007F)
_SURROGATES = (0xD800, 0xDFFF)
# Every Cc, Cf and Z* character is in planes 0, 1 and 14 (the others hold ideographs,
# private use or nothing yet): scanning only these builds the classes in milliseconds.
_SCANNED_PLANES = (range(0x0000, 0x20000), range(0xE0000, 0xE1000))

# The patterns of one configuration, for control, bidirectional and invisible characters;
# None for a class that is switched off.
_Pattern = re.Pattern[str] | None
_Patterns = tuple[_Pattern, _Pattern, _Pattern]

# The shape of an emoji flag of a subdivision: the black flag, a CLDR subdivision code (three
# to seven tag digits and tag lowercase letters) and CANCEL TAG. Which codes are allowed is
# decided apart (_fake_flag): the shape only tells a flag's tags from loose ones.
_FLAG_BASE = "\U0001f3f4"
_FLAG_SPEC = "[\U000e0030-\U000e0039\U000e0061-\U000e007a]"
_FLAG_SPEC_LENGTH = (3, 7)
_CANCEL_TAG = "\U000e007f"


@dataclass(frozen=True)
class TextGuard:
    """Bounds a text argument's length and refuses characters that hide or reorder text.

    Lengths count characters (code points), not bytes. ``allow_newlines=False`` refuses line
    feed, carriage return, U+2028 and U+2029; ``forbid_control``, ``forbid_invisible`` and
    ``forbid_bidi`` switch off a class (for text in right-to-left scripts, say, which uses
    bidirectional marks). ``allow_subdivision_flags`` names, by ISO 3166-2 code (``US-CA``),
    the subdivision flags that keep their tag characters besides England's, Scotland's and
    Wales's; a code that is not ISO 3166-2 is a ValueError. The module documentation lists
    each class exactly.

    ``check`` reports ``TEXT_TOO_SHORT``, ``TEXT_TOO_LONG`` (and then looks no further: the
    value is refused anyway and scanning it would cost what the limit bounds), and at most one
    finding per class, at its first character. Messages name the class of the character and
    its position (counted from 1), never the text.
    """

    kind: ClassVar[str] = "text"

    min_length: int = 0
    max_length: int | None = None
    allow_newlines: bool = True
    forbid_control: bool = True
    forbid_invisible: bool = True
    forbid_bidi: bool = True
    allow_subdivision_flags: tuple[str, ...] = ()
    _patterns: _Patterns = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.min_length < 0:
            raise ValueError("min_length must not be negative")
        if self.max_length is not None and self.max_length < self.min_length:
            raise ValueError("max_length must not be less than min_length")
        patterns = _patterns(
            self.allow_newlines,
            self.forbid_control,
            self.forbid_invisible,
            self.forbid_bidi,
            _flags(tuple(self.allow_subdivision_flags)),
        )
        object.__setattr__(self, "_patterns", patterns)

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about the text ``value``; see the class documentation."""
        if not isinstance(value, str):
            return not_a_string(value, self.kind)
        findings: list[GuardFinding] = []
        if len(value) < self.min_length:
            findings.append(
                GuardFinding(
                    GuardCode.TEXT_TOO_SHORT,
                    f"text is shorter than the minimum of {self.min_length} characters",
                )
            )
        if self.max_length is not None and len(value) > self.max_length:
            findings.append(
                GuardFinding(
                    GuardCode.TEXT_TOO_LONG,
                    f"text is longer than the limit of {self.max_length} characters",
                )
            )
            return findings
        control, bidi, invisible = self._patterns
        found = _first(control, value)
        if found is not None:
            findings.append(_control_finding(value[found], found))
        found = _first(bidi, value)
        if found is not None:
            findings.append(
                GuardFinding(
                    GuardCode.TEXT_BIDI_CONTROL,
                    f"text has {_bidi_label(value[found])} at character {found + 1}; "
                    "bidirectional controls make text display in another order than it reads",
                )
            )
        found = _first(invisible, value)
        if found is not None:
            findings.append(
                GuardFinding(
                    GuardCode.TEXT_INVISIBLE_CHARACTER,
                    f"text has {_invisible_label(value[found])} at character {found + 1}; "
                    "invisible characters can hide text from whoever reads it",
                )
            )
        return findings


@cache
def _categories() -> dict[str, frozenset[int]]:
    """Code points of the categories the classes are built from, per the running Python."""
    wanted: dict[str, set[int]] = {name: set() for name in ("Cc", "Cf", "Zl", "Zp", "Zs")}
    for plane in _SCANNED_PLANES:
        for code in plane:
            members = wanted.get(unicodedata.category(chr(code)))
            if members is not None:
                members.add(code)
    return {name: frozenset(members) for name, members in wanted.items()}


@lru_cache(maxsize=64)
def _flags(named: tuple[str, ...]) -> tuple[str, ...]:
    """The tag characters of every allowed flag: the recommended ones and those ``named``
    (ValueError for a code that is not ISO 3166-2). Cached: :func:`scrub` asks per string."""
    codes = subdivision_flags((*RECOMMENDED_SUBDIVISION_FLAGS, *named))
    return tuple(flag_tags(code) for code in codes)


@cache
def _patterns(
    allow_newlines: bool,
    forbid_control: bool,
    forbid_invisible: bool,
    forbid_bidi: bool,
    flags: tuple[str, ...],
) -> _Patterns:
    """The compiled patterns for one configuration, shared by equal guards; ``flags`` are the
    tag characters of the allowed subdivision flags (:func:`_flags`)."""
    categories = _categories()
    bidi = _codes(_BIDI)
    control = _expand((_SURROGATES,))
    if forbid_control:
        control |= categories["Cc"] - _codes("\t" + _NEWLINES)
    if not allow_newlines:
        control |= _codes(_NEWLINES + _SEPARATORS)
    return (
        _compiled(_character_class(_spans(control))),
        _compiled(_character_class(_spans(bidi))) if forbid_bidi else None,
        _invisible_pattern(categories, bidi, flags) if forbid_invisible else None,
    )


def _invisible_pattern(
    categories: dict[str, frozenset[int]], bidi: set[int], flags: tuple[str, ...]
) -> re.Pattern[str]:
    """A pattern whose every match starts at an invisible character out of place.

    A leading character class lets ``re`` skip to candidates at C speed; rules then look at
    each candidate and around it, so no Python runs per character. ``re`` tests BMP characters
    against a bitmap but astral ones range by range, so the astral candidates are covered by one
    range per plane (the rules sort out what else those ranges take in).
    """
    in_context = _codes(_JOINERS + _PRESENTATION + _BOM) | _expand((_TAG_TEXT,))
    anywhere = (
        (categories["Cf"] | _expand(_INVISIBLE_NOT_FORMAT))
        - bidi
        - _expand(_VISIBLE_FORMAT)
        - in_context
    )
    silent = (
        categories["Cc"]
        | categories["Cf"]
        | categories["Zl"]
        | categories["Zp"]
        | categories["Zs"]
        | _expand((_SURROGATES, *_INVISIBLE_NOT_FORMAT))
    )
    shows = _character_class(_spans(silent), negated=True)
    shows_non_ascii = _character_class(_spans(silent | set(range(0x80))), negated=True)
    joiner = _character_class(_spans(_codes(_JOINERS)))
    presentation = _character_class(_spans(_codes(_PRESENTATION)))
    astral = {code for code in anywhere if code > 0xFFFF}
    # Cheapest rules first: a candidate that is allowed where it stands is tried on all of them.
    rules = (
        # A joiner is out of place unless a visible non-ASCII character (perhaps with a
        # presentation selector) is before it and another one after it.
        f"(?<={joiner})(?:(?<!{shows_non_ascii}{joiner})"
        f"(?<!{shows_non_ascii}{presentation}{joiner})|(?!{shows_non_ascii}))",
        f"(?<={presentation})(?<!{shows}{presentation})",
        f"(?<=.{_BOM})",
        f"(?<={_character_class(_spans(anywhere - astral))})",
        f"(?<={_character_class(_spans(astral))})",
        f"(?<={_character_class([_TAG_TEXT])})(?!{_flag_context()})",
        _fake_flag(flags),
    )
    candidates = anywhere | in_context
    planes = {code >> 16 for code in candidates if code > 0xFFFF}
    leading = _spans({code for code in candidates if code <= 0xFFFF}) + [
        (
            min(c for c in candidates if c >> 16 == plane),
            max(c for c in candidates if c >> 16 == plane),
        )
        for plane in sorted(planes)
    ]
    return re.compile(f"{_character_class(leading)}(?:{'|'.join(rules)})", re.DOTALL)


def _flag_context() -> str:
    """Lookarounds that hold, just after a tag character, when it is part of an emoji flag:
    one alternative per position of the tag in the flag, since lookbehinds have fixed width."""
    base, spec, cancel = _FLAG_BASE, _FLAG_SPEC, _CANCEL_TAG
    low, high = _FLAG_SPEC_LENGTH
    inside = (
        f"(?<={base}{spec}{{{at}}})(?={spec}{{{max(low - at, 0)},{high - at}}}{cancel})"
        for at in range(1, high + 1)
    )
    last = (f"(?<={base}{spec}{{{length}}}{cancel})" for length in range(low, high + 1))
    return "|".join((*inside, *last))


def _fake_flag(flags: tuple[str, ...]) -> str:
    """A rule that holds, just after the first tag of a flag-shaped sequence, when its code is
    none of ``flags``: it takes in the rest of the sequence, so that every tag of it goes in
    one finding (and :func:`scrub` leaves the black flag alone).

    The allowed codes are checked after the fact, by one lookbehind per length of code (a
    lookbehind has a fixed width) over a trie of the codes: linear in the text however many
    codes a policy names."""
    base, spec, cancel = _FLAG_BASE, _FLAG_SPEC, _CANCEL_TAG
    low, high = _FLAG_SPEC_LENGTH
    by_length: dict[int, list[str]] = {}
    for tags in flags:
        by_length.setdefault(len(tags), []).append(tags)
    allowed = "".join(
        f"(?<!{base}{_trie(sorted(group))}{cancel})" for _, group in sorted(by_length.items())
    )
    return f"(?<={base}{spec}){spec}{{{low - 1},{high - 1}}}{cancel}{allowed}"


def _trie(words: list[str]) -> str:
    """An alternation of ``words`` (sorted, distinct, of one length) with common prefixes
    taken out, so that ``re`` tries each character once rather than each word."""
    if len(words) == 1:
        return re.escape(words[0])
    branches: dict[str, list[str]] = {}
    for word in words:
        branches.setdefault(word[0], []).append(word[1:])
    return "(?:" + "|".join(re.escape(head) + _trie(rest) for head, rest in branches.items()) + ")"


def _codes(chars: str) -> set[int]:
    return {ord(char) for char in chars}


def _expand(ranges: _Ranges) -> set[int]:
    return {code for low, high in ranges for code in range(low, high + 1)}


def _spans(codes: set[int] | frozenset[int]) -> list[tuple[int, int]]:
    """``codes`` as sorted ranges of consecutive code points."""
    spans: list[tuple[int, int]] = []
    for code in sorted(codes):
        if spans and spans[-1][1] == code - 1:
            spans[-1] = (spans[-1][0], code)
        else:
            spans.append((code, code))
    return spans


def _character_class(spans: list[tuple[int, int]], *, negated: bool = False) -> str:
    """A regular expression character class of ``spans`` (``[^...]`` if negated)."""
    body = "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in spans)
    return f"[{'^' if negated else ''}{body}]"


def _compiled(character_class: str) -> re.Pattern[str] | None:
    return None if character_class == "[]" else re.compile(character_class)


def _first(pattern: _Pattern, text: str) -> int | None:
    found = None if pattern is None else pattern.search(text)
    return None if found is None else found.start()


def _control_finding(char: str, index: int) -> GuardFinding:
    if char in _NEWLINES:
        label, rule = "a line break", "line breaks are not allowed here"
    elif char in _SEPARATORS:
        label, rule = "a Unicode line or paragraph separator", "line breaks are not allowed here"
    else:
        code = ord(char)
        if _SURROGATES[0] <= code <= _SURROGATES[1]:
            label = "an unpaired surrogate (not a character)"
        elif code < 0x20:
            label = "a C0 control character"
        elif code == 0x7F:
            label = "the DEL control character"
        else:
            label = "a C1 control character"
        rule = "control characters are not allowed"
    return GuardFinding(
        GuardCode.TEXT_CONTROL_CHARACTER, f"text has {label} at character {index + 1}; {rule}"
    )


def _bidi_label(char: str) -> str:
    if "\u202a" <= char <= "\u202e":
        return "a bidirectional embedding or override"
    if "\u2066" <= char <= "\u2069":
        return "a bidirectional isolate"
    return "a bidirectional mark"


def _invisible_label(char: str) -> str:
    code = ord(char)
    if _TAGS[0] <= code <= _TAGS[1]:
        return "a Unicode tag character (tags spell hidden ASCII text)"
    if any(low <= code <= high for low, high in _VARIATION_SELECTORS):
        return "a variation selector"
    if char in _ZERO_WIDTH:
        return "a zero-width character"
    if char == _SOFT_HYPHEN:
        return "a soft hyphen"
    return "an invisible formatting or filler character"


# Terminal control sequences, whole (ECMA-48): CSI (ESC [ or 8-bit CSI, parameters,
# intermediates, a final byte); OSC (ESC ] or 8-bit OSC, up to BEL or ST: hyperlinks are
# OSC 8); DCS, SOS, PM and APC strings up to ST; and two-byte escapes. An OSC or string with no
# terminator is left for the control class, which removes its introducer: what follows is
# shown as plain text, harmless.
_TERMINAL = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]"
)
# The classes scrub looks for, in the order it removes them, with the guard's codes.
_SCRUBBED = (
    GuardCode.TEXT_TERMINAL_SEQUENCE,
    GuardCode.TEXT_CONTROL_CHARACTER,
    GuardCode.TEXT_BIDI_CONTROL,
    GuardCode.TEXT_INVISIBLE_CHARACTER,
)


@dataclass(frozen=True)
class Scrubbed:
    """What :func:`scrub` made of a text: the text (cleaned if asked, else as it came) and
    how many of each class it found, by code (classes not found are absent)."""

    text: str
    found: dict[GuardCode, int]


def scrub(text: str, *, strip: bool, allow_subdivision_flags: tuple[str, ...] = ()) -> Scrubbed:
    """Terminal sequences, control characters (tab and line breaks are kept), bidirectional
    controls and out-of-place invisible characters in ``text``: counted, and removed when
    ``strip``. The classes are :class:`TextGuard`'s (the same sets and the same rules, so
    joiners inside emoji sequences and the tags of the allowed subdivision flags stay, the
    recommended ones and ``allow_subdivision_flags``). Values are never reported, only
    counts."""
    if text.isascii() and (text.isprintable() or _PLAIN.fullmatch(text) is not None):
        return Scrubbed(text, {})  # the common case: nothing to look for
    control, bidi, invisible = _patterns(True, True, True, True, _flags(allow_subdivision_flags))
    found: dict[GuardCode, int] = {}
    # Each class is looked for in what the previous ones left, so that the escape character
    # of a terminal sequence is not counted again as a control character.
    cleaned = text
    # Every terminal sequence starts with ESC or a C1 control: text without a control
    # character is spared the terminal pattern, which has no literal to skip ahead with.
    terminal = _TERMINAL if control is not None and control.search(text) else None
    for code, pattern in zip(_SCRUBBED, (terminal, control, bidi, invisible), strict=True):
        if pattern is None:
            continue
        cleaned, count = pattern.subn("", cleaned)
        if count:
            found[code] = count
    # Nothing found: the very string that came in (callers tell "unchanged" by identity).
    return Scrubbed(cleaned if strip and found else text, found)


# ASCII that needs no scrubbing: printable characters, tabs and line breaks.
_PLAIN = re.compile(r"[\x20-\x7e\t\n\r]*")

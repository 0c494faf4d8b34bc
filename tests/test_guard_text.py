"""TextGuard: lengths, and characters that hide, smuggle or reorder text."""

from __future__ import annotations

import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictmcp.guards import GuardCode, GuardFinding, TextGuard

SECRET = "s3cr3t-Token"
ZWJ, ZWNJ, VS16 = "\u200d", "\u200c", "\ufe0f"


def smuggled(text: str) -> str:
    """``text`` spelled in Unicode tag characters: invisible, yet read by models."""
    return "".join(chr(0xE0000 + ord(char)) for char in text)


def check(guard: TextGuard, value: str) -> list[GuardFinding]:
    """The findings, after asserting that no message quotes the planted secret."""
    findings = guard.check(value)
    for finding in findings:
        assert SECRET not in str(finding)
        assert smuggled(SECRET) not in str(finding)
    return findings


def found(guard: TextGuard, value: str) -> list[tuple[str, str]]:
    """Each finding's code and the position its message names."""
    return [
        (f.code, f.message.split(" at character ")[1].split(";")[0]) for f in check(guard, value)
    ]


DEFAULT = TextGuard()

BENIGN = [
    "",
    "plain text",
    "multi\nline\r\ntext\twith tabs",
    "日本語のテキスト",
    "نص عربي",
    "עברית",
    "Ünïcödé çåfé",
    f"a family 👨{ZWJ}👩{ZWJ}👧 and a cook 👩🏽{ZWJ}🍳",
    f"heart on fire ❤{VS16}{ZWJ}🔥, rainbow flag 🏳{VS16}{ZWJ}🌈, pirate 🏴{ZWJ}☠{VS16}",
    f"keycap 1{VS16}\u20e3, text style ☺\ufe0e",
    "England 🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
    "Wales 🏴\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f",
    f"Persian می{ZWNJ}خواهم",
    f"Hindi क्{ZWJ}ष",
    "\ufeffa byte order mark first",
    "Arabic number sign \u0600\u0661\u0662\u0663",
    "math ∑ x² ≤ ∞, arrows → ⇒",
]


@pytest.mark.parametrize("value", BENIGN)
def test_ordinary_text_passes(value: str) -> None:
    assert check(DEFAULT, value) == []


@pytest.mark.parametrize(
    ("value", "position", "label"),
    [
        ("a\0b", "2", "C0 control"),
        ("colour \x1b[31mred", "8", "C0 control"),
        ("x\x7f", "2", "DEL"),
        ("x\x85y", "2", "C1 control"),
        ("\x0bvertical tab", "1", "C0 control"),
        ("bad \ud800 surrogate", "5", "unpaired surrogate"),
    ],
)
def test_control_characters(value: str, position: str, label: str) -> None:
    findings = check(DEFAULT, value)
    assert [(f.code, f.message.split(" at character ")[1][: len(position)]) for f in findings] == [
        (GuardCode.TEXT_CONTROL_CHARACTER, position)
    ]
    assert label in findings[0].message


def test_control_characters_can_be_allowed_but_surrogates_never() -> None:
    lenient = TextGuard(forbid_control=False)
    assert check(lenient, "a\0b\x1b\x7f\x85") == []
    assert found(lenient, "a\ud800") == [(GuardCode.TEXT_CONTROL_CHARACTER, "2")]


@pytest.mark.parametrize("value", ["one\ntwo", "one\rtwo", "one\u2028two", "one\u2029two"])
def test_newlines_can_be_refused(value: str) -> None:
    assert check(DEFAULT, value) == []
    strict = TextGuard(allow_newlines=False)
    assert found(strict, value) == [(GuardCode.TEXT_CONTROL_CHARACTER, "4")]
    assert "line" in strict.check(value)[0].message
    # Newlines stay refused when other controls are allowed.
    assert check(TextGuard(allow_newlines=False, forbid_control=False), value) != []
    assert check(TextGuard(allow_newlines=False), "tab\tstays") == []


@pytest.mark.parametrize(
    ("value", "label"),
    [
        ("ignore\u200bprevious", "zero-width"),
        (f"pass{ZWJ}word", "zero-width"),
        (f"pass{ZWNJ}word", "zero-width"),
        ("word\u2060joiner", "zero-width"),
        ("a BOM \ufeffin the middle", "zero-width"),
        ("soft\u00adhyphen", "soft hyphen"),
        ("hangul\u3164filler", "filler"),
        ("grapheme\u034fjoiner", "filler"),
        ("invisible\u2062times", "filler"),
        ("language\U000e0001tag", "tag character"),
        (f"say hi{smuggled(SECRET)}", "tag character"),
        ("x\ufe00", "variation selector"),
        ("😀\U000e0100\U000e0101\U000e0102", "variation selector"),
        ("\U000e0101", "variation selector"),
        ("mongolian\u180bselector", "variation selector"),
    ],
)
def test_invisible_characters(value: str, label: str) -> None:
    findings = check(DEFAULT, value)
    assert [f.code for f in findings] == [GuardCode.TEXT_INVISIBLE_CHARACTER]
    assert label in findings[0].message
    assert check(TextGuard(forbid_invisible=False), value) == []


@pytest.mark.parametrize(
    ("value", "position"),
    [
        (f"{ZWJ}🔥", "1"),  # at the start
        (f"🔥{ZWJ}", "2"),  # at the end
        (f"é{ZWJ}{ZWJ}é", "2"),  # a run
        (f"é{ZWJ} é", "2"),  # next to a space
        (f"a{ZWJ}é", "2"),  # next to ASCII
        (f"{VS16}x", "1"),  # a selector with nothing to select
        (f"❤{VS16}{VS16}", "3"),  # a run of selectors
        (f"a {VS16}", "3"),  # after a space
        ("🏴\U000e0067\U000e0062\U000e007f", "2"),  # a flag code too short
        ("🏴\U000e0047\U000e0042\U000e0045\U000e004e\U000e0047\U000e007f", "2"),  # upper case
        ("🏴" + smuggled("abcdefgh") + "\U000e007f", "2"),  # a flag code too long
        ("🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067", "2"),  # no cancel tag
        ("x\U000e0067\U000e0062\U000e0065\U000e007f", "2"),  # no black flag
        ("🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f\U000e0069", "8"),
    ],
)
def test_joiners_selectors_and_tags_out_of_place(value: str, position: str) -> None:
    assert found(DEFAULT, value) == [(GuardCode.TEXT_INVISIBLE_CHARACTER, position)]


@pytest.mark.parametrize(
    ("char", "label"),
    [
        ("\u202a", "embedding or override"),
        ("\u202b", "embedding or override"),
        ("\u202c", "embedding or override"),
        ("\u202d", "embedding or override"),
        ("\u202e", "embedding or override"),
        ("\u2066", "isolate"),
        ("\u2067", "isolate"),
        ("\u2068", "isolate"),
        ("\u2069", "isolate"),
        ("\u200e", "mark"),
        ("\u200f", "mark"),
        ("\u061c", "mark"),
    ],
)
def test_bidirectional_controls(char: str, label: str) -> None:
    value = f"access{char}granted"
    findings = check(DEFAULT, value)
    assert found(DEFAULT, value) == [(GuardCode.TEXT_BIDI_CONTROL, "7")]
    assert label in findings[0].message
    assert check(TextGuard(forbid_bidi=False), value) == []


def test_trojan_source() -> None:
    # The comment-out attack from the Trojan Source paper: displays as a harmless check.
    value = 'if access_level != "user\u202e \u2066// Check if admin\u2069 \u2066":'
    assert [f.code for f in check(DEFAULT, value)] == [GuardCode.TEXT_BIDI_CONTROL]


def test_one_finding_per_class_at_the_first_position() -> None:
    value = f"{SECRET}\u200b\x00\u202e\u200b\x01\u202e"
    first = len(SECRET) + 1
    assert found(DEFAULT, value) == [
        (GuardCode.TEXT_CONTROL_CHARACTER, str(first + 1)),
        (GuardCode.TEXT_BIDI_CONTROL, str(first + 2)),
        (GuardCode.TEXT_INVISIBLE_CHARACTER, str(first)),
    ]


def test_positions_count_characters_not_bytes() -> None:
    assert found(DEFAULT, "😀😀é\u200b") == [(GuardCode.TEXT_INVISIBLE_CHARACTER, "4")]


def test_every_format_character_is_reported_unless_it_shows() -> None:
    visible = {0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD, 0x070F, 0x0890, 0x0891}
    visible |= {0x08E2, 0x110BD, 0x110CD}
    format_characters = [
        code for code in range(0x110000) if unicodedata.category(chr(code)) == "Cf"
    ]
    assert len(format_characters) > 150
    for code in format_characters:
        codes = [f.code for f in DEFAULT.check(f"x{chr(code)}y")]
        if code in visible:
            assert codes == [], hex(code)
        else:
            assert codes in (
                [GuardCode.TEXT_INVISIBLE_CHARACTER],
                [GuardCode.TEXT_BIDI_CONTROL],
            ), hex(code)


def test_every_control_character_is_reported_but_tab_and_newlines() -> None:
    for code in [*range(0x20), *range(0x7F, 0xA0)]:
        findings = DEFAULT.check(f"x{chr(code)}y")
        expected = [] if chr(code) in "\t\n\r" else [GuardCode.TEXT_CONTROL_CHARACTER]
        assert [f.code for f in findings] == expected, hex(code)


def test_lengths_count_characters() -> None:
    guard = TextGuard(min_length=3, max_length=5)
    assert check(guard, "ééé") == []
    assert check(guard, "😀😀😀😀😀") == []
    assert [f.code for f in check(guard, "ab")] == [GuardCode.TEXT_TOO_SHORT]
    too_long = check(guard, f"{SECRET}\u200b")
    assert [f.code for f in too_long] == [GuardCode.TEXT_TOO_LONG]
    assert "5 characters" in too_long[0].message
    assert str(len(SECRET)) not in too_long[0].message


def test_bad_lengths_are_configuration_errors() -> None:
    with pytest.raises(ValueError, match="negative"):
        TextGuard(min_length=-1)
    with pytest.raises(ValueError, match="less than"):
        TextGuard(min_length=5, max_length=4)


@pytest.mark.parametrize("value", [None, 1, 2.5, ["text"], {"text": "x"}, b"bytes"])
def test_non_strings_are_reported(value: object) -> None:
    assert [f.code for f in DEFAULT.check(value)] == [GuardCode.NOT_A_STRING]


def test_messages_never_quote_the_text() -> None:
    for value in [
        f"{SECRET}\x00",
        f"{SECRET}\u202e",
        f"{SECRET}\u200b",
        f"x{smuggled(SECRET)}",
        f"{SECRET}\n",
    ]:
        for finding in TextGuard(allow_newlines=False).check(value):
            assert SECRET not in finding.message
            assert smuggled(SECRET) not in finding.message
            assert value not in str(finding)


def test_scanning_is_linear_and_fast() -> None:
    # A million characters of ordinary text, and of nothing but legitimate emoji sequences
    # (the slowest case: every joiner is looked at in context). Generous bounds: slow CI.
    ordinary = "lorem ipsum 日本語 " * 62_500 + "\u200b"
    emoji = f"👨{ZWJ}👩{ZWJ}👧" * 200_000
    started = time.perf_counter()
    assert [f.code for f in DEFAULT.check(ordinary)] == [GuardCode.TEXT_INVISIBLE_CHARACTER]
    assert DEFAULT.check(emoji) == []
    assert time.perf_counter() - started < 3


@settings(max_examples=100)
@given(value=st.one_of(st.text(st.characters(codec=None)), st.lists(st.text()), st.none()))
def test_the_guard_never_raises(value: object) -> None:
    for guard in (DEFAULT, TextGuard(allow_newlines=False, forbid_control=False)):
        findings = guard.check(value)
        assert len({finding.code for finding in findings}) == len(findings)


def test_guard_kind() -> None:
    assert TextGuard.kind == "text"

"""Tool names: SEP-986's character set and length, and the stricter set model APIs accept.

SEP-986 (2025-11-25) restricts a tool name to 1-128 characters of ``A-Za-z0-9._-``. Earlier
revisions only said "a string", so there a name outside that set is a warning: legal for the
revision, but newer clients and SDKs reject it. Independently, several model APIs accept tool
names only of the form ``^[a-zA-Z0-9_-]{1,64}$`` (no dots, at most 64 characters): a client
that hands tools straight to such an API checks the *portable* profile.

Names come from servers and can carry bidirectional overrides or zero-width characters that
make one name display as another. Messages therefore quote a name only escaped and shortened,
and describe the first offending character by code point and Unicode name.
"""

from __future__ import annotations

import re
import unicodedata

from ..schema.messages import quote_name
from .revisions import Revision
from .rules import Rule
from .violations import Severity, Violation

SEP986_MAX_LENGTH = 128
PORTABLE_MAX_LENGTH = 64

_SEP986_CHARS = "A-Za-z0-9._-"
_PORTABLE_CHARS = "A-Za-z0-9_-"
# A character class each, matched one character at a time: fullmatch on the whole name would
# say *that* it is wrong, and the message has to say *where*.
_OUTSIDE_SEP986 = re.compile(f"[^{_SEP986_CHARS}]")
_OUTSIDE_PORTABLE = re.compile(f"[^{_PORTABLE_CHARS}]")

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Characters that change how the text around them is displayed without showing themselves
(the text guard uses the same set)."""
_BIDI_CONTROLS = frozenset(BIDI_CONTROLS)
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")


def check_tool_name(
    name: object, revision: Revision, *, portable: bool = False, pointer: str = ""
) -> list[Violation]:
    """The name rules a tool's ``name`` breaks under ``revision``.

    - :attr:`Rule.TOOL_NAME_INVALID`: not a string (an error in every revision), or outside
      SEP-986 (an error from 2025-11-25, a warning before).
    - :attr:`Rule.TOOL_NAME_NOT_PORTABLE`: outside ``^[a-zA-Z0-9_-]{1,64}$``; an error when
      ``portable`` is set (the client needs such names), a warning otherwise.

    ``pointer`` locates the name in the message (``/tools/3/name``).
    """
    if not isinstance(name, str):
        what = "is missing" if name is None else "must be a string"
        return [Violation(Rule.TOOL_NAME_INVALID, f"tool name {what}", pointer)]
    violations: list[Violation] = []
    problem = _problem(name, _OUTSIDE_SEP986, _SEP986_CHARS, SEP986_MAX_LENGTH)
    if problem is not None:
        if revision.enforces_tool_names:
            message, severity = f"tool name {problem}", Severity.ERROR
        else:
            message = (
                f"tool name {problem}; {revision.value} does not restrict tool names, but "
                "2025-11-25 and later do (SEP-986) and clients built for them may reject it"
            )
            severity = Severity.WARNING
        violations.append(Violation(Rule.TOOL_NAME_INVALID, message, pointer, severity))
    problem = _problem(name, _OUTSIDE_PORTABLE, _PORTABLE_CHARS, PORTABLE_MAX_LENGTH)
    if problem is not None:
        violations.append(
            Violation(
                Rule.TOOL_NAME_NOT_PORTABLE,
                f"tool name {problem}, so model APIs that accept only "
                f"^[{_PORTABLE_CHARS}]{{1,{PORTABLE_MAX_LENGTH}}}$ reject it",
                pointer,
                Severity.ERROR if portable else Severity.WARNING,
            )
        )
    return violations


def _problem(name: str, outside: re.Pattern[str], allowed: str, max_length: int) -> str | None:
    """What is wrong with ``name`` for one character set and length, or None."""
    if not name:
        return f"is empty; it must be 1 to {max_length} characters of {allowed}"
    found = outside.search(name)
    if found is not None:
        others = sum(1 for _ in outside.finditer(name, found.end()))
        more = f" (and {others} more)" if others else ""
        return (
            f"{quote_name(name)} has {_describe_character(found.group())} at character "
            f"{found.start() + 1}{more}; only {allowed} are allowed"
        )
    if len(name) > max_length:
        return f"{quote_name(name)} is {len(name)} characters long; at most {max_length} allowed"
    return None


def _describe_character(char: str) -> str:
    """One character, described by what it is rather than shown (it may be invisible)."""
    code = f"U+{ord(char):04X}"
    label = unicodedata.name(char, "")
    named = f"{code} {label}" if label else code
    if char in _BIDI_CONTROLS:
        return f"{named}, a bidirectional control character that reorders displayed text"
    if char in _ZERO_WIDTH:
        return f"{named}, an invisible zero-width character"
    category = unicodedata.category(char)
    if category.startswith("C"):
        return f"{named}, an invisible control or format character"
    if category.startswith("Z"):
        return f"{named}, a space"
    if not char.isascii():
        return f"{named}, a non-ASCII character"
    return f"{char!r} ({named})"

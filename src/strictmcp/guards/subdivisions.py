"""Subdivision flags: the emoji whose tag characters are not hidden text.

A subdivision flag is U+1F3F4 WAVING BLACK FLAG, a subdivision's code in Unicode tag
characters (lower case, no hyphen: ``gbsct`` for GB-SCT) and U+E007F CANCEL TAG (Unicode
Technical Standard #51, ED-14c). Tag characters are also how text is hidden: every printable
ASCII character has a tag twin that displays as nothing, so a "flag" can spell a short
instruction. Only Unicode's recommended tag sequences (``RGI_Emoji_Tag_Sequence`` in
emoji-sequences.txt: England, Scotland and Wales, :data:`RECOMMENDED_SUBDIVISION_FLAGS`) keep
their tags unless more are named, each by its ISO 3166-2 code, from the list this package
ships: ``iso3166-2.txt`` beside this module, 32 KB generated from pycountry's (a 23 MB
package, mostly translations, that nothing else here needs); tests/test_subdivision_flags.py
compares the two.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from importlib.resources import files

RECOMMENDED_SUBDIVISION_FLAGS = ("GB-ENG", "GB-SCT", "GB-WLS")
"""The subdivisions whose flags Unicode recommends for general interchange (emoji 15.1/16.0:
England, Scotland, Wales): the flags every text check allows."""

_DATA = "iso3166-2.txt"


@cache
def subdivision_codes() -> frozenset[str]:
    """Every ISO 3166-2 subdivision code (``US-CA``), as shipped with this package."""
    text = files("strictmcp.guards").joinpath(_DATA).read_text(encoding="utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def subdivision_flags(codes: Iterable[str]) -> tuple[str, ...]:
    """The ISO 3166-2 ``codes`` (any case) in upper case, sorted and without repeats.

    Raises ValueError naming the codes that are not ISO 3166-2 subdivisions: a flag is allowed
    by name only when the name is a real subdivision's.
    """
    named = list(codes)
    known = subdivision_codes()
    unknown = [code for code in named if not isinstance(code, str) or code.upper() not in known]
    if unknown:
        raise ValueError(
            "allow_subdivision_flags: not ISO 3166-2 subdivision codes (written like US-CA): "
            + ", ".join(dict.fromkeys(str(code) for code in unknown))
        )
    return tuple(sorted({code.upper() for code in named}))


def flag_tags(code: str) -> str:
    """The tag characters that spell ``code``'s flag between the black flag and the cancel
    tag (``GB-SCT``: tag g, b, s, c, t)."""
    return "".join(chr(0xE0000 + ord(char)) for char in code.replace("-", "").lower())

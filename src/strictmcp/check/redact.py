"""Keep secrets out of reports: command lines and server output are shown, credentials not.

Generated inputs are ours and shown as they are; what came from the user (the server's
command line, its URL) and from the server (its stderr) may hold tokens, so anything that
looks like one is replaced with ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
_SECRET_WORD = (
    r"(?:token|secret|passw(?:or)?d|pwd|api[-_]?key|apikey|auth|credential|bearer"
    r"|private[-_]?key|access[-_]?key|session)"
)
_FLAG = re.compile(rf"^--?[\w-]*{_SECRET_WORD}[\w-]*$", re.I)
_ASSIGNMENT = re.compile(rf"^(-{{0,2}}[\w.-]*{_SECRET_WORD}[\w.-]*=).+$", re.I)
_IN_TEXT = re.compile(
    rf"({_SECRET_WORD}[\w.-]*\s*[:=]\s*|bearer\s+)"
    r"((?:bearer\s+|basic\s+)?(?:\"[^\"]*\"|'[^']*'|[^\s,;&]+))",
    re.I,
)
_KNOWN_TOKENS = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+)"
)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with the values of secret-looking flags and assignments masked."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if _FLAG.match(arg):
            hide_next = True
            out.append(arg)
            continue
        assignment = _ASSIGNMENT.match(arg)
        if assignment:
            out.append(assignment.group(1) + MASK)
        elif "://" in arg:
            out.append(redact_url(arg))
        else:
            out.append(_KNOWN_TOKENS.sub(MASK, arg))
    return out


def redact_url(url: str) -> str:
    """``url`` without its user info and with every query value masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    query = "&".join(
        f"{pair.split('=', 1)[0]}={MASK}" if "=" in pair else pair
        for pair in parts.query.split("&")
        if pair
    )
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def redact_text(text: str) -> str:
    """Free text (a server's stderr) with secret-looking values masked."""
    return _KNOWN_TOKENS.sub(MASK, _IN_TEXT.sub(lambda m: m.group(1) + MASK, text))

"""Secrets in text flowing back to the model: found by pattern, replaced by a marker.

Opt-in (``redact = true`` in a policy's ``[[result]]``): a tool that reads files or
environments can hand a private key or a cloud credential to the model, which may repeat it
anywhere. Patterns are narrow on purpose (a known prefix or armour, a fixed alphabet and
length), so that ordinary text is not rewritten; what is found is counted by kind, never kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretPattern:
    """One kind of secret: its pattern, and substrings one of which every match holds (looked
    for first, at ``str.find`` speed: most text holds none, and is never scanned by the
    pattern)."""

    kind: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]


#: Every pattern is linear: bounded repetitions and character classes, no nested quantifiers.
SECRET_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern(
        "private-key",
        ("PRIVATE KEY-----",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
            r"[A-Za-z0-9+/=\s:,\-]{0,16384}?"
            r"-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
        ),
    ),
    SecretPattern(
        "aws-access-key-id",
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA"),
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"),
    ),
    SecretPattern(
        "aws-secret-access-key",
        ("ecret", "ECRET"),
        re.compile(
            r"(?i:aws_?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}"
            r"(?![A-Za-z0-9/+])"
        ),
    ),
    SecretPattern(
        "google-api-key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")
    ),
    SecretPattern(
        "bearer-token",
        ("earer",),
        re.compile(r"\b[Bb]earer[ \t]+[A-Za-z0-9\-._~+/]{16,4096}=*"),
    ),
    SecretPattern(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{82})\b"),
    ),
)


@dataclass(frozen=True)
class Redacted:
    """A text with its secrets replaced, and how many of each kind were found."""

    text: str
    found: dict[str, int]


def redact(text: str) -> Redacted:
    """``text`` with each secret replaced by ``[redacted KIND]``."""
    found: dict[str, int] = {}
    redacted = text
    for secret in SECRET_PATTERNS:
        if not any(needle in redacted for needle in secret.needles):
            continue
        redacted, count = secret.pattern.subn(f"[redacted {secret.kind}]", redacted)
        if count:
            found[secret.kind] = count
    # Nothing found: the very string that came in (callers tell "unchanged" by identity).
    return Redacted(redacted if found else text, found)

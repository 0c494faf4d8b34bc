"""Secrets in text flowing back to the model: found by pattern, replaced by a marker.

Opt-in (``redact = true`` in a policy's ``[[result]]``): a tool that reads files or
environments can hand a private key or a cloud credential to the model, which may repeat it
anywhere. Patterns are narrow on purpose (a known prefix or armour, a fixed alphabet and
length), so that ordinary text is not rewritten; what is found is counted by kind, never kept.

The same patterns find what the gateway's flows taint (:func:`secrets_in`,
``enforce/flows.py``). For flows only, a few kinds are also found in a looser form (a shorter
token after the same prefix, as test suites plant them): a looser match taints, and is never
redacted from a result.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretPattern:
    """One kind of secret: its pattern, and substrings one of which every match holds (looked
    for first, at ``str.find`` speed: most text holds none, and is never scanned by the
    pattern)."""

    kind: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    #: The pattern's group holding the secret itself (0: the whole match; a label before it,
    #: ``Bearer`` or ``aws_secret_access_key =``, is not the secret).
    group: int = 0
    #: A looser form for flows only (:func:`secrets_in`); None: the pattern itself.
    loose: re.Pattern[str] | None = None


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
            r"(?i:aws_?secret_?access_?key)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})"
            r"(?![A-Za-z0-9/+])"
        ),
        group=1,
    ),
    SecretPattern(
        "google-api-key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")
    ),
    SecretPattern(
        "bearer-token",
        ("earer",),
        re.compile(r"\b[Bb]earer[ \t]+([A-Za-z0-9\-._~+/]{16,4096}=*)"),
        group=1,
    ),
    SecretPattern(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{82})\b"),
        loose=re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ),
    SecretPattern(
        "stripe-secret-key",
        ("sk_live_", "rk_live_"),
        re.compile(r"\b[sr]k_live_[0-9A-Za-z]{24,247}\b"),
        loose=re.compile(r"\b[sr]k_live_[0-9A-Za-z]{16,247}\b"),
    ),
    SecretPattern(
        "slack-token",
        ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxr-", "xoxs-", "xoxe-", "xapp-"),
        re.compile(r"\b(?:xox[abposre]|xapp)-[0-9A-Za-z-]{10,250}(?![0-9A-Za-z-])"),
    ),
    SecretPattern(
        "slack-webhook",
        ("hooks.slack.com/",),
        re.compile(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,250}"
            r"(?![A-Za-z0-9_/-])"
        ),
    ),
    SecretPattern(
        "gitlab-token", ("glpat-",), re.compile(r"\bglpat-[0-9A-Za-z_-]{20,64}(?![0-9A-Za-z_-])")
    ),
    SecretPattern("npm-token", ("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    SecretPattern(
        "openai-api-key",
        ("sk-proj-", "sk-svcacct-", "sk-admin-"),
        re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,250}(?![A-Za-z0-9_-])"),
    ),
    SecretPattern(
        "anthropic-api-key",
        ("sk-ant-",),
        re.compile(r"\bsk-ant-[a-z]{3,8}[0-9]{2}-[A-Za-z0-9_-]{80,120}(?![A-Za-z0-9_-])"),
    ),
)

# Every secret holds one of these; no secret is shorter than a private key's armour or an AWS
# key id (20 characters).
_ANY_NEEDLE = re.compile("|".join(re.escape(n) for s in SECRET_PATTERNS for n in s.needles))
_SHORTEST = 16


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


def secrets_in(text: str, *, loose: bool = False) -> Iterator[tuple[str, int, int]]:
    """Each secret in ``text``: its kind and where the secret itself is (``text[start:end]``,
    without a label before it). ``loose``: the flow forms too (:attr:`SecretPattern.loose`)."""
    if len(text) < _SHORTEST or not _ANY_NEEDLE.search(text):
        return  # most text: one pass of one pattern, in C
    for secret in SECRET_PATTERNS:
        if not any(needle in text for needle in secret.needles):
            continue
        pattern = secret.loose if loose and secret.loose is not None else secret.pattern
        for found in pattern.finditer(text):
            yield secret.kind, found.start(secret.group), found.end(secret.group)

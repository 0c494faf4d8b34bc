"""The rule registry, and choosing rules by code or code prefix, as ruff does.

Without ``--select`` the default selection runs: the rules whose ``default`` is set, what a
user must act on (names, schemas that do not compile or leave the document, hidden
characters, unguarded path/URL/command/SQL arguments, results that break their schema). The
advice (bounds, open objects, missing descriptions, legacy dialects) is selected by code or
prefix, or with ``ALL``, which matches every rule. ``DEFAULT`` matches the default selection,
so ``--select DEFAULT,SMT2`` adds the bounds family to it (``--extend-select SMT2`` says the
same). ``--ignore SMT203`` drops one rule; when a rule matches both, the more specific
selector wins (``--select SMT203 --ignore SMT2`` keeps SMT203), and on a tie ``--ignore``
wins.
"""

from __future__ import annotations

from collections.abc import Iterable

from .families import bounds, guards, names, output, schema, text
from .model import LintRule

RULES: tuple[LintRule, ...] = (
    *names.RULES,
    *schema.RULES,
    *bounds.RULES,
    *guards.RULES,
    *text.RULES,
    *output.RULES,
)
"""Every rule, in code order."""

_BY_CODE = {rule.code: rule for rule in RULES}
_BY_NAME = {rule.name: rule for rule in RULES}
_ALL = "ALL"
_DEFAULT = "DEFAULT"

DEFAULT_RULES: tuple[LintRule, ...] = tuple(rule for rule in RULES if rule.default)
"""The rules ``strictmcp lint`` runs when no ``--select`` is given, in code order."""


class UnknownRuleError(ValueError):
    """A selector or code that names no rule."""


def find_rule(code_or_name: str) -> LintRule:
    """One rule by code (``SMT201``, any case) or name (``string-unbounded``)."""
    rule = _BY_CODE.get(code_or_name.upper()) or _BY_NAME.get(code_or_name.lower())
    if rule is None:
        raise UnknownRuleError(f"no rule {code_or_name!r}; `strictmcp lint rules` lists them")
    return rule


def select_rules(
    select: Iterable[str] | None = None, ignore: Iterable[str] = (), extend: Iterable[str] = ()
) -> tuple[LintRule, ...]:
    """The rules that ``select`` (default: :data:`DEFAULT_RULES`) and ``ignore`` leave
    enabled, in code order.

    Selectors are codes or code prefixes, case-insensitive, ``ALL`` or ``DEFAULT``. Raises
    :class:`UnknownRuleError` for a selector that matches no rule: a typo must not silently
    select nothing. ``extend`` adds selectors to ``select`` (ruff's ``--extend-select``).
    """
    chosen = _normalized(select) if select is not None else [_DEFAULT]
    chosen += _normalized(extend)
    dropped = _normalized(ignore)
    enabled = []
    for rule in RULES:
        wanted = _specificity(rule, chosen)
        unwanted = _specificity(rule, dropped)
        if wanted >= 0 and wanted > unwanted:
            enabled.append(rule)
    return tuple(enabled)


def _normalized(selectors: Iterable[str]) -> list[str]:
    out = []
    for raw in selectors:
        selector = raw.strip().upper()
        if not selector:
            continue
        if selector not in (_ALL, _DEFAULT) and not any(
            rule.code.startswith(selector) for rule in RULES
        ):
            raise UnknownRuleError(
                f"{raw!r} matches no rule code; `strictmcp lint rules` lists them"
            )
        out.append(selector)
    return out


def _specificity(rule: LintRule, selectors: list[str]) -> int:
    """The length of the longest selector matching the rule (0 for ALL and DEFAULT), or -1."""
    best = -1
    for selector in selectors:
        if selector == _ALL or (selector == _DEFAULT and rule.default):
            best = max(best, 0)
        elif rule.code.startswith(selector):
            best = max(best, len(selector))
    return best

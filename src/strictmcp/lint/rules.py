"""The rule registry, and choosing rules by code or code prefix, as ruff does.

``--select SMT2`` enables the bounds family, ``--ignore SMT203`` drops one rule; when a rule
matches both, the more specific selector wins (``--select SMT203 --ignore SMT2`` keeps
SMT203), and on a tie ``--ignore`` wins. ``ALL`` matches every rule.
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


class UnknownRuleError(ValueError):
    """A selector or code that names no rule."""


def find_rule(code_or_name: str) -> LintRule:
    """One rule by code (``SMT201``, any case) or name (``string-unbounded``)."""
    rule = _BY_CODE.get(code_or_name.upper()) or _BY_NAME.get(code_or_name.lower())
    if rule is None:
        raise UnknownRuleError(f"no rule {code_or_name!r}; `strictmcp lint rules` lists them")
    return rule


def select_rules(
    select: Iterable[str] | None = None, ignore: Iterable[str] = ()
) -> tuple[LintRule, ...]:
    """The rules that ``select`` (default: all) and ``ignore`` leave enabled, in code order.

    Selectors are codes or code prefixes, case-insensitive. Raises :class:`UnknownRuleError`
    for a selector that matches no rule: a typo must not silently select nothing.
    """
    chosen = _normalized(select) if select is not None else [_ALL]
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
        if selector != _ALL and not any(rule.code.startswith(selector) for rule in RULES):
            raise UnknownRuleError(
                f"{raw!r} matches no rule code; `strictmcp lint rules` lists them"
            )
        out.append(selector)
    return out


def _specificity(rule: LintRule, selectors: list[str]) -> int:
    """The length of the longest selector matching the rule (0 for ALL), or -1."""
    best = -1
    for selector in selectors:
        if selector == _ALL:
            best = max(best, 0)
        elif rule.code.startswith(selector):
            best = max(best, len(selector))
    return best

"""The ``listing`` stage: lint rules run on every tool definition a server lists, at run time.

Tool poisoning hides instructions in a definition, for the model to obey and the user never to
see; a server may do it from its first listing, or after one (``list_changed``). The rules are
lint's own (:mod:`strictmcp.lint.rules`, the one registry), chosen by code or prefix; by
default only SMT401 (hidden characters: tags, bidi controls, zero-width and other invisible
characters), at the severity lint gives it. A tool with an error-level finding is withheld from
the listing and its calls are refused (in ``enforce`` mode; ``audit`` mode reports it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..lint.engine import lint_tools
from ..lint.model import LintRule
from ..lint.rules import RULES, select_rules
from ..policy import Policy
from ..protocol import Revision, Violation

DEFAULT_LISTING_RULES = ("SMT401",)
"""The rules run on every listing unless told otherwise: hidden characters in definitions."""

LintCode = Enum("LintCode", [(rule.code, rule.code) for rule in RULES])  # type: ignore[misc]
"""Lint's rule codes as a :class:`~strictmcp.protocol.Violation` rule: a finding of the
listing stage carries its lint code (``SMT401``) in audit records and refusals."""


def listing_rules(selectors: Iterable[str] | None = None) -> tuple[LintRule, ...]:
    """The lint rules the listing stage runs: ``selectors`` (codes, prefixes, ``ALL`` or
    ``DEFAULT``; empty for none), or :data:`DEFAULT_LISTING_RULES` when None. Raises
    :class:`~strictmcp.lint.UnknownRuleError` for a selector that names no rule."""
    chosen = list(DEFAULT_LISTING_RULES if selectors is None else selectors)
    return select_rules(chosen) if chosen else ()


def listing_option(option: str) -> tuple[str, ...]:
    """The selectors of a ``--listing-rules`` option: comma-separated codes or prefixes;
    ``none`` (alone) for none."""
    return tuple(part.strip() for part in option.split(",") if part.strip().lower() != "none")


@dataclass(frozen=True)
class ListedTool:
    """What the listing rules found in one listed tool: its place in the page and the
    findings (pointing into the ``tools/list`` response)."""

    index: int
    found: tuple[Violation, ...]


def check_listing(
    tools: Sequence[Any],
    rules: Sequence[LintRule],
    revision: Revision,
    pointer: str,
    policy: Policy | None = None,
) -> list[ListedTool]:
    """Every listed tool with a finding of ``rules``, linted under ``policy`` (the proxy's,
    as ``strictmcp lint --policy`` would); ``pointer`` locates ``tools`` in the message
    (``/result/tools``)."""
    if not rules or not tools:
        return []
    report = lint_tools(tools, revision=revision, policy=policy, rules=rules)
    by_index: dict[int, list[Violation]] = {}
    for finding in report.findings:
        violation = Violation(
            LintCode[finding.code],
            f"{finding.message} [{finding.name}]",
            f"{pointer}/{finding.tool_index}{finding.pointer}",
            finding.severity,
        )
        by_index.setdefault(finding.tool_index, []).append(violation)
    return [ListedTool(index, tuple(found)) for index, found in sorted(by_index.items())]

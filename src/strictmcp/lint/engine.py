"""Linting a tool list: every enabled rule on every tool, nothing read or written."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..policy import Policy
from ..protocol import LATEST, Revision
from .context import LintContext, Results, ToolView
from .model import LintFinding, LintRule
from .report import LintReport
from .rules import RULES


def lint_tools(
    tools: Sequence[Mapping[str, Any]],
    *,
    revision: Revision = LATEST,
    policy: Policy | None = None,
    results: Results | None = None,
    rules: Iterable[LintRule] = RULES,
) -> LintReport:
    """Lint the tools of a ``tools/list`` result (all pages, in order).

    ``revision`` is the MCP revision the server speaks (it decides whether SEP-986 names are
    errors and which dialect a schema defaults to); ``policy`` is asked whether guards cover
    arguments that look like paths, URLs, commands or SQL; ``results`` maps tool names to
    ``tools/call`` results seen from them, for the output rules. ``rules`` defaults to all
    (see :func:`~strictmcp.lint.select_rules`). Pure: never raises for a bad definition, and
    a value in ``tools`` that is not an object is itself a finding.
    """
    enabled = tuple(rules)
    context = LintContext(revision=revision, policy=policy, results=results or {}, tools=tools)
    views = [ToolView(index, tool, context) for index, tool in enumerate(tools)]
    findings: list[LintFinding] = []
    for index, view in enumerate(views):
        for rule in enabled:
            for hit in rule.check(view):
                findings.append(
                    LintFinding(
                        code=rule.code,
                        name=rule.name,
                        severity=hit.severity or rule.severity,
                        tool=view.name,
                        tool_index=index,
                        pointer=hit.pointer,
                        message=hit.message,
                    )
                )
    findings.sort(key=lambda f: (f.tool_index, f.code, f.pointer))
    names = tuple(view.name for view in views)
    return LintReport(findings=tuple(findings), tools=names, revision=revision, rules=enabled)

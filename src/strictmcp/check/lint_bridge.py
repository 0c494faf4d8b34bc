"""The one place ``strictmcp check`` calls ``strictmcp lint``.

Lint sees the listed tools and, after a ``--call`` run, the results the tools gave, for its
output rules. Its findings are reported as lint reports them and never change the check's
exit status: lint has its own command and its own ``--fail-on``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..lint import LintReport, lint_tools
from ..lint.model import LintRule
from ..lint.rules import select_rules
from ..policy import Policy
from ..protocol import Revision


@dataclass(frozen=True)
class LintOutcome:
    """Lint's report on the listed tools; ``note`` says why there is none."""

    report: LintReport | None = None
    note: str | None = None

    @property
    def ran(self) -> bool:
        """Whether lint produced a report."""
        return self.report is not None

    @property
    def rules(self) -> list[str]:
        """The codes of the rules that ran."""
        return [rule.code for rule in self.report.rules] if self.report is not None else []

    @property
    def findings(self) -> list[dict[str, Any]]:
        """The findings in lint's JSON form."""
        return [f.to_dict() for f in self.report.findings] if self.report is not None else []


def lint(
    tools: Sequence[Mapping[str, Any]],
    revision: Revision,
    policy: Policy | None,
    results: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    *,
    rules: Sequence[LintRule] | None = None,
    only: Collection[str] = (),
) -> LintOutcome:
    """Lint ``tools`` as the server listed them, with the call results seen, if any: with
    ``rules`` (by default ``strictmcp lint``'s default selection), reporting the findings
    about the tools named in ``only`` (every tool's when empty). Every tool is linted either
    way: a name two tools share is a finding about each."""
    enabled = select_rules() if rules is None else rules
    try:
        report = lint_tools(tools, revision=revision, policy=policy, results=results, rules=enabled)
        return LintOutcome(report.about(only) if only else report)
    except Exception as error:
        # Lint is pure and documented never to raise, but it is a passenger here: whatever
        # goes wrong in it must not take the behavioural check down.
        return LintOutcome(note=f"lint failed: {type(error).__name__}")

"""Lint the tools an MCP server lists: names, schemas, bounds, guards, hidden text, output.

Ruff-style: every rule has a stable code (``SMT201``), a kebab-case name, a default severity,
a why and a fix (``docs/lint-rules.md`` lists them). The core is pure:

>>> from strictmcp.lint import lint_tools
>>> report = lint_tools([{"name": "echo", "inputSchema": {"type": "string"}}])
>>> [finding.code for finding in report.findings if finding.severity.value == "error"]
['SMT104']
"""

from .context import Results
from .engine import lint_tools
from .locate import PointerIndex
from .model import Finding, Hit, Level, LintRule
from .report import LintReport, render_text
from .rules import RULES, UnknownRuleError, find_rule, select_rules
from .sarif import to_sarif
from .source import LintInputError, ToolSource, load_file, load_live, tools_from_document

__all__ = [
    "RULES",
    "Finding",
    "Hit",
    "Level",
    "LintInputError",
    "LintReport",
    "LintRule",
    "PointerIndex",
    "Results",
    "ToolSource",
    "UnknownRuleError",
    "find_rule",
    "lint_tools",
    "load_file",
    "load_live",
    "render_text",
    "select_rules",
    "to_sarif",
    "tools_from_document",
]

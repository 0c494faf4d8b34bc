"""Lint the tools an MCP server lists: names, schemas, bounds, guards, hidden text, output.

Ruff-style: every rule has a stable code (``SMT201``), a kebab-case name, a default severity,
a why and a fix (``docs/lint-rules.md`` lists them). The core is pure:

>>> from strictmcp.lint import lint_tools
>>> report = lint_tools([{"name": "echo", "inputSchema": {"type": "string"}}])
>>> [finding.code for finding in report.findings if finding.severity.value == "error"]
['SMT104']

Two sides, in two layers. The rules and everything they need (``context``, ``engine``,
``locate``, ``model``, ``report``, ``rules``, ``sarif``, ``walk``, ``docs`` and ``families``)
are pure functions over tool definitions: they sit below the transport and never import
:mod:`strictmcp.connect` nor the command side, so ``strictmcp check`` may use them. The
command side, ``lint.cli`` (the ``strictmcp lint`` command, which reads the tools with
:mod:`strictmcp.connect.tool_source`), is a leaf like the proxy and ``check``: nothing but the
top-level command line imports it, and it is not re-exported here.
"""

from .context import Results
from .engine import lint_tools
from .locate import PointerIndex
from .model import Hit, LintFinding, LintRule
from .report import LintReport, render_text
from .rules import DEFAULT_RULES, RULES, UnknownRuleError, find_rule, select_rules
from .sarif import to_sarif

__all__ = [
    "DEFAULT_RULES",
    "RULES",
    "Hit",
    "LintFinding",
    "LintReport",
    "LintRule",
    "PointerIndex",
    "Results",
    "UnknownRuleError",
    "find_rule",
    "lint_tools",
    "render_text",
    "select_rules",
    "to_sarif",
]

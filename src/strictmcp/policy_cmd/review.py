"""``strictmcp policy check``: what is wrong with a policy, against a server's tools.

A rule whose tool glob matches no tool, whose argument pointer matches no argument of any
tool it applies to, or whose kind cannot check the argument's declared type protects nothing,
silently: each is reported, named by its section and position in the file. A glob
(``tool = "*"``) that matches some tools without the argument is the idiom, not a problem: a
rule on a single tool's name that misses its argument is. So is a tool whose
paths are confined while files can be read as resources around it (lint's SMT305); a guard on
another request than ``tools/call`` is about params no tool listing shows, and is not
reviewed against the tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..lint.context import LintContext, ToolView
from ..lint.rules import find_rule
from ..lint.walk import declared_types
from ..policy import TOOLS_CALL, GuardRule, Policy
from ..protocol import Revision

__all__ = ["review"]

# The JSON types each kind checks: strings, and argv also a whole vector. An argument that
# declares no type may be either.
_FITS: dict[str, frozenset[str]] = {"argv": frozenset({"string", "array"})}
_STRING = frozenset({"string"})


def review(policy: Policy, tools: Sequence[Any], revision: Revision) -> list[str]:
    """Every problem of ``policy`` with these tools, one line each."""
    context = LintContext(revision=revision, policy=None, results={}, tools=tools)
    views = [ToolView(index, tool, context) for index, tool in enumerate(tools)]
    named = [view for view in views if view.name is not None]
    problems: list[str] = []
    sections: list[tuple[str, Sequence[GuardRule]]] = [
        ("guard", policy.rules),
        ("deep", policy.deep),
    ]
    for section, rules in sections:
        for index, rule in enumerate(rules, start=1):
            if rule.method != TOOLS_CALL:
                continue
            where = f"[[{section}]] #{index} ({rule.guard.kind})"
            problems += [f"{where}: {problem}" for problem in _problems(rule, named)]
    # Lint's own check, against the policy: one place decides what "unguarded" means.
    resources = find_rule("SMT305")
    guarded = LintContext(revision=revision, policy=policy, results={}, tools=tools)
    for view in named:
        for hit in resources.check(ToolView(view.index, view.definition, guarded)):
            problems.append(f"tool {view.name!r}: {resources.code} {resources.name}: {hit.message}")
    return problems


def _problems(rule: GuardRule, views: list[ToolView]) -> list[str]:
    matching = [view for view in views if view.name is not None and rule.applies_to(view.name)]
    if not matching:
        return [f"tool {rule.tool!r} matches no tool of the server"]
    alone = Policy(rules=(rule,))
    fits = _FITS.get(rule.guard.kind, _STRING)
    problems: list[str] = []
    missing: list[str] = []
    for view in matching:
        assert view.name is not None
        if view.input is None:
            missing.append(f"tool {view.name!r} has no inputSchema to find {rule.argument!r} in")
            continue
        nodes = [
            node
            for node in view.input.nodes
            if node.argument is not None and alone.covers(view.name, node.argument)
        ]
        if not nodes:
            missing.append(f"argument {rule.argument!r} matches no argument of {view.name!r}")
        for node in nodes:
            types = declared_types(node.schema, view.input.schema)
            if types and not types & fits:
                problems.append(
                    f"a {rule.guard.kind} check does not fit argument {node.argument!r} of "
                    f"{view.name!r}, which is {' or '.join(sorted(types))}"
                )
    if len(matching) == 1:
        return missing + problems
    if len(missing) == len(matching):
        # A glob protects what it finds: only when it finds the argument nowhere is it idle.
        return [
            f"argument {rule.argument!r} matches no argument of any of the {len(matching)} "
            f"tools {rule.tool!r} matches"
        ]
    return problems

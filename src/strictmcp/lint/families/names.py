"""SMT0xx: tool names (SEP-986, the portable profile, duplicates)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...protocol import Rule, Severity
from ...schema import quote_name
from ..context import ToolView
from ..model import Example, Hit, LintRule


def _tool(name: str) -> dict[str, Any]:
    """A tool named ``name``, for the examples."""
    return {"name": name, "description": "Searches.", "inputSchema": {"type": "object"}}


def _invalid(tool: ToolView) -> Iterator[Hit]:
    for violation in tool.name_violations:
        if violation.rule is Rule.TOOL_NAME_INVALID:
            yield Hit(violation.pointer, violation.message, violation.severity)


def _not_portable(tool: ToolView) -> Iterator[Hit]:
    for violation in tool.name_violations:
        if violation.rule is Rule.TOOL_NAME_NOT_PORTABLE:
            yield Hit(violation.pointer, violation.message)


def _duplicate(tool: ToolView) -> Iterator[Hit]:
    if tool.name is None:
        return
    first = tool.context.first_index(tool.name)
    if first != tool.index:
        yield Hit(
            "/name",
            f"tool name {quote_name(tool.name)} is already listed by tool #{first}; a call "
            "names only the tool, so it cannot be matched to one definition",
        )


RULES: tuple[LintRule, ...] = (
    LintRule(
        code="SMT001",
        name="name-invalid",
        severity=Severity.ERROR,
        family="names",
        summary="Tool name missing, or outside SEP-986 (1-128 of A-Za-z0-9._-)",
        why=(
            "From revision 2025-11-25 on (SEP-986) a tool name is 1 to 128 characters of "
            "A-Z, a-z, 0-9, '.', '_' and '-'. Clients and SDKs built for it reject other "
            "names, and names with spaces, slashes or invisible characters are how one tool "
            "is made to look like another. Before 2025-11-25 this is a warning: legal for "
            "the revision, but newer clients may still refuse it."
        ),
        fix="Rename the tool using only A-Za-z0-9._- (at most 128 characters).",
        bad=Example((_tool("read file"),)),
        good=Example((_tool("read_file"),)),
        check=_invalid,
        default=True,
    ),
    LintRule(
        code="SMT002",
        name="name-not-portable",
        severity=Severity.WARNING,
        family="names",
        summary="Tool name outside the portable profile ^[a-zA-Z0-9_-]{1,64}$",
        why=(
            "Several model APIs accept function names only of the form "
            "^[a-zA-Z0-9_-]{1,64}$: no dots and at most 64 characters. A client that hands "
            "the server's tools straight to such an API fails on the whole tool list, not "
            "just this tool."
        ),
        fix="Use only letters, digits, '_' and '-', at most 64 characters (no dots).",
        bad=Example((_tool("files.read"),)),
        good=Example((_tool("files_read"),)),
        check=_not_portable,
        default=True,
    ),
    LintRule(
        code="SMT003",
        name="name-duplicate",
        severity=Severity.ERROR,
        family="names",
        summary="Two tools share a name",
        why=(
            "A tools/call request names the tool and nothing else, so a call to a "
            "duplicated name cannot be matched to one definition: clients keep one of the "
            "two (which one varies) and validate the arguments against the wrong schema."
        ),
        fix="Give every tool a unique name.",
        bad=Example((_tool("search"), _tool("search"))),
        good=Example((_tool("search_web"), _tool("search_files"))),
        check=_duplicate,
        default=True,
    ),
)

"""SMT4xx: descriptions (missing, too long) and characters that hide text.

Tool definitions are read by models, which obey what they read, and reviewed by people, who
see only what displays. Hidden characters are looked for with the text guard's own classes
(:class:`strictmcp.guards.TextGuard`: invisible and format characters, Unicode tag
characters, variation selectors, bidirectional controls, control characters) in every string
of the definition, keys included: names, titles, descriptions, enum values, defaults. The
subdivision flags allowed are the guard's (England, Scotland, Wales) and those the policy given
allows (``allow_subdivision_flags``).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from ...guards import TextGuard
from ...protocol import Severity
from ..context import ToolView
from ..model import Example, Hit, LintRule
from ..walk import argument_label, iter_strings, resolved

TOOL_DESCRIPTION_MAX = 2000
SCHEMA_DESCRIPTION_MAX = 500
# Strings looked at per tool: far above any real definition, a bound on hostile ones.
_MAX_STRINGS = 50_000


@cache
def _guard(flags: tuple[str, ...]) -> TextGuard:
    # Built on first use: the guard's character classes take a moment to compute.
    return TextGuard(allow_subdivision_flags=flags)


def _hidden(tool: ToolView) -> Iterator[Hit]:
    policy = tool.context.policy
    guard = _guard(policy.allow_subdivision_flags if policy is not None else ())
    for pointer, is_key, text in iter_strings(tool.definition, _MAX_STRINGS):
        for finding in guard.check(text):
            # The guard's messages start "text has ...": say which text.
            what = "the member name" if is_key else "the string"
            yield Hit(pointer, f"{what} {finding.message.removeprefix('text ')}")


def _blank(value: object) -> bool:
    return not isinstance(value, str) or not value.strip()


def _tool_description(tool: ToolView) -> Iterator[Hit]:
    if tool.is_object and _blank(tool.definition.get("description")):
        yield Hit(
            "",
            "the tool has no description: models choose tools, and fill their arguments, "
            "from what the description says",
        )


def _argument_descriptions(tool: ToolView) -> Iterator[Hit]:
    if tool.input is None:
        return
    for node in tool.input.nodes:
        if node.keyword != "properties" or node.argument is None:
            continue
        own = node.schema.get("description")
        if _blank(own) and _blank(resolved(node.schema, tool.input.schema).get("description")):
            yield Hit(node.pointer, f"{argument_label(node)} has no description")


def _long_descriptions(tool: ToolView) -> Iterator[Hit]:
    description = tool.definition.get("description")
    if isinstance(description, str) and len(description) > TOOL_DESCRIPTION_MAX:
        yield Hit(
            "/description",
            f"the tool description is {len(description)} characters long (lint flags more "
            f"than {TOOL_DESCRIPTION_MAX})",
        )
    for view in tool.schemas:
        for node in view.nodes:
            text = node.schema.get("description")
            if isinstance(text, str) and len(text) > SCHEMA_DESCRIPTION_MAX:
                yield Hit(
                    node.pointer + "/description",
                    f"this description is {len(text)} characters long (lint flags more "
                    f"than {SCHEMA_DESCRIPTION_MAX} in a schema)",
                )


def _argument(description: str | None) -> dict[str, Any]:
    """An integer argument with this ``description`` (none when None), for the examples."""
    schema: dict[str, Any] = {"type": "integer", "minimum": 1}
    return schema if description is None else {**schema, "description": description}


def _tool(description: str | None, argument: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool with this ``description`` (none when None) and, when given, one argument."""
    schema: dict[str, Any] = {"type": "object"}
    if argument is not None:
        schema["properties"] = {"start": argument}
    tool: dict[str, Any] = {"name": "read_file", "inputSchema": schema}
    return tool if description is None else {**tool, "description": description}


RULES: tuple[LintRule, ...] = (
    LintRule(
        code="SMT401",
        name="hidden-characters",
        severity=Severity.ERROR,
        family="text",
        summary="Invisible, bidirectional or control characters in the definition",
        why=(
            "Characters that display as nothing (Unicode tag characters spell invisible "
            "ASCII, variation selectors carry bytes, zero-width characters split words) "
            "hide instructions that the model reads and a reviewer never sees: tool "
            "poisoning. Bidirectional controls make text display in another order than it "
            "reads, and control characters rewrite terminals and logs."
        ),
        fix="Remove the characters; a definition has no need for any of them.",
        bad=Example((_tool("Reads a file.\u200b\u202e"),)),
        good=Example((_tool("Reads a file."),)),
        check=_hidden,
        default=True,
    ),
    LintRule(
        code="SMT402",
        name="tool-description-missing",
        severity=Severity.WARNING,
        family="text",
        summary="Tool has no description",
        why=(
            "Models decide which tool to call, and what to pass it, from its description. "
            "Without one they guess from the name, and reviewers cannot tell what the tool "
            "is meant to do."
        ),
        fix="Describe what the tool does, its side effects, and when to use it.",
        bad=Example((_tool(None),)),
        good=Example((_tool("Reads a UTF-8 text file and returns its lines."),)),
        check=_tool_description,
    ),
    LintRule(
        code="SMT403",
        name="argument-description-missing",
        severity=Severity.INFO,
        family="text",
        summary="Argument has no description",
        why=(
            "An argument without a description is filled from its name alone: units, "
            "formats and whether a path is relative are left to guesswork."
        ),
        fix='Add a "description" to each property of the input schema.',
        bad=Example((_tool("Reads a file.", _argument(None)),)),
        good=Example((_tool("Reads a file.", _argument("Line to start at, from 1.")),)),
        check=_argument_descriptions,
    ),
    LintRule(
        code="SMT404",
        name="description-too-long",
        severity=Severity.WARNING,
        family="text",
        summary=(
            f"Tool description over {TOOL_DESCRIPTION_MAX} characters, or a schema "
            f"description over {SCHEMA_DESCRIPTION_MAX}"
        ),
        why=(
            "Every description is sent to the model on every turn. Very long ones cost "
            'context, and are where hidden or out-of-scope instructions ("before using '
            'any other tool, first...") escape review.'
        ),
        fix="Keep descriptions to what the tool or argument does; move the rest to docs.",
        bad=Example((_tool("Reads a file.", _argument("The line to start at. " * 25)),)),
        good=Example((_tool("Reads a file.", _argument("Line to start at, from 1.")),)),
        check=_long_descriptions,
    ),
)

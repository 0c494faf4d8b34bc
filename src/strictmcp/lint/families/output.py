"""SMT5xx: structured output, judged against results the tool was seen to return.

These rules need observed results (``lint_tools(..., results=...)``, as ``strictmcp check``
passes them); without any they find nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ...protocol import Severity
from ..context import ToolView
from ..model import Example, Hit, LintRule


def _structured(tool: ToolView) -> list[int]:
    return [index for index, result in enumerate(tool.results) if "structuredContent" in result]


def _missing(tool: ToolView) -> Iterator[Hit]:
    if tool.output is not None:
        return
    seen = _structured(tool)
    if seen:
        yield Hit(
            "",
            f"{len(seen)} observed result(s) carried structuredContent, but the tool "
            "declares no outputSchema, so clients cannot validate or rely on it",
        )


def _mismatch(tool: ToolView) -> Iterator[Hit]:
    if tool.output is None or tool.output.validator is None:
        return
    validator = tool.output.validator
    for index in _structured(tool):
        result = validator.validate(tool.results[index]["structuredContent"])
        if not result.valid:
            first = result.issues[0]
            more = len(result.issues) - 1
            yield Hit(
                "/outputSchema",
                f"observed result #{index} does not match outputSchema: {first}"
                + (f" (and {more} more)" if more else ""),
            )


_WEATHER = {
    "name": "get_weather",
    "description": "The temperature in a city, in degrees Celsius.",
    "inputSchema": {"type": "object"},
}
_OUTPUT = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}},
    "required": ["temperature"],
}


def _result(temperature: Any) -> dict[str, Any]:
    """A result of get_weather, for the examples."""
    structured = {"temperature": temperature}
    return {
        "content": [{"type": "text", "text": json.dumps(structured)}],
        "structuredContent": structured,
    }


_OBSERVED = {"get_weather": (_result(21.5),)}


RULES: tuple[LintRule, ...] = (
    LintRule(
        code="SMT501",
        name="output-schema-missing",
        severity=Severity.WARNING,
        family="output",
        summary="Tool returned structuredContent but declares no outputSchema",
        why=(
            "Without an outputSchema, structuredContent is unchecked JSON: clients cannot "
            "validate it, and models and programs that rely on its shape break silently "
            "when it changes."
        ),
        fix="Declare an outputSchema that describes the structuredContent the tool returns.",
        bad=Example((_WEATHER,), results=_OBSERVED),
        good=Example(({**_WEATHER, "outputSchema": _OUTPUT},), results=_OBSERVED),
        check=_missing,
    ),
    LintRule(
        code="SMT502",
        name="output-schema-mismatch",
        severity=Severity.ERROR,
        family="output",
        summary="Observed structuredContent does not match the tool's outputSchema",
        why=(
            "From 2025-06-18 a tool with an outputSchema must return structuredContent that "
            "conforms to it; clients that validate results reject the call."
        ),
        fix="Fix the tool's result, or the outputSchema where it is wrong.",
        bad=Example(
            ({**_WEATHER, "outputSchema": _OUTPUT},), results={"get_weather": (_result("21.5 C"),)}
        ),
        good=Example(({**_WEATHER, "outputSchema": _OUTPUT},), results=_OBSERVED),
        check=_mismatch,
        default=True,
    ),
)

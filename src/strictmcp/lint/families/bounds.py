"""SMT2xx: arguments without bounds (strings, arrays, numbers) and objects without required.

Only the input schema is looked at: it is what a model, or a prompt injected into it, can
fill. Each subschema is judged on what it says itself, so a shared definition is reported
once, where it is written, not at every ``$ref`` to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ...protocol import Severity
from ..context import ToolView
from ..model import Example, Hit, LintRule
from ..walk import Node, argument_label

# Subschemas that constrain no argument value by themselves.
_NOT_VALUES = frozenset({"not", "if", "propertyNames"})


def _nodes_of_type(tool: ToolView, wanted: str) -> Iterator[Node]:
    if tool.input is None:
        return
    for node in tool.input.nodes:
        if node.keyword in _NOT_VALUES:
            continue
        declared = node.schema.get("type")
        if declared == wanted or (isinstance(declared, list) and wanted in declared):
            yield node


def _fixed(schema: Mapping[str, Any]) -> bool:
    return "enum" in schema or "const" in schema


def unbounded_strings(tool: ToolView) -> Iterator[Node]:
    """The string subschemas of a tool's input with no maxLength, pattern, format, enum or
    const (SMT201's finding; ``policy init`` suggests a schema guard for each)."""
    for node in _nodes_of_type(tool, "string"):
        schema = node.schema
        if not _fixed(schema) and not any(k in schema for k in ("maxLength", "pattern", "format")):
            yield node


def _strings(tool: ToolView) -> Iterator[Hit]:
    for node in unbounded_strings(tool):
        yield Hit(
            node.pointer,
            f"{argument_label(node)} is a string with no maxLength, pattern, format, enum or const",
        )


def _arrays(tool: ToolView) -> Iterator[Hit]:
    for node in _nodes_of_type(tool, "array"):
        schema = node.schema
        if _fixed(schema) or "maxItems" in schema:
            continue
        # A tuple closed after its prefix is bounded by the prefix's length.
        tuple_closed = (
            isinstance(schema.get("prefixItems"), list) and schema.get("items") is False
        ) or (isinstance(schema.get("items"), list) and schema.get("additionalItems") is False)
        if tuple_closed:
            continue
        yield Hit(node.pointer, f"{argument_label(node)} is an array with no maxItems")


def _numbers(tool: ToolView) -> Iterator[Hit]:
    for kind in ("number", "integer"):
        for node in _nodes_of_type(tool, kind):
            schema = node.schema
            if _fixed(schema):
                continue
            missing = [
                side
                for side, keywords in (
                    ("minimum", ("minimum", "exclusiveMinimum")),
                    ("maximum", ("maximum", "exclusiveMaximum")),
                )
                if not any(k in schema for k in keywords)
            ]
            if missing:
                article = "an" if kind == "integer" else "a"
                yield Hit(
                    node.pointer,
                    f"{argument_label(node)} is {article} {kind} with no "
                    f"{' and no '.join(missing)}",
                )


def _no_required(tool: ToolView) -> Iterator[Hit]:
    if tool.input is None:
        return
    for node in tool.input.nodes:
        if node.keyword in _NOT_VALUES:
            continue
        properties = node.schema.get("properties")
        if not isinstance(properties, Mapping) or not properties or "required" in node.schema:
            continue
        # Properties that all declare a default are optional by design: the tool says what it
        # does without each (zod's .default() writes such schemas, server-everything has many).
        if all(isinstance(sub, Mapping) and "default" in sub for sub in properties.values()):
            continue
        yield Hit(node.pointer, f"{argument_label(node)} declares properties but no required list")


def _tool(properties: dict[str, Any], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A tool for the examples: an object schema with these ``properties``, plus the
    ``extra`` keywords at its root."""
    schema = {"type": "object", "properties": properties}
    return {"name": "search", "inputSchema": {**schema, **(extra or {})}}


RULES: tuple[LintRule, ...] = (
    LintRule(
        code="SMT201",
        name="string-unbounded",
        severity=Severity.WARNING,
        family="bounds",
        summary="String argument with no maxLength, pattern, format, enum or const",
        why=(
            "An unbounded string is where a model pastes a whole file, or a prompt injection "
            "smuggles a payload: megabytes of text reach the server, its logs and whatever "
            "it calls. A bound states what the argument is for."
        ),
        fix="Add maxLength (and a pattern, format or enum where the value has a shape).",
        bad=Example((_tool({"query": {"type": "string"}}),)),
        good=Example((_tool({"query": {"type": "string", "maxLength": 200}}),)),
        check=_strings,
    ),
    LintRule(
        code="SMT202",
        name="array-unbounded",
        severity=Severity.WARNING,
        family="bounds",
        summary="Array argument with no maxItems",
        why=(
            "An array without maxItems lets one call ask for unbounded work: a million "
            "files to read, URLs to fetch or rows to write."
        ),
        fix="Add maxItems with the most the tool should handle in one call.",
        bad=Example((_tool({"ids": {"type": "array", "items": {"type": "integer"}}}),)),
        good=Example(
            (_tool({"ids": {"type": "array", "items": {"type": "integer"}, "maxItems": 50}}),)
        ),
        check=_arrays,
    ),
    LintRule(
        code="SMT203",
        name="number-unbounded",
        severity=Severity.WARNING,
        family="bounds",
        summary="Number or integer argument without both a minimum and a maximum",
        why=(
            "Counts, limits, sizes and timeouts without bounds are how a call asks for "
            "10^12 rows, a negative offset or a year-long sleep; the server then relies on "
            "every code path to check."
        ),
        fix="Add minimum and maximum (or exclusiveMinimum/exclusiveMaximum).",
        bad=Example((_tool({"limit": {"type": "integer", "minimum": 1}}),)),
        good=Example((_tool({"limit": {"type": "integer", "minimum": 1, "maximum": 100}}),)),
        check=_numbers,
    ),
    LintRule(
        code="SMT204",
        name="object-no-required",
        severity=Severity.INFO,
        family="bounds",
        summary="Object declares properties but no required list",
        why=(
            "Without required, the empty object is valid: a model may omit the argument the "
            "tool cannot work without, and the failure happens inside the server instead of "
            "at validation, with a less useful message."
        ),
        fix=(
            'List the arguments the tool needs in "required" (an empty list says "none"). '
            "Objects whose properties all declare a default are not reported."
        ),
        bad=Example((_tool({"city": {"type": "string"}}),)),
        good=Example((_tool({"city": {"type": "string"}}, {"required": ["city"]}),)),
        check=_no_required,
    ),
)

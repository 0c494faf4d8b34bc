"""Codes and plain-English messages for failures, written so that no instance value leaks.

Messages quote the schema (limits, formats, expected types, required names), which the server
published anyway, and never the instance, which may hold a secret. The one exception is the
name of an unexpected property, which a caller needs to fix the call; it is shortened and
escaped so it cannot smuggle control characters or bulk into a log.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .backend import RawIssue
from .codes import IssueCode

_NAME_LIMIT = 64
_LIST_LIMIT = 8


def quote_name(name: object) -> str:
    """A property name made safe to print: JSON-escaped and at most 64 characters."""
    text = str(name)
    if len(text) > _NAME_LIMIT:
        text = text[: _NAME_LIMIT - 1] + "…"
    return json.dumps(text, ensure_ascii=True)


def _schema_value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


def _choices(options: Any) -> str:
    if not isinstance(options, list):
        return "one of the allowed values"
    shown = ", ".join(_schema_value(option) for option in options[:_LIST_LIMIT])
    more = f" (and {len(options) - _LIST_LIMIT} more)" if len(options) > _LIST_LIMIT else ""
    return f"one of {shown}{more}"


def _types(detail: Mapping[str, Any]) -> str:
    types = detail.get("types") or ["the declared type"]
    return " or ".join(str(t) for t in types)


def _plural(count: Any, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _unexpected(issue: RawIssue, noun: str) -> str:
    names = issue.detail.get("unexpected")
    if not names and issue.instance_path:
        names = [issue.instance_path[-1]]
    if not names:
        return f"{noun}s are not allowed here"
    shown = ", ".join(quote_name(name) for name in list(names)[:_LIST_LIMIT])
    return (
        f"{noun} {shown} is not allowed" if len(names) == 1 else f"{noun}s {shown} are not allowed"
    )


_Describe = Callable[[RawIssue, Mapping[str, Any]], str]

_TABLE: dict[str, tuple[IssueCode, _Describe]] = {
    "type": (IssueCode.WRONG_TYPE, lambda i, d: f"must be of type {_types(d)}"),
    "enum": (IssueCode.NOT_IN_ENUM, lambda i, d: f"must be {_choices(d.get('options'))}"),
    "const": (
        IssueCode.CONST_MISMATCH,
        lambda i, d: f"must equal {_schema_value(d.get('expected_value'))}",
    ),
    "minLength": (
        IssueCode.TOO_SHORT,
        lambda i, d: f"must be at least {_plural(d.get('limit'), 'character')} long",
    ),
    "maxLength": (
        IssueCode.TOO_LONG,
        lambda i, d: f"must be at most {_plural(d.get('limit'), 'character')} long",
    ),
    "pattern": (
        IssueCode.PATTERN_MISMATCH,
        lambda i, d: f"must match the pattern {_schema_value(d.get('pattern'))}",
    ),
    "format": (
        IssueCode.BAD_FORMAT,
        lambda i, d: f"must be a valid {d.get('format', 'value of the declared format')}",
    ),
    "contentEncoding": (IssueCode.BAD_CONTENT, lambda i, d: "is not in the declared encoding"),
    "contentMediaType": (IssueCode.BAD_CONTENT, lambda i, d: "is not of the declared media type"),
    "pattern:backtrack": (
        IssueCode.PATTERN_BACKTRACK_LIMIT,
        lambda i, d: "could not be matched against the pattern within the backtracking limit",
    ),
    "minimum": (IssueCode.TOO_SMALL, lambda i, d: f"must be at least {d.get('limit')}"),
    "exclusiveMinimum": (
        IssueCode.TOO_SMALL,
        lambda i, d: f"must be greater than {d.get('limit')}",
    ),
    "maximum": (IssueCode.TOO_LARGE, lambda i, d: f"must be at most {d.get('limit')}"),
    "exclusiveMaximum": (IssueCode.TOO_LARGE, lambda i, d: f"must be less than {d.get('limit')}"),
    "multipleOf": (
        IssueCode.NOT_MULTIPLE,
        lambda i, d: f"must be a multiple of {d.get('multiple_of')}",
    ),
    "minItems": (
        IssueCode.TOO_FEW_ITEMS,
        lambda i, d: f"must have at least {_plural(d.get('limit'), 'item')}",
    ),
    "maxItems": (
        IssueCode.TOO_MANY_ITEMS,
        lambda i, d: f"must have at most {_plural(d.get('limit'), 'item')}",
    ),
    "uniqueItems": (IssueCode.DUPLICATE_ITEMS, lambda i, d: "must not contain duplicate items"),
    "contains": (
        IssueCode.CONTAINS_MISMATCH,
        lambda i, d: "must contain an item that matches the `contains` schema",
    ),
    "minContains": (
        IssueCode.CONTAINS_MISMATCH,
        lambda i, d: "has too few items that match the `contains` schema",
    ),
    "maxContains": (
        IssueCode.CONTAINS_MISMATCH,
        lambda i, d: "has too many items that match the `contains` schema",
    ),
    "items": (IssueCode.UNEXPECTED_ITEM, lambda i, d: "has more items than the schema allows"),
    "additionalItems": (
        IssueCode.UNEXPECTED_ITEM,
        lambda i, d: "has more items than the schema allows",
    ),
    "unevaluatedItems": (
        IssueCode.UNEXPECTED_ITEM,
        lambda i, d: "has items that no subschema accounts for",
    ),
    "required": (
        IssueCode.MISSING_REQUIRED,
        lambda i, d: f"is missing the required property {quote_name(d.get('property', '?'))}",
    ),
    "dependentRequired": (
        IssueCode.MISSING_REQUIRED,
        lambda i, d: (
            f"is missing the property {quote_name(d.get('property', '?'))}, "
            "required by another property that is present"
        ),
    ),
    "dependencies": (
        IssueCode.MISSING_REQUIRED,
        lambda i, d: "does not satisfy a dependency of one of its properties",
    ),
    "additionalProperties": (
        IssueCode.UNEXPECTED_PROPERTY,
        lambda i, d: _unexpected(i, "property"),
    ),
    "unevaluatedProperties": (
        IssueCode.UNEXPECTED_PROPERTY,
        lambda i, d: _unexpected(i, "property"),
    ),
    "minProperties": (
        IssueCode.TOO_FEW_PROPERTIES,
        lambda i, d: f"must have at least {_plural(d.get('limit'), 'property')}",
    ),
    "maxProperties": (
        IssueCode.TOO_MANY_PROPERTIES,
        lambda i, d: f"must have at most {_plural(d.get('limit'), 'property')}",
    ),
    "propertyNames": (
        IssueCode.BAD_PROPERTY_NAME,
        lambda i, d: "has a property name that the schema does not allow",
    ),
    "anyOf": (IssueCode.NO_MATCH, lambda i, d: "must match at least one of the `anyOf` schemas"),
    "oneOf": (IssueCode.NO_MATCH, lambda i, d: "must match exactly one of the `oneOf` schemas"),
    "oneOf:multiple": (
        IssueCode.MULTIPLE_MATCH,
        lambda i, d: "matches more than one of the `oneOf` schemas",
    ),
    "not": (IssueCode.MATCHES_NOT, lambda i, d: "must not match the `not` schema"),
    "falseSchema": (IssueCode.FALSE_SCHEMA, lambda i, d: "is not allowed here"),
    "$ref": (
        IssueCode.UNRESOLVABLE_REF,
        lambda i, d: "reaches a reference that cannot be resolved",
    ),
    "custom": (IssueCode.CUSTOM, lambda i, d: "fails a custom keyword of the schema"),
}
# python-jsonschema names no keyword when a `false` subschema fails.
_TABLE["None"] = _TABLE["falseSchema"]


def describe(issue: RawIssue) -> tuple[IssueCode, str]:
    """The stable code and value-free message for a backend's failure."""
    code, render = _TABLE.get(
        issue.keyword,
        (IssueCode.CUSTOM, lambda i, d: f"fails the `{i.keyword}` keyword"),
    )
    return code, render(issue, issue.detail)

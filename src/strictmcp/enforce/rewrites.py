"""Opt-in rewrites of how a tool is called or listed, per tool (the policy's ``[[tool]]``).

Both change bytes strictmcp otherwise forwards untouched, so both are off by default:

- JSON-string arguments (``json_strings``): some models send ``"{\\"a\\": 1}"`` where the
  ``inputSchema`` wants an object (or an array). :func:`decode_json_strings` decodes such an
  argument (top-level properties whose schema wants an object or an array and not a string),
  strictly (:func:`~strictmcp.schema.jsonio.load_json`: no duplicate keys, no NaN, bounded), and
  only when the decoded value has a wanted type. The decoded value is what is validated and
  forwarded, and each decoding is reported.
- ``$ref`` inlining (``inline_refs``): several clients drop ``$defs`` and are left with dangling
  references. :func:`inline_refs` replaces each local reference (``#/$defs/...``, any JSON
  Pointer into the schema) with what it points to, bounded in size; a recursive schema, or a
  reference it cannot resolve, leaves the schema as it is, reported. The proxy keeps
  validating against the schema as listed, which means the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..protocol import Severity, Violation
from ..schema.jsonio import JSONInputError, load_json
from ..schema.pointer import from_fragment

MAX_INLINED_NODES = 10_000
"""The most schema objects an inlined schema may have; past it, the schema is left as is."""
_STRUCTURED = ("object", "array")
_PYTHON_TYPES = {"object": dict, "array": list}
# Dialects in which keywords beside $ref are ignored: $ref replaces its whole object.
_REF_ALONE = ("draft-04", "draft-06", "draft-07")
_DEFINITIONS = ("$defs", "definitions")


class RewriteRule(str, Enum):
    """Stable codes of the rewrites' reports."""

    JSON_STRING_DECODED = "argument-json-string-decoded"
    REF_RECURSIVE = "schema-ref-recursive"
    REF_UNRESOLVED = "schema-ref-unresolved"
    REF_TOO_LARGE = "schema-ref-too-large"


def decode_json_strings(
    schema: Any, arguments: Mapping[str, Any], pointer: str, max_size: int
) -> tuple[dict[str, Any] | None, list[Violation]]:
    """``arguments`` with each JSON-string argument decoded (see the module documentation), or
    None when none was; one report per decoded argument, pointing at it (``pointer`` locates
    the arguments in the message). ``max_size`` bounds a string decoded."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return None, []
    decoded: dict[str, Any] = {}
    found: list[Violation] = []
    for name, value in arguments.items():
        wanted = _wanted(properties.get(name))
        if not wanted or not isinstance(value, str) or len(value) > max_size:
            continue
        try:
            parsed = load_json(value, max_size=max_size)
        except JSONInputError:
            continue  # not JSON: validation says what is wrong with the string
        if isinstance(parsed, tuple(_PYTHON_TYPES[kind] for kind in wanted)):
            decoded[name] = parsed
            where = pointer + "/" + name.replace("~", "~0").replace("/", "~1")
            found.append(
                Violation(
                    RewriteRule.JSON_STRING_DECODED,
                    "a JSON string was sent where the schema wants "
                    f"{' or '.join(wanted)}: decoded before validation",
                    where,
                    Severity.WARNING,
                )
            )
    if not decoded:
        return None, []
    return {**arguments, **decoded}, found


def _wanted(schema: Any) -> tuple[str, ...]:
    """The structured types a property's schema wants, when it does not also take a string."""
    if not isinstance(schema, dict):
        return ()
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else declared
    if not isinstance(types, list) or "string" in types:
        return ()
    return tuple(kind for kind in _STRUCTURED if kind in types)


@dataclass(frozen=True)
class Inlined:
    """A schema with its local references inlined (``schema``), or the schema as it was and
    ``problem`` saying why it was left so."""

    schema: Any
    problem: tuple[RewriteRule, str] | None = None


class _GiveUp(Exception):
    def __init__(self, rule: RewriteRule, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def inline_refs(schema: Any, max_nodes: int = MAX_INLINED_NODES) -> Inlined:
    """``schema`` with every local ``$ref`` replaced by its target (see the module
    documentation); ``$defs`` and ``definitions`` are dropped once nothing refers to them."""
    if not isinstance(schema, dict) or not _has_ref(schema, 0):
        return Inlined(schema)
    dialect = schema.get("$schema")
    alone = isinstance(dialect, str) and any(d in dialect for d in _REF_ALONE)
    budget = [max_nodes]
    try:
        inlined = _inline(schema, schema, (), alone, budget)
    except _GiveUp as stop:
        return Inlined(schema, (stop.rule, stop.message))
    if isinstance(inlined, dict):
        inlined = {k: v for k, v in inlined.items() if k not in _DEFINITIONS}
    return Inlined(inlined)


def _has_ref(value: Any, depth: int) -> bool:
    if depth > 256:
        return False
    if isinstance(value, dict):
        return "$ref" in value or any(_has_ref(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_has_ref(v, depth + 1) for v in value)
    return False


def _inline(
    value: Any, root: dict[str, Any], stack: tuple[str, ...], alone: bool, budget: list[int]
) -> Any:
    if isinstance(value, list):
        return [_inline(v, root, stack, alone, budget) for v in value]
    if not isinstance(value, dict):
        return value
    budget[0] -= 1
    if budget[0] < 0:
        raise _GiveUp(RewriteRule.REF_TOO_LARGE, "inlining would make the schema too large")
    reference = value.get("$ref")
    if not isinstance(reference, str):
        return {
            k: (
                v if k in _DEFINITIONS and value is root else _inline(v, root, stack, alone, budget)
            )
            for k, v in value.items()
        }
    if reference in stack:
        raise _GiveUp(RewriteRule.REF_RECURSIVE, f"the schema is recursive ({reference})")
    target = _resolve(root, reference)
    expanded = _inline(target, root, (*stack, reference), alone, budget)
    siblings = {k: _inline(v, root, stack, alone, budget) for k, v in value.items() if k != "$ref"}
    if alone or not siblings:
        return expanded
    if isinstance(expanded, dict) and not set(expanded) & set(siblings):
        return {**expanded, **siblings}
    return {"allOf": [expanded], **siblings}


def _resolve(root: dict[str, Any], reference: str) -> Any:
    tokens = from_fragment(reference)
    if tokens is None:
        raise _GiveUp(RewriteRule.REF_UNRESOLVED, "a $ref is not a local JSON Pointer")
    target: Any = root
    for token in tokens:
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            raise _GiveUp(RewriteRule.REF_UNRESOLVED, "a $ref points to nothing in the schema")
    return target

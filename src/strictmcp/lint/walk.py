"""Every subschema of a tool's schema, with its JSON Pointer and the argument it describes.

Lint looks at schemas as written, including schemas the engine refused (an unknown
``$schema`` stops compilation before anything else is looked at), so this walk bounds itself:
it stops descending at the engine's depth bound and stops altogether at its subschema bound.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol.tools import resolve_local_ref
from ..schema import Limits, quote_name, to_pointer

_LIMITS = Limits()

# Keywords whose value is one subschema, and what the subschema describes relative to the
# instance of its parent: "same" (the instance itself), "item"/"member" (each item or member),
# or None (something that is not an argument value: names, a negation, a condition).
_SINGLE: dict[str, str | None] = {
    "additionalProperties": "member",
    "unevaluatedProperties": "member",
    "items": "item",
    "additionalItems": "item",
    "unevaluatedItems": "item",
    "contains": "item",
    "propertyNames": None,
    "not": None,
    "if": None,
    "then": "same",
    "else": "same",
}
_LISTS: dict[str, str | None] = {
    "allOf": "same",
    "anyOf": "same",
    "oneOf": "same",
    "prefixItems": "index",
    "items": "index",
}
_MAPS: dict[str, str | None] = {
    "properties": "name",
    "patternProperties": "member",
    "dependentSchemas": "same",
    "dependencies": "same",
    "$defs": None,
    "definitions": None,
}
REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
TYPE_NAMES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


@dataclass(frozen=True)
class Node:
    """One subschema (always a JSON object: boolean subschemas have nothing to lint).

    - ``pointer``: where it is in the tool definition (``/inputSchema/properties/path``);
    - ``argument``: a JSON Pointer into the tool's *arguments* to the values it describes,
      as policies write them (``/files/*``), or None where it describes no argument value
      (definitions, ``not``, ``propertyNames``);
    - ``keyword``: the keyword it sits under (``properties``, ``items``; None at the root);
    - ``name``: the property name, under ``properties``.
    """

    pointer: str
    schema: Mapping[str, Any]
    argument: str | None
    keyword: str | None
    name: str | None = None


def walk_schema(schema: Any, pointer: str) -> list[Node]:
    """The root (found at ``pointer``) and every subschema beneath it, root first."""
    if not isinstance(schema, Mapping):
        return []
    out: list[Node] = []
    stack: list[tuple[Node, int]] = [(Node(pointer, schema, "", None), 1)]
    while stack and len(out) < _LIMITS.max_subschemas:
        node, depth = stack.pop()
        out.append(node)
        if depth < _LIMITS.max_schema_depth:
            children = list(_children(node))
            stack.extend((child, depth + 1) for child in reversed(children))
    return out


def _children(node: Node) -> Iterator[Node]:
    for keyword, value in node.schema.items():
        if keyword in _SINGLE and isinstance(value, Mapping):
            yield _child(node, keyword, value, (keyword,), _SINGLE[keyword], None)
        elif keyword in _LISTS and isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, Mapping):
                    yield _child(node, keyword, item, (keyword, index), _LISTS[keyword], index)
        elif keyword in _MAPS and isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(item, Mapping):
                    yield _child(node, keyword, item, (keyword, key), _MAPS[keyword], key)


def _child(
    parent: Node,
    keyword: str,
    schema: Mapping[str, Any],
    path: tuple[str | int, ...],
    relation: str | None,
    key: str | int | None,
) -> Node:
    argument = parent.argument
    if argument is not None:
        if relation is None:
            argument = None
        elif relation in ("item", "member"):
            argument += "/*"
        elif relation in ("name", "index"):
            argument += to_pointer((str(key),))
    name = key if relation == "name" and isinstance(key, str) else None
    return Node(parent.pointer + to_pointer(path), schema, argument, keyword, name)


def declared_types(schema: Mapping[str, Any], root: Any) -> frozenset[str]:
    """The JSON types a subschema declares with ``type``, following local ``$ref``s when it
    declares none (``{"$ref": "#/$defs/Path"}``); empty when nothing says."""
    node: Any = schema
    seen: set[str] = set()
    while isinstance(node, Mapping) and "type" not in node:
        ref = node.get("$ref")
        if not isinstance(ref, str) or ref in seen:
            return frozenset()
        seen.add(ref)
        node = resolve_local_ref(root, ref)
    if not isinstance(node, Mapping):
        return frozenset()
    declared = node.get("type")
    if isinstance(declared, str):
        return frozenset({declared}) & TYPE_NAMES
    if isinstance(declared, list):
        return frozenset(t for t in declared if isinstance(t, str)) & TYPE_NAMES
    return frozenset()


def resolved(schema: Mapping[str, Any], root: Any) -> Mapping[str, Any]:
    """A subschema that is only a local ``$ref`` replaced by its target (once, one hop)."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = resolve_local_ref(root, ref)
        if isinstance(target, Mapping):
            return target
    return schema


def iter_strings(document: Any, limit: int) -> Iterator[tuple[str, bool, str]]:
    """Every string in a JSON document as (pointer, is_key, text), at most ``limit`` of them.

    Keys are reported at the pointer of their member. Iterative, and no deeper than the
    engine's schema depth bound (which refuses anything deeper): definitions come from
    servers, and pointers into a hostile depth would cost quadratic time and memory.
    """
    count = 0
    stack: list[tuple[str, Any, int]] = [("", document, 0)]
    while stack and count < limit:
        pointer, value, depth = stack.pop()
        if isinstance(value, str):
            count += 1
            yield pointer, False, value
            continue
        if depth >= _LIMITS.max_schema_depth:
            continue
        if isinstance(value, Mapping):
            children = [(pointer + to_pointer((str(key),)), item) for key, item in value.items()]
            for key, (child, _) in zip(value, children, strict=True):
                if isinstance(key, str):
                    count += 1
                    yield child, True, key
        elif isinstance(value, list):
            children = [(f"{pointer}/{index}", item) for index, item in enumerate(value)]
        else:
            continue
        stack.extend((child, item, depth + 1) for child, item in reversed(children))


def argument_label(node: Node) -> str:
    """How messages name what a subschema describes, quoting the (untrusted) names safely."""
    if node.argument == "":
        return "the root schema"
    if node.argument:
        return f"argument {quote_name(node.argument)}"
    return "this schema"

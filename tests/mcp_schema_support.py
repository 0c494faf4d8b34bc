"""The MCP specification's own schema for each revision, for tests only.

- :func:`document`, :func:`definitions`: the revision's ``schema.json`` and its definitions
  (``definitions`` up to 2025-06-18, ``$defs`` from 2025-11-25).
- :func:`validator`, :func:`result_validator`: strictmcp engine validators for one definition
  (``JSONRPCMessage``, ``CallToolRequest``, ...) and for the result of a request.
- :func:`method_definitions`, :func:`result_node`: which definition a revision's schema uses
  for a method, per kind of message and side.
- :func:`era_differences`: where a revision's schema and the mcp-types model for its era
  disagree about which fields, union members and required fields exist.

The schemas live outside the package (``STRICTMCP_MCP_SCHEMA`` overrides the directory):
strictmcp itself never reads them at run time.
"""

from __future__ import annotations

import json
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from strictmcp.protocol import Revision
from strictmcp.schema import Validator, compile_schema

SCHEMA_ROOT = Path(os.environ.get("STRICTMCP_MCP_SCHEMA", "/work/shared/mcp-schema"))
EXAMPLES = SCHEMA_ROOT / "2026-07-28" / "examples"

Side = Literal["client", "server"]
MessageKind = Literal["request", "notification"]


@cache
def document(revision: Revision) -> dict[str, Any]:
    """The revision's ``schema.json``."""
    with (SCHEMA_ROOT / revision.value / "schema.json").open(encoding="utf-8") as handle:
        loaded: dict[str, Any] = json.load(handle)
    return loaded


def definitions_key(revision: Revision) -> str:
    """``definitions`` (draft-07 documents) or ``$defs`` (2020-12 documents)."""
    return "$defs" if "$defs" in document(revision) else "definitions"


def definitions(revision: Revision) -> dict[str, Any]:
    """Every named definition of the revision's schema."""
    defs: dict[str, Any] = document(revision)[definitions_key(revision)]
    return defs


@cache
def validator(revision: Revision, definition: str) -> Validator:
    """A validator for one named definition of the revision's schema."""
    key = definitions_key(revision)
    return _compile(revision, {"$ref": f"#/{key}/{definition}"})


@cache
def result_validator(revision: Revision, request_definition: str) -> Validator:
    """A validator for the result of a request of ``request_definition``."""
    return _compile(revision, result_node(revision, request_definition))


def _compile(revision: Revision, root: dict[str, Any]) -> Validator:
    # `format` is an annotation, as JSON Schema has it by default: the MCP schemas use it to
    # document URIs and dates, and strictmcp's protocol layer does not assert formats.
    key = definitions_key(revision)
    wrapped = {"$schema": document(revision)["$schema"], **root, key: definitions(revision)}
    return compile_schema(wrapped, formats=False, cache=None)


def resolve(revision: Revision, node: Any) -> Any:
    """``node`` with any chain of ``$ref`` followed."""
    defs = definitions(revision)
    while isinstance(node, dict) and "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    return node


def _union_members(revision: Revision, name: str) -> list[str]:
    node = definitions(revision).get(name)
    if node is None:
        return []
    refs = node.get("anyOf", [node])
    # A union of one member is written as that member (2026-07-28's ClientNotification).
    return [ref["$ref"].rsplit("/", 1)[-1] if "$ref" in ref else name for ref in refs]


@cache
def method_definitions(revision: Revision, kind: MessageKind, side: Side) -> dict[str, str]:
    """Method name to the definition of the message a ``side`` sends, e.g. CallToolRequest."""
    union = f"{side.capitalize()}{kind.capitalize()}"
    found = {}
    for name in _union_members(revision, union):
        method = definitions(revision)[name]["properties"]["method"]["const"]
        found[method] = name
    return found


def all_methods(kind: MessageKind) -> frozenset[str]:
    """Every method of ``kind`` any revision's schema defines, for either side."""
    return frozenset(
        method
        for revision in Revision
        for side in ("client", "server")
        for method in method_definitions(revision, kind, side)
    )


_EMPTY_RESULTS = {"PingRequest", "SetLevelRequest", "SubscribeRequest", "UnsubscribeRequest"}


def result_node(revision: Revision, request_definition: str) -> Any:
    """The schema node a result to ``request_definition`` must match."""
    defs = definitions(revision)
    stem = request_definition.removesuffix("Request")
    key = definitions_key(revision)
    if f"{stem}ResultResponse" in defs:
        # 2026-07-28 names each response, and some results have two shapes.
        return defs[f"{stem}ResultResponse"]["properties"]["result"]
    name = "EmptyResult" if request_definition in _EMPTY_RESULTS else f"{stem}Result"
    return {"$ref": f"#/{key}/{name}"}


# --- where a revision's schema and mcp-types' era model differ ---------------------------------


@dataclass(frozen=True)
class EraDifferences:
    """What a revision's schema says differently from the model mcp-types checks it with.

    - ``fields``: (class, wire name) pairs the model has and the revision does not define.
    - ``classes``: union members (model class names) the revision does not have.
    - ``arrays``: (class, wire name) pairs where the model allows an array form (of the field
      or of a map's values) and the revision does not.
    - ``required``: (class, wire name) pairs the revision requires and the model does not.
    - ``model_requires``: (class, wire name) pairs the model requires and the revision does not.
    """

    fields: frozenset[tuple[str, str]]
    classes: frozenset[str]
    arrays: frozenset[tuple[str, str]]
    required: frozenset[tuple[str, str]]
    model_requires: frozenset[tuple[str, str]]


def _strip(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    tp = _strip(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [_strip(a) for a in typing.get_args(tp) if a is not type(None)]
    return [tp]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _merge(a: Any, b: Any) -> Any:
    """Two object schemas that must both hold, as one (properties merged, required joined)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return a
    merged = {**a, **{k: v for k, v in b.items() if k not in ("properties", "required")}}
    props = dict(a.get("properties", {}))
    for name, sub in b.get("properties", {}).items():
        props[name] = sub if name not in props else {"allOf": [props[name], sub]}
    merged["properties"] = props
    merged["required"] = sorted(set(a.get("required", [])) | set(b.get("required", [])))
    return merged


class _EraWalker:
    def __init__(self, revision: Revision) -> None:
        self.revision = revision
        self.fields: set[tuple[str, str]] = set()
        self.classes: set[str] = set()
        self.arrays: set[tuple[str, str]] = set()
        self.required: set[tuple[str, str]] = set()
        self.model_requires: set[tuple[str, str]] = set()
        self._seen: set[tuple[int, str]] = set()

    def _nodes(self, node: Any) -> list[dict[str, Any]]:
        """A node as the list of object schemas that all apply (allOf flattened)."""
        node = resolve(self.revision, node)
        if not isinstance(node, dict):
            return []
        if "allOf" in node:
            return [n for sub in node["allOf"] for n in self._nodes(sub)]
        return [node]

    def _one(self, node: Any) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for part in self._nodes(node):
            merged = _merge(merged, part) if merged else part
        return merged

    def walk(self, tp: Any, node: Any, owner: tuple[str, str] | None = None) -> None:
        node = self._one(node)
        members = _members(tp)
        arms = node.get("anyOf") or node.get("oneOf")
        if len(members) > 1 or arms:
            self._union(members, [self._one(a) for a in arms or [node]], owner)
            return
        tp = members[0]
        origin = typing.get_origin(tp)
        if _is_model(tp):
            self._model(tp, node)
        elif origin is list and node.get("type") == "array":
            self.walk(typing.get_args(tp)[0], node.get("items", {}), owner)
        elif origin is dict and isinstance(node.get("additionalProperties"), dict):
            self.walk(typing.get_args(tp)[1], node["additionalProperties"], owner)

    def _union(self, members: list[Any], arms: list[dict[str, Any]], owner: Any) -> None:
        for member in members:
            if _is_model(member):
                match = next((a for a in arms if self._matches(member, a)), None)
                if match is None:
                    self.classes.add(member.__name__)
                else:
                    self.walk(member, match, owner)
            elif typing.get_origin(member) is list:
                match = next((a for a in arms if a.get("type") == "array"), None)
                if match is None and owner is not None:
                    self.arrays.add(owner)
                elif match is not None:
                    self.walk(member, match, owner)

    def _matches(self, model: type[BaseModel], arm: dict[str, Any]) -> bool:
        props = arm.get("properties", {})
        for name, field in model.model_fields.items():
            alias = field.alias or name
            literal = _strip(field.annotation)
            if typing.get_origin(literal) is Literal and alias in props:
                const = self._one(props[alias]).get("const")
                if const is not None:
                    return const in typing.get_args(literal)
        # No discriminator: same required fields means same shape.
        required = {f.alias or n for n, f in model.model_fields.items() if f.is_required()}
        return required <= set(arm.get("required", [])) | set(props)

    def _model(self, model: type[BaseModel], node: dict[str, Any]) -> None:
        key = (id(node), model.__name__)
        if key in self._seen:
            return
        self._seen.add(key)
        props = node.get("properties", {})
        required = set(node.get("required", []))
        for name, field in model.model_fields.items():
            alias = field.alias or name
            if alias not in props:
                self.fields.add((model.__name__, alias))
                continue
            if alias in required and not field.is_required():
                self.required.add((model.__name__, alias))
            if field.is_required() and alias not in required:
                self.model_requires.add((model.__name__, alias))
            self.walk(field.annotation, props[alias], (model.__name__, alias))


@cache
def era_differences(revision: Revision) -> EraDifferences:
    """Walk every message mcp-types checks for ``revision`` against the revision's schema."""
    from mcp_types import methods as surfaces  # noqa: PLC0415 - test-only dependency

    walker = _EraWalker(revision)
    defs = definitions(revision)
    key = definitions_key(revision)
    message_surfaces: list[tuple[MessageKind, Side, Mapping[tuple[str, str], Any]]] = [
        ("request", "client", surfaces.CLIENT_REQUESTS),
        ("request", "server", surfaces.SERVER_REQUESTS),
        ("notification", "client", surfaces.CLIENT_NOTIFICATIONS),
        ("notification", "server", surfaces.SERVER_NOTIFICATIONS),
    ]
    for kind, side, surface in message_surfaces:
        envelope = defs["JSONRPCRequest" if kind == "request" else "JSONRPCNotification"]
        names = method_definitions(revision, kind, side)
        for (method, version), model in surface.items():
            if version == revision.value:
                walker.walk(model, {"allOf": [envelope, {"$ref": f"#/{key}/{names[method]}"}]})
    result_surfaces: list[tuple[Side, Mapping[tuple[str, str], Any]]] = [
        ("client", surfaces.SERVER_RESULTS),
        ("server", surfaces.CLIENT_RESULTS),
    ]
    for side, surface in result_surfaces:
        names = method_definitions(revision, "request", side)
        for (method, version), target in surface.items():
            if version == revision.value:
                result = {
                    "allOf": [{"$ref": f"#/{key}/Result"}, result_node(revision, names[method])]
                }
                walker.walk(target, result)
    return EraDifferences(
        frozenset(walker.fields),
        frozenset(walker.classes),
        frozenset(walker.arrays),
        frozenset(walker.required),
        frozenset(walker.model_requires),
    )

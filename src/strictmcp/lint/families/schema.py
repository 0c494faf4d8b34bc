"""SMT1xx: whether each schema compiles, what it reaches, and how it is shaped.

Compilation is the engine's own (:func:`strictmcp.schema.compile_schema` with its defaults),
so lint and the proxy agree on what is refused; each refusal code belongs to one rule here.
The engine stops at the first problem, so rules that can find every instance of theirs
(external references, backtracking patterns) look at the schema as written, and use the
engine's refusal only when they found nothing themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ...protocol import Revision, Severity
from ...protocol.tools import json_type
from ...schema import (
    Dialect,
    SchemaError,
    SchemaErrorCode,
    compile_schema,
    dialect_of,
    quote_name,
    to_pointer,
)
from ..context import SchemaView, ToolView
from ..model import Example, Hit, LintRule, printable
from ..walk import REF_KEYWORDS, Node, argument_label

# Engine messages may quote a server's schema (a pattern, a URI): keep them short.
_MESSAGE_LIMIT = 240
_BOUNDS = frozenset(
    {
        SchemaErrorCode.TOO_DEEP,
        SchemaErrorCode.TOO_MANY_SUBSCHEMAS,
        SchemaErrorCode.TOO_EXPENSIVE,
    }
)
# Refusals another rule of this family reports; SMT101 reports the rest.
_OWNED = frozenset(
    {
        *_BOUNDS,
        SchemaErrorCode.UNKNOWN_DIALECT,
        SchemaErrorCode.EXTERNAL_REF,
        SchemaErrorCode.PATTERN_NEEDS_BACKTRACKING,
    }
)
# Far below the engine's bounds, far above what a hand-written tool schema needs: a schema
# this big costs every model that reads the tool list context, and hides what it accepts.
LARGE_DEPTH = 24
LARGE_SUBSCHEMAS = 500
_LEGACY = frozenset({Dialect.DRAFT4, Dialect.DRAFT6, Dialect.DRAFT7, Dialect.DRAFT2019_09})


def _bounded(text: str) -> str:
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _refusal(view: SchemaView, error: SchemaError) -> Hit:
    at = f" at {error.location}" if error.location else ""
    message = f"{view.field} was refused [{error.code.value}]{at}: {error.message}"
    # The location holds the schema's property names, and the engine's message quotes its
    # values (a bad "type", a $ref) unescaped.
    return Hit(view.pointer + error.location, _bounded(printable(message)))


def _definition(tool: ToolView) -> Iterator[Hit]:
    if not tool.is_object:
        yield Hit("", "a tool definition must be a JSON object")
        return
    if tool.input is None:
        yield Hit("", "the tool has no inputSchema; every revision requires one")
    for view in tool.schemas:
        if not isinstance(view.schema, Mapping):
            yield Hit(
                view.pointer,
                f"{view.field} must be a JSON Schema object, not {json_type(view.schema)}",
            )


def _invalid(tool: ToolView) -> Iterator[Hit]:
    for view in tool.schemas:
        if view.error is not None and view.error.code not in _OWNED:
            yield _refusal(view, view.error)


def _unknown_dialect(tool: ToolView) -> Iterator[Hit]:
    for view in tool.schemas:
        if view.error is not None and view.error.code is SchemaErrorCode.UNKNOWN_DIALECT:
            yield _refusal(view, view.error)


def _external_refs(tool: ToolView) -> Iterator[Hit]:
    for view in tool.schemas:
        found = False
        embedded = {
            node.schema["$id"].split("#", 1)[0]
            for node in view.nodes
            if isinstance(node.schema.get("$id"), str)
        }
        for node in view.nodes:
            for keyword in REF_KEYWORDS:
                target = node.schema.get(keyword)
                if isinstance(target, str) and _leaves(target, embedded):
                    found = True
                    yield Hit(
                        node.pointer + to_pointer((keyword,)),
                        f"{keyword} {quote_name(target)} leaves the schema; strictmcp "
                        "never fetches references, so the schema is refused",
                    )
        refusal = view.error
        if not found and refusal is not None and refusal.code is SchemaErrorCode.EXTERNAL_REF:
            yield _refusal(view, refusal)


def _leaves(target: str, embedded: set[str]) -> bool:
    base = target.split("#", 1)[0]
    return bool(base) and not any(base == uri or uri.endswith("/" + base) for uri in embedded)


def _root_not_object(tool: ToolView) -> Iterator[Hit]:
    views = [tool.input]
    # SEP-2106: from 2026-07-28 structured results may be any JSON value.
    if not tool.context.revision.structured_content_any_json:
        views.append(tool.output)
    for view in views:
        if view is None or not isinstance(view.schema, Mapping):
            continue
        declared = view.schema.get("type")
        if declared == "object":
            continue
        found = (
            "has no type"
            if declared is None
            else f"has type {_bounded(json.dumps(declared, default=str))}"
        )
        yield Hit(
            view.pointer,
            f'{view.field} must have "type": "object" at its root, as the MCP schema '
            f"requires (clients parse it as that literal); it {found}",
        )


def _declares_object(schema: Mapping[str, Any]) -> bool:
    declared = schema.get("type")
    if declared is None:
        return "properties" in schema
    return declared == "object" or (isinstance(declared, list) and "object" in declared)


def _closed(schema: Mapping[str, Any]) -> bool:
    # A schema for the other members (a map) is as deliberate as `false`.
    return any(
        schema.get(keyword) is False or isinstance(schema.get(keyword), Mapping)
        for keyword in ("additionalProperties", "unevaluatedProperties")
    )


# Subschemas that closing would break (an allOf branch sees only its own properties) or
# that describe no argument object.
_OPEN_EXEMPT = frozenset({"allOf", "not", "if", "propertyNames"})


def _open_objects(tool: ToolView) -> Iterator[Hit]:
    if tool.input is None:
        return
    for node in tool.input.nodes:
        if node.keyword in _OPEN_EXEMPT:
            continue
        if _declares_object(node.schema) and not _closed(node.schema):
            yield Hit(
                node.pointer,
                f"{argument_label(node)} accepts properties it does not declare (no "
                '"additionalProperties": false or "unevaluatedProperties": false)',
            )


def _patterns(node: Node) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each pattern a subschema holds, as (pointer, a schema holding just that pattern)."""
    pattern = node.schema.get("pattern")
    if isinstance(pattern, str):
        yield node.pointer + "/pattern", {"type": "string", "pattern": pattern}
    keyed = node.schema.get("patternProperties")
    if isinstance(keyed, Mapping):
        for key in keyed:
            if isinstance(key, str):
                pointer = node.pointer + to_pointer(("patternProperties", key))
                yield pointer, {"patternProperties": {key: True}}


def _backtracking(tool: ToolView) -> Iterator[Hit]:
    for view in tool.schemas:
        found = False
        for node in view.nodes:
            for pointer, probe in _patterns(node):
                try:
                    compile_schema(probe)
                except SchemaError as error:
                    if error.code is SchemaErrorCode.PATTERN_NEEDS_BACKTRACKING:
                        found = True
                        yield Hit(
                            pointer,
                            "pattern needs a backtracking regex engine (lookaround or "
                            "backreferences); strictmcp and other linear-time engines refuse it",
                        )
        refusal = view.error
        if (
            not found
            and refusal is not None
            and refusal.code is SchemaErrorCode.PATTERN_NEEDS_BACKTRACKING
        ):
            yield _refusal(view, refusal)


def _too_complex(tool: ToolView) -> Iterator[Hit]:
    for view in tool.schemas:
        if view.error is not None and view.error.code in _BOUNDS:
            yield _refusal(view, view.error)


def _large(tool: ToolView) -> Iterator[Hit]:
    for view in tool.schemas:
        if view.validator is None:
            continue
        profile = view.validator.profile
        if profile.depth > LARGE_DEPTH or profile.subschemas > LARGE_SUBSCHEMAS:
            yield Hit(
                view.pointer,
                f"{view.field} nests {profile.depth} levels deep with {profile.subschemas} "
                f"subschemas (lint flags more than {LARGE_DEPTH} levels or "
                f"{LARGE_SUBSCHEMAS} subschemas)",
            )


def _legacy_dialect(tool: ToolView) -> Iterator[Hit]:
    revision = tool.context.revision
    if not revision.at_least(Revision.V2025_11_25):
        return
    for view in tool.schemas:
        if not isinstance(view.schema, Mapping) or "$schema" not in view.schema:
            continue
        try:
            dialect = dialect_of(view.schema)
        except SchemaError:
            continue  # SMT102 reports it
        if dialect in _LEGACY:
            yield Hit(
                view.pointer + "/$schema",
                f"{view.field} declares JSON Schema {dialect.short_name}; from 2025-11-25 a "
                f"tool schema without $schema is 2020-12 (this server speaks "
                f"{revision.value}), and clients may validate only that dialect",
            )


def _tool(properties: dict[str, Any], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A tool for the examples: a closed object schema with these ``properties``, plus the
    ``extra`` keywords at its root."""
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    return {"name": "example", "inputSchema": {**schema, **(extra or {})}}


def _doubling(levels: int) -> dict[str, Any]:
    """``$defs`` where each definition refers twice to the next: 2**levels ways to expand."""
    defs: dict[str, Any] = {
        f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": "string"}
    return defs


def _nested(levels: int) -> dict[str, Any]:
    """An object holding an object ... ``levels`` deep."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


RULES: tuple[LintRule, ...] = (
    LintRule(
        code="SMT100",
        name="definition-invalid",
        severity=Severity.ERROR,
        family="schema",
        summary="Tool definition is not an object, or lacks an object inputSchema",
        why=(
            "Every revision's Tool requires a JSON object with an inputSchema that is a JSON "
            "Schema object (outputSchema too, when present). Clients drop or reject a tool "
            "that breaks this, often the whole tools/list result with it."
        ),
        fix='Give the tool an inputSchema object, at least {"type": "object"}.',
        bad=Example(({"name": "get_time", "description": "The current time."},)),
        good=Example(
            (
                {
                    "name": "get_time",
                    "description": "The current time.",
                    "inputSchema": {"type": "object"},
                },
            )
        ),
        check=_definition,
        default=True,
    ),
    LintRule(
        code="SMT101",
        name="schema-invalid",
        severity=Severity.ERROR,
        family="schema",
        summary="Schema refused by the engine (invalid against its meta-schema, bad pattern...)",
        why=(
            "A schema that does not compile cannot validate anything: strict clients and "
            "the strictmcp proxy refuse calls to the tool, lax ones skip validation and "
            "pass whatever the model produced to the server."
        ),
        fix="Fix the schema where the message points; `strictmcp schema check` explains it.",
        bad=Example((_tool({"count": {"type": "int"}}),)),
        good=Example((_tool({"count": {"type": "integer"}}),)),
        check=_invalid,
        default=True,
    ),
    LintRule(
        code="SMT102",
        name="schema-unknown-dialect",
        severity=Severity.ERROR,
        family="schema",
        summary="$schema names a dialect nobody can know without fetching it",
        why=(
            "A $schema that is not draft-04, -06, -07, 2019-09 or 2020-12 names a custom "
            "meta-schema, which a validator would have to download: strictmcp never does, "
            "and clients that do are open to whoever controls that URL."
        ),
        fix="Drop $schema (2020-12 is the default) or use a standard dialect URI.",
        bad=Example((_tool({}, {"$schema": "https://example.com/my-meta-schema"}),)),
        good=Example((_tool({}),)),
        check=_unknown_dialect,
        default=True,
    ),
    LintRule(
        code="SMT103",
        name="schema-external-ref",
        severity=Severity.ERROR,
        family="schema",
        summary="$ref points outside the schema",
        why=(
            "A reference to another document makes validation depend on a download "
            "(a network request from the client, a server-side request forgery vector) or "
            "fail outright; the tool's schema must be self-contained."
        ),
        fix="Inline the referenced schema under $defs and refer to it as #/$defs/Name.",
        bad=Example((_tool({"to": {"$ref": "https://example.com/address.json"}}),)),
        good=Example(
            (
                _tool(
                    {"to": {"$ref": "#/$defs/Address"}}, {"$defs": {"Address": {"type": "string"}}}
                ),
            )
        ),
        check=_external_refs,
        default=True,
    ),
    LintRule(
        code="SMT104",
        name="schema-root-not-object",
        severity=Severity.ERROR,
        family="schema",
        summary='Schema root is not "type": "object"',
        why=(
            "The MCP schema requires inputSchema (and, before 2026-07-28, outputSchema) "
            'to have "type": "object" at its root; SDK clients parse it as that literal '
            "and reject anything else, including type lists and roots that are only a $ref."
        ),
        fix='Put "type": "object" at the root, with the arguments under "properties".',
        bad=Example(({"name": "example", "inputSchema": {"type": "string"}},)),
        good=Example((_tool({"text": {"type": "string"}}),)),
        check=_root_not_object,
        default=True,
    ),
    LintRule(
        code="SMT105",
        name="schema-open-object",
        severity=Severity.WARNING,
        family="schema",
        summary='Object accepts undeclared properties (no "additionalProperties": false)',
        why=(
            "An open object lets a model (or an injected prompt) pass arguments the tool "
            "author never thought about, and misspelt arguments pass silently instead of "
            'failing: {"recursive": true} where the tool expects "recurse".'
        ),
        fix=(
            'Add "additionalProperties": false (or "unevaluatedProperties": false when the '
            "object is built with allOf)."
        ),
        bad=Example(
            (
                {
                    "name": "example",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"recurse": {"type": "boolean"}},
                    },
                },
            )
        ),
        good=Example((_tool({"recurse": {"type": "boolean"}}),)),
        check=_open_objects,
    ),
    LintRule(
        code="SMT106",
        name="pattern-backtracking",
        severity=Severity.ERROR,
        family="schema",
        summary="Pattern needs a backtracking regex engine (lookaround, backreferences)",
        why=(
            "Lookaround and backreferences need a backtracking engine, where a crafted "
            "argument can take exponential time to match (ReDoS). strictmcp, like other "
            "linear-time validators, refuses such patterns, so the schema does not compile."
        ),
        fix="Rewrite the pattern without lookaround or backreferences, or check it in code.",
        bad=Example((_tool({"user": {"type": "string", "pattern": "^(?!admin$)[a-z]+$"}}),)),
        good=Example(
            (_tool({"user": {"type": "string", "pattern": "^[a-z]+$", "not": {"const": "admin"}}}),)
        ),
        check=_backtracking,
        default=True,
    ),
    LintRule(
        code="SMT107",
        name="schema-too-complex",
        severity=Severity.ERROR,
        family="schema",
        summary="Schema exceeds the engine's depth, size or reference-expansion bounds",
        why=(
            "The engine bounds how deep a schema nests, how many subschemas it has and how "
            "many ways its references can expand, because hostile schemas crash or stall "
            "validators. A schema over those bounds is refused."
        ),
        fix="Flatten the schema; share repeated parts through $defs without deep chains.",
        bad=Example((_tool({"a": {"$ref": "#/$defs/d0"}}, {"$defs": _doubling(15)}),)),
        good=Example((_tool({"a": {"$ref": "#/$defs/d0"}}, {"$defs": _doubling(1)}),)),
        check=_too_complex,
        default=True,
    ),
    LintRule(
        code="SMT108",
        name="schema-large",
        severity=Severity.WARNING,
        family="schema",
        summary=f"Schema deeper than {LARGE_DEPTH} or with more than {LARGE_SUBSCHEMAS} subschemas",
        why=(
            "Every tool schema is read by the model on every turn: a very large one costs "
            "context, makes the model's arguments less reliable, and is hard for people to "
            "review for what it really accepts."
        ),
        fix="Split the tool, or simplify its arguments.",
        bad=Example((_tool({"a": _nested(11)}),)),
        good=Example((_tool({"a": _nested(1)}),)),
        check=_large,
    ),
    LintRule(
        code="SMT109",
        name="schema-legacy-dialect",
        severity=Severity.WARNING,
        family="schema",
        summary="Schema declares a dialect older than 2020-12 on a server speaking 2025-11-25+",
        why=(
            "From 2025-11-25 a tool schema without $schema is JSON Schema 2020-12, and "
            "clients may support only that dialect. An older dialect changes what keywords "
            "mean (items as a list, definitions, dependencies) between validators."
        ),
        fix="Migrate the schema to 2020-12 and drop the $schema keyword.",
        bad=Example((_tool({}, {"$schema": "http://json-schema.org/draft-07/schema#"}),)),
        good=Example((_tool({}),)),
        check=_legacy_dialect,
    ),
)
